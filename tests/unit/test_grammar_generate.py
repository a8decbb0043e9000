"""The grammar corpus's instance generator (``python -m scripts.grammar_cases.generate``), on
small case files of its own in a temporary directory (never the real corpus)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.measure.languages import reader
from scripts.grammar_cases.check import check_case
from harness.suite.grammar_corpus import load_file
from scripts.grammar_cases.generate import (COMMENT, MAX_CHARS, PER_LABEL, main, render_section,
                                      replace_section, toml_string)

ROOT = Path(__file__).resolve().parents[2]

REGEX = '''family = "regex"
description = "a date-ish shape"
regex = \'\'\'[0-9]{2}-(?:0[1-9]|1[0-2])(?:T[a-z]{1,3})?\'\'\'

[instances]
valid = ["12-01", "00-12Tab"]
invalid = ["12-13", ""]
'''

CHOICE = '''family = "choice"
description = "a small menu"
choices = ["red", "green", "blue", "green-blue", "\\u007f"]

[instances]
valid = ["red"]
invalid = ["Red"]
'''

CFG = '''family = "cfg"
description = "nested lists of words"
lark = \'\'\'
start: list
list: "[" [item ("," item)*] "]"
?item: list | WORD | "nil"i
WORD: /[a-z]+/
\'\'\'

[instances]
valid = ["[]", "[a,[b]]"]
invalid = ["[", "[a,]"]
'''

# an [inject] case (sizes out of order), with a stale [generated] table to replace
INJECT = '''family = "cfg"
description = "columns"
lark = \'\'\'
start: "get " col (" " col)*
col: @COLUMN@
\'\'\'

[inject]
placeholder = "COLUMN"
prefix = "c"
sizes = [20, 5]

[instances]
valid = ["get c1"]
invalid = ["get"]

# written by python -m scripts.grammar_cases.generate; labels by ground truth
[generated]
valid = ["stale", "get c99"]
invalid = ["get c1 c2"]
'''

FILES = {"regex-t.toml": REGEX, "choice-t.toml": CHOICE, "cfg-t.toml": CFG, "inject-t.toml": INJECT}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The case files, generated once (the run's output and the files' bytes)."""
    d = tmp_path_factory.mktemp("cases")
    paths = []
    for name, text in FILES.items():
        p = d / name
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    rc = main([str(p) for p in paths])
    return d, paths, rc, {p.name: p.read_bytes() for p in paths}


def test_runs_and_writes_loadable_sections(generated, capsys):
    d, paths, rc, after = generated
    assert rc == 0
    for p in paths:
        text = after[p.name].decode("utf-8")
        doc = tomllib.loads(text)
        assert set(doc["generated"]) == {"valid", "invalid"}
        cases = load_file(p)
        assert cases
        assert text.count("[generated]") == 1
        assert f"{COMMENT}\n[generated]\n" in text
        assert text.rstrip().endswith("]")
        # the table is the file's last one
        assert text.index("[generated]") > text.index("[instances]")


def test_hand_written_part_kept(generated):
    _, paths, _, after = generated
    for p in paths:
        original = FILES[p.name]
        text = after[p.name].decode("utf-8")
        if "[generated]" in original:
            keep = original[:original.index(COMMENT)]
        else:
            keep = original
        assert text.startswith(keep)
        assert "stale" not in text


def test_labels_are_ground_truth(generated):
    _, paths, _, _ = generated
    for p in paths:
        cases = load_file(p)
        for case in cases:  # every size of an [inject] file
            r = check_case(case)
            assert not r.mislabelled, r.lines()
            truth = reader(case.source, case.forms[case.source])
            gen = case.instances[case.hand_written:]
            for text, label in gen:
                assert truth(text) is label, (case.case_id, text, label)


def test_counts_and_no_repeats(generated):
    _, paths, _, _ = generated
    for p in paths:
        case = load_file(p)[0]
        hand = {t for t, _ in case.instances[:case.hand_written]}
        gen = [t for t, _ in case.instances[case.hand_written:]]
        doc = tomllib.loads(p.read_text(encoding="utf-8"))["generated"]
        assert len(doc["valid"]) <= PER_LABEL and len(doc["invalid"]) <= PER_LABEL
        assert len(set(gen)) == len(gen)
        assert not hand & set(gen)
        assert all(len(t) <= MAX_CHARS for t in gen)
        assert doc["invalid"], p.name  # every one of these languages has mutations
        if p.name != "choice-t.toml":
            assert len(doc["valid"]) == PER_LABEL, p.name
    # the menu has 5 entries, one hand-written: at most 4 new valid ones
    choice = tomllib.loads((paths[1]).read_text(encoding="utf-8"))["generated"]
    assert set(choice["valid"]) <= {"green", "blue", "green-blue", "\x7f"}
    assert len(choice["valid"]) >= 2


def test_rerun_is_deterministic_and_replaces(generated, tmp_path):
    _, paths, _, after = generated
    again = []
    for p in paths:
        q = tmp_path / p.name
        q.write_bytes(after[p.name])  # generate over the generated file: replaced in place
        again.append(q)
    assert main([str(q) for q in again]) == 0
    for q in again:
        assert q.read_bytes() == after[q.name]
    # from scratch again, in a fresh interpreter with another hash seed: same bytes
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in ("cfg-t.toml", "regex-t.toml"):
        (fresh / name).write_text(FILES[name], encoding="utf-8")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-m", "scripts.grammar_cases.generate",
                          str(fresh / "cfg-t.toml"), str(fresh / "regex-t.toml")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["cfg-t", "regex-t"]
    assert all(" valid, " in ln and " invalid" in ln for ln in lines)
    for name in ("cfg-t.toml", "regex-t.toml"):
        assert (fresh / name).read_bytes() == after[name]


def test_bad_file_reported_and_left_alone(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('family = "nope"\n', encoding="utf-8")
    good = tmp_path / "choice-t.toml"
    good.write_text(CHOICE, encoding="utf-8")
    assert main([str(bad), str(good)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("bad.toml: family must be one of")
    assert out[1].startswith("choice-t: ")
    assert bad.read_text(encoding="utf-8") == 'family = "nope"\n'
    assert "[generated]" in good.read_text(encoding="utf-8")


def test_toml_string_round_trips():
    texts = ["", 'a"b\\c', "\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f\x80\x9f", "\u2028\u2029\u00a0\u200b\ufeff",
             "é中😀\U0010FFFD\U000E0001", "'''", "#[generated]"]
    doc = tomllib.loads("v = [" + ", ".join(toml_string(t) for t in texts) + "]\n")
    assert doc["v"] == texts
    assert toml_string("\x7f") == '"\\u007f"'
    with pytest.raises(ValueError):
        toml_string("\ud800")


def test_replace_section_keeps_what_precedes():
    section = render_section(["a"], [])
    assert tomllib.loads(section)["generated"] == {"valid": ["a"], "invalid": []}
    for head in ('x = 1\n', 'x = 1', 'x = 1\n\n', ''):
        once = replace_section(head, section)
        assert once.startswith(head)
        assert replace_section(once, section) == once
        assert replace_section(once, render_section(["b"], ["c"])).startswith(head)
    # a table after [generated] stays (before the new table); the old one is gone
    mid = f'x = 1\n\n{COMMENT}\n[generated]\nvalid = ["old"]\n\n[instances]\nvalid = ["v"]\n'
    new = replace_section(mid, section)
    doc = tomllib.loads(new)
    assert doc["instances"] == {"valid": ["v"]} and doc["generated"]["valid"] == ["a"]
    assert new.count(COMMENT) == 1 and new.endswith(section)
