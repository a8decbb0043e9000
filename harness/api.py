"""The library entry point: :func:`run` a :class:`~harness.config.RunConfig`, get a
:class:`Run` back. The ``harness`` command line is a thin wrapper around it.

Messages (engines not run, bad corpus files, the suites' console tables) go through the
``harness`` logger; the CLI prints them on stderr.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from harness.config import RunConfig

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Run", "run", "default_results", "default_reports"]

log = logging.getLogger("harness")


def default_results() -> Path:
    """Where run folders go by default: ``$HARNESS_RESULTS``, else ``results/`` in the
    current directory."""
    return Path(os.environ.get("HARNESS_RESULTS") or "results")


def default_reports() -> Path:
    """Where reports go by default: ``$HARNESS_REPORTS``, else ``reports/`` in the current
    directory."""
    return Path(os.environ.get("HARNESS_REPORTS") or "reports")


class Run:
    """A handle on one run folder (``results/<run-id>/``): read-only views of what it holds.

    Parameters
    ----------
    path:
        The run folder.
    reports:
        The folder its report goes to (default: :func:`default_reports` / run id).
    """

    def __init__(self, path: str | Path, reports: str | Path | None = None) -> None:
        from harness.store.run_store import RunStore

        self.path = Path(path)
        self._store = RunStore.open_readonly(self.path)
        self.reports = Path(reports) if reports is not None else default_reports() / self.path.name

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def run_id(self) -> str:
        """The run's id (its folder's name when ``run.json`` has none)."""
        return str(self.meta().get("run_id") or self.path.name)

    def meta(self) -> dict[str, Any]:
        """``run.json``: configuration, engines, tokenizer, limits, machine, sessions."""
        return self._store.read_meta()

    def config(self) -> RunConfig:
        """The run's configuration."""
        return RunConfig.from_dict(self.meta()["config"])

    def summary(self) -> dict[str, Any]:
        """``summary.json`` as a dict (rebuilt from the records first when missing).

        Raises
        ------
        harness.store.run_store.StoreError
            When the summary is of a format version this harness does not read."""
        from harness.store.run_store import SUMMARY_FORMAT, check_format

        path = self.path / "summary.json"
        if not path.exists():
            from harness.analysis.finalize import finalize

            finalize(self._store)
        summary = json.loads(path.read_text())
        check_format(summary.get("format", 1), SUMMARY_FORMAT, path)
        return summary

    def records(self) -> "pd.DataFrame":
        """One row per (engine, case) job: outcome, error, compile and TTFM times (ns)."""
        from harness.analysis.metrics import schema_frame

        return schema_frame(list(self._store.records()))

    def instances(self) -> "pd.DataFrame":
        """One row per (engine, case, instance, serialisation) replay: expected verdict,
        status, and the mask and commit times (ns) per token."""
        from harness.analysis.metrics import instance_frame

        return instance_frame(list(self._store.records()))

    def report(self, out: str | Path | None = None) -> Path:
        """Write ``report.md`` and ``report.html`` (with plots) into ``out`` (default
        :attr:`reports`); returns the Markdown report's path."""
        from harness.report.html import write_reports

        _, md = write_reports([self.path], Path(out) if out is not None else self.reports)
        return md


def run(config: RunConfig, *, results: str | Path | None = None,
        reports: str | Path | None = None, resume: str | Path | None = None,
        executor: str = "local", ray_address: str | None = None, progress: bool = False,
        argv: list[str] | None = None, echo: Callable[[str], Any] | None = None) -> Run:
    """Run a suite against engines (or continue a run), then write its summary and report.

    Parameters
    ----------
    config:
        What to run (validated when it was made).
    results:
        The folder run folders go into (default :func:`default_results`).
    reports:
        The folder reports go into (default :func:`default_reports`).
    resume:
        A run folder to continue instead (its stored configuration is used; ``config``
        must then be None or equal to it).
    executor, ray_address:
        ``local`` worker processes or a ``ray`` cluster (see :mod:`harness.execution.executor`).
    progress:
        Show a progress bar on stderr.
    argv:
        The command line to record in ``run.json`` (default: ``sys.argv``).
    echo:
        Where the suite's console tables go (e.g. the drift matrix; default: the
        ``harness`` logger at INFO level).

    Returns
    -------
    Run
        The handle on the run folder, its summary and report written.

    Raises
    ------
    harness.config.ConfigError, harness.suite.SuiteError, harness.registry.UnknownEngine,
    harness.vocab.VocabularyError, harness.store.run_store.StoreError,
    harness.execution.executor.ExecutorError
        Each with a one-line message; nothing is lost of what was already measured.
    """
    from harness.analysis.finalize import finalize
    from harness.execution import session
    from harness.execution.executor import ExecutorError
    from harness.store.run_store import RunStore

    resume_path = Path(resume) if resume is not None else None
    if resume_path is not None and config is not None:
        stored = RunStore.open(resume_path).read_meta()["config"]
        if config.to_dict() != RunConfig.from_dict(stored).to_dict():
            raise ValueError(f"{resume_path}: --resume continues the stored run; the given "
                             "configuration differs from it")
    if executor == "ray":  # before any run folder exists
        from harness.execution.ray_cluster import require_ray

        require_ray()
    elif ray_address:
        raise ExecutorError("--ray-address needs --executor ray")
    store = session.run(config if resume_path is None else None,
                        Path(results) if results is not None else default_results(),
                        resume=resume_path, argv=argv, progress=progress, executor=executor,
                        ray_address=ray_address)
    finalize(store, echo=echo or log.info)
    handle = Run(store.path, Path(reports) / store.path.name if reports is not None else None)
    handle.report()
    return handle
