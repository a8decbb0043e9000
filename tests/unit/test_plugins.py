"""Plug-ins: the registry of engines, suites, report sections and commands (the entry point
route is tested in ``tests/integration/test_entry_points.py``)."""

from __future__ import annotations

import pytest

from harness.registry import (COMMANDS, ENGINES, REPORT_SECTIONS, REPORT_TAIL, SUITES, Registry,
                              RegistryError, UnknownEngine, parse_engines)

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
    assert REPORT_SECTIONS.names()[0] == "verdict" and set(REPORT_TAIL) <= set(REPORT_SECTIONS.names())
    assert COMMANDS.names()[:3] == ["run", "engines", "summary"]
    for name in SUITES.names():  # every suite's declared targets load
        cls = SUITES.load(name)
        for target in (cls.job, cls.run_options, *cls.summary_blocks, *cls.report_sections):
            if target:
                from harness.registry import load_target

                assert load_target(target) is not None, (name, target)
