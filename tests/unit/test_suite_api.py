"""The suite API's facades (``harness.suite`` and its modules): each name a suite imports
resolves to the object where it is defined, the type checker sees the same names the
runtime exports, and importing the API imports none of the stages."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FACADES = ["harness.suite", "harness.suite.report", "harness.suite.measure",
           "harness.suite.serving", "harness.suite.engines", "harness.suite.model"]


def _type_checking_names(module: str) -> set[str]:
    """The names bound under ``if TYPE_CHECKING:`` in the facade's source."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    names.update(a.asname or a.name for a in sub.names)
    return names


@pytest.mark.parametrize("module", FACADES)
def test_every_export_resolves_to_its_definition(module):
    facade = importlib.import_module(module)
    exports = facade._EXPORTS
    assert list(exports) == facade.__all__
    for name, target in exports.items():
        mod, _, attr = target.partition(":")
        where = importlib.import_module(mod)
        assert getattr(facade, name) is (getattr(where, attr) if attr else where), name
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(facade, "not_a_name")


@pytest.mark.parametrize("module", FACADES)
def test_the_type_checker_sees_what_the_runtime_exports(module):
    facade = importlib.import_module(module)
    assert _type_checking_names(module) == set(facade._EXPORTS), module


def test_importing_the_api_imports_no_stage():
    # a fresh interpreter: the API's modules are facades until a name is read
    code = ("import sys, harness.suite, harness.suite.report, harness.suite.measure, "
            "harness.suite.serving, harness.suite.engines; "
            "print(sorted(m for m in sys.modules if m.startswith(('harness.measure', "
            "'harness.report', 'harness.execution', 'harness.analysis', 'engines.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
