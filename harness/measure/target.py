"""What a job compiles and how its outputs are judged: a JSON schema or a grammar.

A case payload carries a JSON schema (``schema_text``) or, for the grammar suite, a
``grammar`` block (family, source dialect, every form; :mod:`harness.suite.grammar_corpus`).
:func:`target_for` turns either into a :class:`Target`, so that the token-level jobs
(replay, ``mask-diff``, ``fuzz``) never ask which suite they run:

- :meth:`Target.compile` hands the engine the constraint in a form it reads — the schema,
  or the first of the engine's ``grammar_dialects`` the case has a form in — and records
  which (``form``);
- :meth:`Target.judge` decides a finished output: strict JSON + ``jsonschema``, or the
  grammar's ground-truth parser (:mod:`harness.measure.languages`);
- :meth:`Target.translations` says, for a grammar, where each translation's own reader
  disagrees with the ground truth on a text (a translation defect of ours, never an
  engine's false reject or accept).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from engines.protocol import CompileError, CompiledGrammar, EngineAdapter
from harness.measure.validate import Judgement
from harness.records import CasePayload

if TYPE_CHECKING:
    from harness.measure.languages import Reader


class FormDisagreement(TypedDict):
    """A translated form whose reader disagrees with the ground truth on a text."""

    dialect: str
    verdict: bool        # the form's reader
    truth: bool          # the ground truth

__all__ = ["GrammarTarget", "SchemaTarget", "Target", "target_for"]


class Target:
    """The constraint of one case (see the module docstring)."""

    kind: str = ""
    #: the dialect the last :meth:`compile` handed the engine (``"json-schema"``, ``"regex"``…)
    form: str | None = None
    #: True when that form was derived by code rather than written in the case file
    derived: bool = False
    #: the construct whose meaning differs between dialects (a grammar case marked
    #: ``dialect_sensitive``): an engine's disagreement there is a dialect difference
    dialect_sensitive: str | None = None
    #: that construct as one regex atom (``\\d``…), tested alone through the engine
    #: (:mod:`harness.measure.dialect`); None when the case names none
    dialect_construct: str | None = None

    def compile(self, adapter: EngineAdapter) -> CompiledGrammar:
        """Compile for ``adapter``; raises :class:`~engines.protocol.CompileError`."""
        raise NotImplementedError

    def judge(self, raw: bytes) -> Judgement:
        """``{"valid": True|False|None, "why": …}`` for a finished output (None: undecided)."""
        raise NotImplementedError

    def maybe_complete(self, raw: bytes) -> bool:
        """False when ``raw`` certainly cannot be a whole output (skips :meth:`judge`)."""
        return True

    def names(self, tc: Any) -> list[list[int]] | None:
        """Token sequences the walk policy may spell after opening a string (schema names);
        None for grammars."""
        return None

    def translations(self, text: str, truth: bool | None) -> list[FormDisagreement]:
        """Translations whose reader disagrees with ``truth`` on ``text`` (none for schemas)."""
        return []


class SchemaTarget(Target):
    """A JSON schema: ``adapter.compile_case``; judged by strict JSON + jsonschema."""

    kind = "json-schema"

    def __init__(self, case: CasePayload) -> None:
        from harness.measure.groundtruth import GroundTruth

        self.case = case
        self.text = case["schema_text"]
        self.truth = GroundTruth.for_case(case)

    def compile(self, adapter: EngineAdapter) -> CompiledGrammar:
        self.form = "json-schema"
        return adapter.compile(self.text)

    def judge(self, raw: bytes) -> Judgement:
        return self.truth.judge(raw)

    def maybe_complete(self, raw: bytes) -> bool:
        tail = raw.rstrip(b" \t\n\r")
        return bool(tail) and tail[-1] in b'}]"0123456789el'

    def names(self, tc: Any) -> list[list[int]] | None:
        from harness.measure.tokens.policy import schema_names

        return schema_names(tc, self.text)


class GrammarTarget(Target):
    """A grammar case: compiled from the first form the engine reads; judged by the
    reader of the source form."""

    kind = "grammar"

    def __init__(self, case: CasePayload) -> None:
        from harness.measure.languages import reader

        g = case["grammar"]
        self.family: str = g["family"]
        self.source: str = g["source"]
        self.forms: dict[str, Any] = g["forms"]
        self.derived_forms = set(g.get("derived") or ())
        self.dialect_sensitive = g.get("dialect_sensitive")
        self.dialect_construct = g.get("dialect_construct")
        self.text = case.get("schema_text") or ""
        self.truth = reader(self.source, self.forms[self.source])
        self._readers: dict[str, Reader | None] | None = None

    def form_for(self, adapter: EngineAdapter) -> str:
        """The dialect ``adapter`` is given: the first of its ``grammar_dialects`` the case
        has a form in. Raises :class:`CompileError` when there is none."""
        for d in adapter.grammar_dialects:
            if d in self.forms and d != "choice":
                return d
        reads = ", ".join(adapter.grammar_dialects) or "no grammar dialect"
        has = ", ".join(d for d in self.forms if d != "choice")
        raise CompileError(f"{adapter.label} reads {reads}; this {self.family} case has "
                           f"forms in {has} only")

    def compile(self, adapter: EngineAdapter) -> CompiledGrammar:
        self.form = None
        d = self.form_for(adapter)
        self.form, self.derived = d, d in self.derived_forms
        return adapter.compile_grammar(d, self.forms[d])

    def verdict(self, text: str) -> bool | None:
        return self.truth(text)

    def form_verdict(self, dialect: str, text: str) -> bool | None:
        """The verdict of the form in ``dialect`` by its own reader (None: no reader built)."""
        if dialect == self.source:
            return self.truth(text)
        r = self._form_readers().get(dialect)
        return r(text) if r is not None else None

    def _form_readers(self) -> dict[str, Reader | None]:
        from harness.measure.languages import ReaderError, reader

        if self._readers is None:
            self._readers = {}
            for d, t in self.forms.items():
                if d == self.source:
                    continue
                try:
                    self._readers[d] = reader(d, t)
                except ReaderError:
                    self._readers[d] = None
        return self._readers

    def judge(self, raw: bytes) -> Judgement:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"valid": False, "why": f"not UTF-8: {e}"}
        v = self.truth(text)
        if v is None:
            return {"valid": None, "why": "text too long for the ground-truth parser"}
        return {"valid": True} if v else {"valid": False,
                                          "why": f"not in the language ({self.source} ground truth)"}

    def translations(self, text: str, truth: bool | None) -> list[FormDisagreement]:
        if truth is None:
            return []
        out: list[FormDisagreement] = []
        for d, r in self._form_readers().items():
            if r is None:
                continue
            v = r(text)
            if v is not None and v is not truth:
                out.append({"dialect": d, "verdict": v, "truth": truth})
        return out


def target_for(case: CasePayload) -> Target:
    """The :class:`Target` of a job payload's case: a grammar when it carries ``grammar``,
    else its JSON schema."""
    if case.get("grammar") is not None:
        return GrammarTarget(case)
    return SchemaTarget(case)
