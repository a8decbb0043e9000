"""The library entry point: :func:`run` a :class:`~harness.config.RunConfig`, get a
:class:`Run` back. The ``harness`` command line is a thin wrapper around it.

Messages (engines not run, bad corpus files, the suites' console tables) go through the
``harness`` logger; the CLI prints them on stderr.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from harness.config import RunConfig

if TYPE_CHECKING:
    import pandas as pd

    from harness.measure.lint import LintResult
    from harness.records import Record, RunMeta, Summary

__all__ = ["Run", "run", "summarize", "make_report", "baseline", "gate", "explain", "lint", "GateOutcome",
           "InputError", "default_results", "default_reports"]

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

    def meta(self) -> RunMeta:
        """``run.json``: configuration, engines, tokenizer, limits, machine, sessions."""
        return self._store.read_meta()

    def config(self) -> RunConfig:
        """The run's configuration."""
        return RunConfig.from_dict(self.meta()["config"])

    def summary(self) -> Summary:
        """``summary.json`` as a dict (rebuilt from the records first when missing or of an
        older format).

        Raises
        ------
        harness.store.run_store.StoreError
            When the summary is of a format version this harness does not read."""
        from harness.store.run_store import SUMMARY_FORMAT, check_format

        path = self.path / "summary.json"
        summary: Summary = json.loads(path.read_text()) if path.exists() else {"format": 0}
        if summary.get("format", 1) < SUMMARY_FORMAT:
            # missing, or written before the headline existed: rebuilt from the records
            from harness.analysis.finalize import finalize

            finalize(self._store, echo=None)
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


class InputError(ValueError):
    """A command's input cannot be used (no run folder, not a baseline, a malformed
    record...): a one-line message naming the file and the problem; nothing is written."""


def run(config: RunConfig | None, *, results: str | Path | None = None,
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
    engines.vocab.VocabularyError, harness.store.run_store.StoreError,
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
    # the class the configuration resolved; a resumed run's is looked up by its stored name
    finalize(store, echo=echo or log.info,
             suite=config.suite_class if config is not None else None)
    handle = Run(store.path, Path(reports) / store.path.name if reports is not None else None)
    handle.report()
    return handle


def summarize(run: str | Path, reports: str | Path | None = None,
              echo: Callable[[str], Any] | None = None) -> Summary:
    """Rebuild a run folder's ``summary.json`` and Parquet tables from its records (safe on a
    run still going), write its report into ``reports`` (default :func:`default_reports` /
    run id), and return the summary; the suite's own console tables go to ``echo`` (None:
    dropped). Raises :class:`InputError`."""
    from harness.analysis.finalize import finalize
    from harness.store.run_store import RunStore, StoreError

    try:
        store = RunStore.open_readonly(Path(run))
    except StoreError as e:
        raise InputError(str(e)) from None
    summary = finalize(store, echo=echo)
    make_report([store.path],
                Path(reports) if reports is not None else default_reports() / store.path.name)
    return summary


def make_report(runs: "list[str | Path]", out: str | Path) -> tuple[Path, Path]:
    """Write ``out/report.html`` (self-contained, offline) and ``out/report.md`` (with its
    plots) of one or more run folders (several: side by side, with a diff against the
    first); returns their paths. Reads the run folders only. Raises :class:`InputError`."""
    from harness.report.html import write_reports
    from harness.store.run_store import StoreError

    try:
        return write_reports([Path(p) for p in runs], Path(out))
    except StoreError as e:
        raise InputError(str(e)) from None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"cannot build the report: malformed run data ({type(e).__name__}: "
                         f"{e})") from None


def baseline(run: str | Path, output: str | Path, *, comment: str | None = None,
             command: str | None = None) -> dict[str, Any]:
    """Write a gate baseline of the run folder ``run`` to ``output`` (expected outcome per
    (engine, unit), the headline's latency figures and the per-schema sketches) and return
    it. ``command`` is stored as the command that refreshes it. Raises :class:`InputError`."""
    from harness.analysis.baseline import BaselineError, make_baseline, write_baseline
    from harness.store.run_store import StoreError

    try:
        data = make_baseline(Path(run), command=command, comment=comment)
        write_baseline(data, Path(output))
    except (StoreError, BaselineError) as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{output}: cannot write: {e.strerror or e}") from None
    return data


@dataclass
class GateOutcome:
    """What :func:`gate` found: the checks (``result``), their text as ``harness gate`` prints
    it, and the exit code (0 pass, 1 regression)."""

    result: Any
    text: str

    @property
    def passed(self) -> bool:
        return not self.result.failed

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def gate(baseline: str | Path, run: str | Path, *, threshold: float = 0.2,
         confidence: float = 0.95, bootstrap: int = 2000, seed: int = 0, latency: str = "gate",
         compare: "list[str] | tuple[str, ...]" = (), junit: str | Path | None = None,
         refresh: str | None = None) -> GateOutcome:
    """Check the run folder ``run`` against a baseline file: headline alerts, the outcome
    ratchet per (engine, unit), latency ratios with bootstrap intervals (see
    :mod:`harness.analysis.gate`). ``compare`` pairs ``BASE=RUN`` judge a run row against
    another baseline row; ``junit`` also writes a JUnit XML file. Raises :class:`InputError`
    for input that cannot be gated."""
    from harness.analysis import gate as g
    from harness.analysis.baseline import BaselineError, read_baseline
    from harness.store.run_store import RunStore, StoreError

    if threshold < 0:
        raise InputError(f"--threshold must be ≥ 0 (a fraction: 0.2 = +20 %), got {threshold}")
    if not 0.5 <= confidence < 1:
        raise InputError(f"--confidence must be in [0.5, 1), got {confidence}")
    if bootstrap < 100:
        raise InputError(f"--bootstrap must be ≥ 100 resamples, got {bootstrap}")
    try:
        base = read_baseline(Path(baseline))
        store = RunStore.open_readonly(Path(run))
        meta = store.read_meta()
        records = list(store.records())
    except (BaselineError, StoreError) as e:
        raise InputError(str(e)) from None
    if not records:
        raise InputError(f"{store.records_path}: no records: nothing to gate")
    try:
        renamed = g.rename_rows(records, meta, list(compare))
        records, meta = renamed
    except ValueError as e:
        raise InputError(f"--compare: {e}") from None
    b_primary = base.get("run", {}).get("primary_serialization")
    r_primary = meta.get("config", {}).get("primary", "ascii")
    if b_primary and b_primary != r_primary:
        raise InputError(f"{run}: primary serialisation {r_primary}, baseline {baseline} uses "
                         f"{b_primary}: outcomes are not comparable")
    try:
        result = g.run_gate(base, meta, records, threshold=threshold, confidence=confidence,
                            n_boot=bootstrap, seed=seed, latency=latency)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{store.records_path}: malformed records ({type(e).__name__}: {e})") from None
    refresh = refresh or f"harness baseline {run} -o {baseline}"
    brun = base.get("run", {})
    head = [f"harness gate: run {run} ({meta.get('run_id')}, commit {meta.get('git_commit')}) "
            f"against baseline {baseline} (run {brun.get('run_id')}, commit "
            f"{brun.get('git_commit')}, written {base.get('created_at')})"]
    if junit is not None:
        try:
            g.write_junit(result, Path(junit), refresh)
        except OSError as e:
            raise InputError(f"{junit}: cannot write the JUnit report: {e.strerror or e}") from None
    return GateOutcome(result, g.render_text(result, refresh, head))


def explain(run: str | Path, case: str, **kwargs: Any) -> str:
    """The text of one token-level finding of a mask-diff or fuzz run, replayed from its
    record (:func:`harness.measure.tokens.explain.explain`, which lists the keyword
    arguments). Raises :class:`InputError`."""
    from harness.measure.tokens.explain import ExplainError, explain as _explain

    try:
        return _explain(run, case, **kwargs)
    except ExplainError as e:
        raise InputError(str(e)) from None


def lint(files: "list[str | Path]", engines: str | None = None,
         **kwargs: Any) -> "LintResult":
    """Every node × keyword × engine verdict of schema ``files``
    (:func:`harness.measure.lint.lint_files`, which lists the keyword arguments): a
    :class:`harness.measure.lint.LintResult`. Raises :class:`InputError` on bad input."""
    from harness.measure.lint import LintError, lint_files

    try:
        return lint_files(list(files), engines, **kwargs)
    except LintError as e:
        raise InputError(str(e)) from None
