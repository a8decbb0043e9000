"""The report shows the suites' own sections when they ran: the drift heatmap and matrix,
and the JSON-Schema-Test-Suite keyword table (real runs with llguidance, small subsets)."""

from __future__ import annotations

from conftest import harness


def _run(tmp_path, name, *args):
    res = tmp_path / f"res-{name}"
    out = harness("run", *args, "--engine", "llguidance", "--results", str(res),
                  "--reports", str(tmp_path / "rep"), "--no-progress")
    assert out.returncode == 0, out.stderr
    return next(res.iterdir())


def test_report_has_drift_and_keyword_sections(tmp_path):
    drift = _run(tmp_path, "drift", "--suite", "drift", "--subset", "whitespace")
    jsts = _run(tmp_path, "jsts", "--suite", "json-schema-test-suite",
                "--subset", "draft2020-12/required")
    out = harness("report", str(drift), str(jsts), "-o", str(tmp_path / "both"))
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "both" / "report.md").read_text()
    assert "## Drift: engine × semantic axis (A)" in md
    assert "| whitespace | agrees |" in md
    assert (tmp_path / "both" / "drift.png").read_bytes()[:4] == b"\x89PNG"
    assert "## JSON Schema Test Suite: keywords × engines (B)" in md
    assert "draft2020-12/required" in md
    html = (tmp_path / "both" / "report.html").read_text()
    assert "Drift: engine × semantic axis" in html and "data:image/png;base64" in html
