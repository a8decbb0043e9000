"""Security (issue #7, part 4): schemas are untrusted input.

One real run (every installed engine, the real worker with ground truth, under umask 027)
over a corpus holding: remote ``$ref``s (http and https, by IP and by name, and a remote
``$schema``) pointing at a listener on a local port that counts every TCP connection;
a schema whose every string is Python code that would leave a marker file if anything
evaluated it; and a file whose name and engine error carry HTML that would break out of
an attribute. Then: zero connections, no marker, an inert HTML report, files only under
the results and reports folders with the umask respected. A schema id and subset like
``../../etc/x`` go through the runner and the report builder without leaving the results
folder. And a static scan: no ``eval``/``exec``/``pickle.loads``/... in the project.
"""

from __future__ import annotations

import ast
import html.parser
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT, read_records, write_case
from harness.registry import is_installed

ENGINES = ["xgrammar", "llguidance", "outlines", "reference", "faulty"] + (
    ["llamacpp-gbnf"] if is_installed("llamacpp-gbnf") else [])
QUOTES_NAME = "Evil---\"><img src=x onerror=alert(1)>' onmouseover='alert(2).json"
QUOTES_MODE = "\"' onfocus=\"alert(3)\" autofocus=\"<script>alert(4)</script>"


class Listener:
    """A TCP listener on 127.0.0.1 that counts accepted connections (answering each with
    a JSON schema over HTTP, so a fetch would have succeeded)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        body = b'{"type": "integer"}'
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except socket.timeout:
                continue
            self.connections.append(peer)
            try:
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            finally:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self.thread.join()
        self.sock.close()


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("sec")
    data, results, reports = base / "corpus", base / "results", base / "reports"
    marker = base / "PWNED"
    listener = Listener()
    port = listener.port
    remote = [f"http://127.0.0.1:{port}/int.json", f"https://127.0.0.1:{port}/int.json",
              f"http://localhost:{port}/defs.json#/$defs/x"]
    write_case(data, "Remote---ref.json", {
        "type": "object",
        "properties": {f"r{i}": {"$ref": u} for i, u in enumerate(remote)},
        "required": ["r0"]},
        [{"description": "int", "valid": True, "data": {"r0": 1}},
         {"description": "wrong", "valid": False, "data": 5}])
    write_case(data, "Remote---schema_and_id.json", {
        "$schema": f"http://127.0.0.1:{port}/meta.json",
        "$id": f"http://127.0.0.1:{port}/root.json",
        "type": "object", "properties": {"a": {"$ref": "other.json"}}},
        [{"description": "ok", "valid": True, "data": {}}])
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    write_case(data, "Hostile---code.json", {
        "$id": code, "title": code, "description": code, "$comment": code,
        "type": "object",
        "properties": {code: {"type": "string", "default": code, "examples": [code],
                              "enum": [code, "x"]},
                       "p": {"type": "string", "pattern": "^" + code.replace("(", "\\(")
                             .replace(")", "\\)").replace(".", "\\.") + "$"}},
        "x-python": code},
        [{"description": "ok", "valid": True, "data": {code: "x"}}])
    # a closed object: an open {"type": "object"} costs outlines-core ~15 s to compile
    write_case(data, QUOTES_NAME, {"type": "object", "properties": {"a": {"type": "integer"}},
                                   "required": ["a"], "additionalProperties": False,
                                   "x-faulty": QUOTES_MODE},
               [{"description": "ok", "valid": True, "data": {"a": 1}}])
    before = _files(base)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--engine", ",".join(ENGINES),
         "--data", str(data), "--results", str(results), "--reports", str(reports),
         "--timeout", "60", "--jobs", "2", "--no-progress"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        preexec_fn=lambda: os.umask(0o027))
    listener.close()
    yield {"out": out, "base": base, "results": results, "reports": reports,
           "marker": marker, "listener": listener, "before": before}


def test_no_engine_and_no_ground_truth_opens_a_connection(hostile_run):
    out = hostile_run["out"]
    assert out.returncode == 0, out.stderr
    _, recs = read_records(hostile_run["results"])
    by = {(r["engine"], r["case_id"]): r for r in recs}
    for eng in ENGINES:
        for sid in ("Remote---ref.json", "Remote---schema_and_id.json"):
            rec = by[(eng, sid)]
            # whatever the engine made of it, it ended cleanly (no crash, no hang)
            assert rec["outcome"] not in ("crash", "timeout", "oom"), (eng, sid, rec.get("error"))
    # ground truth ran in the worker and could not decide (the $ref was not fetched)
    ref = by[("llguidance", "Remote---ref.json")]
    assert all(i["truth"] is None and "int.json" in i["truth_error"] for i in ref["instances"][:1])
    assert hostile_run["listener"].connections == [], hostile_run["listener"].connections


def test_schema_content_is_never_evaluated(hostile_run):
    _, recs = read_records(hostile_run["results"])
    assert {r["engine"] for r in recs if r["case_id"] == "Hostile---code.json"} == set(ENGINES)
    assert not hostile_run["marker"].exists()


FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile"}
FORBIDDEN_ATTRS = {("pickle", "loads"), ("pickle", "load"), ("marshal", "loads"),
                   ("yaml", "load"), ("yaml", "unsafe_load"), ("dill", "loads")}


def test_no_dynamic_evaluation_in_the_project_source():
    hits = []
    for pkg in ("harness", "engines", "suites", "reference_engine"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS:
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno} {f.id}()")
                elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                      and (f.value.id, f.attr) in FORBIDDEN_ATTRS):
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno} {f.value.id}.{f.attr}()")
    assert hits == []


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "main", "footer",
                "nav", "section", "h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "a", "div",
                "span", "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
                "figure", "figcaption", "img", "code", "pre", "em", "strong", "br", "small"}
ALLOWED_ATTRS = {"class", "id", "href", "src", "alt", "charset", "name", "content",
                 "http-equiv", "lang", "title"}


def test_html_report_is_inert_under_hostile_names_and_errors(hostile_run):
    reports = hostile_run["reports"]
    (rep,) = [p for p in reports.iterdir() if p.is_dir()]
    text = (rep / "report.html").read_text()
    assert "alert(3)" in text and "alert(1)" in text  # the hostile text is shown ...
    parser = _Tags()
    parser.feed(text)
    parser.close()
    for tag, attrs in parser.tags:  # ... but only as text
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs:
            assert name in ALLOWED_ATTRS, (tag, name, value)
            if name == "src":
                assert value.startswith("data:image/png;base64,"), value[:40]
            if name == "href":
                assert value.startswith("#"), value
    shown = "".join(parser.text)
    assert QUOTES_NAME in shown  # the file name, and the engine's error quoting the mode
    assert 'onfocus="alert(3)" autofocus="<script>alert(4)</script>' in shown
    md = (rep / "report.md").read_text()
    assert "<img" not in md and "<script" not in md and "onerror=" in md


def test_files_only_under_results_and_reports_with_the_umask(hostile_run):
    base = hostile_run["base"]
    new = _files(base) - hostile_run["before"]
    outside = [p for p in new if not (p.is_relative_to(hostile_run["results"])
                                      or p.is_relative_to(hostile_run["reports"]))]
    assert outside == []
    assert any(p.name == "records.jsonl" for p in new)
    for p in new:
        mode = p.stat().st_mode & 0o777
        assert mode & 0o027 == 0, (p, oct(mode))  # nothing beyond what umask 027 allows


def test_a_schema_id_cannot_escape_the_results_folder(tmp_path):
    from harness.report.html import write_reports
    from harness.execution.executor import Job
    from harness.execution.local import LocalExecutor
    from harness.store.run_store import RunStore

    results, reports = tmp_path / "a" / "b" / "results", tmp_path / "a" / "b" / "reports"
    store = RunStore.create(results, "run", {"run_id": "run", "config": {
        "primary": "ascii", "serializations": ["ascii"], "timeout_s": 10}, "engines": [],
        "sessions": []})
    evil = "../../etc/x"
    case = {"suite": "jsonschemabench", "case_id": evil, "subset": "../../../tmp/y",
            "source": evil, "schema_text": '{"type": "object"}', "instances": [{"index": 0, "data": {}, "label": True}],
            "resources": []}
    payload = {"engine": {"name": "null", "config": "default", "label": "null"},
               "case": case, "tokenizer": "llama3", "serializations": ["ascii"],
               "primary": "ascii", "segmentations": 0}
    LocalExecutor(store, jobs=1, timeout_s=30, memory_gib=4).run([
        Job("null", evil, "../../../tmp/y", payload),
        Job("null", "../../bad", "..", None, "../../bad: cannot read")])
    store.close()
    write_reports([store.path], reports / "rep")
    recs = list(store.records())
    by_id = {r["case_id"]: r for r in recs}  # in the order they finished
    assert sorted(by_id) == sorted([evil, "../../bad"]) and len(recs) == 2
    assert by_id[evil]["outcome"] == "passing"
    made = _files(tmp_path)
    assert all(p.is_relative_to(results) or p.is_relative_to(reports) for p in made), made
    assert not (tmp_path / "a" / "etc").exists() and not (results.parent.parent / "etc").exists()
