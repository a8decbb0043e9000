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
    return {"config": {"primary": "unicode", "serializations": SERS, "timeout_s": 60},
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
