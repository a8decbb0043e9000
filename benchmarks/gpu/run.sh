#!/usr/bin/env bash
# The GPU run, in one go: vLLM (dummy Llama-3.1-8B shapes) × its structured-output backends on
# a 40-schema MaskBench sample at two request rates, SGLang the same where it installs, and the
# torch runtime at 8b with each engine's mask overlapped at batch 1, 8 and 32. One folder
# (results/gpu-<stamp>/) holds every run; one table is printed at the end.
#
#   bash benchmarks/gpu/run.sh           # a machine with an NVIDIA GPU (~8 min after installs)
#   bash benchmarks/gpu/run.sh --smoke   # the same steps on this CPU machine at micro size
#                                         # (tests/serving/test_gpu_smoke.py runs it in CI)
#
# GPU: installs the CUDA vllm into ./.venv-vllm (HARNESS_VLLM_PACKAGE), SGLang into
# ./.venv-sglang where it installs (it is CUDA-only: elsewhere its rows are "not run", with
# the reason, in the table), and the harness's own ./.venv (CUDA torch from PyPI).
set -uo pipefail
cd "$(dirname "$0")/../.."
SMOKE=""
[ "${1:-}" = "--smoke" ] && SMOKE=1
STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${HARNESS_GPU_OUT:-results/gpu-$STAMP}
mkdir -p "$OUT"
H=.venv/bin/harness

if [ -n "$SMOKE" ]; then
  # every step at its smallest: the smoke checks the steps run and the table reads them
  MODEL=micro; SAMPLE=2; RATES=2,inf; MAXTOK=16; DEVICE=cpu; BATCHES=1,8; E2E_SAMPLE=1
  GRAMMAR_BATCHES=1,8; THREADS=1; BATCH_SAMPLE=1; BATCH_STEPS=10
  BACKENDS="vllm:xgrammar,vllm:guidance,vllm:outlines,vllm:default"
  [ -x .venv/bin/harness ] && [ -x .venv-vllm/bin/python ] || { echo "run.sh --smoke: run bash setup.sh first" >&2; exit 2; }
else
  MODEL=8b; SAMPLE=40; RATES=4,16; MAXTOK=128; DEVICE=cuda; BATCHES=1,8,32; E2E_SAMPLE=40
  GRAMMAR_BATCHES=1,8,32,128,512; THREADS=""; BATCH_SAMPLE=16; BATCH_STEPS=200
  BACKENDS="vllm:xgrammar,vllm:guidance,vllm:outlines,vllm:default"
  command -v nvidia-smi >/dev/null || { echo "run.sh: no nvidia-smi: this is the GPU run (use --smoke on a CPU machine)" >&2; exit 2; }
  export HARNESS_NO_LLAMACPP=1 HARNESS_VLLM_PACKAGE=${HARNESS_VLLM_PACKAGE:-vllm==0.32.0}
  bash setup.sh >"$OUT/setup.log" 2>&1 || { echo "run.sh: setup failed, see $OUT/setup.log" >&2; exit 1; }
  if [ ! -x .venv-sglang/bin/python ]; then
    (python3 -m venv .venv-sglang && .venv-sglang/bin/pip install -q "sglang[all]" \
      && .venv-sglang/bin/pip install -q -e .) >"$OUT/sglang-setup.log" 2>&1 \
      || echo "run.sh: SGLang did not install (see $OUT/sglang-setup.log); its rows are not run" >&2
  fi
fi
SGLANG="sglang:default,sglang:llguidance,sglang:outlines"
T0=$(date +%s)
FAILED=""
step() { echo "== $* ($(( $(date +%s) - T0 )) s)" >&2; }

# HARNESS_GPU_SERVERS=vllm:xgrammar=vllm+URL,...: drive servers already running (the test
# tier's shared ones) instead of starting one per backend
SERVERS=(--launch "$BACKENDS")
[ -n "${HARNESS_GPU_SERVERS:-}" ] && SERVERS=(--server "$HARNESS_GPU_SERVERS")
step "vLLM server × backends, rates $RATES"
$H run --suite serve "${SERVERS[@]}" --model $MODEL --sample $SAMPLE --rate $RATES \
  --max-tokens $MAXTOK --no-progress --results "$OUT" --reports "$OUT/reports" >"$OUT/vllm.log" 2>&1 \
  || { echo "run.sh: the vLLM step failed, see $OUT/vllm.log" >&2; FAILED="$FAILED vllm"; }
step "SGLang server × backends (CUDA only)"
$H run --suite serve --launch "$SGLANG" --model $MODEL --sample $SAMPLE --rate $RATES \
  --max-tokens $MAXTOK --no-progress --results "$OUT" --reports "$OUT/reports" >"$OUT/sglang.log" 2>&1 \
  || echo "run.sh: the SGLang step did not run (see $OUT/sglang.log)" >&2
step "torch runtime, masks overlapped, batch $BATCHES"
$H run --suite e2e --runtime torch --device $DEVICE --model $MODEL --overlap --batch $BATCHES \
  --engine xgrammar,llguidance,outlines --sample $E2E_SAMPLE --max-tokens $MAXTOK --no-progress \
  --results "$OUT" --reports "$OUT/reports" >"$OUT/e2e.log" 2>&1 \
  || { echo "run.sh: the torch step failed, see $OUT/e2e.log" >&2; FAILED="$FAILED torch"; }
# the batch suite on this machine's host cores (threads 1, 2, 4, ... up to them), against
# the decode step the torch step just measured (its unconstrained TPOT) as the budget
E2E_RUN=$(ls -d "$OUT"/*-e2e 2>/dev/null | tail -1)
STEP=(); [ -n "$E2E_RUN" ] && [ -f "$E2E_RUN/summary.json" ] && STEP=(--step-ms "$E2E_RUN")
THR=(); [ -n "$THREADS" ] && THR=(--threads "$THREADS")
step "batch: grammar time per step, batch $GRAMMAR_BATCHES, host threads ${THREADS:-1..cores}"
$H run --suite batch --engine xgrammar,llguidance,outlines --batch $GRAMMAR_BATCHES "${THR[@]}" \
  --sample $BATCH_SAMPLE --batch-steps $BATCH_STEPS "${STEP[@]}" --no-progress \
  --results "$OUT" --reports "$OUT/reports" >"$OUT/batch.log" 2>&1 \
  || { echo "run.sh: the batch step failed, see $OUT/batch.log" >&2; FAILED="$FAILED batch"; }
step "table"
.venv/bin/python benchmarks/gpu/table.py "$OUT" | tee "$OUT/table.txt"
echo "run folder: $OUT ($(( $(date +%s) - T0 )) s)"
# SGLang's step may only be "not run" (CUDA-only); the others must have run
[ -z "$FAILED" ] || { echo "run.sh: failed steps:$FAILED" >&2; exit 1; }
