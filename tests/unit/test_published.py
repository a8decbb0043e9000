"""The published runs: docs/results.md is exactly what the committed run folders generate,
every summary there is what its records give, and no machine's paths reach the docs.

The folders under ``results/published/`` are real runs of this harness (their records
compressed); ``benchmarks/results_table.py --check`` is what CI runs, and this module checks
that it can fail.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis.finalize import PUBLISHED_INPUTS, summarize_published
from harness.store.run_store import RunStore, StoreError, command_line

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "results" / "published"
SCRIPT = ROOT / "benchmarks" / "results_table.py"
#: The size budget of results/published/ (bytes).
BUDGET = 40 * 2**20

sys.path.insert(0, str(ROOT / "benchmarks"))
import results_table  # noqa: E402


def _table(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _folders() -> list[Path]:
    return [p.path for p in results_table.read_index(ROOT)]


def test_the_document_is_what_the_published_folders_generate():
    out = _table("--check")
    assert out.returncode == 0, out.stderr
    assert "docs/results.md: up to date" in out.stdout


def test_check_fails_on_a_figure_edited_by_hand(tmp_path):
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    lines = doc.splitlines(keepends=True)
    # the first table row with a figure: change one digit of it, as a hand edit would
    n = next(i for i, l in enumerate(lines) if l.startswith("| ") and re.search(r"\| \d", l))
    edited = re.sub(r"(\| )(\d)", lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10),
                    lines[n], count=1)
    assert edited != lines[n]
    lines[n] = edited
    copy = tmp_path / "results.md"
    copy.write_text("".join(lines), encoding="utf-8")
    out = _table("--check", "-o", str(copy))
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"line {n + 1}: expected" in out.stderr and "regenerate" in out.stderr, out.stderr


def test_an_unlisted_published_folder_is_named(tmp_path):
    root = tmp_path / "repo"
    (root / "results" / "published" / "stray").mkdir(parents=True)
    shutil.copy(PUBLISHED / "index.toml", root / "results" / "published" / "index.toml")
    with pytest.raises(results_table.RunFolderError, match="stray is not listed"):
        results_table.read_index(root)


def test_every_published_folder_has_its_summary_and_fits_the_budget():
    folders = _folders()
    assert folders, "results/published/index.toml lists no run"
    size = sum(f.stat().st_size for f in PUBLISHED.rglob("*") if f.is_file())
    assert size <= BUDGET, f"results/published/ holds {size / 2**20:.1f} MiB (budget 40)"
    for folder in folders:
        names = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}
        assert {"run.json", "summary.json"} <= names, folder
        # what a run folder derives (Parquet, reports, worker logs) is regenerated, not kept
        assert names <= {"run.json", "summary.json", "records.jsonl.gz", *PUBLISHED_INPUTS}, \
            (folder, names)


def test_every_published_summary_is_what_its_records_give():
    """The invariant behind every figure of docs/results.md: ``summary.json`` is the one
    function that computed it (:func:`summarize_run`) applied to the committed records."""
    checked = 0
    for folder in _folders():
        if not (folder / "records.jsonl.gz").is_file():
            continue  # over the size budget: the document marks it "summary.json only"
        store = RunStore.open_readonly(folder)
        assert store.published
        before = sorted(p.name for p in folder.rglob("*"))
        summary, _ = summarize_published(store)
        assert sorted(p.name for p in folder.rglob("*")) == before  # nothing written there
        want = json.loads((folder / "summary.json").read_text())
        got = json.loads(json.dumps(summary))
        assert got == want, folder.name
        checked += 1
    assert checked, "no published folder carries its records"


def test_a_published_folder_is_read_in_place_and_never_resumed(tmp_path):
    folder = next(f for f in _folders() if (f / "records.jsonl.gz").is_file())
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    store = RunStore.open_readonly(copy)
    with gzip.open(copy / "records.jsonl.gz", "rt") as f:
        assert len(list(store.records())) == sum(1 for _ in f)
    with pytest.raises(StoreError, match="published run folder is read only"):
        RunStore.open(copy)


def test_the_recorded_command_is_the_one_typed(tmp_path):
    here = tmp_path / "project"
    got = command_line([str(here / ".venv/bin/harness"), "run", "--data",
                        str(here / "corpus"), f"--results={here / 'out'}", "/elsewhere/x"],
                       cwd=here)
    assert got == ["harness", "run", "--data", "corpus", "--results=out", "/elsewhere/x"]
    assert command_line(["-c", "run", "--suite", "e2e"])[0] == "harness"
    assert command_line(["/x/harness/cli/__main__.py", "run"]) == ["harness", "run"]
    shown = results_table.typed_command(
        ["/work/wt-40/harness/cli/__main__.py", "run", "--suite", "serve", "--results",
         "/work/plan/res", "--reports=/work/plan/rep", "--sample", "4"])
    assert shown == "harness run --suite serve --sample 4"


#: an absolute path of a development machine (a user's or the project's own checkout)
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users|mnt)/[\w.-]+")


def _tracked_docs() -> list[str]:
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                         text=True, timeout=30)
    return sorted(out.stdout.split()) or ["README.md"]


@pytest.mark.parametrize("doc", _tracked_docs())
def test_no_machine_paths_in_the_docs(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = MACHINE_PATH.findall(text)
    assert not found, f"{doc}: {found[:3]}"


def test_publishing_a_run_folder_gives_the_committed_bytes(tmp_path):
    """``--publish`` copies run.json, summary.json (and a serve run's servers) and compresses
    the records without a timestamp: publishing a folder again gives the same bytes."""
    folder = next(f for f in _folders() if (f / "records.jsonl.gz").is_file())
    run = tmp_path / "results" / folder.name
    run.mkdir(parents=True)
    for f in folder.rglob("*"):
        if f.is_file() and f.name != "records.jsonl.gz":
            (run / f.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, run / f.relative_to(folder))
    with gzip.open(folder / "records.jsonl.gz", "rb") as src:
        (run / "records.jsonl").write_bytes(src.read())
    (run / "records.parquet").write_bytes(b"derived: not published")
    dest = results_table.publish(run, tmp_path / "repo")
    assert dest == tmp_path / "repo" / "results" / "published" / folder.name
    for f in folder.rglob("*"):
        if f.is_file():
            assert (dest / f.relative_to(folder)).read_bytes() == f.read_bytes(), f.name
    assert not (dest / "records.parquet").exists()
    with pytest.raises(results_table.RunFolderError, match="already published"):
        results_table.publish(run, tmp_path / "repo")
