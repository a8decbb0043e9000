"""The engine guide's third-party engine adapter (docs/engines.md), registered through the entry point group
``grammar_harness.engines`` from a package installed in a temporary folder, without editing
this repository, then runs in ``harness run --engine NAME``."""

from __future__ import annotations

import os
import subprocess
import sys
import re

from conftest import ROOT, link_real, read_records

def guide_block(lang: str, marker: str) -> str:
    """The first ```lang block of the engine guide (docs/engines.md, linked from the
    README's "Plug in your own engine") that contains ``marker``."""
    text = (ROOT / "docs" / "engines.md").read_text()
    for block in re.findall(rf"```{lang}\n(.*?)```", text, re.S):
        if marker in block:
            return block
    raise AssertionError(f"docs/engines.md has no {lang} block with {marker!r}")


PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "my-adapter"
version = "0.1"

[tool.setuptools]
py-modules = ["my_adapter"]

"""


def test_third_party_adapter_through_entry_point(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    # the guide's example adapter and its entry point, as written there
    (src / "my_adapter.py").write_text(guide_block("python", "# my_adapter.py"))
    (src / "pyproject.toml").write_text(PYPROJECT + guide_block("toml", "grammar_harness.engines"))
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                         capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    data = tmp_path / "corpus"
    link_real(data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    listed = subprocess.run([sys.executable, "-m", "harness.cli", "engines", "--all"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "myengine" in listed.stdout, listed.stderr
    run = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--engine", "myengine",
                          "--data", str(data), "--results", str(tmp_path / "results"),
                          "--reports", str(tmp_path / "reports"), "--no-progress"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    _, records = read_records(tmp_path / "results")
    assert len(records) == 3 and {r["engine"] for r in records} == {"myengine"}
    # every token allowed: no valid instance is rejected, and every schema with an invalid
    # instance accepts it
    assert {r["outcome"] for r in records} <= {"passing", "invalidation_error"}
    assert any(r["outcome"] == "invalidation_error" for r in records)
