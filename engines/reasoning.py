"""Reasoning-then-answer requests: the request model (:class:`ReasoningSpec`) and the native
forms adapters build from it (:meth:`engines.protocol.EngineAdapter.compile_reasoning`).

The language of a request: ``open`` + ``T`` + ``close`` + ``J``, with ``T`` any text
that does not contain ``close`` (at most ``max_chars`` characters or ``max_tokens``
tokens, in whichever unit the engine's form can bound; None: unbounded) and ``J`` a JSON
value valid against the schema. The output can never end inside the reasoning.

Native forms: XGrammar's structural tag (``sequence(tag(open, any_text, close),
json_schema)``, :func:`xgrammar_structural_tag`), an llguidance Lark grammar with a lazy
free-text rule and ``%json`` (:func:`lark_grammar`), and one regex for engines that read
only regexes (:func:`regex`, no length bound: a counted repetition of the free text
would multiply a DFA's states by it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ReasoningSpec", "lark_grammar", "regex", "xgrammar_structural_tag"]


@dataclass(frozen=True)
class ReasoningSpec:
    """A reasoning section between ``open`` and ``close`` (bounded by ``max_chars``
    characters and/or ``max_tokens`` tokens where the engine can bound it), then a JSON
    value valid against ``schema_text``."""

    schema_text: str
    open: str = "<think>"
    close: str = "</think>"
    max_chars: int | None = 400
    max_tokens: int | None = 100

    def __post_init__(self) -> None:
        if not self.close:
            raise ValueError("a reasoning section needs a stop string")


def xgrammar_structural_tag(spec: ReasoningSpec) -> dict[str, Any]:
    """The request as an XGrammar structural tag (``max_chars`` bounds the free text)."""
    text: dict[str, Any] = {"type": "any_text"}
    if spec.max_chars is not None:
        text["max_chars"] = spec.max_chars
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": spec.open, "content": text, "end": spec.close},
        {"type": "json_schema", "json_schema": json.loads(spec.schema_text)}]}}


def lark_grammar(spec: ReasoningSpec) -> str:
    """The request as an llguidance Lark grammar: the free text a lazy lexeme that ends at
    the first stop string (``max_tokens`` bounds it), then ``%json``."""
    from engines.tool_calls import rx_escape

    attrs = "lazy" + (f", max_tokens={spec.max_tokens}" if spec.max_tokens is not None else "")
    return "\n".join([
        "%llguidance {}",
        f"start: {json.dumps(spec.open)} think answer",
        f"think[{attrs}]: /(?s:.*){rx_escape(spec.close)}/",
        f"answer: %json {json.dumps(json.loads(spec.schema_text))}", ""])


def regex(spec: ReasoningSpec, schema_regex: Callable[[str], str]) -> str:
    """The request as one regular expression, ``schema_regex(schema_text)`` giving the
    answer's (e.g. outlines-core's ``build_regex_from_schema``); unbounded free text."""
    from engines.tool_calls import rx_escape, text_regex

    return (rx_escape(spec.open) + text_regex(spec.close) + rx_escape(spec.close)
            + schema_regex(spec.schema_text))
