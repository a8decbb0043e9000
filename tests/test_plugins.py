"""Plug-ins: the registry, and a third-party engine adapter that registers through the entry
point group ``grammar_harness.engines`` from a package installed in a temporary folder,
without editing this repository, then runs in ``harness run --engine NAME``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, link_real, read_records
from harness.registry import (COMMANDS, ENGINES, REPORT_SECTIONS, SUITES, Registry,
                              RegistryError, UnknownEngine, parse_engines)

#: The README's ten-line example adapter: every token allowed, the end always allowed.
ADAPTER = '''
from engines.base import CompiledGrammar, EngineAdapter, Matcher


class AllowAll(Matcher):
    def fill_mask(self, bitmask): bitmask[:] = -1
    def commit(self, token_id): return True
    def eos_allowed(self): return True
    def rollback(self, n): pass
    def reset(self): pass


class AllowAllGrammar(CompiledGrammar):
    def matcher(self): return AllowAll()


class AllowAllEngine(EngineAdapter):
    name = "allow-all"
    def compile(self, schema_text): return AllowAllGrammar()
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "allow-all-engine"
version = "0.1"

[tool.setuptools]
py-modules = ["my_adapter"]

[project.entry-points."grammar_harness.engines"]
allow-all = "my_adapter:AllowAllEngine"
'''


def test_registry_is_lazy_and_says_what_is_unknown():
    reg: Registry = Registry("widget", None, {"one": "no_such_module_xyz:Thing"})
    assert reg.names() == ["one"] and "one" in reg  # listing imports nothing
    with pytest.raises(RegistryError, match="cannot load 'no_such_module_xyz:Thing'"):
        reg.load("one")
    with pytest.raises(RegistryError, match="unknown widget 'two'; known: one"):
        reg.load("two")
    with pytest.raises(UnknownEngine, match="unknown engine 'nope'"):
        parse_engines("nope")


def test_builtin_registries():
    assert {"xgrammar", "llguidance", "outlines", "reference", "null"} <= set(ENGINES.names())
    assert {"jsonschemabench", "drift", "e2e", "adversarial"} <= set(SUITES.names())
    assert REPORT_SECTIONS.names()[-1] == "diff"
    assert COMMANDS.names()[:3] == ["run", "engines", "summary"]
    for name in SUITES.names():  # every suite's declared targets load
        cls = SUITES.load(name)
        for target in (cls.job, cls.run_options, *cls.summary_blocks, *cls.report_sections):
            if target:
                from harness.registry import load_target

                assert load_target(target) is not None, (name, target)


def test_third_party_adapter_through_entry_point(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "my_adapter.py").write_text(textwrap.dedent(ADAPTER))
    (src / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
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
    assert listed.returncode == 0 and "allow-all" in listed.stdout, listed.stderr
    run = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--engine", "allow-all",
                          "--data", str(data), "--results", str(tmp_path / "results"),
                          "--reports", str(tmp_path / "reports"), "--no-progress"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    _, records = read_records(tmp_path / "results")
    assert len(records) == 3 and {r["engine"] for r in records} == {"allow-all"}
    # every token allowed: no valid instance is rejected, and every schema with an invalid
    # instance accepts it
    assert {r["outcome"] for r in records} <= {"passing", "invalidation_error"}
    assert any(r["outcome"] == "invalidation_error" for r in records)
