"""The reference engine against the JSON-Schema-Test-Suite's own verdicts, in the case's
context: the draft (written into the schema as ``$schema`` by the suite) and whether
``format`` asserts (``Case.format_assertion``, passed to ``compile_case``).

Each case here used to be a validation or invalidation error of ``harness run --suite
json-schema-test-suite --engine reference``: draft-7 files without ``$schema`` read as
2020-12 (``dependencies`` ignored, ``$ref`` siblings applied), ``format`` asserted where
the suite says it is an annotation, and keywords whose meaning is disputed (jsonschema
ignores them, the suite's label enforces them) compiled as jsonschema reads them. Now
every compiled case agrees with the label on every instance, and the disputed ones are
refused by name.
"""

from __future__ import annotations

import json

import pytest

import reference_helpers as H
from engines.protocol import CompileError
from suites.json_schema_test_suite import DRAFT_URIS, JsonSchemaTestSuite

AGREE = [
    "draft7/dependencies.json#0", "draft7/dependencies.json#2",
    "draft7/ref.json#5", "draft7/ref.json#6",
    "draft2020-12/format.json#0", "draft2020-12/format.json#3", "draft2020-12/format.json#9",
    "draft2020-12/optional/format/date.json#0",  # asserted there
    # ECMA-262 regexes in the specification's reading (Python's re would disagree)
    *[f"draft2020-12/optional/ecmascript-regex.json#{i}" for i in (4, 5, 6, 7, 8, 9, 11, 13, 16, 18)],
    *[f"draft7/optional/ecmascript-regex.json#{i}" for i in (4, 5, 6, 7, 8, 9, 11, 13, 16, 18)],
]

REFUSED = {
    "draft7/dependencies.json#3": "dependencies with a schema",
    "draft2020-12/vocabulary.json#0": "$schema",
    "draft7/optional/content.json#0": "contentMediaType",
    "draft7/optional/content.json#1": "contentEncoding",
    "draft2020-12/optional/dependencies-compatibility.json#0": "dependencies",
    "draft2020-12/optional/dependencies-compatibility.json#5": "dependencies",
    # formats whose automaton follows python-jsonschema's checker, not the RFC
    "draft2020-12/optional/format/email.json#0": "email",
    "draft2020-12/optional/format/hostname.json#0": "hostname",
    "draft2020-12/optional/format/uri.json#0": "uri",
    "draft2020-12/optional/format/date-time.json#0": "date-time",
    "draft7/optional/format/time.json#0": "time",
}


def _cases(ids):
    by_file: dict[str, list[str]] = {}
    for cid in ids:
        by_file.setdefault(cid.split("#")[0], []).append(cid)
    out = {}
    for f, cids in by_file.items():
        for c in JsonSchemaTestSuite(subsets=[f]).cases():
            if c.case_id in cids:
                out[c.case_id] = c
    assert set(out) == set(ids)
    return out


def test_cases_are_self_describing():
    """A draft-7 file's schema without ``$schema`` reaches engines (and ground truth)
    with the folder's metaschema; a schema that has one keeps it; booleans stay."""
    cases = _cases(["draft7/dependencies.json#0", "draft2020-12/format.json#0"])
    d7 = cases["draft7/dependencies.json#0"]
    assert json.loads(d7.schema_text)["$schema"] == DRAFT_URIS["draft7"] == d7.schema["$schema"]
    assert d7.default_draft == "draft7"
    assert json.loads(cases["draft2020-12/format.json#0"].schema_text)["$schema"] == \
        DRAFT_URIS["draft2020-12"]
    booleans = [c for c in JsonSchemaTestSuite(subsets=["draft7/boolean_schema"]).cases()]
    assert booleans and all(isinstance(c.schema, bool) for c in booleans)


@pytest.mark.parametrize("cid", AGREE)
def test_reference_agrees_with_the_label(cid):
    case = _cases([cid])[cid]
    g = H.adapter().compile_case(case.schema_text, format_assertion=case.format_assertion,
                                 reading="spec")
    pda = g.compiled.pda
    for inst in case.instances:
        got = pda.accepts(json.dumps(inst.data).encode())
        assert got == inst.label_valid, (cid, inst.index, inst.description, inst.data)


@pytest.mark.parametrize("cid,keyword", sorted(REFUSED.items()))
def test_disputed_meaning_is_refused_by_name(cid, keyword):
    case = _cases([cid])[cid]
    with pytest.raises(CompileError, match=keyword.replace("$", r"\$")):
        H.adapter().compile_case(case.schema_text, format_assertion=case.format_assertion,
                                 reading="spec")


def test_format_assertion_switch():
    """``compile`` asserts ``format`` (the harness's default ground truth);
    ``compile_case(..., format_assertion=False)`` reads it as an annotation, and so does
    the enum check that goes through jsonschema."""
    a = H.adapter()
    schema = json.dumps({"type": "string", "format": "date"})
    assert not a.compile(schema).compiled.pda.accepts(b'"nope"')
    assert a.compile(schema).compiled.pda.accepts(b'"2024-02-29"')
    assert a.compile_case(schema, format_assertion=False).compiled.pda.accepts(b'"nope"')
    en = json.dumps({"format": "date", "enum": ["nope", "2024-02-29"]})
    assert not a.compile(en).compiled.pda.accepts(b'"nope"')
    assert a.compile_case(en, format_assertion=False).compiled.pda.accepts(b'"nope"')
    # an unsupported format is refused only where it would assert
    uri_ref = json.dumps({"type": "string", "format": "uri-reference"})
    with pytest.raises(CompileError, match="uri-reference"):
        a.compile(uri_ref)
    assert a.compile_case(uri_ref, format_assertion=False).compiled.pda.accepts(b'"::"')


def test_disputed_keywords_only_where_their_type_occurs():
    """The refusal concerns the type the keyword constrains: ``dependencies`` on a
    string schema, or ``contentMediaType`` on an integer one, changes nothing."""
    a = H.adapter()
    a.compile(json.dumps({"type": "string", "dependencies": {"a": ["b"]}}))
    a.compile(json.dumps({"$schema": DRAFT_URIS["draft7"], "type": "integer",
                          "contentMediaType": "application/json"}))
    a.compile(json.dumps({"type": "object", "dependencies": {"a": [], "b": {}}}))
    with pytest.raises(CompileError, match="dependencies"):
        a.compile(json.dumps({"type": "object", "dependencies": {"a": ["b"]}}))
    with pytest.raises(CompileError, match="dependencies"):
        a.compile(json.dumps({"not": {"dependencies": {"a": ["b"]}}}))


def test_the_two_readings_of_pattern_and_format():
    """``reading="jsonschema"`` (the corpus's ground truth) reads ``pattern`` as Python's
    re and asserts jsonschema's ``email``; ``reading="spec"`` reads it as ECMA-262 and
    refuses that ``email`` (which the JSON-Schema-Test-Suite labels by the RFC)."""
    a = H.adapter()
    digits = json.dumps({"type": "string", "pattern": "^\\d+$"})
    arabic = json.dumps("\u0661\u0662").encode()
    assert a.compile(digits).compiled.pda.accepts(arabic)
    assert not a.compile_case(digits, reading="spec").compiled.pda.accepts(arabic)
    assert a.compile_case(digits, reading="spec").compiled.pda.accepts(b'"12"')
    end = json.dumps({"type": "string", "pattern": "^a$"})
    assert a.compile(end).compiled.pda.accepts(b'"a\\n"')  # Python's $ before a final newline
    assert not a.compile_case(end, reading="spec").compiled.pda.accepts(b'"a\\n"')
    email = json.dumps({"type": "string", "format": "email"})
    assert a.compile(email).compiled.pda.accepts(b'"a@"')
    with pytest.raises(CompileError, match="email"):
        a.compile_case(email, reading="spec")
    with pytest.raises(CompileError, match="ECMA"):
        a.compile_case(json.dumps({"pattern": "\\Aa"}), reading="spec")
