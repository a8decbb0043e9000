"""Shared fixtures: a small corpus folder built from real corpus files (linked, never
copied into the repo) plus cases written for the test engines."""

from __future__ import annotations

import contextlib
import faulthandler
import importlib.util
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# `tests` is a namespace package: any installed wheel that ships a top-level `tests`
# package (transformers-cfg 0.2.7 does, from the extra more-engines) would win over it
# wherever it sits on sys.path, and `from tests.… import …` would fail. Bind the name to
# this folder before any test module imports it.
if list(getattr(sys.modules.get("tests"), "__path__", [])) != [str(ROOT / "tests")]:
    import types

    _tests = types.ModuleType("tests")
    _tests.__path__ = [str(ROOT / "tests")]
    sys.modules["tests"] = _tests

from harness.suite.maskbench import resolve_data_dir  # noqa: E402

#: Real corpus files that all three engines compile within a second or so.
REAL_FILES = (
    "BFCL_parallel_multiple_142.json",
    "Glaiveai2K---calculate_area_5c088303.json",
    "Github_easy---o43998.json",
)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return resolve_data_dir(None)


def link_real(dst: Path, names=REAL_FILES) -> None:
    src = resolve_data_dir(None)
    dst.mkdir(parents=True, exist_ok=True)
    for n in names:
        os.symlink(src / n, dst / n)


def write_case(dst: Path, name: str, schema, tests) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    p = dst / name
    p.write_text(json.dumps({"description": name, "meta": {}, "schema": schema, "tests": tests}))
    return p


def harness(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """Run the CLI in this process (:func:`harness.cli.main`, what ``harness ARGS`` runs),
    capturing its stdout, stderr and exit code as a :class:`subprocess.CompletedProcess`.

    In process because an interpreter start with the engines' imports cost each of some 80
    calls seconds; the runner's workers are still real processes. The one test of the
    installed command itself is :func:`harness_subprocess`. A call still running after
    ``timeout`` seconds ends the test process with every thread's stack on stderr."""
    from harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    # a run that hangs ends the test session with every thread's stack, not a silent CI
    faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            # as a new process shows them: on its stderr, not in pytest's warning record
            warnings.simplefilter("default")
            warnings.showwarning = _warning_to_stderr
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's usage errors
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
                if isinstance(e.code, str):
                    err.write(e.code + "\n")
    finally:
        faulthandler.cancel_dump_traceback_later()
        os.chdir(cwd)
    return subprocess.CompletedProcess(["harness", *args], int(code or 0), out.getvalue(),
                                       err.getvalue())


def _warning_to_stderr(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def harness_subprocess(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the CLI as a user would (``python -m harness.cli`` in a new process)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def read_records(results: Path) -> tuple[Path, list[dict]]:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    recs = [json.loads(line) for line in (runs[0] / "records.jsonl").read_text().splitlines()]
    return runs[0], recs


# -- the serving tier's shared vLLM servers ---------------------------------------------------
# One vLLM server per backend for the whole serving tier, started on first use and stopped (by
# PID) when the session ends: the serving tests and the GPU scripts' smoke run share them
# instead of each starting its own (a start is ~50 s on 2 cores). Here rather than in a
# tests/serving/conftest.py: the tiers run in one session, and their modules import this one
# as `conftest`, a name a second conftest.py would take.
@pytest.fixture(scope="session")
def vllm_servers(tmp_path_factory):
    from tests.serving.servers import VllmServers
    from tests.unit.test_serve import _gone

    servers = VllmServers(tmp_path_factory.mktemp("vllm-servers"))
    yield servers
    pids = servers.stop()
    assert all(_gone(p) for p in pids), pids


#: Tests that must not meet a vLLM server's start: a local Ray instance gives its raylet 30 s
#: (Ray's own constant) to register, and its dashboard agent, a Python process on that
#: path, is starved past it while a server starts beside it (the CI failure on 77c9f30).
#: They run in the serving tier's unit of work, before its servers start (ranked first).
AWAY_FROM_SERVERS = (
    "tests/integration/test_executor.py::test_ray_resumes_a_local_run_to_the_same_records",
)


def pytest_collection_modifyitems(items):
    """The tests kept away from the servers first, then tests that start their own server,
    then those on the shared xgrammar server, then the GPU smoke run (the shared
    xgrammar server): at most four servers live at once."""
    def rank(item) -> int:
        if item.nodeid in AWAY_FROM_SERVERS:
            return -1
        if "vllm_servers" not in getattr(item, "fixturenames", ()):
            return 0
        return 2 if "gpu_smoke" in item.nodeid else 1

    items.sort(key=rank)  # stable: file order within a rank


def _shares_a_module_fixture(module: str, _seen: dict[str, bool] = {}) -> bool:
    """Whether a test module declares a fixture of module or class scope (read from its
    text: xdist's controller never imports the tests it schedules)."""
    if module not in _seen:
        try:
            text = (ROOT / module).read_text(encoding="utf-8")
        except OSError:
            text = ""
        _seen[module] = any(f"scope={q}{s}{q}" in text
                            for q in "\"'" for s in ("module", "class"))
    return _seen[module]


if importlib.util.find_spec("xdist") is not None:  # the extra `test` holds pytest-xdist
    @pytest.hookimpl(tryfirst=True)  # before xdist's own (the hook takes the first answer)
    def pytest_xdist_make_scheduler(config, log):
        """Under ``pytest -n 3`` (what .ci/run runs; ``--dist load``, the default): tests go
        to whichever worker is free, one at a time, except two kinds of unit sent whole:

        - the serving tier, one unit sent first and run in collection order by one worker,
          so its servers (the shared one, and those a test starts for itself) never live
          beside another vLLM start, and its ~7 minutes overlap the rest instead of ending
          the session; the tests of :data:`AWAY_FROM_SERVERS` join it, ahead of its servers;
        - a module with a fixture of module or class scope (a run, a vocabulary): spread
          over three workers, each would build it again (up to half a minute each).

        Units go out in collection order (xdist's largest-first reordering would send a
        big module before the serving tier). (xdist's own ``--dist loadgroup`` cannot do
        this under pytest 9.2: its group marks no longer reach the node ids.)"""
        if config.getvalue("dist") != "load":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class ServingTierTogether(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                if nodeid.startswith("tests/serving/") or nodeid in AWAY_FROM_SERVERS:
                    return "tests/serving"
                module = nodeid.split("::", 1)[0]
                return module if _shares_a_module_fixture(module) else nodeid

            def schedule(self) -> None:
                self.config.option.loadscopereorder = False
                super().schedule()

        return ServingTierTogether(config, log)
