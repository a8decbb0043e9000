"""Hazard 2, one bad tool among many: a tool-call request with :data:`N_GOOD` ordinary
tools and one whose parameters schema the engine cannot compile.

The bad tool is the first of :data:`BAD_SCHEMAS` that the engine refuses as a schema on
its own (a lookbehind ``pattern``, which Python's ``re`` and so jsonschema accept, but
no DFA-based engine does; then a malformed pattern; then a ``$ref`` to nowhere). The
request (Hermes/Qwen ``<tool_call>`` format, ``tool_choice=required``: one call) goes
through the engine's own tool-call form (:meth:`engines.protocol.EngineAdapter.
compile_tool_calls`). Verdicts:

``refused``       the whole request is refused (the engine's one-line error is the witness);
                  every ordinary tool is lost with it (llama.cpp #25923)
``others_kept``   it compiles; a call to an ordinary tool is accepted and a call to the
                  bad tool is refused (the bad tool was dropped)
``bad_loose``     it compiles and a call to the bad tool with arguments its schema forbids
                  is accepted (the bad tool became "any JSON")
``broken``        it compiles but a call to an ordinary tool is refused
a death           the worker crashed, hung or ran out of memory (the record's outcome)
"""

from __future__ import annotations

import json
from typing import Any

from suites.hazards.records import HazardBlock

__all__ = ["BAD_SCHEMAS", "N_GOOD", "good_tools", "judge", "pick_bad"]

N_GOOD = 10
FORMAT = "tool_call"
BAD_NAME = "bad_tool"
#: (schema, arguments its schema forbids, arguments jsonschema accepts) of each candidate
BAD_SCHEMAS: tuple[tuple[dict[str, Any], str, str], ...] = (
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "(?<=a)b"}},
      "required": ["s"]}, '{"s": 5}', '{"s": "ab"}'),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "("}},
      "required": ["s"]}, '{"s": 5}', '{}'),
    ({"type": "object", "properties": {"s": {"$ref": "#/$defs/missing"}}, "required": ["s"]},
     '{"t": 1}', '{}'),
)


def good_tools() -> list[tuple[str, str]]:
    """The ordinary tools: ``tool_0`` … ``tool_9``, each an object with a string and an
    integer argument (one of them an enum), distinct so no engine can merge them."""
    out = []
    for i in range(N_GOOD):
        schema = {"type": "object",
                  "properties": {"query": {"type": "string"}, f"n{i}": {"type": "integer"},
                                 "unit": {"enum": ["a", "b", f"u{i}"]}},
                  "required": ["query", f"n{i}"], "additionalProperties": False}
        out.append((f"tool_{i}", json.dumps(schema)))
    return out


def pick_bad(adapter) -> tuple[dict[str, Any], str, str, str | None]:
    """The first candidate ``adapter`` refuses alone, with its refusal; the first candidate
    and None when it refuses none."""
    from engines.protocol import CompileError, one_line

    for schema, bad_args, ok_args in BAD_SCHEMAS:
        try:
            adapter.compile(json.dumps(schema))
        except CompileError as e:
            return schema, bad_args, ok_args, one_line(e, 200)
    s, b, o = BAD_SCHEMAS[0]
    return s, b, o, None


def judge(adapter, vocab) -> HazardBlock:
    """The verdict of the module docstring, with ``witness``, ``alone`` (the bad schema's
    own refusal) and the request's size."""
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.engines import FORMATS, ToolSpec
    from harness.suite.measure import replay

    schema, bad_args, ok_args, alone = pick_bad(adapter)
    tools = good_tools()
    tools.insert(N_GOOD // 2, (BAD_NAME, json.dumps(schema)))  # in the middle of the list
    spec = ToolSpec(FORMAT, tuple(tools), choice="required")
    out: HazardBlock = {"tools": len(tools), "bad_schema": json.dumps(schema),
                           "alone": alone}
    try:
        compiled = adapter.compile_tool_calls(spec)
    except CompileError as e:
        return {**out, "verdict": "refused", "witness": one_line(e, 200)}
    fmt = FORMATS[FORMAT]
    bm = allocate_bitmask(vocab.size)

    def accepted(text: str) -> bool:
        return replay(compiled.matcher(), vocab.encode(text), bm, vocab.stop_ids).status \
            == "accepted"

    good_call = fmt.call("tool_0", '{"query": "x", "n0": 1}')
    loose_call = fmt.call(BAD_NAME, bad_args)
    bad_ok_call = fmt.call(BAD_NAME, ok_args)
    out["form"] = getattr(compiled, "form", None)
    if not accepted(good_call):
        return {**out, "verdict": "broken", "witness": f"refused: {good_call!r}"}
    if accepted(loose_call):
        return {**out, "verdict": "bad_loose",
                "witness": f"accepted {loose_call!r}, which the tool's schema forbids"}
    out["bad_valid_call_accepted"] = accepted(bad_ok_call)
    return {**out, "verdict": "others_kept",
            "witness": f"tool_0's call accepted, {loose_call!r} refused"}
