#!/usr/bin/env bash
# Build the offline GPU kit: a self-contained folder (at most 60 MiB) that runs the e2e suite
# on a GPU machine with no package registry (air-gapped clusters; the H200 of the first
# figures). Run it on a machine WITH the registries, from the project's checkout:
#
#   bash benchmarks/gpu/make_kit.sh DIR [--python-version X.Y]
#
# DIR gets: project/ (the harness's source as in this working tree), data/ (a stratified
# sample of the JSONSchemaBench corpus, KIT_SAMPLE files, default 40: the run takes 12 of
# them), whl/ (the wheels of every package the run needs that the GPU machine's image lacks:
# benchmarks/gpu/kit_wheels.py, for CPython X.Y on manylinux x86_64; whl/cond: typing_extensions,
# installed there only when the image's is too old), run.sh (benchmarks/gpu/kit_run.sh) and
# kit.env, and model/: the model with priors (`harness model build`; KIT_MODEL: build:default,
# or build:tiny for a smoke; none leaves it out) with KIT_HELD_OUT of its held-out schemas
# added to data/ (default 12), for the e2e and quality steps on it.
# Then, on the GPU machine: bash DIR/run.sh; on this machine: bash DIR/run.sh --smoke.
#
# Env: PY (the interpreter whose installed versions are pinned and whose pip downloads;
# default .venv/bin/python, else python3), KIT_SAMPLE (40), KIT_GLIBC (2.31: wheels tagged
# manylinux for that glibc or older; llguidance needs 2.31, the H200 image has 2.39),
# KIT_IMAGE (the image's package list, default benchmarks/gpu/image_packages.txt),
# HARNESS_DATA (the corpus).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=""
PYV=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) PYV="$2"; shift 2 ;;
    --python-version=*) PYV="${1#*=}"; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) if [ -z "$DIR" ]; then DIR="$1"; shift; else echo "make_kit: unexpected argument $1" >&2; exit 2; fi ;;
  esac
done
[ -n "$DIR" ] || { echo "usage: bash benchmarks/gpu/make_kit.sh DIR [--python-version X.Y]" >&2; exit 2; }
if [ -z "${PY:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
PYV=${PYV:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
SAMPLE=${KIT_SAMPLE:-40}
GLIBC=${KIT_GLIBC:-2.31}
PLATFORM="manylinux_${GLIBC/./_}_x86_64 (and older)"
# pip matches an explicit --platform exactly: name every manylinux tag up to that glibc
PLATS=()
for ((m = ${GLIBC#*.}; m >= 17; m--)); do PLATS+=(--platform "manylinux_2_${m}_x86_64"); done
PLATS+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
IMAGE=${KIT_IMAGE:-$ROOT/benchmarks/gpu/image_packages.txt}
LIMIT=$((60 * 1024 * 1024))
T0=$(date +%s)

rm -rf "$DIR"
mkdir -p "$DIR/project" "$DIR/data" "$DIR/whl/cond"
DIR=$(cd "$DIR" && pwd)

echo "make_kit: project source -> $DIR/project"
# the working tree's files (committed or not, never ignored ones) of what the run imports
( cd "$ROOT"
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -- harness engines suites reference_engine benchmarks pyproject.toml
  else
    find harness engines suites reference_engine benchmarks pyproject.toml -type f -not -path '*/__pycache__/*'
  fi ) | grep -v '\.pyc$' | tar -C "$ROOT" -cf - -T - | tar -C "$DIR/project" -xf -

echo "make_kit: a stratified sample of $SAMPLE corpus files -> $DIR/data"
PYTHONPATH="$ROOT" "$PY" - "$DIR/data" "$SAMPLE" <<'EOF'
import shutil, sys
from pathlib import Path
from harness.suite.maskbench import resolve_data_dir, stratified_sample
src = resolve_data_dir(None)
names = stratified_sample(sorted(p.name for p in src.glob("*.json")), int(sys.argv[2]))
for n in names:
    shutil.copyfile(src / n, Path(sys.argv[1]) / n)  # the file's bytes, never a link
print(f"make_kit: {len(names)} files from {src}")
EOF

MODEL_SPEC=${KIT_MODEL:-build:default}
if [ "$MODEL_SPEC" != none ]; then
  echo "make_kit: the model with priors ($MODEL_SPEC) -> $DIR/model, held-out schemas -> $DIR/data"
  PYTHONPATH="$ROOT" "$PY" - "$DIR" "$MODEL_SPEC" "${KIT_HELD_OUT:-12}" <<'PYEOF'
import shutil, sys
from pathlib import Path
from harness.model.checkpoint import load_checkpoint
from harness.training.build import resolve_model
from harness.suite.maskbench import resolve_data_dir, stratified_sample
kit, spec, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ck = load_checkpoint(resolve_model(spec))
shutil.copytree(ck.folder, kit / "model")
src = resolve_data_dir(None)
held = set(ck.held_out or ())
names = stratified_sample(sorted(p.name for p in src.glob("*.json") if p.name in held), n)
for name in names:
    shutil.copyfile(src / name, kit / "data" / name)
size = sum(f.stat().st_size for f in (kit / "model").iterdir())
print(f"make_kit: model from {ck.folder} ({size // 1024} KiB), {len(names)} held-out files")
PYEOF
fi

echo "make_kit: wheels for CPython $PYV on $PLATFORM -> $DIR/whl"
PYTHONPATH="$ROOT" "$PY" "$ROOT/benchmarks/gpu/kit_wheels.py" --python-version "$PYV" \
  --image "$IMAGE" > "$DIR/wheels.txt" || { echo "make_kit: no wheel list (see above)" >&2; exit 1; }
dl() {  # pip download, binary wheels for the target only, no dependency resolution
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    "${PLATS[@]}" --python-version "$PYV" --implementation cp -d "$@"
}
# one call for all; if it fails, one per package, so the message names the culprit
if ! dl "$DIR/whl" -r "$DIR/wheels.txt"; then
  while read -r spec; do
    dl "$DIR/whl" "$spec" || { echo "make_kit: no wheel of $spec for CPython $PYV on $PLATFORM" >&2; exit 1; }
  done < "$DIR/wheels.txt"
fi
TE=$("$PY" -c 'import importlib.metadata as m; print(m.version("typing_extensions"))')
dl "$DIR/whl/cond" "typing_extensions==$TE"

cp "$ROOT/benchmarks/gpu/kit_run.sh" "$DIR/run.sh"
{
  echo "# written by benchmarks/gpu/make_kit.sh"
  echo "KIT_PYTHON_VERSION=$PYV"
  echo "KIT_PLATFORM=\"$PLATFORM\""
  echo "KIT_BUILD_PY=$PY"
  echo "KIT_TYPING_EXTENSIONS=$TE"
  echo "KIT_SOURCE=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)$(cd "$ROOT" && git diff --quiet HEAD 2>/dev/null || echo +changes)"
  echo "KIT_MADE=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$DIR/kit.env"

SIZE=$(du -sb "$DIR" | cut -f1)
echo "make_kit: $DIR: $(ls "$DIR/whl"/*.whl | wc -l) wheels, $(ls "$DIR/data" | wc -l) corpus files," \
     "$((SIZE / 1024 / 1024)) MiB ($SIZE bytes) in $(( $(date +%s) - T0 )) s"
if [ "$SIZE" -gt "$LIMIT" ]; then
  echo "make_kit: the kit is over 60 MiB: it must stay under 64 MiB with everything sent" >&2
  exit 1
fi
