#!/usr/bin/env bash
# The offline GPU kit's run (copied to KIT/run.sh by benchmarks/gpu/make_kit.sh). No registry
# needed: the wheels it carries are installed with pip --no-index into a folder of its own.
#
#   bash KIT/run.sh           # a GPU machine whose python3 has CUDA torch + transformers
#   bash KIT/run.sh --smoke   # the same steps on a CPU at micro size (the build machine)
#
# Steps: install the wheels (pip install --no-index --no-deps --target $SITE), print the
# machine and versions and check every import the run needs, then ONE harness run of the
# e2e suite: the torch runtime at 8b (graph-captured static-cache step), masks overlapped,
# batch 1, 8 and 32, xgrammar and llguidance on 12 schemas of the kit's stratified sample,
# 64 tokens, the protocol's warm-up and interleaved blocks; its first job per engine runs
# the mask-apply microbenchmark (batch 1, 8, 32, 128). Everything goes to $OUT (default
# KIT/out), at most 6 files: run.log (all output), table.txt (the one table), summary.json,
# runs.tar.gz (each run folder's run.json, records.jsonl and summary.json: every figure can be
# recomputed from them), report.tar.gz (report.md, report.html and plots), kit.env. On a GPU, when
# time is left, a short second run with --no-graphs (batch 1, 2 schemas, xgrammar) follows,
# in the same table (E2E_COMPARE= turns it off); then the batch suite on the host cores,
# against the measured step (E2E_BATCH_SUITE= turns it off).
#
# Env knobs: OUT, PY (python3; --smoke: the interpreter that built the kit if python3 lacks
# torch), SITE (KIT/site), E2E_ENGINES (xgrammar,llguidance), E2E_BATCH, E2E_SAMPLE (12),
# E2E_MAXTOK (64), E2E_BLOCKS (2), E2E_JOB_TIMEOUT (60 s), E2E_EXTRA (more harness flags,
# e.g. --no-graphs), BUDGET_S (the whole script, default 470 s: the e2e step is cut to fit).
set -uo pipefail
KIT=$(cd "$(dirname "$0")" && pwd)
SMOKE=""
[ "${1:-}" = "--smoke" ] && SMOKE=1
OUT=${OUT:-$KIT/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SITE=${SITE:-$KIT/site}
# shellcheck disable=SC1091
. "$KIT/kit.env"
if [ -n "$SMOKE" ]; then
  DEVICE=cpu; MODEL=micro; BATCH=${E2E_BATCH:-1,4}; SAMPLE=${E2E_SAMPLE:-1}
  MAXTOK=${E2E_MAXTOK:-16}; MEMORY=8
else
  DEVICE=cuda; MODEL=8b; BATCH=${E2E_BATCH:-1,8,32}; SAMPLE=${E2E_SAMPLE:-12}
  MAXTOK=${E2E_MAXTOK:-64}; MEMORY=0  # the default address-space cap breaks CUDA init
fi
ENGINES=${E2E_ENGINES:-xgrammar,llguidance}
BLOCKS=${E2E_BLOCKS:-$([ -n "$SMOKE" ] && echo 1 || echo 2)}
JOB_TIMEOUT=${E2E_JOB_TIMEOUT:-60}
BUDGET_S=${BUDGET_S:-470}
T0=$(date +%s)
exec > >(tee -a "$OUT/run.log") 2>&1
step() { echo; echo "=== $* (t=$(( $(date +%s) - T0 )) s)"; }
left() { echo $(( BUDGET_S - ($(date +%s) - T0) )); }

PY=${PY:-python3}
if ! "$PY" -c 'import torch, transformers' 2>/dev/null; then
  if [ -n "$SMOKE" ] && [ -n "${KIT_BUILD_PY:-}" ] && "$KIT_BUILD_PY" -c 'import torch, transformers' 2>/dev/null; then
    PY=$KIT_BUILD_PY  # the smoke runs where the kit was built
  else
    echo "run.sh: $PY has no torch + transformers; set PY to an interpreter that has them" >&2
    exit 2
  fi
fi
if [ -z "$SMOKE" ] && ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  echo "run.sh: torch sees no CUDA device (use --smoke on a CPU machine)" >&2
  exit 2
fi
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  TOKENIZERS_PARALLELISM=false HARNESS_NO_LLAMACPP=1 HARNESS_NO_VLLM=1 HARNESS_DATA="$KIT/data"

step "install $(ls "$KIT"/whl/*.whl | wc -l) wheels into $SITE (CPython $KIT_PYTHON_VERSION, $KIT_PLATFORM)"
rm -rf "$SITE"; mkdir -p "$SITE"
timeout -k 5 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --disable-pip-version-check --target "$SITE" "$KIT"/whl/*.whl
rc=$?
if [ $rc -ne 0 ]; then
  echo "pip install failed (rc $rc): unpacking the wheels with zipfile instead"
  for w in "$KIT"/whl/*.whl; do timeout 60 "$PY" -m zipfile -e "$w" "$SITE" || echo "unpack failed: $w"; done
fi
# pydantic needs a recent typing_extensions: carried, installed only if the image's is older
if ! "$PY" - "$KIT_TYPING_EXTENSIONS" <<'EOF'
import importlib.metadata as m, sys
have = tuple(int(x) for x in m.version("typing_extensions").split(".")[:2])
need = tuple(int(x) for x in sys.argv[1].split(".")[:2])
print("typing_extensions here", m.version("typing_extensions"), "carried", sys.argv[1])
sys.exit(0 if have >= need else 1)
EOF
then
  timeout -k 5 60 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --disable-pip-version-check --target "$SITE" --upgrade "$KIT"/whl/cond/*.whl
fi
export PYTHONPATH="$SITE:$KIT/project${PYTHONPATH:+:$PYTHONPATH}"

step "machine and versions"
if [ -z "$SMOKE" ] && command -v nvidia-smi >/dev/null; then timeout 30 nvidia-smi; fi
echo "cores $(nproc)"; free -g 2>/dev/null | head -2
cp "$KIT/kit.env" "$OUT/kit.env"
timeout -k 5 180 "$PY" - <<'EOF'
import importlib, importlib.metadata as md, platform, sys
print("python", sys.version.split()[0], sys.executable, platform.platform())
for d in ("torch", "transformers", "triton", "numpy", "xgrammar", "llguidance", "outlines_core",
          "jsonschema", "pydantic", "typing_extensions", "llama_models", "nvidia-ml-py"):
    try:
        print(f"  {d:20s} {md.version(d)}")
    except Exception as e:
        print(f"  {d:20s} MISSING ({type(e).__name__})")
import torch
print("torch cuda:", torch.version.cuda, "available:", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")
bad = []
for mod in ("xgrammar", "llguidance", "llguidance.torch", "outlines_core", "jsonschema",
            "referencing", "lark", "pydantic", "transformers", "harness.cli",
            "suites.e2e.job", "suites.e2e.runtime_torch",
            "engines.xgrammar_engine", "engines.llguidance_engine", "suites.e2e"):
    try:
        importlib.import_module(mod)
    except Exception as e:
        bad.append(mod)
        print(f"  import {mod}: FAILED {type(e).__name__}: {e}")
import harness
print("harness from", harness.__file__)
from engines.vocab.core import load_llama3
print("llama3 vocabulary:", len(load_llama3().tokens), "tokens")
print("imports:", "all ok" if not bad else f"FAILED: {bad}")
sys.exit(1 if bad else 0)
EOF
IMPORTS=$?

RES=$KIT/results
rm -rf "$RES"; mkdir -p "$RES"
# a short second run with --no-graphs (the same step, eager) when time is left after the
# main one: the floor line of each shows what the captured graph buys
COMPARE=${E2E_COMPARE-$([ -z "$SMOKE" ] && echo 1)}
RESERVE=$([ -n "$COMPARE" ] && echo 80 || echo 0)
# then the batch suite on the machine's host cores (threads 1, 2, 4, ... up to them), its
# budget the decode step the e2e run measured (E2E_BATCH_SUITE= turns it off)
BATCH_SUITE=${E2E_BATCH_SUITE-1}
[ -n "$BATCH_SUITE" ] && [ -z "$SMOKE" ] && RESERVE=$(( RESERVE + 100 ))
E2E_T=$(( $(left) - 40 - RESERVE ))
step "e2e: $MODEL on $DEVICE, batch $BATCH, $ENGINES, $SAMPLE schemas, $MAXTOK tokens, $BLOCKS rounds of AB blocks (limit ${E2E_T} s)"
E2E_RC=1
if [ $IMPORTS -ne 0 ]; then
  echo "imports failed: no e2e run"
elif [ $E2E_T -lt 30 ]; then
  echo "no time left for the e2e step"
else
  # shellcheck disable=SC2086
  timeout -k 15 "$E2E_T" "$PY" -m harness.cli run --suite e2e --runtime torch --device "$DEVICE" \
    --model "$MODEL" --overlap --batch "$BATCH" --engine "$ENGINES" --data "$KIT/data" \
    --sample "$SAMPLE" --max-tokens "$MAXTOK" --blocks "$BLOCKS" --memory "$MEMORY" \
    --timeout "$JOB_TIMEOUT" --jobs 1 --no-progress --results "$RES" --reports "$RES/reports" \
    ${E2E_EXTRA:-}
  E2E_RC=$?
  echo "e2e rc $E2E_RC$([ $E2E_RC -eq 124 ] && echo ': cut off by the time limit; the jobs done are kept')"
fi
RUN=$(ls -d "$RES"/*/ 2>/dev/null | grep -v '/reports/$' | head -1)
RUN=${RUN%/}
if [ -n "$RUN" ] && [ ! -f "$RUN/summary.json" ]; then
  step "no summary.json (stopped early): rebuilding it from the records"
  timeout -k 5 90 "$PY" -m harness.cli summary "$RUN" -o "$RES/reports/$(basename "$RUN")" | tail -3
fi
CMP_T=$(( $(left) - 30 ))
if [ -n "$COMPARE" ] && [ $E2E_RC -eq 0 ] && [ $CMP_T -ge 60 ]; then
  step "comparison: the same step without CUDA graphs, batch 1, 2 schemas, xgrammar (limit ${CMP_T} s)"
  timeout -k 10 "$CMP_T" "$PY" -m harness.cli run --suite e2e --runtime torch --device "$DEVICE" \
    --model "$MODEL" --overlap --batch 1 --engine xgrammar --data "$KIT/data" --sample 2 \
    --max-tokens "$MAXTOK" --blocks 1 --mask-bench off --no-graphs --memory "$MEMORY" \
    --timeout "$JOB_TIMEOUT" --jobs 1 --no-progress --results "$RES" --reports "$RES/reports" \
    | sed -n '/^end to end/,/^SM clock/p'
  echo "comparison rc ${PIPESTATUS[0]}"
fi

BATCH_T=$(( $(left) - 30 ))
if [ -n "$BATCH_SUITE" ] && [ $IMPORTS -eq 0 ] && [ $BATCH_T -ge 45 ]; then
  if [ -n "$SMOKE" ]; then BARGS=(--batch 1,4 --threads 1 --sample 1 --batch-steps 10)
  else BARGS=(--batch 1,8,32,128,512 --sample 8 --batch-steps 50); fi
  STEP=(); [ -n "$RUN" ] && [ -f "$RUN/summary.json" ] && STEP=(--step-ms "$RUN")
  step "batch: grammar time per step against batch size and host threads (limit ${BATCH_T} s)"
  timeout -k 10 "$BATCH_T" "$PY" -m harness.cli run --suite batch --engine xgrammar,llguidance \
    "${BARGS[@]}" "${STEP[@]}" --data "$KIT/data" --memory "$MEMORY" --timeout "$JOB_TIMEOUT" \
    --no-progress --results "$RES" --reports "$RES/reports" | sed -n '/^Largest batch/,/^$/p'
  echo "batch rc ${PIPESTATUS[0]}"
fi

# the model with priors (KIT/model, when the kit carries one): the e2e suite decoding with
# it (the GPU's figures for a model whose choices mean something), then the quality suite:
# what the mask does to what it writes, on held-out schemas
MODEL_DIR=$KIT/model
if [ -d "$MODEL_DIR" ] && [ $IMPORTS -eq 0 ]; then
  if [ -n "$SMOKE" ]; then QARGS=(--sample 1 --samples 1 --max-tokens 16); EARGS=(--sample 1 --max-tokens 16)
  else QARGS=(--sample 12 --samples 8 --max-tokens 192); EARGS=(--sample 12 --max-tokens 128); fi
  MT=$(( $(left) - 30 ))
  if [ $MT -ge 45 ]; then
    step "e2e on the model with priors ($MODEL_DIR; limit $(( MT / 2 )) s)"
    timeout -k 10 $(( MT / 2 )) "$PY" -m harness.cli run --suite e2e --runtime torch \
      --device "$DEVICE" --model "$MODEL_DIR" --batch 1 --engine "$ENGINES" --data "$KIT/data" \
      "${EARGS[@]}" --blocks 1 --mask-bench off --memory "$MEMORY" --timeout "$JOB_TIMEOUT" \
      --jobs 1 --no-progress --results "$RES" --reports "$RES/reports" | sed -n '/^end to end/,/^$/p'
    echo "e2e (model) rc ${PIPESTATUS[0]}"
  fi
  QT=$(( $(left) - 30 ))
  if [ $QT -ge 45 ]; then
    step "quality on the model with priors (limit ${QT} s)"
    timeout -k 10 "$QT" "$PY" -m harness.cli run --suite quality --model "$MODEL_DIR" \
      --engine "$ENGINES" --data "$KIT/data" "${QARGS[@]}" --memory "$MEMORY" \
      --timeout "$JOB_TIMEOUT" --jobs 1 --no-progress --results "$RES" --reports "$RES/reports" \
      | sed -n '/^quality:/,/^$/p'
    echo "quality rc ${PIPESTATUS[0]}"
  fi
fi

step "results"
if [ -n "$RUN" ] && [ -f "$RUN/summary.json" ]; then
  cp "$RUN/summary.json" "$OUT/summary.json"
  # every run folder as it stands (run.json, records.jsonl, summary.json): each figure of
  # the table can be recomputed from them (harness summary RUN), here or elsewhere
  (cd "$RES" && find . -maxdepth 2 \( -name run.json -o -name records.jsonl -o -name summary.json \) \
     -not -path './reports/*' -print0 | tar czf "$OUT/runs.tar.gz" --null -T -)
  timeout 60 "$PY" "$KIT/project/benchmarks/gpu/table.py" "$RES" | tee "$OUT/table.txt"
  [ -d "$RES/reports" ] && tar czf "$OUT/report.tar.gz" -C "$RES" reports
else
  echo "no e2e summary" | tee "$OUT/table.txt"
fi
step "done; files in $OUT"
ls -la "$OUT"
[ $IMPORTS -eq 0 ] && [ -n "$RUN" ] && [ -f "$RUN/summary.json" ] && [ $E2E_RC -eq 0 ]
