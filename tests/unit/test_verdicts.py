"""The headline a reader sees first: the verdict block, label disagreements apart from the
headline, the schemas whose verdict the escapes change, and the records' group commit."""

from __future__ import annotations

import json

from harness.analysis.metrics import build_summary, record_outcome, verdict_flips
from harness.measure.groundtruth import GroundTruth
from harness.report import console
from harness.store.run_store import RunStore

SERS = ["unicode", "ascii"]


def _inst(index, expected, statuses, label=None, reason=None):
    inst = {"index": index, "label": expected if label is None else label, "truth": expected,
            "expected": expected,
            "results": {s: {"status": st, "mask_ns": [1000], "commit_ns": [1000]}
                        for s, st in zip(SERS, statuses)}}
    if label is not None and label != expected:
        inst["label_disagrees"] = True
        inst["label_reason"] = reason
    return inst


def _record(case_id, instances, outcome):
    return {"engine": "e", "case_id": case_id, "subset": "s", "outcome": outcome,
            "instances": instances, "compile_ns": 1, "ttfm_ns": 1_000_000, "busy_ns": 1}


def _meta():
    return {"config": {"suite": "jsonschemabench", "primary": "unicode", "serializations": SERS,
                       "timeout_s": 60},
            "engines": [{"engine": "e", "status": "run", "version": "1"}], "sessions": []}


def test_escapes_change_the_verdict():
    # valid in both spellings, but the engine refuses the \\u escapes of ascii
    flip = _record("flip", [_inst(0, True, ["accepted", "rejected"])], "passing")
    same = _record("same", [_inst(0, True, ["accepted", "accepted"])], "passing")
    assert record_outcome(flip, "ascii") == "validation_error"
    assert verdict_flips([flip, same], "e", SERS) == [
        {"case_id": "flip", "outcomes": {"unicode": "passing", "ascii": "validation_error"}}]
    e = build_summary(_meta(), [flip, same])["engines"]["e"]
    assert e["outcomes"]["passing"] == 2 and len(e["escapes_change_verdict"]) == 1


def test_label_disagreements_are_counted_apart_from_the_headline():
    # jsonschema says valid, the label says invalid; the engine rejects it: a false reject
    # by jsonschema's verdict (the record's outcome, the gate's), not on the headline
    ld = _inst(0, True, ["rejected", "rejected"], label=False,
               reason=GroundTruth.FORMAT_NOT_IN_DRAFT)
    ok = _inst(1, False, ["rejected", "rejected"])
    rec = _record("draft4-date", [ld, ok], "validation_error")
    e = build_summary(_meta(), [rec])["engines"]["e"]
    assert e["outcomes"]["passing"] == 1 and e["outcomes"]["validation_error"] == 0
    assert e["outcomes_all"]["validation_error"] == 1
    assert e["false_rejects"]["unicode"] == 0 and e["valid_instances"]["unicode"] == 0
    assert e["false_rejects_label_disagrees"]["unicode"] == 1
    assert e["label_disagreement_reasons"] == {GroundTruth.FORMAT_NOT_IN_DRAFT: 1}
    assert e["label_outcome_changes"] == ["draft4-date"]
    text = console.render_text(build_summary(_meta(), [rec]))
    assert text.splitlines()[0] == "verdict"  # the verdict comes first, the version last
    assert text.index("coverage") < text.index("compile error") < text.index("version")


def test_the_reason_a_label_disagrees():
    draft4 = GroundTruth({"$schema": "http://json-schema.org/draft-04/schema#",
                          "type": "string", "format": "date"})
    assert draft4.verdict("2022-01-32") == (True, None)  # draft 4 has no date format
    assert draft4.disagreement_reason("2022-01-32", False) == GroundTruth.FORMAT_NOT_IN_DRAFT
    assert GroundTruth({"type": "integer"}).disagreement_reason(3, False) == GroundTruth.UNKNOWN


def test_records_are_written_at_once_and_fsynced_in_groups(tmp_path):
    store = RunStore.create(tmp_path, "run", {"config": {}, "sessions": []})
    store.SYNC_INTERVAL_S = 3600.0  # one fsync (the first append's) in the whole test
    for i in range(5):
        store.append({"engine": "e", "case_id": f"c{i}", "outcome": "passing"})
        # in the file before any close: a killed run keeps every finished record
        lines = store.records_path.read_text().splitlines()
        assert [json.loads(x)["case_id"] for x in lines] == [f"c{k}" for k in range(i + 1)]
    assert store._unsynced  # several records since the last fsync
    store.close()
    assert not store._unsynced


def test_a_value_cut_off_by_a_limit_is_censored_not_measured():
    from harness.measure.figures import censored_distribution, show

    # 7 jobs measured, 3 timed out before their first mask (60 s): p50 is a measurement,
    # p90 falls among the timeouts, and nothing is averaged with the limit
    d = censored_distribution([1, 2, 3, 4, 5, 6, 7], censored=3, limit=60_000.0,
                              percentiles=(50, 90))
    assert d["p50"] == 5.5 and d["p90"] is None and d["avg"] is None and d["max"] is None
    assert (d["censored"], d["limit"]) == (3, 60_000.0)
    assert show(d, "p50") == "5.5" and show(d, "p90", "ms") == "≥ 60,000 ms (timeout)"
    assert censored_distribution([1.0, 3.0], percentiles=(50,)) == {"avg": 2.0, "p50": 2.0,
                                                                     "max": 3.0}


def test_the_headline_ttfm_never_reads_the_limit_as_a_time():
    slow = {"engine": "e", "case_id": "slow", "subset": "s", "outcome": "timeout",
            "instances": [], "busy_ns": 1}
    fast = [_record(f"fast{i}", [_inst(0, True, ["accepted", "accepted"])], "passing")
            for i in range(3)]
    s = build_summary(_meta(), [*fast, slow])
    t = s["headline"]["engines"]["e"]["ttfm_ms"]
    assert t["p25"] == 1.0 and t["p90"] is None and t["censored"] == 1
    assert s["engines"]["e"]["ttfm_ms"] == t  # the table reads the headline's own
    text = console.render_text(s)
    assert "≥ 60,000 ms (timeout)" in text and "60,000.0" not in text


def test_a_ratio_needs_two_measured_sides():
    from harness.measure.figures import ratio

    assert ratio(2.0, 1.0, n_num=5, n_den=5) == (2.0, None)
    v, why = ratio(20.0, 0.01, n_num=5, n_den=5, resolution=0.05, what="TPOT:")
    assert v is None and "denominator 0.01 is at or below the clock's resolution" in why
    v, why = ratio(2.0, 1.0, n_num=2, n_den=5)
    assert v is None and "2 sample(s)" in why


def test_a_tail_the_scheduler_made_is_marked_not_read_as_the_engines():
    from harness.measure.figures import preemption, show

    # 1,000 timed steps: 10 lie above p99, 500 above p50; half of those is the bar
    quiet = {"p50": 14.0, "p99": 290.0, "steps": 1000, "preempted": 0}
    assert preemption(quiet, 99) is None and show(quiet, "p99") == "290"
    few = {**quiet, "preempted": 4}  # p99 still reads an undisturbed step (at most the p99.4)
    assert preemption(few, 99) is None and show(few, "p99") == "290"
    assert preemption({**quiet, "preempted": 5}, 99) is not None  # half the tail
    busy = {**quiet, "p99": 2676.0, "preempted": 20}
    why = preemption(busy, 99)
    assert "preempted 20 time(s) over 1,000 timed steps (2%)" in why and "p99" in why
    assert show(busy, "p99") == "2,676 (preempted)"
    assert preemption(busy, 50) is None and show(busy, "p50") == "14.0"  # 20 < 50
    assert preemption({**quiet, "preempted": None}, 99) is None  # not counted: no claim
    assert preemption({"steps": 0, "preempted": 3}, 99) is None


def test_the_headline_counts_the_preemptions_of_its_own_steps():
    recs = [{**_record(f"c{i}", [_inst(0, True, ["accepted", "accepted"])], "passing"),
             "tokens": 1, "preempted": i} for i in range(3)]
    t = build_summary(_meta(), recs)["headline"]["engines"]["e"]["tbm_us"]
    assert (t["steps"], t["preempted"]) == (3, 3)
    del recs[0]["preempted"]  # a record that did not count: the total is unknown
    assert build_summary(_meta(), recs)["headline"]["engines"]["e"]["tbm_us"]["preempted"] is None


def test_the_headline_counts_the_schemas_preempted_during_their_ttfm():
    from harness.measure.figures import preemption, show

    recs = [{**_record(f"c{i}", [_inst(0, True, ["accepted", "accepted"])], "passing"),
             "ttfm_ns": (i + 1) * 1_000_000, "ttfm_preempted": int(i >= 1)} for i in range(4)]
    f = build_summary(_meta(), recs)["headline"]["engines"]["e"]["ttfm_ms"]
    assert (f["steps"], f["preempted"]) == (4, 3)  # schemas, not switches
    # 2 schemas lie above p50: 3 preempted reach half of them, so p50 may be the machine's
    why = preemption(f, 50, "TTFM")
    assert "during the TTFM of 3 of 4 schemas" in why
    assert show(f, "p50").endswith("(preempted)")
    del recs[0]["ttfm_preempted"]  # a record that did not count: no claim either way
    f = build_summary(_meta(), recs)["headline"]["engines"]["e"]["ttfm_ms"]
    assert "preempted" not in f and preemption(f, 50) is None


def _served(i, itl, verdict="ok", mode="c", status=200):
    return {"engine": "vllm", "case_id": f"w/rinf/{mode}/{i:04d}", "outcome": "passing",
            "serve": {"stream": "w/rinf", "mode": mode, "constrained": mode == "c",
                      "status": status, "sent_s": 0.0, "ttft_ms": 50.0,
                      "e2el_ms": 50.0 + sum(itl), "tpot_ms": sum(itl) / len(itl),
                      "itl_ms": itl, "tokens": len(itl) + 1, "finish_reason": "stop",
                      "verdict": verdict, "source": f"s{i % 2}"}}


def test_bunched_tokens_give_no_tpot_and_no_ratio():
    """Where the client reads a whole response in one go, its token gaps read ~0: those
    requests leave TPOT, and a ratio over such a side is not printed as a figure."""
    from suites.serve.summary import render_text, serve_block

    recs = ([_served(i, [20.0] * 8) for i in range(4)]
            + [_served(i, [0.001] * 8, mode="u") for i in range(4)])
    block = serve_block(recs, {})["vllm"]["w/rinf"]
    assert block["constrained"]["tpot"]["mean"] == 20.0
    assert block["unconstrained"]["tpot"] is None
    assert block["unconstrained"]["per_token_unresolved"] == 4
    assert block["ratio"]["tpot"] is None and "TPOT: denominator not measured" in block["ratio_why"]["tpot"]
    assert block["ratio"]["ttft"] == 1.0
    text = render_text({"streams": {"vllm": {"w/rinf": block}}})
    assert "–[1]" in text and "[1] TPOT: denominator not measured" in text
    assert "4 request(s) left out of TPOT and ITL: their tokens arrived bunched" in text


def test_the_serve_headline_counts_constrained_requests_and_says_not_enforced():
    from harness.analysis.verdict import headline

    recs = ([{**_served(i, [20.0] * 4, verdict="constraint_not_enforced"),
              "outcome": "invalidation_error"} for i in range(3)]
            + [_served(3, [20.0] * 4)] + [_served(i, [20.0] * 4, mode="u") for i in range(4)])
    meta = {"config": {"suite": "serve", "primary": "unicode", "form": "guided_json"},
            "engines": [{"engine": "vllm", "status": "run"}]}
    h = headline(meta, recs)["engines"]["vllm"]
    assert (h["n"], h["requests"], h["schemas"], h["outputs"]) == (4, 4, 2, 4)
    assert h["outcomes"]["invalidation_error"] == 3 and h["accepts_invalid"] == 3
    assert h["alerts"] == ["NOT ENFORCED: 3 of 4 constrained outputs break the constraint "
                           "(HTTP 200; request form guided_json)"]


def test_docs_state_each_suites_unit_and_truth():
    """docs/metrics.md's table of suites, units and truths is the registry's, row for row."""
    from pathlib import Path

    from harness.registry import SUITES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    for name in SUITES.names():
        v = SUITES.load(name).verdict
        row = f"| `{name}` | {v.unit} | {v.truth} | {'yes' if v.label_split else 'no'} |"
        assert row in doc, f"docs/metrics.md lacks the row {row}"
