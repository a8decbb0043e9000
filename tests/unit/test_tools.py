"""Suite tools: the envelope's free-text regex, the ground truth, the BFCL pool and the
native forms of every engine on real BFCL tools, judged against jsonschema."""

from __future__ import annotations

import json
import random
import re

import jsonschema
import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError
from engines.tool_calls import FORMATS, ToolSpec, lark_grammar, regex, text_regex
from harness.measure.replay import replay
from harness.registry import EngineSpec
from engines.vocab import load_vocabulary
from suites.tools import MODES, ToolsSuite
from suites.tools.corpus import load_pool
from suites.tools.truth import ToolTruth


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def pool(corpus_dir):
    return load_pool(corpus_dir)


ARGS = json.dumps({"type": "object", "properties": {"city": {"type": "string"},
                                                    "days": {"type": "integer"}},
                   "required": ["city"], "additionalProperties": False})
OTHER = json.dumps({"type": "object", "properties": {"q": {"type": "string"}},
                    "required": ["q"], "additionalProperties": False})


def spec(fmt="llama3.1", choice="required", parallel=False, named=None):
    return ToolSpec(fmt, (("weather.get", ARGS), ("search", OTHER)), choice, parallel, named)


@pytest.mark.parametrize("trigger", [f.trigger for f in FORMATS.values()] + ["abc"])
def test_text_regex_is_exactly_no_trigger(trigger):
    r = re.compile(text_regex(trigger), re.S)
    rng = random.Random(7)
    alphabet = sorted(set(trigger)) + ["x", "\n"]
    for _ in range(20000):
        s = "".join(rng.choice([trigger[: rng.randint(1, len(trigger))], rng.choice(alphabet)])
                    for _ in range(rng.randint(0, 7)))
        assert (r.fullmatch(s) is not None) == (trigger not in s), repr(s)
    with pytest.raises(ValueError):
        text_regex("abca")  # the first character recurs: the construction would be wrong


def test_truth_modes_names_arguments_truncation():
    f = FORMATS["llama3.1"]
    a = f.call("weather.get", '{"city": "Oslo", "days": 3}')
    b = f.call("search", '{"q": "x"}')
    req = ToolTruth(spec())
    assert req.judge_text(a)["valid"] is True
    assert req.judge_text("Sure. " + a)["kind"] == "mode"
    assert req.judge_text(a + "\n" + b)["kind"] == "mode"
    assert req.judge_text(f.call("nope", "{}"))["kind"] == "name"
    assert req.judge_text(f.call("weather.get", '{"days": 3}'))["kind"] == "arguments"
    assert req.judge_text(f.call("weather.get", '{"city": "a", "city": "b"}'))["valid"] is False
    assert req.judge_text(a[:-5])["kind"] == "truncated"
    assert req.judge_text(f.call("weather.get", ' {"city": "Oslo"}'))["valid"] is False
    par = ToolTruth(spec(parallel=True))
    assert par.judge_text(a + "\n" + b)["valid"] is True
    assert par.judge_text(a + "\nDone.")["valid"] is True
    assert par.judge_text("x" + a)["kind"] == "mode"
    auto = ToolTruth(spec(choice="auto"))
    assert auto.judge_text("no call needed")["valid"] is True
    assert auto.judge_text("text " + a)["valid"] is True
    assert auto.judge_text(a + " more")["kind"] == "mode"
    assert auto.judge_text('mentions {"name": without a call')["valid"] is False
    named = ToolTruth(spec(choice="named", named="search"))
    assert named.judge_text(b)["valid"] is True
    assert named.judge_text(a)["kind"] == "name"


def test_truth_reads_a_trigger_inside_arguments_as_data():
    f = FORMATS["tool_call"]
    t = ToolTruth(spec("tool_call", "auto", True))
    text = "hi " + f.call("search", json.dumps({"q": "<tool_call> inside"})) + " bye"
    v = t.judge_text(text)
    assert v["valid"] is True and len(v["calls"]) == 1


def test_pool_from_real_bfcl_files_rechecked_by_jsonschema(pool):
    assert pool.files >= 500 and sum(1 for t in pool.tools if t.calls) >= 500
    names = [t.name for t in pool.tools]
    assert len(names) == len(set(names))
    for t in pool.tools[:200]:
        v = jsonschema.validators.validator_for(json.loads(t.schema))(json.loads(t.schema))
        for c in t.calls:
            assert v.is_valid(c), (t.name, c)


def _recheck(spec_: ToolSpec, text: str) -> bool:
    """An independent verdict: the calls found with a regex over the envelope, each
    validated with jsonschema directly."""
    truth = ToolTruth(spec_).parse(text)
    if truth.error:
        return False
    tools = dict(spec_.callable_tools())
    for c in truth.calls:
        if c.name not in tools:
            return False
        schema = json.loads(tools[c.name])
        if not jsonschema.validators.validator_for(schema)(schema).is_valid(c.args):
            return False
    return True


def test_suite_cases_labels_agree_with_jsonschema(corpus_dir):
    s = ToolsSuite(data=str(corpus_dir), options={"tool_counts": [1, 5, 50]})
    assert len(s) == 3 * len(MODES) * len(FORMATS)
    kinds = set()
    for c in s.cases():
        sp = ToolSpec.from_json(c.request["spec"])
        assert len(sp.tools) == c.request["tools"]
        ov = c.request["overlap"]
        if ov:
            shared = {n for n, _ in sp.tools} & {n for n, _ in ov["tools"]}
            assert len(shared) == c.request["shared"] == len(sp.tools) // 2
        assert any(i.label_valid for i in c.instances) and any(not i.label_valid for i in c.instances)
        for inst, kind in zip(c.instances, c.request["kinds"]):
            kinds.add(kind)
            assert inst.label_valid == (kind == "valid")
            if kind in ("valid", "wrong_args", "wrong_name"):
                assert _recheck(sp, inst.text) == inst.label_valid, (c.case_id, inst.text)
    assert kinds == {"valid", "wrong_name", "wrong_args", "truncated", "mode"}


def test_sample_is_one_curve_over_counts(corpus_dir):
    s = ToolsSuite(data=str(corpus_dir), sample=6)
    assert [c.rsplit("-", 1)[1] for c in s.case_ids()] == ["1", "5", "10", "50", "100", "500"]
    assert all("-required-" in c for c in s.case_ids())
    with pytest.raises(Exception, match="unknown tool choice"):
        ToolsSuite(data=str(corpus_dir), subsets=["sometimes"])


def test_native_forms_name_each_tool():
    g = lark_grammar(spec("tool_call", "auto", True))
    assert g.count("%json") == 2 and "[lazy]" in g and "<tool_call>" in g
    r = regex(spec(), lambda s: "X")
    assert r.count("(?:X)") == 2
    named = lark_grammar(spec(choice="named", named="search"))
    assert named.count("%json") == 1


@pytest.mark.parametrize("engine", ["xgrammar", "llguidance", "reference"])
def test_engines_agree_with_the_ground_truth_on_real_requests(engine, corpus_dir, vocab):
    """Every mode and format on a real 5-tool request: each engine's verdict (token-by-token
    replay with the EOS check) equals the ground truth's on every instance."""
    a = EngineSpec(engine).build(vocab)
    s = ToolsSuite(data=str(corpus_dir), options={"tool_counts": [5], "tool_instances": 2})
    bm = allocate_bitmask(vocab.size)
    checked = 0
    for c in s.cases():
        sp = ToolSpec.from_json(c.request["spec"])
        g = a.compile_tool_calls(sp)
        assert g.form
        for inst in c.instances:
            r = replay(g.matcher(), vocab.encode(inst.text), bm, vocab.stop_ids)
            assert (r.status == "accepted") == inst.label_valid, (engine, c.case_id, inst.text, r.status)
            checked += 1
    assert checked > 80


def test_outlines_regex_form_and_its_refusal_line(corpus_dir, vocab):
    a = EngineSpec("outlines").build(vocab)
    s = ToolsSuite(data=str(corpus_dir), schemas="llama3.1-required-1",
                   options={"tool_counts": [1]})
    c = next(iter(s.cases()))
    g = a.compile_tool_calls(ToolSpec.from_json(c.request["spec"]))
    bm = allocate_bitmask(vocab.size)
    valid = [i for i in c.instances if i.label_valid]
    assert valid and all(replay(g.matcher(), vocab.encode(i.text), bm, vocab.stop_ids).status
                         == "accepted" for i in valid)


def test_an_engine_without_a_form_refuses_in_one_line(vocab):
    pytest.importorskip("llama_cpp")
    with pytest.raises(CompileError, match="has no tool-call form"):
        EngineSpec("llamacpp-gbnf").build(vocab).compile_tool_calls(spec())


@pytest.mark.parametrize("engine", ["xgrammar", "llguidance", "reference"])
def test_engines_hold_the_envelope_strictly(engine, vocab):
    """Nothing around the arguments, no text around a required call, nothing after a
    single auto call: each engine agrees with the ground truth on hand-made outputs."""
    a = EngineSpec(engine).build(vocab)
    f = FORMATS["llama3.1"]
    ok = f.call("weather.get", '{"city": "Oslo"}')
    texts = {
        "required": [ok, f.call("weather.get", ' {"city": "Oslo"}'),
                     f.call("weather.get", '{"city": "Oslo"} '), "x" + ok, ok + "\n" + ok],
        "auto": ["plain text", "text " + ok, ok + " more", 'say {"name": "search" please'],
    }
    bm = allocate_bitmask(vocab.size)
    for choice, outs in texts.items():
        sp = spec(choice=choice)
        g = a.compile_tool_calls(sp)
        truth = ToolTruth(sp)
        for t in outs:
            r = replay(g.matcher(), vocab.encode(t), bm, vocab.stop_ids)
            assert (r.status == "accepted") == truth.judge_text(t)["valid"], (engine, choice, t)
