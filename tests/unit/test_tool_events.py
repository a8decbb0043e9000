"""Streaming parse events of tool calls (suites.tools.events): the value-completion rule,
the step arithmetic, and the events read from real engines' masks and forced
continuations, against what the request's names make true."""

from __future__ import annotations

import json

import pytest

from engines.bitmask import allocate_bitmask
from engines.tool_calls import ToolSpec
from engines.vocab import load_vocabulary
from harness.registry import EngineSpec
from suites.tools.events import frames, required_end, step_at, trace_events
from suites.tools.summary import event_rows
from suites.tools.truth import ToolTruth


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


def _schema(required: list[str]) -> str:
    return json.dumps({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["c", "f"]}}, "required": required})


def test_a_required_value_is_complete_at_its_last_character_or_a_number_after_it():
    args = '{"city": "Paris", "days": 12, "units": "c"}'
    assert required_end(args, ["city"]) == args.index('"Paris"') + len('"Paris"')
    # 12 could still become 120: complete once the comma is written
    assert required_end(args, ["days"]) == args.index("12") + 3
    assert required_end(args, ["city", "days"]) == args.index("12") + 3
    assert required_end(args, []) == 0
    assert required_end('{"a": {"b": [1, 2]}, "c": true}', ["a", "c"]) == \
        len('{"a": {"b": [1, 2]}, "c": true')
    assert required_end(args, ["missing"]) is None
    assert required_end("[1]", ["a"]) is None


def test_steps_count_the_tokens_written():
    ends = [3, 5, 9]  # token byte ends
    assert [step_at(o, ends) for o in (0, 1, 3, 4, 5, 6, 9)] == [0, 1, 1, 2, 2, 3, 3]


def _trace(engine: str, vocab, spec: ToolSpec, text: str):
    adapter = EngineSpec(engine).build(vocab)
    grammar = adapter.compile_tool_calls(spec)
    truth = ToolTruth(spec)
    assert truth.judge_text(text)["valid"], text
    required = {n: json.loads(s).get("required", []) for n, s in spec.tools}
    fr = frames(text, truth.parse(text).calls, spec.fmt, required)
    return trace_events(grammar, vocab.encode(text), vocab.tokens, frozenset(vocab.stop_ids),
                        fr, [n.encode() for n, _ in spec.callable_tools()],
                        allocate_bitmask(vocab.size))


@pytest.mark.parametrize("engine", ["reference", "xgrammar", "llguidance"])
def test_events_follow_the_names_the_request_offers(engine, vocab):
    """Two names that share a prefix: the shorter is decided only by its closing quote, the
    longer as soon as it leaves the shorter; a named choice is decided before any token;
    the events are in order, and the forced continuation agrees with the mask."""
    tools = (("get_weather", _schema(["city"])), ("get_weather_forecast", _schema(["city"])))
    call = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
    got = _trace(engine, vocab, ToolSpec("llama3.1", tools, "required"), call)
    (c,) = got["calls"]
    assert c["name_decided"] == c["name_written"]
    assert c["name_written"] < c["required_complete"] < c["call_end"] < got["end"]
    assert got["end"] == len(vocab.encode(call)) + 1
    assert c["lead_tokens"] == got["end"] - c["required_complete"]
    assert c["name_decided_forced"] == c["name_decided"]

    longer = call.replace('"get_weather"', '"get_weather_forecast"')
    (d,) = _trace(engine, vocab, ToolSpec("llama3.1", tools, "required"), longer)["calls"]
    assert d["name_decided"] < d["name_written"]
    written = vocab.encode(longer)
    upto = b"".join(vocab.tokens[t] for t in written[:d["name_decided"]])
    assert upto.startswith(b'{"name": "get_weather') and len(upto) > len(b'{"name": "get_weather')

    named = _trace(engine, vocab, ToolSpec("llama3.1", tools, "named",
                                           named="get_weather"), call)["calls"][0]
    assert named["name_decided"] == 0 and named["name_decided_forced"] == 0


def test_free_text_keeps_the_name_open_until_the_trigger(vocab):
    tools = (("get_weather", _schema(["city"])), ("book_hotel", _schema(["city", "days"])))
    spec = ToolSpec("tool_call", tools, "auto", parallel=True)
    text = ('Let me check.<tool_call>\n{"name": "book_hotel", "arguments": '
            '{"city": "Oslo", "days": 2}}\n</tool_call>')
    got = _trace("xgrammar", vocab, spec, text)
    (c,) = got["calls"]
    toks = vocab.encode(text)
    before = b"".join(vocab.tokens[t] for t in toks[:c["name_decided"]])
    assert b"<tool_call>" in before  # free text could go on, or end, until then
    # both required values, the 2 complete only with the closing brace after it
    complete = b"".join(vocab.tokens[t] for t in toks[:c["required_complete"]])
    assert complete.endswith(b"2}") or complete.endswith(b"2}}") or b'"days": 2}' in complete


def test_the_summary_compares_each_engine_with_the_reference(vocab):
    tools = (("get_weather", _schema(["city"])), ("get_weather_forecast", _schema(["city"])))
    spec = ToolSpec("llama3.1", tools, "required")
    call = '{"name": "get_weather_forecast", "parameters": {"city": "Rome"}}'
    recs = [{"engine": e, "case_id": "c",
             "events": [{"index": 0, **_trace(e, vocab, spec, call)}]}
            for e in ("reference", "xgrammar")]
    rows = {r["engine"]: r for r in event_rows(recs, {"ms": {"xgrammar": 2.0},
                                                      "default_ms": 1.0, "source": "t"})}
    assert rows["xgrammar"]["agree_ref"] == [1, 1] and rows["reference"]["agree_ref"] is None
    lead = recs[1]["events"][0]["calls"][0]["lead_tokens"]
    assert rows["xgrammar"]["lead_ms"] == pytest.approx(2.0 * lead)
    assert rows["reference"]["lead_ms"] == pytest.approx(1.0 * lead)
    # an engine deciding at another step is counted as a disagreement
    recs[1]["events"][0]["calls"][0]["name_decided"] += 1
    assert event_rows(recs)[1]["agree_ref"] == [0, 1]
