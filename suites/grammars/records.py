"""The grammars suite's record keys and summary blocks, typed: a grammar job (one grammar
case: regex, choice or CFG, compiled in the first form the engine has, its instances
replayed, :mod:`suites.grammars.job`) adds top-level keys to the record; its summary
block is ``summary["grammars"]``, and ``summary["grammar_translation"]`` where fuzz or
mask-diff ran on the grammar corpus (:mod:`suites.grammars.summary`). Times are integer
nanoseconds in the record, ``_us`` / ``_ms`` in the summary."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.suite import InstanceRecord, Record, Summary
from harness.suite.grammar_corpus import Forms, GrammarPayload

__all__ = ["DialectExplained", "DialectFinding", "DialectNotExplained", "FamilyRow", "Forms",
           "GrammarInstance", "GrammarPayload", "GrammarRecord", "GrammarsSummary",
           "GrammarsSummaryBlock", "TranslationDrift", "TranslationFinding", "WrongInstance"]



class GrammarInstance(InstanceRecord, total=False):
    """An instance of a grammar record (an exact text, replayed as ``text``)."""

    dialect_probe: dict[str, Any]  # a verdict the construct alone did not explain


class TranslationFinding(TypedDict, total=False):
    """An instance on which the translated form's reader and the ground truth disagree
    (left out of the instances: the translation's defect, not the engine's)."""

    index: int
    text: str
    truth: bool
    dialect: str         # the form the engine was given
    form_verdict: bool
    status: str          # the engine's replay status


class DialectFinding(TypedDict, total=False):
    """An instance whose verdict a dialect difference of one construct explains."""

    index: int
    text: str
    truth: bool
    status: str
    construct: str
    probe: dict[str, Any]  # harness.measure.dialect.ConstructProbe.explain's answer
    reject_kind: str
    reachable_tokens: list[int]


class GrammarRecord(Record, total=False):
    """A grammar job's record: the core keys (instances typed above) plus its own."""

    family: str          # regex | choice | cfg
    grammar_size: int    # an injected alternation's size (``[inject]`` cases)
    form: str | None     # the form the engine was given
    form_derived: bool   # that form was translated from the case's source
    translation: list[TranslationFinding]
    dialect: list[DialectFinding]


class FamilyRow(TypedDict):
    """One (family, engine) row: counts of cases or instances unless named."""

    family: str
    engine: str
    cases: int
    compiled: int
    coverage: float | None        # compiled / cases
    forms: dict[str, int]         # form → cases compiled in it
    compile_errors: int
    deaths: int
    false_rejects: int
    false_reject_kinds: dict[str, int]
    false_accepts: int
    mask_commit: int              # mask and commit disagreed
    dialect: int
    translation: int
    tokens: int
    tbm_p50_us: float | None
    tbm_p99_us: float | None
    ttfm_p50_ms: float | None


class WrongInstance(TypedDict, total=False):
    """A false accept or false reject, for the report."""

    engine: str
    case: str
    form: str | None
    index: int
    text: str
    status: str
    reject_kind: str
    why: str


class TranslationDrift(TypedDict):
    """A text on which a translated form's reader disagrees with the ground truth, once per
    (case, dialect, text)."""

    case: str
    dialect: str
    text: str
    truth: bool
    translation_says: bool | None
    where: str           # "instance" or "fuzz output of <engine>"


class DialectExplained(TypedDict):
    """An engine verdict off the ground truth that the construct alone explains."""

    engine: str
    case: str
    form: str | None
    construct: str
    text: str
    truth: bool
    status: str
    chars: dict[str, bool | None] | None  # character → the engine's verdict on it alone


class DialectNotExplained(TypedDict):
    """An engine verdict off the ground truth that the construct alone does not explain."""

    engine: str
    case: str
    form: str | None
    construct: str | None
    text: str
    truth: bool | None
    status: str | None
    reject_kind: str | None
    why: str | None


class GrammarsSummaryBlock(TypedDict):
    """``summary["grammars"]``."""

    table: list[FamilyRow]
    sizes: dict[str, dict[str, dict[str, float | None]]]  # file → engine → size → TTFM ms
    translation: list[TranslationDrift]
    dialect: list[DialectExplained]
    dialect_not_explained: list[DialectNotExplained]
    false_accepts: list[WrongInstance]
    false_rejects: list[WrongInstance]
    false_reject_kinds: dict[str, dict[str, int]]  # engine → kind → count


class GrammarsSummary(Summary, total=False):
    """``summary.json`` of a grammars run (``grammar_translation``: of fuzz or mask-diff
    on the grammar corpus)."""

    grammars: GrammarsSummaryBlock
    grammar_translation: list[TranslationDrift]
