"""The validity and accuracy figures every stream of written outputs gets
(:mod:`harness.measure.validity`, through ``harness.suite.measure``), on hand-made outputs."""

from __future__ import annotations

import pytest

from harness.suite.measure import bfcl_match, bfcl_reference, validity_figures, wilson


def test_wilson_interval_known_values():
    assert wilson(0, 0) is None
    # textbook 95% Wilson intervals
    assert wilson(0, 10) == pytest.approx([0.0, 0.2775], abs=1e-4)
    assert wilson(5, 10) == pytest.approx([0.2366, 0.7634], abs=1e-4)
    assert wilson(10, 10) == pytest.approx([0.7225, 1.0], abs=1e-4)


def test_figures_of_hand_made_outputs():
    outs = [
        # valid, 10 tokens
        {"parse_valid": True, "schema_valid": True, "tokens": 10, "runaway": False},
        # parses, schema rejects it, 6 tokens
        {"parse_valid": True, "schema_valid": False, "tokens": 6, "runaway": False},
        # the budget ended it: 32 tokens, not JSON
        {"parse_valid": False, "schema_valid": False, "tokens": 32, "runaway": True},
        # valid, 8 tokens
        {"parse_valid": True, "schema_valid": True, "tokens": 8, "runaway": False},
    ]
    f = validity_figures(outs)
    assert f["outputs"] == 4
    assert f["parse_valid"] == 0.75 and f["schema_valid"] == 0.5 and f["runaway"] == 0.25
    assert f["schema_valid_ci"] == wilson(2, 4)
    assert f["schema_valid_ci"] == pytest.approx([0.150036, 0.849964], abs=1e-6)
    assert f["attempts_per_valid"] == 2.0          # 4 outputs / 2 valid
    assert f["tokens_per_valid"] == 28.0           # (10 + 6 + 32 + 8) / 2: failures included
    assert f["accuracy"] is None and f["bfcl"] is None  # no reference answer anywhere


def test_nothing_valid_and_nothing_at_all():
    f = validity_figures([{"parse_valid": False, "schema_valid": False, "tokens": 5,
                           "runaway": True}])
    assert f["schema_valid"] == 0.0 and f["attempts_per_valid"] is None
    assert f["tokens_per_valid"] is None and f["runaway"] == 1.0
    assert f["schema_valid_ci"] == pytest.approx([0.0, 0.793457], abs=1e-6)
    empty = validity_figures([])
    assert empty == {"outputs": 0, "parse_valid": None, "schema_valid": None,
                     "schema_valid_ci": None, "attempts_per_valid": None,
                     "tokens_per_valid": None, "runaway": None, "accuracy": None,
                     "bfcl": None}


def test_bfcl_matcher_and_accuracy():
    ref = {"get_weather": {"city": "Paris", "unit": "C"}}
    assert bfcl_match(ref, {"get_weather": {"city": "Paris", "unit": "F"}}) == (True, 1, 2)
    assert bfcl_match(ref, {"get_weather": {"city": "Paris", "unit": "C", "x": 1}}) == (True, 2, 2)
    assert bfcl_match(ref, {"other": {"city": "Paris"}}) == (False, 0, 2)
    assert bfcl_match(ref, None) == (False, 0, 2)          # did not parse
    assert bfcl_match(ref, [1, 2]) == (False, 0, 2)
    assert bfcl_match({"a": 1, "b": 2}, {"a": 1}) == (None, 0, 0)  # not a BFCL reference
    assert bfcl_match({"f": "not a dict"}, {"f": {}}) == (True, 0, 0)
    assert bfcl_reference("BFCL", [{"data": {"f": {}}, "label": False},
                                   {"data": ref, "label": True}]) == ref
    assert bfcl_reference("Github_easy", [{"data": ref, "label": True}]) is None
    assert bfcl_reference("BFCL", []) is None

    def out(valid, nm, am, at, tokens=4):
        return {"parse_valid": valid, "schema_valid": valid, "tokens": tokens,
                "runaway": False, "name_match": nm, "args_matched": am, "args_total": at}

    outs = [out(True, True, 2, 2), out(True, True, 1, 2), out(False, False, 0, 2),
            {"parse_valid": True, "schema_valid": True, "tokens": 4, "runaway": False}]
    f = validity_figures(outs)
    # accuracy and bfcl count only the outputs of cases with a reference (3 of 4)
    assert f["accuracy"] == {"outputs": 3, "name": 0.666667, "arguments": 0.5}
    p = 2 / 3
    assert f["bfcl"] == {"outputs": 3, "p": round(p, 6), "p10": round(p ** 10, 6),
                         "p50": round(p ** 50, 6)}
    assert f["schema_valid"] == 0.75 and f["attempts_per_valid"] == pytest.approx(1.333333)
    # a reference without arguments: name accuracy, no argument figure
    g = validity_figures([out(True, True, 0, 0)])
    assert g["accuracy"] == {"outputs": 1, "name": 1.0, "arguments": None}


def test_the_quality_suite_s_table_shows_the_same_columns_in_the_same_order():
    from harness.suite.measure import VALIDITY_COLUMNS
    from suites.quality.summary import HEADER as QUALITY
    from suites.serve.summary import QUALITY_HEADER as SERVE

    assert [h for h in QUALITY if h in VALIDITY_COLUMNS] == list(VALIDITY_COLUMNS)
    assert SERVE[-len(VALIDITY_COLUMNS):] == list(VALIDITY_COLUMNS)
