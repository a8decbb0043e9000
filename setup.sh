#!/usr/bin/env bash
# Set up the harness in ./.venv: torch pinned first (the CPU build on this machine's disk;
# an unpinned torch pulls a multi-GB CUDA build), then the harness, the three engines,
# the optional vocabularies and the test tools.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[engines,tekken,qwen2,test]"
.venv/bin/harness engines
