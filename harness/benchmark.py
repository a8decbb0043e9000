"""One ``harness run``: suite → jobs → runner → store → summary, table and report.

Thin glue; each step lives in its own module. The configuration of a run is stored in
``run.json`` so that ``--resume`` continues exactly the same run.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from engines.registry import EngineSpec, parse_engines
from harness.e2e.job import E2E_DEFAULTS
from harness.runner import Job, Runner
from harness.store import RunStore, git_commit, machine_info, new_run_id
from harness.vocab import load_vocabulary
from suites.registry import build_suite

#: Configuration keys handed to e2e jobs as ``payload["e2e"]``.
E2E_KEYS = ("runtime", "model", "quant", "max_tokens", "batch", "overlap", "device", "seed",
            "temperature", "server", "apply")

DEFAULT_CONFIG: dict[str, Any] = {
    "suite": "jsonschemabench",
    "engines": "all",
    "tokenizer": "llama3",
    "data": None,
    "subsets": None,
    "sample": None,
    "schemas": None,
    "timeout_s": 60.0,
    "memory_gib": 8.0,
    "jobs": 1,
    "serializations": ["ascii", "unicode", "compact"],
    "primary": "ascii",
    #: K extra replays of each valid instance's primary serialisation with seeded
    #: non-canonical tokenisations (harness/segment.py); 0 = none.
    "segmentations": 0,
    # suite e2e: the decode loop's runtime and options (defaults: harness/e2e/job.py)
    **{k: E2E_DEFAULTS[k] for k in E2E_KEYS},
}


def engine_status(spec: EngineSpec) -> dict[str, Any]:
    """What run.json says of an engine before it runs (no engine import needed)."""
    cls = spec.adapter_class()
    info: dict[str, Any] = {
        "engine": spec.label, "name": spec.name, "config": spec.config,
        "options": cls.configs[spec.config], "version": cls.version(),
    }
    if spec.installed():
        info["status"] = "run"
    else:
        info["status"] = "not_run"
        info["reason"] = f"not installed (pip install '{cls.package}')"
    return info


def _jobs(suite, specs: list[EngineSpec], config: dict[str, Any],
          finished: set[tuple[str, str]]) -> Iterator[Job]:
    """Engine by engine (so each engine's wall time is its own), case by case."""
    for spec in specs:
        for case in suite.cases():
            if (spec.label, case.case_id) in finished:
                continue
            if case.load_error:
                print(f"harness: {case.load_error}", file=sys.stderr)
                yield Job(spec.label, case.case_id, case.subset, None, case.load_error)
                continue
            yield Job(spec.label, case.case_id, case.subset, {
                "engine": {"name": spec.name, "config": spec.config, "label": spec.label},
                "case": case.to_job(),
                "tokenizer": config["tokenizer"],
                "serializations": config["serializations"],
                "primary": config["primary"],
                "segmentations": config.get("segmentations", 0),
                "kind": getattr(suite, "job_kind", "replay"),
                "e2e": {k: config.get(k) for k in E2E_KEYS},
            })


class Progress:
    """A progress bar (tqdm, stderr) with counts per outcome and an ETA."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.counts: Counter = Counter()
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="job", file=sys.stderr, dynamic_ncols=True,
                            smoothing=0.05)

    def update(self, record: dict[str, Any]) -> None:
        self.counts[record["outcome"]] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(self.counts.items())),
                                     refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(config: dict[str, Any], results_root: Path, resume: Path | None = None,
        argv: list[str] | None = None, progress: bool = True) -> RunStore:
    """Run (or resume) a benchmark; returns the store holding its records."""
    if resume is not None:
        store = RunStore.open(resume)
        meta = store.read_meta()
        config = meta["config"]
    suite = build_suite(config["suite"], data=config["data"], subsets=config["subsets"],
                        sample=config["sample"], schemas=config["schemas"])
    specs = parse_engines(config["engines"])
    vocab = load_vocabulary(config["tokenizer"])
    statuses = [engine_status(s) for s in specs]
    for st in statuses:
        if st["status"] == "not_run":
            print(f"harness: engine {st['engine']} not run: {st['reason']}", file=sys.stderr)
    if resume is None:
        run_id = new_run_id(config["suite"])
        meta = {
            "run_id": run_id,
            "created_at": time.time(),
            "command": argv if argv is not None else sys.argv,
            "config": config,
            "suite": suite.describe(),
            "engines": statuses,
            "tokenizer": vocab.describe(),
            "limits": {"timeout_s": config["timeout_s"], "memory_gib": config["memory_gib"],
                       "engine_threads": 1, "jobs": config["jobs"]},
            "machine": machine_info(),
            "git_commit": git_commit(),
            "sessions": [],
        }
        store = RunStore.create(results_root, run_id, meta)
    runnable = [s for s, st in zip(specs, statuses) if st["status"] == "run"]
    finished = store.finished()
    total = sum(1 for s in runnable for cid in suite.case_ids() if (s.label, cid) not in finished)
    session = {"started_at": time.time(), "jobs": config["jobs"], "argv": argv or sys.argv}
    meta["sessions"].append(session)
    store.write_meta(meta)
    bar = Progress(total, enabled=progress)
    runner = Runner(store, jobs=config["jobs"], timeout_s=config["timeout_s"],
                    memory_gib=config["memory_gib"], on_record=bar.update)
    try:
        runner.run(_jobs(suite, runnable, config, finished))
    finally:
        bar.close()
        store.close()
        session["ended_at"] = time.time()
        session["completed"] = sys.exc_info()[0] is None
        store.write_meta(meta)
    return store
