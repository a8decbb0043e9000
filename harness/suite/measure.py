"""The suite API's measurement: what a suite's job measures with (the token replay, ground truth, grammar targets, token-level oracles and walks, the keyword judge, the validity and accuracy figures of written outputs). Imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "ACCEPTED": "harness.measure.replay:ACCEPTED",
    "adapters": "harness.measure.adapters",
    "as_bool": "harness.measure.tokens.maskops:as_bool",
    "bfcl_match": "harness.measure.validity:bfcl_match",
    "bfcl_reference": "harness.measure.validity:bfcl_reference",
    "Budget": "harness.measure.tokens.oracle:Budget",
    "check_output": "harness.measure.validate:check_output",
    "ConstructProbe": "harness.measure.dialect:ConstructProbe",
    "detokenize": "harness.measure.validate:detokenize",
    "digest": "harness.measure.tokens.maskops:digest",
    "DONE": "harness.measure.tokens.policy:DONE",
    "GrammarTarget": "harness.measure.target:GrammarTarget",
    "GroundTruth": "harness.measure.groundtruth:GroundTruth",
    "has_bit": "harness.measure.tokens.maskops:has_bit",
    "instance_outcome": "harness.measure.outcomes:instance_outcome",
    "keywords": "harness.measure.keywords",
    "json_prefix_error": "harness.measure.jsontext:json_prefix_error",
    "oracle_adapter": "harness.measure.tokens.oracle:oracle_adapter",
    "ORACLE_LABEL": "harness.measure.tokens.oracle:ORACLE_LABEL",
    "ORACLE_OPTIONS": "harness.measure.tokens.oracle:ORACLE_OPTIONS",
    "OracleTimeout": "harness.measure.tokens.oracle:OracleTimeout",
    "parse_instance_text": "harness.measure.jsontext:parse_instance_text",
    "preemptions": "harness.measure.replay:preemptions",
    "raw_digest": "harness.measure.tokens.maskops:raw_digest",
    "reachability": "harness.measure.reachability",
    "ReaderError": "harness.measure.languages:ReaderError",
    "replay": "harness.measure.replay:replay",
    "rollback_checks": "harness.measure.tokens.rollback:rollback_checks",
    "run_findings": "harness.measure.tokens.findings:run_findings",
    "RUNAWAY": "harness.measure.tokens.policy:RUNAWAY",
    "schema_names": "harness.measure.tokens.policy:schema_names",
    "SchemaTarget": "harness.measure.target:SchemaTarget",
    "seed_for": "harness.measure.tokens.maskops:seed_for",
    "SERIALIZATIONS": "harness.measure.replay:SERIALIZATIONS",
    "target_for": "harness.measure.target:target_for",
    "token_classes": "harness.measure.tokens.maskops:token_classes",
    "validity_cell": "harness.measure.validity:validity_cell",
    "VALIDITY_COLUMNS": "harness.measure.validity:VALIDITY_COLUMNS",
    "validity_figures": "harness.measure.validity:validity_figures",
    "ValidityFigures": "harness.measure.validity:ValidityFigures",
    "ValidityOutput": "harness.measure.validity:ValidityOutput",
    "walk": "harness.measure.tokens.policy:walk",
    "wilson": "harness.measure.validity:wilson",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.measure.dialect import ConstructProbe
    from harness.measure.groundtruth import GroundTruth
    from harness.measure.jsontext import json_prefix_error, parse_instance_text
    from harness.measure.languages import ReaderError
    from harness.measure.outcomes import instance_outcome
    from harness.measure.replay import ACCEPTED, SERIALIZATIONS, preemptions, replay
    from harness.measure.target import GrammarTarget, SchemaTarget, target_for
    from harness.measure.tokens.findings import run_findings
    from harness.measure.tokens.maskops import (as_bool, digest, has_bit, raw_digest, seed_for,
        token_classes)
    from harness.measure.tokens.oracle import (Budget, ORACLE_LABEL, ORACLE_OPTIONS,
        OracleTimeout, oracle_adapter)
    from harness.measure.tokens.policy import DONE, RUNAWAY, schema_names, walk
    from harness.measure.tokens.rollback import rollback_checks
    from harness.measure.validate import check_output, detokenize
    from harness.measure.validity import (VALIDITY_COLUMNS, ValidityFigures, ValidityOutput,
        bfcl_match, bfcl_reference, validity_cell, validity_figures, wilson)
    from harness.measure import adapters
    from harness.measure import keywords
    from harness.measure import reachability
