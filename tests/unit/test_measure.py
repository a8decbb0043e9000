"""The replay loop, ground truth and sampling, on real engines and the real vocabulary."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import Matcher
from harness.registry import EngineSpec
from harness.measure.groundtruth import GroundTruth
from harness.measure.replay import ACCEPTED, NO_EOS, REJECTED, SERIALIZATIONS, replay
from harness.measure.outcomes import classify
from engines.vocab import load_vocabulary
from harness.suite.maskbench import CORE12, stratified_sample, subset_of
from suites.jsonschemabench import JsonSchemaBench

SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}},
                     "required": ["a"], "additionalProperties": False})


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def llg(vocab):
    return EngineSpec("llguidance").build(vocab)


def test_valid_prefix_is_not_acceptance(vocab, llg):
    g = llg.compile(SCHEMA)
    bm = allocate_bitmask(vocab.size)
    full = replay(g.matcher(), vocab.encode('{"a": 1}'), bm, vocab.stop_ids)
    assert full.status == ACCEPTED and full.disagreement is None
    prefix = replay(g.matcher(), vocab.encode('{"a": 1'), bm, vocab.stop_ids)
    assert prefix.status == NO_EOS  # MaskBench would have counted this as accepted
    bad = replay(g.matcher(), vocab.encode('{"a": "x"}'), bm, vocab.stop_ids)
    assert bad.status == REJECTED and bad.reject_at is not None
    assert len(bad.mask_ns) == bad.reject_at + 1  # stops at the first rejected token


class _Liar(Matcher):
    """Its mask forbids everything, but its commit accepts everything."""

    def fill_mask(self, bitmask):
        bitmask.fill(0)

    def commit(self, token_id):
        return True

    def eos_allowed(self):
        return True

    def rollback(self, n):
        pass

    def reset(self):
        pass


def test_mask_commit_disagreement_is_a_finding(vocab):
    r = replay(_Liar(), vocab.encode("{}"), allocate_bitmask(vocab.size), vocab.stop_ids)
    assert r.status == REJECTED and r.disagreement == "commit_only"


def test_serializations_differ_where_they_should():
    data = {"name": "Zoë", "n": [1, 2]}
    texts = {k: f(data) for k, f in SERIALIZATIONS.items()}
    assert texts["ascii"] == '{"name": "Zo\\u00eb", "n": [1, 2]}'
    assert texts["unicode"] == '{"name": "Zoë", "n": [1, 2]}'
    assert texts["compact"] == '{"name":"Zo\\u00eb","n":[1,2]}'
    with pytest.raises(ValueError):
        SERIALIZATIONS["ascii"](float("nan"))


def test_classify_uses_first_applicable_outcome():
    inst = lambda exp, st: {"expected": exp, "results": {"ascii": {"status": st}}}  # noqa: E731
    assert classify([inst(True, "accepted"), inst(False, "rejected")], "ascii") == "passing"
    assert classify([inst(True, "no_eos"), inst(False, "accepted")], "ascii") == "validation_error"
    assert classify([inst(True, "accepted"), inst(False, "accepted")], "ascii") == "invalidation_error"


def test_ground_truth_uses_draft_and_formats():
    d4 = GroundTruth({"$schema": "http://json-schema.org/draft-04/schema#",
                      "type": "object", "properties": {"x": {"type": "number", "maximum": 5,
                                                             "exclusiveMaximum": True}}})
    assert d4.draft == "Draft4Validator"
    assert d4.verdict({"x": 5}) == (False, None)
    fmt = GroundTruth({"type": "string", "format": "date"})
    assert fmt.draft == "Draft202012Validator"
    assert fmt.verdict("2024-02-30")[0] is False and fmt.verdict("2024-02-28")[0] is True


def test_remote_ref_is_never_fetched():
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type": "integer"}')

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/int.json"
        gt = GroundTruth({"type": "object", "properties": {"a": {"$ref": url}}})
        verdict, why = gt.verdict({"a": 1})
        assert verdict is None and "int.json" in why
    finally:
        srv.shutdown()
    assert hits == []


def test_sample_is_deterministic_and_stratified():
    suite = JsonSchemaBench(subsets=["core12"], sample=240)
    again = JsonSchemaBench(subsets=["core12"], sample=240)
    assert suite.case_ids() == again.case_ids()
    counts = {}
    for n in suite.case_ids():
        counts[subset_of(n)] = counts.get(subset_of(n), 0) + 1
    assert counts == {s: 20 for s in CORE12}
    names = [f"A---{i}.json" for i in range(3)] + [f"B---{i}.json" for i in range(10)]
    picked = stratified_sample(names, 8)
    assert sum(n.startswith("A") for n in picked) == 3  # A runs out; B takes the rest
    assert len(picked) == 8


def test_subset_names():
    assert subset_of("BFCL_parallel_multiple_142.json") == "BFCL"
    assert subset_of("JME_39.json") == "JME"
    assert subset_of("Github_easy---o1.json") == "Github_easy"
