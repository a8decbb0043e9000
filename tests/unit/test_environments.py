"""Python environments beside the harness's own: what a missing one says, how rows name
them, and a worker spawned in one (the real .venv-vllm, where setup made it)."""

from __future__ import annotations

import multiprocessing as mp
import sys

# no module-level pytest: a worker spawned in the vLLM environment imports this module for
# _report, and that environment has no pytest


def test_a_missing_environment_says_how_to_make_it(monkeypatch, tmp_path):
    import pytest

    from harness.registry.environments import EnvironmentUnavailable, environment, spawn_in

    monkeypatch.setenv("HARNESS_VLLM_PYTHON", str(tmp_path / "nope" / "python"))
    env = environment("vllm")
    assert env.probe() is None and not env.available() and env.version("xgrammar") is None
    assert env.describe()["available"] is False
    with pytest.raises(EnvironmentUnavailable, match="setup.sh"):
        with spawn_in("vllm"):
            pass
    with pytest.raises(EnvironmentUnavailable, match="known: vllm"):
        environment("conda")


def test_rows_name_an_environment_with_at():
    import pytest

    from harness.registry import EngineSpec, UnknownEngine, parse_engines

    specs = parse_engines("xgrammar@vllm,xgrammar:compliant@vllm,vllm:guidance,vllm:guidance@vllm")
    assert [s.label for s in specs] == ["xgrammar@vllm", "xgrammar:compliant@vllm",
                                        "vllm:guidance"]
    assert specs[0].environment == "vllm" and specs[2].environment == "vllm"
    assert EngineSpec("xgrammar").environment is None
    with pytest.raises(UnknownEngine, match="unknown environment 'conda'"):
        parse_engines("xgrammar@conda")


def _report(conn) -> None:
    from importlib.metadata import version

    conn.send((sys.executable, version("xgrammar")))


def test_a_worker_spawned_in_the_vllm_environment_imports_its_engines():
    from harness.registry.environments import environment, spawn_in

    env = environment("vllm")
    assert env.available(), f"no vLLM environment at {env.python()}: run bash setup.sh"
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_report, args=(child,))
    with spawn_in("vllm"):
        p.start()
    assert parent.poll(60), "the worker spawned in the vLLM environment sent nothing"
    exe, xgr = parent.recv()
    p.join(30)
    assert exe == str(env.python()) and xgr == env.version("xgrammar") != _own("xgrammar")
    # and the harness's own spawn is untouched afterwards
    q = ctx.Process(target=_report, args=(child,))
    q.start()
    assert parent.poll(60)
    exe2, _ = parent.recv()
    q.join(30)
    assert exe2 == sys.executable


def _own(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)
