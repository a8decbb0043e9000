#!/usr/bin/env bash
# Optional runtime for `harness run --suite e2e --runtime llamacpp`: llama-cpp-python built from
# source (CPU only: CUDA, Metal, BLAS, Vulkan off) plus the `gguf` writer the harness uses to make
# its own random-weight models (the library only: no tools, server or multimodal part, which the
# harness never loads). The build takes ~5 min on a 2-core machine, so the wheel is
# built once and cached under ~/.cache/grammar-harness/wheels/<cpu-flags-hash>/ (llama.cpp builds
# with -march=native: a wheel is only reused on a CPU with the same flags). Later runs install
# from the cache in seconds.
#   bash scripts/build_llamacpp.sh            # build (or reuse) and install into ./.venv
#   LLAMACPP_VERSION=0.3.36 PYTHON=... bash scripts/build_llamacpp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VER=${LLAMACPP_VERSION:-0.3.36}
PY=${PYTHON:-.venv/bin/python}
ROOT=${GRAMMAR_HARNESS_CACHE:-$HOME/.cache/grammar-harness}
CPUKEY=$( (grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m) | sha256sum | cut -c1-12)
WHEELS="$ROOT/wheels/$CPUKEY"
mkdir -p "$WHEELS"
have() { ls "$WHEELS"/llama_cpp_python-"$VER"-*.whl >/dev/null 2>&1; }  # py3-none: ctypes, any Python
if ! have; then
  echo "building llama-cpp-python $VER from source (CPU only; a few minutes) -> $WHEELS" >&2
  tmp=$(mktemp -d)
  CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DGGML_VULKAN=OFF -DGGML_HIP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$PY" -m pip wheel -q --no-deps --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$VER"
  mv "$tmp"/llama_cpp_python-*.whl "$WHEELS"/
  rm -rf "$tmp"
fi
# --only-binary: never fall back to a source build here; the wheel comes from the cache.
"$PY" -m pip install -q --find-links "$WHEELS" --only-binary llama-cpp-python \
  "llama-cpp-python[server]==$VER" "gguf>=0.17"
"$PY" -c 'import llama_cpp, gguf; print("llama_cpp", llama_cpp.__version__, "gguf ok")'
