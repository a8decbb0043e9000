"""The hazards suite: each hazard's judgement on real engines and the real Llama-3
vocabulary, the reference engine as the oracle where one is needed, and one in-process
run whose table has a verdict or a "not measured: why" in every cell.

Kept small: the keyword probes on the exact reference engine and the null engine (no
grammar), the whitespace walk and the padded masks on llguidance and xgrammar, and one
run of three hazards on llguidance (well under a minute in all)."""

from __future__ import annotations

import json

import jsonschema
import pytest

import harness
from engines.bitmask import allocate_bitmask
from harness.measure.replay import replay
from harness.registry import adapter_class
from harness.suite.measure import keywords
from suites.hazards import padding, whitespace
from suites.hazards.summary import hazard_table


@pytest.fixture(scope="module")
def vocab():
    from engines.vocab import load_vocabulary

    return load_vocabulary("llama3")


def _accepts(vocab):
    bm = allocate_bitmask(vocab.size)
    return lambda c, t: replay(c.matcher(), vocab.encode(t), bm, vocab.stop_ids).status == "accepted"


def test_every_probe_has_instances_its_keyword_alone_decides():
    for pid, schema in keywords.PROBES.items():
        (node,) = keywords.nodes(schema, extended=False, root_only=True)
        assert node.keywords, pid
        for kw in node.keywords:
            insts = keywords.deciding(node.schema, kw)
            assert insts, (pid, kw)
            bare = keywords.without(node.schema, kw)
            for v in insts:  # jsonschema: valid without the keyword, invalid with it
                assert jsonschema.Draft202012Validator(bare).is_valid(v), (pid, v)
                assert not jsonschema.Draft202012Validator(
                    node.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
                ).is_valid(v), (pid, v)


def test_nodes_keep_local_refs_resolvable_skip_remote_ones_and_walk_nested_ones():
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 3},
        "b": {"$ref": "#/$defs/x", "minLength": 2},
        "c": {"$ref": "https://example.com/s.json", "maxLength": 2}},
        "$defs": {"x": {"type": "string"}}}
    got = {n.path: n for n in keywords.nodes(schema, extended=False)}
    assert got["/properties/a"].skip is None and got["/properties/a"].keywords == ["maxLength"]
    # a local $ref taken alone keeps the root's $defs: it resolves, and it is judged
    b = got["/properties/b"]
    assert b.skip is None and b.schema["$defs"] == schema["$defs"]
    assert keywords.deciding(b.schema, "minLength")[0] == ""  # a string: the $ref resolved
    # a remote one is never fetched: not judged
    assert "never fetched" in got["/properties/c"].skip


def test_the_exact_reference_engine_never_ignores_a_keyword_and_no_grammar_ignores_all(vocab):
    accepts = _accepts(vocab)
    ref = adapter_class("reference")(vocab)
    null = adapter_class("null")(vocab)
    memo = keywords.Memo()
    for pid in ("maxLength", "minimum", "maxItems", "pattern", "format-date"):
        schema = keywords.PROBES[pid]
        kw = "format" if pid.startswith("format") else pid
        got = keywords.judge_schema(keywords.AdapterEngine(ref, vocab), schema,
                                    extended=False, root_only=True, memo=memo)
        (row,) = [r for r in got.rows if r["keyword"] == kw]
        assert row["verdict"] == "kept", (pid, row)
        # the witness is refused with the keyword and accepted without it
        w = row["witness"]
        assert not accepts(ref.compile(json.dumps(schema)), w)
        assert accepts(ref.compile(json.dumps(keywords.without(schema, kw))), w)
        bad = keywords.judge_schema(keywords.AdapterEngine(null, vocab), schema,
                                    extended=False, root_only=True, memo=memo)
        (row,) = [r for r in bad.rows if r["keyword"] == kw]
        assert row["verdict"] == "ignored", (pid, row)
        assert not jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        ).is_valid(json.loads(row["witness"]))


def test_a_node_met_again_reuses_its_rows_at_its_own_path(vocab):
    """The whole-corpus atlas judges a repeated node once per engine: the rows come back
    at the new path, equal otherwise; another engine judges it afresh."""
    same = {"type": "string", "maxLength": 3}
    schema = {"type": "object", "properties": {"a": same, "b": same}}
    memo = keywords.Memo()
    ref = keywords.AdapterEngine(adapter_class("reference")(vocab), vocab)
    got = keywords.judge_schema(ref, schema, extended=False, memo=memo)
    assert got.nodes == 2 and got.reused == 1
    a, b = ([r for r in got.rows if r["path"] == p] for p in ("/properties/a", "/properties/b"))
    assert [{**r, "path": None} for r in a] == [{**r, "path": None} for r in b]
    assert a[0]["verdict"] == "kept"
    null = keywords.AdapterEngine(adapter_class("null")(vocab), vocab)
    kept: list[list[dict]] = []
    other = keywords.judge_schema(null, schema, extended=False, memo=memo, keep=kept.append)
    assert other.reused == 1 and {r["verdict"] for r in other.rows} == {"ignored"}
    # every node's rows are handed over as soon as they are made (a job killed later keeps
    # them), judged and reused alike, and they are the rows returned
    assert len(kept) == 2 and [r for rows in kept for r in rows] == other.rows


def test_the_smallest_nodes_are_judged_first(vocab):
    """A slow compile kills the job: the cheap nodes (short schema text) go before it."""
    schema = {"type": "object", "maxProperties": 3,
              "properties": {"a": {"type": "string", "maxLength": 3}}}
    ref = keywords.AdapterEngine(adapter_class("reference")(vocab), vocab)
    got = keywords.judge_schema(ref, schema, extended=False, memo=keywords.Memo())
    assert [r["path"] for r in got.rows][0] == "/properties/a"
    assert got.rows[-1]["path"] == ""


def test_padded_width():
    assert padding.padded_width(128_256, ("multiple", 128)) == 128_384
    assert padding.padded_width(151_851, ("to", 151_936)) == 151_936
    assert padding.padded_width(151_000, ("multiple", 64)) == 151_040


@pytest.mark.parametrize("engine", ["xgrammar", "llguidance"])
def test_padded_masks_are_judged_from_what_the_engine_wrote(vocab, engine):
    a = adapter_class(engine)(vocab)
    width = padding.padded_width(vocab.size, padding.PADDINGS["llama3"])
    got = padding.probe(a, width)
    assert got["verdict"] in ("masked", "narrow", "leaks")
    assert got["logit_words"] == (width + 31) // 32
    # inside a string nearly every real token is allowed: the masks were really written
    assert got["states"]["in_string"]["allowed_below_n"] > vocab.size // 2
    if got["verdict"] == "masked":
        assert all(s["leaked"] == 0 for s in got["states"].values())
    if got["verdict"] == "narrow":  # the ones pre-filled beyond the engine's words remain
        assert got["engine_words"] < got["logit_words"]
        assert got["states"]["start"]["leaked"] > 0
        assert all(s["leaked_written"] == 0 for s in got["states"].values())


def test_whitespace_runs_against_the_oracle(vocab):
    ref = adapter_class("reference")(vocab)
    oracle = ref.compile(whitespace.SCHEMA)
    # the reference engine's default caps a gap at 32 characters: bounded, measured
    own = whitespace.walk(oracle, vocab, oracle)
    assert own["longest"] == 32 and not own["unbounded"]
    llg = adapter_class("llguidance")
    got = whitespace.walk(llg(vocab).compile(whitespace.SCHEMA), vocab, oracle)
    assert set(got["positions"]) == set(whitespace.POSITIONS)
    bounded = whitespace.walk(llg(vocab, **llg.whitespace_bound(4)).compile(whitespace.SCHEMA),
                              vocab, oracle)
    assert bounded["longest"] <= 4 and not bounded["unbounded"]


def test_a_standalone_run_has_a_verdict_or_a_reason_in_every_cell(tmp_path):
    run = harness.run(harness.RunConfig(suite="hazards", engines=["llguidance", "reference"],
                                        subsets=["hostile_request", "bad_tool", "reasoning"],
                                        timeout_s=60, memory_gib=8),
                      results=tmp_path / "results", reports=tmp_path / "reports")
    from harness.store.run_store import RunStore

    records = list(RunStore.open_readonly(run.path).records())
    table = hazard_table(run.meta(), records)
    assert [r["hazard"] for r in table["rows"]] == ["hostile_request", "bad_tool", "reasoning"]
    for row in table["rows"]:
        for eng, cell in row["cells"].items():
            assert cell["verdict"] and cell["text"], (row["hazard"], eng)
    cells = {r["hazard"]: r["cells"] for r in table["rows"]}
    assert cells["hostile_request"]["llguidance"]["text"].startswith("not measured: a server")
    assert cells["reasoning"]["reference"]["verdict"] == "not measured"
    assert cells["reasoning"]["llguidance"]["verdict"] in ("enforced", "not_enforced", "leaks",
                                                          "refused")
    summary = run.summary()
    assert summary["hazards"]["rows"] == table["rows"]
    report = (run.reports / "report.md").read_text()
    assert "Production hazards" in report and "bad tool" in report
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run.path)],
                         cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "## Production hazards" in out.stdout and "| hazard | llguidance | reference |" \
        in out.stdout
    assert "## Replay runs" not in out.stdout and "## End-to-end runs" not in out.stdout


def test_served_hazards_against_the_canned_server(tmp_path):
    """The canned test server (no model) honours no structural tag and answers every
    hostile request it can parse: the reasoning hazard must say "not_enforced" with the
    server's text as witness, and the hostile requests must each get a verdict, the
    ordinary request after them answered."""
    run = harness.run(harness.RunConfig(suite="hazards", engines=["canned"],
                                        subsets=["hostile_request", "reasoning", "whitespace"],
                                        options={"launch": True, "request_timeout_s": 30}),
                      results=tmp_path / "results", reports=tmp_path / "reports")
    from harness.store.run_store import RunStore
    from suites.hazards.served import hostile_requests

    records = {r["case_id"]: r for r in RunStore.open_readonly(run.path).records()}
    hostile = records["hostile_request"]["hazard"]
    assert len(hostile["requests"]) == len(hostile_requests())
    assert all(q["verdict"] in ("accepted", "refused", "no_answer", "hung", "crashed")
               for q in hostile["requests"])
    assert hostile["ordinary"]["verdict"] == "accepted"
    assert hostile["verdict"] in ("survived", "crashed", "hung", "degraded")
    reasoning = records["reasoning"]["hazard"]
    assert reasoning["verdict"] == "not_enforced" and reasoning["witness"]
    assert records["reasoning"]["outcome"] == "invalidation_error"
    assert records["whitespace"]["hazard"]["not_measured"].startswith("an engine hazard")


def test_the_keyword_atlas_counts_every_occurrence_of_the_corpus_schemas(tmp_path):
    """``--subset keywords --sample all`` on a small corpus folder: the atlas in the summary
    is :func:`keyword_atlas` of the records, counts every row of every corpus schema (the
    probes left out), the exact engine flags nothing and the engine with no grammar has
    every decided occurrence ignored, its first witness invalid by jsonschema; the document
    generator renders the atlas."""
    import subprocess
    import sys
    from pathlib import Path

    from harness.store.run_store import RunStore
    from suites.hazards.summary import keyword_atlas
    from tests.conftest import link_real

    names = ("Github_easy---o10009.json", "Github_easy---o12387.json",
             "Github_easy---o10876.json")
    link_real(tmp_path / "data", names)
    run = harness.run(harness.RunConfig(suite="hazards", engines=["reference", "null"],
                                        subsets=["keywords"], sample="all",
                                        data=str(tmp_path / "data")),
                      results=tmp_path / "results", reports=tmp_path / "reports")
    records = list(RunStore.open_readonly(run.path).records())
    atlas = run.summary()["hazards"]["atlas"]
    assert atlas == json.loads(json.dumps(keyword_atlas(records)))
    corpus = [r for r in records if r["case_id"].startswith("keywords/corpus/")]
    assert len(corpus) == 2 * len(names) and atlas["engines"] == ["null", "reference"]
    for e in ("null", "reference"):
        rows = [x for r in corpus if r["engine"] == e for x in r["hazard"]["rows"]]
        counted = sum(n for c in atlas["cells"][e].values() for n in c["counts"].values())
        assert counted == len(rows) >= 10
        assert atlas["engine"][e]["schemas"] == len(names) and atlas["engine"][e]["died"] == 0
    ref = atlas["cells"]["reference"]
    assert not any(c["counts"]["ignored"] or c["counts"]["misread"] for c in ref.values())
    assert sum(c["counts"]["kept"] for c in ref.values()) > 0
    null = atlas["cells"]["null"]
    assert not any(c["counts"]["kept"] for c in null.values())
    for kw, c in null.items():
        if c["counts"]["ignored"]:
            ex = c["examples"]["ignored"]
            rec = next(r for r in corpus if r["case_id"].endswith(ex["case"])
                       and r["engine"] == "null")
            assert rec["outcome"] == "invalidation_error"
            schema = json.loads((tmp_path / "data" / ex["case"]).read_text())["schema"]
            node = next(n for n in keywords.nodes(schema, extended=False)
                        if n.path == ex["path"])
            v = jsonschema.Draft202012Validator(
                node.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            assert not v.is_valid(json.loads(ex["witness"])), (kw, ex)
    # a job that died keeps the nodes it had finished: they are counted, the death too
    dead = {**corpus[0], "outcome": "timeout", "error": "wall-clock limit 1s passed",
            "kept": {"rows": corpus[0]["hazard"]["rows"][:2]}}
    dead.pop("hazard")
    again = keyword_atlas([dead] + corpus[1:])
    e = dead["engine"]
    assert again["engine"][e]["died"] == 1 and again["engine"][e]["died_rows"] == 2
    assert sum(n for c in again["cells"][e].values() for n in c["counts"].values()) == \
        sum(n for c in atlas["cells"][e].values() for n in c["counts"].values()) \
        - len(corpus[0]["hazard"]["rows"]) + 2
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "benchmarks/results_table.py", str(run.path)],
                         cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "## Keyword atlas" in out.stdout and "| keyword | null | reference |" in out.stdout


def test_the_run_memo_is_shared_through_its_scratch_folder(vocab, tmp_path):
    """Two workers of a run (two memos on one folder): what one judged the other reuses,
    the plans whatever the engine; a node whose judging process is gone (its job killed
    by the run's limits) is undecided at once, without judging it again."""
    import subprocess
    import sys

    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3,
                                                     "description": "A"},
                                               "b": {"type": "string", "maxLength": 3,
                                                     "title": "B"}}}
    ref = keywords.AdapterEngine(adapter_class("reference")(vocab), vocab)
    one = keywords.Memo(folder=tmp_path)
    got = keywords.judge_schema(ref, schema, extended=False, memo=one)
    # without their annotations the two properties are one node: judged once
    assert got.nodes == 2 and got.reused == 1
    two = keywords.Memo(folder=tmp_path)
    again = keywords.judge_schema(ref, schema, extended=False, memo=two)
    assert again.reused == 2 and again.rows == got.rows and not two.plans
    null = keywords.AdapterEngine(adapter_class("null")(vocab), vocab)
    other = keywords.judge_schema(null, schema, extended=False, memo=two)
    assert other.reused == 1 and len(two.plans) == 1  # read, not made again
    # a process that began a node and died before its rows were written
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    node = {"type": "integer", "minimum": 3}
    nkey = json.dumps(node, sort_keys=True)
    one._write("busy", int(dead), ref.key, nkey)
    assert two.killed(ref.key, nkey) and not two.killed(null.key, nkey)
    (row,) = keywords.judge_schema(ref, node, extended=False, memo=two).rows
    assert row["verdict"] == "undecided" and "limits" in row["why"]


def test_a_compile_past_its_budget_is_abandoned_and_the_rest_undecided(tmp_path):
    """The faulty engine's compile never returns (a pure-Python busy loop): past the
    budget it is left in its thread, its node is undecided with why (and remembered),
    the nodes after it are not judged, and the caller is told to end the process. In a
    subprocess: the abandoned thread spins until its process ends."""
    import subprocess
    import sys
    from pathlib import Path

    code = """if 1:
        import json, time
        from engines.vocab import load_vocabulary
        from harness.registry import adapter_class
        from harness.measure import keywords
        vocab = load_vocabulary("llama3")
        eng = keywords.AdapterEngine(adapter_class("faulty")(vocab), vocab, compile_seconds=0.5)
        schema = {"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3, "x-faulty": "hang"},
            "b": {"type": "integer", "minimum": 2, "maximum": 100, "multipleOf": 2}}}
        memo = keywords.Memo()
        t0 = time.monotonic()
        got = keywords.judge_schema(eng, schema, extended=False, memo=memo)
        print(json.dumps({"abandoned": got.abandoned, "rows": got.rows,
                          "s": time.monotonic() - t0, "memo": len(memo.rows)}))
    """
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["abandoned"] and got["s"] < 20
    first, *rest = got["rows"]
    assert first["verdict"] == "undecided" and "ran past 0.5 s" in first["why"]
    assert rest and all(r["verdict"] == "undecided" and "abandoned" in r["why"] for r in rest)
    assert got["memo"] == 1  # the slow node is remembered; the nodes not judged are not


class _ByType:
    """An engine that compiles a schema by its ``type`` alone (every other keyword
    ignored, as outlines-core ignores ``minimum``), and never finishes a string's."""

    key = "by-type"

    def __init__(self):
        self.compiles: list[str] = []

    def grammar_key(self, schema_text):
        return "type:" + json.loads(schema_text)["type"]

    def compile(self, schema_text):
        self.compiles.append(schema_text)
        if json.loads(schema_text)["type"] == "string":
            raise keywords.CompileAbandoned("the engine's compile ran past 3 s")
        return json.loads(schema_text)["type"]

    def accepts(self, compiled, text):
        x = json.loads(text)
        return compiled == "integer" and isinstance(x, int) and not isinstance(x, bool)

    def writable(self, compiled, text):
        return "unwritable", None


def test_a_grammar_is_compiled_once_per_run_and_a_slow_one_never_again(tmp_path):
    """Nodes whose grammars are one (the engine's grammar_key) share one compile; a
    grammar whose compile ran past the budget is not compiled again by any worker of the
    run (a memo on the same scratch folder), and that worker is not told to end."""
    schema = {"type": "object", "properties": {
        "a": {"type": "integer", "minimum": 1}, "b": {"type": "integer", "maximum": 5},
        "c": {"type": "string", "maxLength": 2, "minLength": 1}}}
    engine = _ByType()
    got = keywords.judge_schema(engine, schema, extended=False,
                                memo=keywords.Memo(folder=tmp_path))
    verdicts = {(r["path"], r["keyword"]): r["verdict"] for r in got.rows}
    assert verdicts[("/properties/a", "minimum")] == "ignored"
    assert verdicts[("/properties/b", "maximum")] == "ignored"
    assert sum('"integer"' in s for s in engine.compiles) == 1  # a, b and their variants
    assert got.abandoned  # the string's compile is still running in this process
    assert {r["verdict"] for r in got.rows if r["path"] == "/properties/c"} == {"undecided"}
    # another worker, another node with the same grammar: nothing compiled, not abandoned
    other = _ByType()
    again = keywords.judge_schema(other, {"type": "string", "pattern": "^a"},
                                  extended=False, memo=keywords.Memo(folder=tmp_path))
    assert other.compiles == [] and not again.abandoned
    (row,) = again.rows
    assert row["verdict"] == "undecided" and "ran past 3 s" in row["why"] \
        and "earlier job" in row["why"]


def test_outlines_grammar_key_is_its_regex(vocab):
    """outlines-core ignores ``minimum`` (outlines-core #261): the node and the node
    without it are one regular expression, so one Index; a schema it cannot turn into a
    regex is refused at the key, as compile refuses it."""
    from engines.protocol import CompileError
    from harness.registry import is_installed

    if not is_installed("outlines"):
        pytest.skip("outlines not installed")
    oc = adapter_class("outlines")(vocab)
    key = oc.grammar_key(json.dumps({"type": "integer", "minimum": 3}))
    assert key == oc.grammar_key(json.dumps({"type": "integer"}))
    assert key != oc.grammar_key(json.dumps({"type": "integer", "enum": [1, 2]}))
    assert key == "regex:" + oc.compile(json.dumps({"type": "integer"})).regex
    with pytest.raises(CompileError):
        oc.grammar_key("not json")
    with pytest.raises(CompileError):
        oc.compile("not json")
