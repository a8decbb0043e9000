"""``harness report``: HTML + Markdown from run folders; text from the corpus or an engine
is inert; two runs give side-by-side columns and a diff section."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import harness, read_records, write_case

EVIL_SUBSET = "Evil<img src=x onerror=alert(1)>"
# a file name cannot hold "/", so the closing tag comes through the engine's error text
EVIL_FILE = f"{EVIL_SUBSET}---<script>alert(1)<script>.json"
EVIL_ERROR_MODE = "<script>alert(2)</script>"
EVIL_ID = "Evil---</script><script>alert(3)</script>.json"  # planted in a copied records.jsonl

TESTS = [
    {"description": "valid", "valid": True, "data": {"a": 1}},
    {"description": "invalid", "valid": False, "data": 5},
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A real run (faulty test engine, real Llama-3 vocabulary) over a corpus whose file
    name and engine error hold markup, and an edited copy of it as a second run."""
    data = tmp_path_factory.mktemp("corpus")
    write_case(data, EVIL_FILE, {"type": "object", "x-faulty": EVIL_ERROR_MODE}, TESTS)
    write_case(data, "Plain---accept.json", {"type": "object", "x-faulty": "accept_all"}, TESTS)
    write_case(data, "Plain---passing.json", {"type": "object", "x-faulty": "accept_all"}, TESTS[:1])
    write_case(data, "Plain---reject.json", {"type": "object", "x-faulty": "reject_all"}, TESTS)
    results = tmp_path_factory.mktemp("results")
    out = harness("run", "--engine", "faulty", "--data", str(data), "--jobs", "1",
                  "--results", str(results), "--reports", str(tmp_path_factory.mktemp("rep")),
                  "--no-progress")
    assert out.returncode == 0, out.stderr
    run_a, recs = read_records(results)
    assert {r["case_id"]: r["outcome"] for r in recs}[EVIL_FILE] == "compile_error"
    # B: a copy where one schema regressed, one got an evil name, timings doubled
    run_b = tmp_path_factory.mktemp("runs") / "run-b"
    run_b.mkdir()
    meta = json.loads((run_a / "run.json").read_text())
    meta["run_id"] = "run-b"
    (run_b / "run.json").write_text(json.dumps(meta))
    lines = []
    for r in recs:
        r = json.loads(json.dumps(r))
        if r["case_id"] == "Plain---passing.json":
            r["outcome"], r["error"] = "crash", "worker died: SIGSEGV <b>bold</b>"
            r.pop("instances", None)
        if r["case_id"] == "Plain---reject.json":
            r["case_id"] = EVIL_ID
            r["outcome"], r["error"] = "timeout", "</table><script>alert(4)</script>"
            r.pop("instances", None)
        for inst in r.get("instances", ()):
            for res in inst.get("results", {}).values():
                res["mask_ns"] = [2 * t for t in res.get("mask_ns", [])]
        lines.append(json.dumps(r))
    (run_b / "records.jsonl").write_text("\n".join(lines) + "\n")
    return run_a, run_b


class TagCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "nav",
                "ul", "li", "a", "section", "p", "div", "table", "thead", "tbody", "tr", "th",
                "td", "dl", "dt", "dd", "figure", "img", "figcaption", "footer", "code"}


def assert_inert_html(text: str) -> None:
    low = text.lower()
    assert "<script" not in low and "<img src=x" not in low
    p = TagCollector()
    p.feed(text)
    tags = {t for t, _ in p.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    for tag, attrs in p.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,")
        if tag == "a":
            assert attrs["href"].startswith("#")
    # self-contained: nothing fetched from anywhere
    assert "http://" not in low and "https://" not in low and "src=\"//" not in low
    assert "content-security-policy" in low and "default-src 'none'" in text


def test_single_run_report_is_self_contained_and_escaped(runs, tmp_path):
    run_a, _ = runs
    out = harness("report", str(run_a), "-o", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    html_text = (tmp_path / "rep" / "report.html").read_text()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert_inert_html(html_text)
    # the markup is shown as text
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html_text
    assert "&lt;img src=x onerror=alert(1)&gt;" in html_text
    assert "&lt;script&gt;alert(1)&lt;script&gt;.json" in html_text
    for section in ("Run", "Engines", "Results", "Outcomes per subset", "Latency distributions",
                    "Masks over 1 ms", "Jobs that did not compile or finish"):
        assert f">{section}</h2>" in html_text
        assert f"## {section}" in md
    # trade-off, outcomes, subsets, TBM, TTFM
    assert html_text.count('src="data:image/png;base64,') == 5
    assert ">Diff</h2>" not in html_text  # (not the bare word: base64 image data may hold it)
    # Markdown: no raw tag, the plots beside it
    assert "<script" not in md and "<img" not in md
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in md
    for png in ("tbm.png", "ttfm.png", "outcomes.png", "subsets.png"):
        assert f"![{png}]({png})" in md
        assert (tmp_path / "rep" / png).read_bytes()[:4] == b"\x89PNG"
    # the run's metadata
    meta = json.loads((run_a / "run.json").read_text())
    assert meta["run_id"] in html_text and "llama3" in html_text and "faulty" in html_text


def test_two_runs_side_by_side_with_diff(runs, tmp_path):
    run_a, run_b = runs
    out = harness("report", str(run_a), str(run_b), "-o", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "rep" / "report.html").read_text()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert_inert_html(text)
    assert "&lt;/script&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in text
    assert "&lt;/table&gt;&lt;script&gt;alert(4)&lt;/script&gt;" in text
    # side-by-side columns
    assert ">faulty (A)</th>" in text and ">faulty (B)</th>" in text
    # the diff: the changed outcome, classified, and latency ratios new/old
    assert '>Diff</h2>' in text and ">B vs A</h3>" in text
    assert "Plain---passing.json" in text and ">regression</td>" in text
    assert ">passing</td><td class=\"l\">crash</td>" in text
    assert "TBM p50 (µs)" in text and "×" in text
    assert "## Diff" in md and "### B vs A" in md and "&lt;b&gt;bold&lt;/b&gt;" in md
    # only in one run: the renamed schema
    assert "only in A" in text and "Plain---reject.json" in text
    assert "<script" not in md


def test_default_folder_and_input_errors(runs, tmp_path):
    run_a, _ = runs
    out = harness("report", str(tmp_path / "nope"))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "nope" in out.stderr and "no such run folder" in out.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    out = harness("report", str(empty))
    assert out.returncode == 2 and "no run.json" in out.stderr
    # default: reports/<run-id>/ (under the project); removed afterwards
    from harness.cli.common import REPORTS_DEFAULT

    name = json.loads((run_a / "run.json").read_text())["run_id"]
    target = REPORTS_DEFAULT / name
    try:
        out = harness("report", str(run_a))
        assert out.returncode == 0, out.stderr
        assert (target / "report.html").is_file() and str(target) in out.stdout
    finally:
        shutil.rmtree(target, ignore_errors=True)


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium not installed (apt-get install chromium)")
def test_renders_in_headless_chromium(runs, tmp_path):
    """A real browser: the DOM holds no script element, the markup shows as text, and the
    screenshot is a page with content (benchmarks/render_report.sh does the same by hand)."""
    run_a, run_b = runs
    out = harness("report", str(run_a), str(run_b), "-o", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "rep" / "report.html").as_uri()
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--hide-scrollbars", "--window-size=1280,2400"]
    dom = subprocess.run([*flags, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<script" not in dom.stdout.lower()
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in dom.stdout
    assert dom.stdout.count("<img") == 5 + 0  # the plots (trade-off, outcomes, subsets, TBM, TTFM), nothing injected
    shot = tmp_path / "shot.png"
    res = subprocess.run([*flags, f"--screenshot={shot}", page], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    from PIL import Image

    im = Image.open(shot).convert("L")
    assert im.size == (1280, 2400)
    hist = im.histogram()
    dark = sum(hist[:128]) / sum(hist)
    assert 0.005 < dark < 0.5, dark  # text and plots, not a blank or an error page
