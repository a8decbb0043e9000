"""The GPU run's tables: for every run folder under the given folder, the console tables its
suite prints at the end of a run (the serve suite: per backend, stream and mode, throughput,
TTFT / TPOT / ITL p50 and p99, invalid outputs, runaways, refusals; the e2e suite: per
engine and batch, TPOT, the interleaved ratio with its interval or "not resolved",
interference, the harness's share, then the floor, the warm-ups, the clock, the components
and the mask-apply microbenchmark; the batch suite: the largest batch hidden in the step),
rebuilt from the run's records without writing into it; rows that did not run say why.

    python benchmarks/gpu/table.py results/gpu-<stamp>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run_tables(run: Path) -> list[str]:
    """The lines of one run folder: its engines that did not run, then its suite's console
    tables (the suite's own renderers, through the framework: no suite is imported here)."""
    from harness.analysis.finalize import summarize_published
    from harness.store.run_store import RunStore, StoreError

    meta = json.loads((run / "run.json").read_text())
    out = [f"{e['engine']}: not run ({e.get('reason')})"
           for e in meta.get("engines", []) if e.get("status") == "not_run"]
    if not (run / "summary.json").exists():
        return out + [f"{run.name}: no summary (the run stopped early; see its log)"]
    try:
        _, texts = summarize_published(RunStore.open_readonly(run))
    except StoreError as e:  # summary.json alone: the tables are rebuilt from records
        return out + [f"{run.name}: no tables ({e})"]
    return out + [f"\n{run.name}:", *texts]


def main(folder: str) -> int:
    out = []
    for run in sorted(p for p in Path(folder).iterdir() if (p / "run.json").exists()):
        out += run_tables(run)
    print("\n".join(out) if out else f"{folder}: no runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
