"""The GPU run's one table: every run folder under the given folder, serve rows (per
backend, stream and mode: throughput, TTFT / TPOT / ITL p50 and p99, invalid outputs,
runaways, refusals) and the e2e suite's figures per engine and batch (TPOT, the interleaved
ratio with its interval or "not resolved", interference, the harness's share, the forward's
share; then the floor, the warm-ups, the clock, the components and the mask-apply
microbenchmark); the batch suite's largest batch hidden in the step, per engine and host
threads; rows that did not run say why.

    python benchmarks/gpu/table.py results/gpu-<stamp>
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def e2e_title(d: dict) -> str:
    fl = d.get("floor") or {}
    return (f"e2e, torch runtime ({d.get('model')}, {fl.get('device') or ''}"
            f"{' ' + fl['gpu'] if fl.get('gpu') else ''}, CUDA graphs "
            f"{'on' if fl.get('graphs') else 'off'}), schedule {d.get('schedule')}, "
            f"{d.get('blocks')} rounds of interleaved AB blocks; times in ms")


def e2e_table(rows: list, text_table) -> str:
    """Per engine and batch: TPOT, its unconstrained twin, the ratio as the rules allow it
    (a 95% interval, 'not resolved' beyond ±3%, '–' with a reason), interference, the
    harness's share and the forward's share of the constrained step."""
    from suites.e2e.summary import ratio_text

    def pct(x):
        return f"{x:.1%}" if isinstance(x, (int, float)) else "–"

    body = []
    for eng, d in rows:
        pts = d.get("by_batch") or d.get("protocol_batch") or {str(d.get("batch")): d}
        for b, x in sorted(pts.items(), key=lambda kv: int(kv[0])):
            comps = (x.get("constrained") or {}).get("components") or {}
            body.append([eng, str(b), f"{x.get('tpot_ms') or 0:.3f}",
                         f"{x.get('tpot_unconstrained_ms') or 0:.3f}",
                         ratio_text(x.get("tpot_ratio"), x.get("tpot_ratio_ci"),
                                    x.get("tpot_ratio_resolved"), x.get("tpot_ratio_note"))
                         if "tpot_ratio_resolved" in x else f"{x.get('tpot_ratio') or 0:.3f}",
                         ratio_text(x.get("interference"), x.get("interference_ci"),
                                    x.get("interference_resolved"), x.get("interference_note"))
                         if "interference_resolved" in x else "–",
                         pct(x.get("harness_share")), pct((comps.get("forward") or {}).get("share")),
                         str(x.get("pairs") or "–")])
    return text_table(["engine", "batch", "TPOT", "unconstrained", "ratio [95% CI]",
                       "interference", "harness", "forward", "AB pairs"], body)


def e2e_notes(d: dict, mask_bench: dict | None) -> list[str]:
    """The floor, the warm-up, the clock, the components and the microbenchmark."""
    out = []
    fl = d.get("floor")
    if fl:
        out.append(f"floor: {fl['weight_bytes_per_step'] / 1e9:.2f} GB of weights read per step "
                   f"/ {fl['copy_gb_per_s']:.0f} GB/s copy bandwidth measured in the run = "
                   f"{fl['floor_ms']:.3f} ms; unconstrained step at batch {fl['batch']}: "
                   f"{fl['step_ms']} ms = {fl['step_over_floor']}x the floor (forward "
                   f"{fl.get('forward_ms')} ms)"
                   + (f"; graphs failed: {fl['graphs_error']}" if fl.get("graphs_error") else ""))
    for b, w in (d.get("warmup") or {}).items():
        first = "; ".join(f"{x['steps']} steps, {x['s']} s" + ("" if x.get("stable") else
                                                            ", NOT stable (cap)")
                          for x in w.get("first") or []) or "-"
        out.append(f"warm-up batch {b}: first {first}; {w.get('rewarms')} re-warms, median "
                   f"{w.get('rewarm_steps_median')} steps, {w.get('rewarm_unstable')} at the cap")
    ck = d.get("clock") or {}
    if ck:
        out.append(f"SM clock over {ck.get('reads')} reads: {ck.get('sm_mhz_min')}-"
                   f"{ck.get('sm_mhz_max')} MHz ({ck.get('source')})")
    pts = d.get("by_batch") or d.get("protocol_batch") or {}
    for b, x in sorted(pts.items(), key=lambda kv: int(kv[0])):
        comps = (x.get("constrained") or {}).get("components") or {}
        if comps:
            from suites.e2e.summary import component_text

            out.append(f"components at batch {b} (mean us, share of the constrained step): "
                       + component_text(comps))
    if mask_bench:
        from suites.e2e.maskbench import text_table as mb_table

        out.append(mb_table(mask_bench))
    return out


def main(folder: str) -> int:
    from suites.serve.summary import HEADER, rows, text_table

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
        if summary.get("batch"):  # the batch suite: the largest batch hidden in the step
            from suites.batch.summary import HIDDEN_HEADER, hidden_rows

            b = summary["batch"]
            out += [f"\n{run.name}: largest batch whose p99 grammar time per step stays "
                    f"within {b['step_ms']:g} ms (from {b.get('step_source') or 'the default'})",
                    text_table(HIDDEN_HEADER, hidden_rows(b["hidden"]))]
        e2e = [(k, v["e2e"]) for k, v in summary.get("engines", {}).items()
               if isinstance(v, dict) and v.get("e2e")]
        if e2e:
            out += [f"\n{run.name}: " + e2e_title(e2e[0][1]), e2e_table(e2e, text_table)]
            out += e2e_notes(e2e[0][1], summary.get("e2e_mask_bench"))
    print("\n".join(out) if out else f"{folder}: no runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
