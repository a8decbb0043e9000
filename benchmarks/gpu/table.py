"""The GPU run's one table: every run folder under the given folder, serve rows (per
backend, stream and mode: throughput, TTFT / TPOT / ITL p50 and p99, invalid outputs,
runaways, refusals) and the torch runtime's TPOT per engine and batch; rows that did not
run say why.

    python benchmarks/gpu/table.py results/gpu-<stamp>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(folder: str) -> int:
    from harness.measure.serve.metrics import HEADER, rows, text_table

    out = []
    for run in sorted(p for p in Path(folder).iterdir() if (p / "run.json").exists()):
        meta = json.loads((run / "run.json").read_text())
        for e in meta.get("engines", []):
            if e.get("status") == "not_run":
                out.append(f"{e['engine']}: not run ({e.get('reason')})")
        s = run / "summary.json"
        if not s.exists():
            out.append(f"{run.name}: no summary (the run stopped early; see its log)")
            continue
        summary = json.loads(s.read_text())
        if summary.get("serve"):
            out += [f"\n{run.name}: serving benchmark (times in ms)",
                    text_table(HEADER, rows(summary["serve"]))]
        e2e = [(k, v["e2e"]) for k, v in summary.get("engines", {}).items()
               if isinstance(v, dict) and v.get("e2e")]
        if e2e:
            body = []
            for eng, d in e2e:
                for b, x in sorted((d.get("by_batch") or {str(d.get("batch")): d}).items(),
                                   key=lambda kv: int(kv[0])):
                    body.append([eng, str(b), f"{x.get('tpot_ms') or 0:.3f}",
                                 f"{x.get('tpot_unconstrained_ms') or 0:.3f}",
                                 f"{x.get('tpot_ratio') or 0:.3f}"])
            out += [f"\n{run.name}: torch runtime, masks overlapped (TPOT ms)",
                    text_table(["engine", "batch", "TPOT", "unconstrained", "ratio"], body)]
    print("\n".join(out) if out else f"{folder}: no runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
