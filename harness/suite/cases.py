"""Cases: what a suite hands the runner. Suites never time anything.

A :class:`Case` is one schema with its test instances. A case whose source file could
not be read carries ``load_error`` (one line) instead of a schema: the runner records it
as a ``bad_input`` outcome and goes on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol

__all__ = ["Case", "Instance", "Suite", "SuiteBase", "SuiteError", "VerdictModel",
           "corpus_candidates", "find_corpus", "round_robin", "unique_schema"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Instance:
    """One test instance: the JSON value and the corpus's claim about its validity.

    ``text``, when set, is the exact JSON text to replay (the ``drift`` probes: whitespace,
    key order, duplicate keys and number forms only exist in the bytes). The worker then
    replays that text alone, recorded under the serialisation name ``text``, and computes
    ground truth on its strict parse (``data`` is informative only).
    """

    index: int
    data: Any
    label_valid: bool
    description: str = ""
    text: str | None = None

    def to_job(self) -> dict[str, Any]:
        """The instance in a job payload: ``{"index", "data", "label"}``, and ``"text"``
        when the instance is an exact text."""
        out = {"index": self.index, "data": self.data, "label": self.label_valid}
        if self.text is not None:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class Case:
    """One schema and its instances.

    ``case_id`` is unique within the suite (for the corpus suites: the file name);
    ``schema_text`` is the exact text handed to engines (``json.dumps`` of the schema).
    """

    suite: str
    case_id: str
    subset: str
    source: str
    schema: Any = None
    schema_text: str = ""
    instances: tuple[Instance, ...] = ()
    load_error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: (uri, schema) pairs that ground truth may resolve ``$ref`` against, offline
    #: (e.g. the JSON-Schema-Test-Suite's ``remotes/``). Engines never see them.
    resources: tuple[tuple[str, Any], ...] = ()
    #: Validator for ground truth when the schema has no ``$schema`` ("draft7",
    #: "draft2020-12", ...; None = Draft 2020-12). The schema handed to engines is unchanged.
    default_draft: str | None = None
    #: Ground truth checks ``format`` (True) or treats it as an annotation (False).
    format_assertion: bool = True
    #: Where the expected verdict comes from: "jsonschema" (its verdict; the label only where
    #: it cannot decide) or "label" (the corpus is the specification: the JSON-Schema-Test-Suite).
    expected_from: str = "jsonschema"
    #: A request of the serve suite (stream, rate, mode, index, arrival time...); travels
    #: with the job as ``case["request"]``.
    request: dict[str, Any] | None = None
    #: A grammar case (suite ``grammars``): family, source dialect and every form
    #: (:meth:`harness.suite.grammar_corpus.GrammarCase.payload`); travels as ``case["grammar"]``.
    grammar: Mapping[str, Any] | None = None

    def to_job(self) -> dict[str, Any]:
        """The picklable payload a worker needs (no file access in the worker); each
        instance as :meth:`Instance.to_job`."""
        job: dict[str, Any] = {
            "suite": self.suite,
            "case_id": self.case_id,
            "subset": self.subset,
            "source": self.source,
            "schema_text": self.schema_text,
            "instances": [i.to_job() for i in self.instances],
            "resources": list(self.resources),
        }
        if self.default_draft is not None:
            job["default_draft"] = self.default_draft
        if not self.format_assertion:
            job["format_assertion"] = False
        if self.expected_from != "jsonschema":
            job["expected_from"] = self.expected_from
        if self.request is not None:
            job["request"] = self.request
        if self.grammar is not None:
            job["grammar"] = self.grammar
        return job


class SuiteError(Exception):
    """The suite cannot produce cases at all (missing corpus, bad option)."""


class Suite(Protocol):
    """What the harness asks of a suite object (built with ``data``, ``subsets``,
    ``sample`` and ``schemas``)."""

    name: str

    def cases(self) -> Iterator[Case]: ...

    def case_ids(self) -> list[str]: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class VerdictModel:
    """What a suite's verdict counts and what it is judged by: one per suite class.

    :func:`harness.analysis.verdict.headline` reads it to compute every suite's headline
    the same way from the run's records.

    Attributes
    ----------
    unit, units:
        What one verdict is about, singular and plural (``"schema"``, ``"grammar case"``,
        ``"served request"``): the words of every headline column.
    truth:
        Where the verdict's truth comes from, in words (``"jsonschema on the corpus's
        labelled instances"``, ``"the reference engine's masks (oracle witnesses)"``).
    label_split:
        True only for verdicts decided on a corpus's labelled instances (MaskBench's): the
        headline judges a unit on the instances where jsonschema and the corpus label
        agree, and counts the others apart. False: a unit's outcome is its record's.
    units_from:
        ``"module:function"``, ``function(record) -> bool``: which records are units of the
        verdict (the serve suite's unconstrained twin stream and its canaries are not);
        None: every record.
    extra:
        ``"module:function"``, ``function(records, meta) -> {engine: {key: value}}``: the
        suite's own headline figures beside the common ones; a ``"alerts"`` list among them
        is printed as lines of the verdict (e.g. "NOT ENFORCED: …").
    """

    unit: str = "schema"
    units: str = "schemas"
    truth: str = "jsonschema on each instance"
    label_split: bool = False
    units_from: str | None = None
    extra: str | None = None


class SuiteBase:
    """A suite is one plug-in: besides its cases, its class declares what the harness does
    with them, as lazy ``"module:attribute"`` targets, so that shared code never asks which
    suite it runs.

    Attributes
    ----------
    name:
        The ``--suite`` name (also each case's ``suite``).
    job:
        ``"module:function"`` the worker runs for each (case, engine) job,
        ``function(job: dict, phase) -> record``; None = the token-by-token replay.
    run_options:
        ``"module"`` holding the suite's own ``harness run`` options: ``DEFAULTS`` (config
        key → default), ``add_run_arguments(parser)`` and ``config_from_args(args)``. The
        job payload's ``options`` holds those keys' values.
    summary_blocks:
        ``"module:function"`` each called as ``function(summary, meta, records, run_dir)``
        after the summary is built: it may add its block to ``summary`` (and files to the
        run folder) and returns console text, or None.
    report_sections:
        ``"module:function"`` each a report section builder ``function(ctx)``, returning a
        section, a list of sections, or None when the runs hold none of its data.
    executor:
        ``"module:Class"`` that runs the suite's jobs instead of the worker pool (the serve
        suite's requests go to servers), built as ``Class(store, config=..., on_record=...)``
        with a ``run(jobs)`` that ends each job as one record; None = the ``--executor``.
    uses_options:
        True: the suite is built with ``options=`` (its run options) besides the selection.
    verdict:
        Its :class:`VerdictModel`: the unit its headline counts and the truth it judges by.
    smoke:
        The :class:`harness.config.RunConfig` fields of a tiny run of the suite (a case or
        two; the engines are the test's choice), which the test suite runs to check that the
        headline recomputed from the records equals ``summary.json``'s; None: the suite has
        not declared one.
    """

    name: str = ""
    job: str | None = None
    run_options: str | None = None
    summary_blocks: tuple[str, ...] = ()
    report_sections: tuple[str, ...] = ()
    executor: str | None = None
    uses_options: bool = False
    #: False: the records hold no token replay, and the console shows only the suite's
    #: own summary blocks, not the replay table.
    replay_table: bool = True
    verdict: VerdictModel = VerdictModel()
    #: ``"module:function"``, ``function(meta, records) -> {row: {figure: {"value", "ci",
    #: "worse"}}}``: figures the gate holds against a baseline beside the outcomes (``worse``
    #: ``"down"`` or ``"up"``; ``ci`` the figure's 95% interval). None: none.
    gate_figures: str | None = None
    smoke: dict[str, Any] | None = None


def round_robin(queues: list[list[Any]], n: int) -> list[Any]:
    """Up to ``n`` items taken one from each queue in turn (a stratified sample: a queue
    that runs out leaves its share to the others). Deterministic."""
    out: list[Any] = []
    depth = 0
    while len(out) < n and any(depth < len(q) for q in queues):
        for q in queues:
            if depth < len(q) and len(out) < n:
                out.append(q[depth])
        depth += 1
    return out


def corpus_candidates(name: str, data: str | None) -> list[Path]:
    """Where a corpus named ``name`` may be, in order: ``--data DIR``; else
    ``$HARNESS_DATA/<name>`` then ``$HARNESS_DATA``; else ``../shared/corpora/<name>``
    beside the current directory, then beside the project's source tree (the same folder
    for a clone used in place; an installed harness has only the first)."""
    if data:
        return [Path(data)]
    if os.environ.get("HARNESS_DATA"):
        root = Path(os.environ["HARNESS_DATA"])
        return [root / name, root]
    here = Path.cwd().resolve().parent / "shared" / "corpora" / name
    beside = PROJECT_ROOT.parent / "shared" / "corpora" / name
    return [here] if here == beside else [here, beside]


def find_corpus(name: str, data: str | None, looks_right: Callable[[Path], bool],
                missing: str) -> Path:
    """The first candidate folder that ``looks_right``; else :class:`SuiteError` naming
    the first candidate and saying how to get the corpus (``missing``)."""
    candidates = corpus_candidates(name, data)
    for c in candidates:
        if c.is_dir() and looks_right(c):
            return c
    raise SuiteError(missing.format(path=candidates[0]))


def unique_schema(schema: Any, i: int) -> Any:
    """``schema`` made unique for request ``i`` without changing what it accepts beyond one
    optional property: objects with ``properties`` get ``req_<i>`` (an integer); anything
    else is wrapped as ``{"allOf": [schema], "$comment": ...}``."""
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        out = dict(schema)
        out["properties"] = {**schema["properties"], f"req_{i}": {"type": "integer"}}
        return out
    return {"allOf": [schema], "$comment": f"request {i}"}
