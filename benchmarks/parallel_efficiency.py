"""The harness's per-job tax: parallel efficiency and overhead per job of a real run.

    python benchmarks/parallel_efficiency.py                      # llguidance, whole corpus, --jobs 2
    python benchmarks/parallel_efficiency.py --sample 600 --engine xgrammar
    python benchmarks/parallel_efficiency.py --run results/<run-id>   # an existing run

Runs ``harness run`` (through the library) and reads its records:

- **parallel efficiency** = the workers' busy time (sum over jobs of the time a worker spent
  on the job, building its adapter included) / (wall time × jobs). Printed three ways:
  in **steady state** (from the moment every worker has finished its first job to the
  last record: the per-job tax alone), over the jobs' **window** (first dispatch to last
  record: adds each worker's start-up, the imports of a fresh process, about a second
  here), and over the **session** (adds the run's own start-up: reading the corpus,
  loading the vocabulary).
- **overhead per job** (µs) = (wall × jobs − busy) / jobs run, in steady state: what the
  harness spends around each job (IPC, record write and fsync, progress, bookkeeping).

The last line is ``parallel_efficiency=<steady state> window=<window>
overhead_us_per_job=<steady state>``.
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

    def busy_s(rs: list[dict]) -> float:
        return sum(r.get("busy_ns", r.get("wall_ns", 0)) for r in rs) / 1e9

    busy = busy_s(records)
    start = min(r["started_at"] for r in records)
    end = max(r["finished_at"] for r in records)
    window = end - start
    session = sum(s["ended_at"] - s["started_at"] for s in meta.get("sessions", [])
                  if s.get("ended_at") and s.get("started_at"))
    # steady state: after every worker's first job (a fresh process's start-up)
    first: dict = {}
    for r in sorted(records, key=lambda r: r["started_at"]):
        first.setdefault(r.get("worker"), r)
    steady_from = max(r["finished_at"] for r in first.values())
    steady = [r for r in records if r["started_at"] >= steady_from]
    steady_wall = end - steady_from
    steady_busy = busy_s(steady)
    return {
        "jobs_run": len(records), "jobs": jobs, "busy_s": busy, "window_s": window,
        "session_s": session,
        "efficiency_steady": steady_busy / (steady_wall * jobs) if steady_wall else float("nan"),
        "efficiency_window": busy / (window * jobs) if window else float("nan"),
        "efficiency_session": busy / (session * jobs) if session else float("nan"),
        "overhead_us_per_job": ((steady_wall * jobs - steady_busy) / len(steady) * 1e6
                                if steady else float("nan")),
        "worker_startup_s": sum(r["wall_ns"] / 1e9 - r.get("busy_ns", 0) / 1e9
                                for r in first.values()) / max(1, len(first)),
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
    print(f"parallel_efficiency={f['efficiency_steady']:.4f} window={f['efficiency_window']:.4f} "
          f"overhead_us_per_job={f['overhead_us_per_job']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
