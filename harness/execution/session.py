"""One ``harness run``: suite → jobs → runner → store → summary, table and report.

Thin glue; each step lives in its own module. The configuration of a run is stored in
``run.json`` so that ``--resume`` continues exactly the same run.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.config import RunConfig
from harness.execution.executor import EXECUTORS, Executor, ExecutorError, Job
from harness.store.run_store import (RunStore, StoreError, command_line, git_commit,
                                     machine_info, new_run_id)
from engines.vocab import load_vocabulary
from harness.registry import (SUITES, EngineSpec, load_target, make_suite, parse_engines,
                              suite_class)
from harness.records import JobPayload, Record

log = logging.getLogger("harness")


def suite_option_modules() -> list[Any]:
    """The run-options modules every registered suite declares (``SuiteBase.run_options``),
    each once, in registration order (the CLI adds their flags)."""
    mods: dict[str, Any] = {}
    for name in SUITES.names():
        target = getattr(suite_class(name), "run_options", None)
        if target and target not in mods:
            mods[target] = load_target(target, f"suite {name!r} options")
    return list(mods.values())


def suite_options(suite: Any, config: RunConfig) -> dict[str, Any]:
    """The suite's own options (the keys of its options module) from ``config``."""
    target = getattr(suite, "run_options", None)
    if not target:
        return {}
    return {k: config.options.get(k) for k in load_target(target, "suite options").DEFAULTS}


def engine_status(spec: EngineSpec) -> dict[str, Any]:
    """What run.json says of an engine before it runs (no engine import needed)."""
    cls = spec.adapter_class()
    info: dict[str, Any] = {
        "engine": spec.label, "name": spec.name, "config": spec.config,
        "options": cls.configs[spec.config], "version": spec.version(),
    }
    if spec.environment:
        from harness.registry.environments import environment

        info["environment"] = environment(spec.environment).describe()
    if spec.installed():
        info["status"] = "run"
    else:
        info["status"] = "not_run"
        hint = spec.how_to_install()
        info["reason"] = "not installed" + (f" ({hint})" if hint else "")
    return info


def _jobs(suite, specs: list[EngineSpec], config: RunConfig,
          finished: set[tuple[str, str]], scratch: str | None = None) -> Iterator[Job]:
    """Engine by engine (so each engine's wall time is its own), case by case."""
    told: set[str] = set()
    options = suite_options(suite, config)
    for spec in specs:
        for case in suite.cases():
            if (spec.label, case.case_id) in finished:
                continue
            if case.load_error:
                if case.case_id in told:
                    yield Job(spec.label, case.case_id, case.subset, None, case.load_error)
                    continue
                told.add(case.case_id)  # one line per file, however many engines
                log.warning("%s; skipped as bad_input (fix or remove it; the run goes on)",
                            case.load_error)
                yield Job(spec.label, case.case_id, case.subset, None, case.load_error)
                continue
            payload: JobPayload = {
                "engine": {"name": spec.name, "config": spec.config, "label": spec.label,
                           "env": spec.environment},
                "case": case.to_job(),
                "tokenizer": config.tokenizer,
                "serializations": list(config.serializations),
                "primary": config.primary,
                "segmentations": config.segmentations,
                "job": suite.job,
                "options": options,
                "timeout_s": config.timeout_s,
                "scratch": scratch,
            }
            yield Job(spec.label, case.case_id, case.subset, payload, env=spec.environment)


class BadInstanceWarnings:
    """One warning per corpus instance that could not be serialised (e.g. ``NaN``,
    which ``json.loads`` accepts and JSON forbids), once per (case, instance) whatever
    the number of engines: the case's other instances still ran."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, int]] = set()

    def __call__(self, record: Record) -> None:
        for inst in record.get("instances") or ():
            key = (record["case_id"], inst.get("index", -1))
            if "bad_instance" in inst and key not in self.seen:
                self.seen.add(key)
                log.warning("%s: instance #%s is not JSON-serialisable (%s); not replayed: "
                            "fix or remove it in the corpus file (the case's other instances "
                            "ran)", record["case_id"], key[1], inst["bad_instance"])


class Progress:
    """A progress bar (tqdm, stderr) with counts per outcome and an ETA."""

    def __init__(self, total: int, enabled: bool = True) -> None:
        self.counts: Counter = Counter()
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="job", file=sys.stderr, dynamic_ncols=True,
                            smoothing=0.05)

    def update(self, record: Record) -> None:
        self.counts[record["outcome"]] += 1
        if self.bar is not None:
            self.bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(self.counts.items())),
                                     refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(config: RunConfig | None, results_root: Path, resume: Path | None = None,
        argv: list[str] | None = None, progress: bool = True, executor: str = "local",
        ray_address: str | None = None) -> RunStore:
    """Run (or resume) a benchmark; returns the store holding its records.

    ``config`` is ignored when ``resume`` names a run folder: its stored configuration is
    continued. ``executor`` (``local`` or ``ray``, :mod:`harness.execution.executor`) and
    ``ray_address`` say where this session's jobs run; they are recorded in the session,
    not the config, so a run may be resumed with another executor."""
    if resume is not None:
        store = RunStore.open(resume)
        meta = store.read_meta()
        config = RunConfig.from_dict(meta["config"])
    elif config is None:
        raise ValueError("a run needs a configuration or a run folder to resume")
    # the suite's class was resolved once, when the configuration was validated
    suite = make_suite(config.suite_class, data=config.data, subsets=config.subsets,
                       sample=config.sample, schemas=config.schemas,
                       options=suite_options(config.suite_class, config))
    specs = parse_engines(str(config.engines))  # a comma-separated string once validated
    vocab = load_vocabulary(config.tokenizer)
    statuses = [engine_status(s) for s in specs]
    for st in statuses:
        if st["status"] == "not_run":
            log.warning("engine %s not run: %s", st["engine"], st["reason"])
    if resume is None:
        run_id = new_run_id(config.suite)
        meta = {
            "run_id": run_id,
            "created_at": time.time(),
            "command": command_line(argv if argv is not None else sys.argv),
            "config": config.to_dict(),  # the one place the configuration becomes JSON
            "suite": suite.describe(),
            "engines": statuses,
            "tokenizer": vocab.describe(),
            "limits": {"timeout_s": config.timeout_s, "memory_gib": config.memory_gib,
                       "engine_threads": 1, "jobs": config.jobs},
            "machine": machine_info(),
            "git_commit": git_commit(),
            "sessions": [],
        }
        if config.checkpoint is not None:  # --model PATH: the checkpoint it ran on
            meta["model"] = config.checkpoint
        store = RunStore.create(results_root, run_id, meta)
    runnable = [s for s, st in zip(specs, statuses) if st["status"] == "run"]
    finished = store.finished()
    total = sum(1 for s in runnable for cid in suite.case_ids() if (s.label, cid) not in finished)
    session = {"started_at": time.time(), "jobs": config.jobs,
               "argv": command_line(argv or sys.argv),
               "executor": executor}
    if ray_address:
        session["ray_address"] = ray_address
    bar = Progress(total, enabled=progress)
    bad_instances = BadInstanceWarnings()

    def on_record(r: Record) -> None:
        bad_instances(r)
        bar.update(r)

    if getattr(suite, "executor", None):  # the suite runs its own jobs (e.g. to servers)
        runner = load_target(suite.executor, f"suite {config.suite!r} executor")(
            store, config=config, on_record=on_record)
        session["executor"] = suite.executor
    else:
        runner = make_executor(executor, store, jobs=config.jobs,
                               timeout_s=config.timeout_s, memory_gib=config.memory_gib,
                               on_record=on_record, ray_address=ray_address)
    meta["sessions"].append(session)
    store.write_meta(meta)
    # the session's scratch folder: caches its jobs share on this machine, removed at the
    # end (JobPayload.scratch)
    scratch = tempfile.mkdtemp(prefix=f"harness-{meta['run_id']}-")
    try:
        runner.run(_jobs(suite, runnable, config, finished, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        bar.close()
        store.close()
        session["ended_at"] = time.time()
        failing = sys.exc_info()[0] is not None
        session["completed"] = not failing
        try:
            store.write_meta(meta)
        except StoreError:
            if not failing:  # else the error already in flight (e.g. a full disk) is the one to show
                raise
    return store


def make_executor(name: str, store: RunStore, *, jobs: int, timeout_s: float,
                  memory_gib: float | None,
                  on_record: Callable[[Record], None] = lambda r: None,
                  ray_address: str | None = None) -> Executor:
    """The executor called ``name`` with ``jobs`` parallel slots, ``timeout_s`` seconds
    of wall clock per job and ``memory_gib`` GiB of address space per worker process."""
    if name == "local":
        from harness.execution.local import LocalExecutor

        if ray_address:
            raise ExecutorError("--ray-address needs --executor ray")
        return LocalExecutor(store, jobs=jobs, timeout_s=timeout_s, memory_gib=memory_gib,
                             on_record=on_record)
    if name == "ray":
        from harness.execution.ray_cluster import RayExecutor

        return RayExecutor(store, jobs=jobs, timeout_s=timeout_s, memory_gib=memory_gib,
                           on_record=on_record, address=ray_address)
    raise ExecutorError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
