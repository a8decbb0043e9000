"""The harness's per-job tax: parallel efficiency and overhead per job of a real run.

    python benchmarks/parallel_efficiency.py                      # llguidance, whole corpus, --jobs 2
    python benchmarks/parallel_efficiency.py --sample 600 --engine xgrammar
    python benchmarks/parallel_efficiency.py --run results/<run-id>   # an existing run

Runs ``harness run`` (through the library) and reads its records:

- **parallel efficiency** = the workers' busy time (sum over jobs of the time a worker spent
  on the job, setup included) / (wall time × jobs). Printed over the jobs' window (first
  dispatch to last record: the per-job tax alone) and over the whole session (adds the
  run's start-up: reading the corpus, loading the vocabulary, starting the workers).
- **overhead per job** (µs) = (window × jobs − busy) / number of jobs: what the harness
  spends around each job (IPC, record write and fsync, progress, bookkeeping), as idle
  worker time.

The last line is ``parallel_efficiency=<x> overhead_us_per_job=<y>`` (over the window).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def figures(run_dir: Path, engine: str | None = None) -> dict[str, float]:
    """The efficiency figures of a finished run folder (see the module docstring), over
    one engine's jobs when ``engine`` is given (a run does its engines one after the
    other, so each has its own window)."""
    from harness.store.run_store import RunStore

    store = RunStore.open_readonly(run_dir)
    meta = store.read_meta()
    records = [r for r in store.records() if r.get("started_at") is not None
               and (engine is None or r["engine"] == engine)]
    if not records:
        raise SystemExit(f"{run_dir}: no finished jobs")
    jobs = max(int(s.get("jobs", 1)) for s in meta.get("sessions", [{}]))
    busy = sum(r.get("busy_ns", r.get("wall_ns", 0)) for r in records) / 1e9
    start = min(r["started_at"] for r in records)
    end = max(r["finished_at"] for r in records)
    window = end - start
    session = sum(s["ended_at"] - s["started_at"] for s in meta.get("sessions", [])
                  if s.get("ended_at") and s.get("started_at"))
    return {
        "jobs_run": len(records), "jobs": jobs, "busy_s": busy, "window_s": window,
        "session_s": session,
        "efficiency_window": busy / (window * jobs) if window else float("nan"),
        "efficiency_session": busy / (session * jobs) if session else float("nan"),
        "overhead_us_per_job": (window * jobs - busy) / len(records) * 1e6,
        "busy_ms_per_job": busy / len(records) * 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", help="engine to run (default llguidance); with --run, the "
                                      "engine whose jobs to count (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sample", type=int, help="N schemas (default: the whole corpus)")
    ap.add_argument("--data", help="corpus folder (default as for harness run)")
    ap.add_argument("--results", default="results", help="where the run folder goes")
    ap.add_argument("--run", help="read an existing run folder instead of running (its "
                                  "--engine jobs only, if given)")
    args = ap.parse_args(argv)
    if args.run:
        run_dir = Path(args.run)
    else:
        import harness

        args.engine = args.engine or "llguidance"
        config = harness.RunConfig(engines=[args.engine], jobs=args.jobs, sample=args.sample,
                                   data=args.data)
        run_dir = harness.run(config, results=args.results, progress=True).path
    f = figures(run_dir, args.engine)
    print(json.dumps({"run": str(run_dir), **{k: round(v, 4) for k, v in f.items()}}, indent=2))
    print(f"parallel_efficiency={f['efficiency_window']:.4f} "
          f"overhead_us_per_job={f['overhead_us_per_job']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
