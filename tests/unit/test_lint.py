"""``harness lint`` and the keyword judge it shares with the hazards suite
(:mod:`harness.measure.keywords`): real engines on the real Llama-3 vocabulary where a
verdict is claimed about an engine, a stub engine where the rule itself is tested (a text
refused only in its canonical tokenization is never a misreading)."""

from __future__ import annotations

import ipaddress
import json

import jsonschema
import pytest

from harness.cli import main
from harness.measure import keywords
from harness.registry import EngineSpec, is_installed

IPV4 = {"type": "string", "format": "ipv4", "maxLength": 9}
UNIQUE = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}


def _checker(schema):
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def vocab():
    from engines.vocab import load_vocabulary

    return load_vocabulary("llama3")


def test_the_maxlength_witness_satisfies_the_nodes_other_keywords():
    # ten x's are no address: the deciding instance must be one, longer than 9 characters
    insts = keywords.deciding(IPV4, "maxLength")
    assert insts
    for x in insts:
        ipaddress.IPv4Address(x)
        assert len(x) > 9 and not _checker(IPV4).is_valid(x)
        assert _checker(keywords.without(IPV4, "maxLength")).is_valid(x)
    assert keywords.deciding(IPV4, "maxLength") == insts  # derandomized


@pytest.mark.parametrize("engine", ["llguidance", "xgrammar"])
def test_the_ipv4_maxlength_example_is_decided_with_an_address(vocab, engine):
    if not is_installed(engine):
        pytest.skip(f"{engine} not installed")
    judge = keywords.AdapterEngine(EngineSpec(engine).build(vocab), vocab)
    (node,) = keywords.nodes(IPV4)
    rows = {r["keyword"]: r for r in keywords.judge_node(judge, node)}
    row = rows["maxLength"]
    assert row["verdict"] in ("kept", "ignored"), row
    x = json.loads(row["witness"])
    ipaddress.IPv4Address(x)
    assert len(x) > 9 and not _checker(IPV4).is_valid(x)


def test_an_ignored_keyword_exits_1_with_a_checked_witness_and_json_lines(tmp_path, capsys,
                                                                        monkeypatch):
    # outlines-core does not enforce uniqueItems (outlines-core #261)
    if not is_installed("outlines"):
        pytest.skip("outlines not installed")
    f = tmp_path / "unique.json"
    f.write_text(json.dumps(UNIQUE))
    monkeypatch.chdir(tmp_path)
    assert main(["lint", str(f), "--engine", "outlines", "--json"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unique.json"]  # nothing written
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {tuple(sorted(r)) for r in rows} == {
        ("engine", "file", "keyword", "path", "verdict", "why", "witness")}
    (row,) = [r for r in rows if r["keyword"] == "uniqueItems"]
    assert row["verdict"] == "ignored" and row["path"] == "" and row["engine"] == "outlines"
    w = json.loads(row["witness"])
    assert not _checker(UNIQUE).is_valid(w)
    assert _checker(keywords.without(UNIQUE, "uniqueItems")).is_valid(w)
    # the console: the node x engine table, the witness of the flagged cell, the time
    assert main(["lint", str(f), "--engine", "outlines"]) == 1
    out = capsys.readouterr().out
    assert "IGNORED uniqueItems" in out and row["witness"] in out and "s elapsed" in out


class _Stub:
    """An engine that compiles everything, accepts only what ``accept`` says in the
    canonical tokenization, and answers the reachability search with ``kind``."""

    def __init__(self, accept, kind):
        self.accept, self.kind = accept, kind

    def compile(self, schema_text):
        return json.loads(schema_text)

    def grammar_key(self, schema_text):
        return None

    def accepts(self, compiled, text):
        return self.accept(compiled, json.loads(text))

    def writable(self, compiled, text):
        return self.kind, None


def test_a_text_refused_in_its_canonical_tokenization_only_is_not_misread():
    node = keywords.Node("", {"type": "integer", "minimum": 3}, ["minimum", "type"])
    made = keywords.Plan(deciding={"minimum": [2], "type": ["a"]}, valid=[5])

    # rejects the valid 5 with minimum, accepts it without; what is invalid is rejected
    def accept(schema, x):
        return isinstance(x, int) and x >= 3 and "minimum" not in schema or x == 7

    fooled = {r["keyword"]: r for r in keywords.judge_node(_Stub(accept, "tokenization"),
                                                          node, made)}
    assert "misread" not in {r["verdict"] for r in fooled.values()}
    misread = {r["keyword"]: r for r in keywords.judge_node(_Stub(accept, "unwritable"),
                                                           node, made)}
    assert misread["minimum"]["verdict"] == "misread" and misread["minimum"]["witness"] == "5"
    assert misread["type"]["verdict"] != "misread"


def test_the_undeclared_properties_default_is_judged(vocab):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    node = keywords.nodes(schema)[0]
    assert node.path == "" and keywords.UNDECLARED in node.keywords
    made = keywords.plan(node, generate=False)
    for x in made.undeclared:
        assert _checker(schema).is_valid(x) and set(x) - {"a"}

    def strict(schema, x):  # an engine that refuses undeclared properties
        return isinstance(x, dict) and set(x) <= {"a"}

    rows = {r["keyword"]: r for r in keywords.judge_node(_Stub(strict, "unwritable"), node,
                                                        made)}
    assert rows[keywords.UNDECLARED]["verdict"] == "misread"


@pytest.mark.parametrize("text, says", [
    (None, "cannot read it"), ("{not json", "not JSON"), ('{"type": 5}', "not a schema"),
    ("[1, 2]", "not a schema")])
def test_bad_input_exits_2_with_one_line_naming_the_file(tmp_path, capsys, text, says):
    f = tmp_path / "bad.json"
    if text is not None:
        f.write_text(text)
    assert main(["lint", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(f) in err and says in err, err


def test_a_files_instances_are_made_once_per_node_smallest_first_within_its_budget():
    """Identical nodes share their instances; past the budget the nodes left (the largest)
    are skipped with why, and the nodes keep their document order."""
    from harness.measure.lint import _plans

    same = {"type": "string", "maxLength": 3}
    schema = {"type": "object", "maxProperties": 3,
              "properties": {"a": same, "b": same, "c": {"type": "integer", "minimum": 2}}}
    got = _plans(schema, seconds=60.0)
    assert [n.path for n, _ in got] == [n.path for n in keywords.nodes(schema)]
    by_path = {n.path: (n, p) for n, p in got}
    assert by_path["/properties/a"][1] is by_path["/properties/b"][1]  # made once
    assert all(n.skip is None and p.deciding for n, p in got)
    spent = _plans(schema, seconds=-1.0)  # no time at all: nothing is made
    assert all("not judged" in n.skip and not p.deciding for n, p in spent)
