"""The token-level job kinds (mask-diff, fuzz) on small real inputs: real engines, the real
Llama-3 vocabulary, the reference engine as oracle; every verdict re-checked here with
strict JSON and jsonschema, independently of the job."""

from __future__ import annotations

import json

import jsonschema
import pytest

from harness.registry import EngineSpec
from harness.measure.groundtruth import parse_instance_text
from harness.measure.tokens.findings import record_findings
from suites.fuzz.job import run_fuzz_job
from suites.mask_diff.job import run_mask_diff_job
from suites.mask_diff.summary import no_oracle_pairs, summary_block
from harness.measure import adapters
from harness.suite import Instance

STRING_SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 20}},
                 "required": ["s"],
                 "additionalProperties": False}


def _installed(name: str) -> bool:
    return EngineSpec(name, "default").installed()


def _job(engine: str, schema, instances, suite="mask-diff", **opts):
    """A job payload; ``instances`` as ``(index, data, label[, text])``."""
    insts = [Instance(i[0], i[1], i[2], text=i[3] if len(i) > 3 else None).to_job()
             for i in instances]
    case = {"suite": suite, "case_id": f"test/{engine}", "subset": "test", "source": "-",
            "schema_text": json.dumps(schema), "instances": insts, "resources": []}
    job = {"case": case, "engine": {"name": engine, "config": "default", "label": engine},
           "tokenizer": "llama3", "primary": "ascii", "options": opts}
    return (run_mask_diff_job if suite == "mask-diff" else run_fuzz_job)(job)


def _vocab():
    adapters.adapter("xgrammar", "default", "llama3")
    return adapters.vocabulary()


def _text(ids):
    return b"".join(_vocab().tokens[t] for t in ids)


def _valid(raw: bytes, schema) -> bool:
    """Independent check: UTF-8, strict RFC 8259 parse, jsonschema."""
    try:
        value, why = parse_instance_text(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return False
    return why is None and jsonschema.Draft202012Validator(schema).is_valid(value)


pytestmark = pytest.mark.skipif(not _installed("xgrammar") or not _installed("llguidance"),
                                reason="xgrammar and llguidance must be installed (bash setup.sh)")


def test_xgrammar_control_characters_give_a_confirmed_witness():
    r = _job("xgrammar", STRING_SCHEMA, [(0, {"s": "ab cd"}, True)])
    assert r["oracle"]["status"] == "ok"
    md = r["instances"][0]["mask_diff"]
    assert r["instances"][0]["results"]["ascii"]["status"] == "accepted"
    # xgrammar lets raw control characters into length-bounded strings: under-constrained
    unders = [d for d in md["diffs"] if d.get("under")]
    assert md["diffs_total"] == len(md["diffs"])  # short: every diff kept
    assert md["counts"]["under_steps"] == len(unders)
    assert md["counts"]["over_steps"] == len([d for d in md["diffs"] if d.get("over")])
    assert unders and 188 in unders[0]["under_ids"]  # b"\x00"
    confirmed = [w for w in md["witnesses"] if w["verdict"] == "false_accept"]
    assert confirmed, md["witnesses"]
    for w in confirmed:
        toks = w["tokens"]
        assert toks[:w["step"]] == md["tokens"][:w["step"]] and toks[w["step"]] == w["token"]
        assert not _valid(_text(toks), STRING_SCHEMA)  # really invalid, by our own check
    assert r["outcome"] == "invalidation_error"
    # rollback(k) then replay: every mask identical
    assert md["rollback"] and all(rb["status"] == "identical" for rb in md["rollback"])
    kinds = {f["kind"] for f in record_findings(r)}
    assert "false_accept" in kinds


def test_llguidance_has_no_confirmed_false_accept_on_strings():
    r = _job("llguidance", STRING_SCHEMA, [(0, {"s": "ab cd"}, True)])
    md = r["instances"][0]["mask_diff"]
    assert not [d for d in md["diffs"] if d.get("under")]
    assert md["witnesses"] == [] and r["outcome"] == "passing"
    # it forbids what the spec allows (escaped keys, leading whitespace): over-constrained
    assert any(d.get("over") for d in md["diffs"])


def test_eos_exactly_where_the_prefix_is_a_valid_document():
    schema = {"type": "integer"}
    r = _job("xgrammar", schema, [(0, 123456789, True)])
    md = r["instances"][0]["mask_diff"]
    toks = md["tokens"]
    assert len(toks) >= 3  # "123" "456" "789": prefixes are complete documents
    truth = {i for i in range(len(toks) + 1) if _valid(_text(toks[:i]), schema)}
    allowed = set(md["eos"]["allowed_at"])
    assert truth == {i for i in range(1, len(toks) + 1)}
    assert set(md["eos"]["refused"]) == truth - allowed
    assert {e["step"] for e in md["eos"]["early"]} == allowed - truth


@pytest.mark.skipif(not _installed("outlines"), reason="outlines-core not installed")
def test_outlines_rejects_a_top_level_fraction_and_an_exponent():
    r = _job("outlines", {"type": "number"}, [(0, 0.5, True), (1, 100.0, True, "1e2")])
    assert [i["text"] for i in r["instances"]] == ["0.5", "1e2"]
    for inst in r["instances"]:
        res = inst["results"][inst["ser"]]
        assert res["status"] == "rejected"
        md = inst["mask_diff"]
        step = res["reject_at"]
        # the oracle allows the token the engine refused: an over-constrained step there
        assert any(d["step"] == step and d.get("over") for d in md["diffs"])
    assert r["outcome"] == "validation_error"
    assert {f["kind"] for f in record_findings(r)} >= {"false_reject"}


def test_no_oracle_falls_back_to_comparing_engines():
    # an oracle with no time at all: the job says so and the engines are compared by digest
    schema = {"type": "object", "properties": {"n": {"type": "integer"},
                                               "s": {"type": "string", "maxLength": 9}}}
    recs = [_job(e, schema, [(0, {"n": 9, "s": "x y"}, True)], oracle_timeout_s=1e-6)
            for e in ("xgrammar", "llguidance")]
    for r in recs:
        assert r.get("error") is None, r.get("error")
        assert r["oracle"]["status"] == "timeout"
        md = r["instances"][0]["mask_diff"]
        assert md["diffs"] == [] and set(md["oracle_sizes"]) == {None}
        r["case_id"] = "same"  # both engines' records of one case
    pairs = no_oracle_pairs(recs)
    assert len(pairs) == 1 and pairs[0]["engines"] == ["llguidance", "xgrammar"]
    assert pairs[0]["steps"] == len(recs[0]["instances"][0]["mask_diff"]["sizes"])
    # they do differ somewhere (xgrammar: raw control characters in a maxLength string)
    assert pairs[0]["mask_differs"] > 0 and pairs[0]["first"][0] == "same"
    summary = {"engines": {"xgrammar": {}, "llguidance": {}}}
    text = summary_block(summary, {}, recs)
    assert summary["engines"]["xgrammar"]["mask_diff"]["schemas_no_oracle"] == 1
    assert "no oracle: llguidance vs xgrammar" in text


def test_a_schema_the_oracle_refuses_is_labelled():
    # keywords the reference engine refuses by name (reference_engine/SEMANTICS.md) that
    # xgrammar compiles; the first one still refused is used
    for kw in ({"multipleOf": 3}, {"uniqueItems": True}, {"propertyNames": {"maxLength": 3}}):
        schema = {"type": "object", "properties": {"n": {"type": "integer"},
                                                   "a": {"type": "array", **kw}}, **kw}
        r = _job("xgrammar", schema, [(0, {"n": 9}, True)])
        if r.get("oracle", {}).get("status") == "refused":
            break
    else:
        pytest.fail("the reference engine no longer refuses any of the keywords tried")
    assert r["oracle"]["error"] and r["outcome"] == "passing"
    assert set(r["instances"][0]["mask_diff"]["oracle_sizes"]) == {None}


def test_fuzz_walks_are_judged_and_reproducible():
    r = _job("xgrammar", STRING_SCHEMA, [], suite="fuzz", walks=6, walk_tokens=64)
    walks = r["fuzz"]["walks"]
    assert len(walks) == 6
    for w in walks:
        assert w["status"] in ("valid", "invalid", "runaway", "dead_end", "undecided")
        if w["status"] in ("valid", "invalid"):
            assert _valid(_text(w["tokens"]), STRING_SCHEMA) == (w["status"] == "valid")
        if w["status"] == "runaway":
            assert len(w["tokens"]) == 64
    again = _job("xgrammar", STRING_SCHEMA, [], suite="fuzz", walks=6, walk_tokens=64)
    assert [w["tokens"] for w in again["fuzz"]["walks"]] == [w["tokens"] for w in walks]
    assert r["outcome"] == ("invalidation_error" if any(w["status"] == "invalid" for w in walks)
                            else "passing")


def test_fuzz_budget_too_small_is_a_runaway():
    r = _job("llguidance", STRING_SCHEMA, [], suite="fuzz", walks=3, walk_tokens=3)
    assert [w["status"] for w in r["fuzz"]["walks"]] == ["runaway"] * 3
    assert {f["kind"] for f in record_findings(r)} == {"runaway"}


def test_xgrammar_forbids_closing_tokens_with_a_trailing_newline():
    """``]]\\n`` closes ``[[1`` and adds trailing whitespace, which JSON allows: xgrammar's
    mask forbids it (over-constrained), the oracle allows it."""
    vocab = _vocab()
    closing = vocab.tokens.index(b"]]\n")
    r = _job("xgrammar", {"type": "array"}, [(0, [[1]], True)])
    md = r["instances"][0]["mask_diff"]
    prefix = md["tokens"][:-1]
    assert _text(prefix) == b"[[1" and _valid(_text(prefix + [closing]), {"type": "array"})
    step = len(prefix)
    d = next(d for d in md["diffs"] if d["step"] == step)
    assert d["over"] >= 1 and closing in d["over_ids"] and d["over"] > d["over_ws"]
    assert any(f["kind"] == "over" and f["step"] == step for f in record_findings(r))
    # over-witnesses: a forbidden token completed under the oracle's mask to a document
    # that jsonschema (checked here) accepts
    ow = md["over_witnesses"]
    assert ow and all(w["verdict"] == "valid" for w in ow)
    for w in ow:
        assert w["tokens"][:w["step"]] == md["tokens"][:w["step"]]
        assert _valid(_text(w["tokens"]), {"type": "array"})


def test_scanner_tracks_strings_and_depth_across_token_boundaries():
    from harness.measure.tokens.maskops import IN, OUT, token_classes
    from harness.measure.tokens.policy import scan

    tc = token_classes(_vocab())
    text = '{"a": ["x}]\\"", {"b": 1}], "c": "\\\\"}'
    assert json.loads(text) == {"a": ["x}]\"", {"b": 1}], "c": "\\"}
    toks = _vocab().encode(text)
    assert scan(tc, toks) == (OUT, 0)
    # every prefix agrees with a byte-by-byte scan of its text
    for i in range(len(toks) + 1):
        state, depth, esc = OUT, 0, False
        for ch in _text(toks[:i]).decode():
            if state == IN:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    state = OUT
            elif ch == '"':
                state = IN
            elif ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
        got = scan(tc, toks[:i])
        assert (got[0] != OUT, got[1]) == (state == IN, depth), (i, _text(toks[:i]))
