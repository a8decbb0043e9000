"""Hazard 6, reasoning before the answer: a free-text section, then the schema.

Reasoning models write ``<think> … </think>`` before the answer; a server that constrains
the answer must leave the reasoning free, enforce the schema after the stop string, and
never let the output end inside the reasoning (vLLM #52594: the schema silently skipped).
Each adapter compiles the request (:meth:`engines.protocol.EngineAdapter.compile_reasoning`)
in its engine's own form (:mod:`engines.reasoning`):

- xgrammar: a structural tag, ``sequence(tag("<think>", any_text(max_chars), "</think>"),
  json_schema)``;
- llguidance: Lark with a free-text rule, a lazy lexeme that ends at the first
  ``</think>`` and at most :data:`MAX_TOKENS` tokens, then ``%json``;
- outlines-core: one regex, ``<think>`` + a text without ``</think>``
  (:func:`engines.tool_calls.text_regex`) + ``</think>`` + the schema's regex (no length
  bound: a counted repetition of that text would multiply the DFA's states by it).

:func:`measure` then replays fixed texts: the mask cost inside the free text against the
cost inside the answer (µs per token, median), whether an answer that breaks the schema
is refused after the stop string, whether the output may end inside the reasoning with
the JSON written there (the JSON *leaks* into the reasoning and the answer is never
constrained), and whether the length bound holds.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from suites.hazards.records import HazardBlock

if TYPE_CHECKING:
    from harness.suite.engines import ReasoningSpec

__all__ = ["ANSWER_INVALID", "ANSWER_VALID", "SCHEMA", "measure", "spec"]

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
OPEN, CLOSE = "<think>", "</think>"
#: Length bound of the reasoning: characters (xgrammar), tokens (llguidance).
MAX_CHARS = 400
MAX_TOKENS = 100
REASONING = ("Let me think about what the user asked. They want a person's record with a "
             "name and an age; the name is Ann and she is thirty years old, so the age is "
             "the integer 30. I will answer with the JSON object only.")
ANSWER_VALID = '{"name": "Ann", "age": 30}'
ANSWER_INVALID = '{"name": "Ann", "age": "thirty"}'
#: A reasoning text longer than either bound (characters and tokens).
TOO_LONG = ("lorem ipsum dolor sit amet " * 40).strip()


def spec() -> "ReasoningSpec":
    """The request every engine gets (:class:`engines.reasoning.ReasoningSpec`)."""
    from harness.suite.engines import ReasoningSpec

    return ReasoningSpec(json.dumps(SCHEMA), OPEN, CLOSE, MAX_CHARS, MAX_TOKENS)


def _replay(compiled, vocab, pieces: list[str]):
    from harness.suite.engines import allocate_bitmask
    from harness.suite.measure import replay

    toks: list[int] = []
    for p in pieces:
        toks += vocab.encode(p)
    return replay(compiled.matcher(), toks, allocate_bitmask(vocab.size), vocab.stop_ids), toks


def measure(compiled, vocab) -> HazardBlock:
    """The four checks of the module docstring: ``free_text_us`` / ``answer_us`` (median
    mask fill, µs per token, inside the reasoning and inside the answer), ``enforced``
    (the invalid answer refused and the valid one accepted), ``leak`` (EOS allowed right
    after ``<think>`` + the JSON), ``bounded`` (a reasoning longer than the bound is
    refused), each with its witness text."""
    out: HazardBlock = {}
    good, toks = _replay(compiled, vocab, [OPEN, REASONING, CLOSE, ANSWER_VALID])
    n_open = len(vocab.encode(OPEN))
    n_free = len(vocab.encode(REASONING))
    n_close = len(vocab.encode(CLOSE))
    out["valid_status"] = good.status
    if good.mask_ns and len(good.mask_ns) == len(toks):
        free = good.mask_ns[n_open:n_open + n_free]
        ans = good.mask_ns[n_open + n_free + n_close:]
        out["free_text_us"] = float(np.median(free)) / 1e3 if free else None
        out["answer_us"] = float(np.median(ans)) / 1e3 if ans else None
    bad, _ = _replay(compiled, vocab, [OPEN, REASONING, CLOSE, ANSWER_INVALID])
    out["invalid_status"] = bad.status
    out["enforced"] = good.status == "accepted" and bad.status != "accepted"
    leak, _ = _replay(compiled, vocab, [OPEN, ANSWER_VALID])
    out["leak"] = leak.status == "accepted"
    out["leak_witness"] = OPEN + ANSWER_VALID
    long_, _ = _replay(compiled, vocab, [OPEN, TOO_LONG, CLOSE, ANSWER_VALID])
    out["bounded"] = long_.status != "accepted"
    out["too_long_chars"] = len(TOO_LONG)
    if not out["enforced"]:
        out["witness"] = (OPEN + "…" + CLOSE + ANSWER_INVALID if bad.status == "accepted"
                          else f"the valid answer came back {good.status}")
    return out
