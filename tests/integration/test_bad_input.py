"""Bad input (issue #7, part 3): one stderr line naming the thing and what to do, and the
run goes on where it can.

Already covered in ``tests/integration/test_runner.py``: malformed JSON and a file that is not a
MaskBench case (``test_malformed_files_give_one_line_errors_and_the_run_goes_on``); an
unknown engine, an unknown configuration, a missing corpus folder, a tokenizer file that
does not load, an unknown subset (``test_bad_input_is_one_line``). Here: a corpus file
whose ``schema`` is not a schema, an instance that is not JSON-serialisable (``NaN``,
which ``json.loads`` accepts and JSON forbids), beside a malformed file and good files,
with two engines (one line per file, not per engine); an unknown suite; a tokenizer path
that does not exist.
"""

from __future__ import annotations

import pytest

from conftest import harness, read_records, write_case

OK = [{"description": "valid", "valid": True, "data": {"a": 1}}]


def test_bad_files_and_instances_are_one_line_each_and_the_run_goes_on(tmp_path):
    data, results = tmp_path / "corpus", tmp_path / "results"
    write_case(data, "Good---ok.json", {"type": "object"}, OK)
    write_case(data, "Bad---not_a_schema.json", "just a string", OK)
    (data / "Bad---truncated.json").write_text('{"schema": {"type": ')
    # NaN is not JSON, but Python's json.loads (and so the corpus reader) accepts it
    (data / "Bad---nan.json").write_text(
        '{"description": "", "meta": {}, "schema": {"type": "object"}, "tests": ['
        '{"description": "nan", "valid": true, "data": {"a": NaN}}, '
        '{"description": "ok", "valid": true, "data": {"a": 1}}]}')
    out = harness("run", "--engine", "null,llguidance", "--data", str(data), "--results",
                  str(results), "--reports", str(tmp_path / "rep"), "--no-progress")
    assert out.returncode == 0, out.stderr
    err = [l for l in out.stderr.splitlines() if l.startswith("harness:")]
    for name, what in (("Bad---not_a_schema.json", "'schema' is a str, not a JSON Schema"),
                       ("Bad---truncated.json", "malformed JSON at line 1"),
                       ("Bad---nan.json", "instance #0 is not JSON-serialisable")):
        lines = [l for l in err if name in l]
        assert len(lines) == 1, (name, out.stderr)  # once, not once per engine
        assert what in lines[0], lines[0]
        assert "fix or remove it" in lines[0], lines[0]
    _, recs = read_records(results)
    by = {(r["engine"], r["case_id"]): r for r in recs}
    assert len(by) == len(recs) == 8
    for eng in ("null", "llguidance"):
        assert by[(eng, "Bad---not_a_schema.json")]["outcome"] == "bad_input"
        assert by[(eng, "Bad---truncated.json")]["outcome"] == "bad_input"
        assert by[(eng, "Good---ok.json")]["outcome"] == "passing"
        nan = by[(eng, "Bad---nan.json")]
        assert nan["outcome"] == "passing"  # decided on the instance that could be replayed
        bad, good = nan["instances"]
        assert "Out of range float" in bad["bad_instance"] and not bad.get("results")
        assert good["results"]["ascii"]["status"] == "accepted"


@pytest.mark.parametrize("args,fragment", [
    (["--suite", "nosuch"], "unknown suite 'nosuch'; known: "),
    (["--tokenizer", "/nonexistent/tokenizer.json"],
     "tokenizer '/nonexistent/tokenizer.json': not a known name"),
])
def test_more_bad_options_are_one_line(tmp_path, args, fragment):
    out = harness("run", *args, "--results", str(tmp_path / "res"), "--no-progress",
                  timeout=120)
    assert out.returncode == 2
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert not (tmp_path / "res").exists()
