"""The harness installed as a wheel (not editable) into a folder of its own, used as a
library from another directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conftest import ROOT, link_real


def test_works_from_a_non_editable_install(tmp_path):
    """Installed as a wheel into a folder of its own and run from another directory: no
    default path points into the source tree."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("harness", "engines", "suites", "reference_engine"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
    # the layout of a clone: the corpus in ../shared/corpora beside the working directory
    link_real(tmp_path / "shared" / "corpora" / "jsonschemabench")
    work = tmp_path / "clone"
    work.mkdir()
    code = ("import harness; r = harness.run(harness.RunConfig(engines=['llguidance'], "
            "sample=2)); print(r.path); print(r.summary()['engines']['llguidance']['status'])")
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_DATA"}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", code], cwd=work, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    path, status = out.stdout.split()[-2:]
    assert status == "run" and path.startswith("results/")
    assert (work / path / "summary.json").exists()
    assert (work / "reports").is_dir() and not (src / "results").exists()
    import_from = subprocess.run([sys.executable, "-c", "import harness; print(harness.__file__)"],
                                 cwd=work, env=env, capture_output=True, text=True)
    assert import_from.stdout.startswith(str(site))
