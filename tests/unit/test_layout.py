"""The layout's invariants: no import cycles, one-way data path, engines named only in engines/.

Imports are read from the source (``ast``), at module level and inside functions alike:
a cycle through a lazy import is still a cycle in the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "engines", "suites", "reference_engine")


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks (annotations only, not run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for n in ast.walk(sub):
                    if hasattr(n, "lineno"):
                        lines.add(n.lineno)
    return lines


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """Project module → the project modules it imports (anywhere in its body); with
    ``type_only``, the imports under ``if TYPE_CHECKING:`` too."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = set() if type_only else _type_checking_lines(tree)
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                # ``from pkg import mod`` imports the module ``pkg.mod``; ``from mod
                # import name`` imports ``mod``
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in targets:
                # the longest project module that the dotted name starts with
                parts = t.split(".")
                for k in range(len(parts), 0, -1):
                    head = ".".join(parts[:k])
                    if head in mods:
                        if head != mod:
                            graph[mod].add(head)
                        break
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node."""
    from reference_engine.nfa import strong_components

    return [sorted(c) for c in strong_components(sorted(graph), lambda v: sorted(graph.get(v, ())))
            if len(c) > 1]


def stage(mod: str) -> str:
    """The stage a module belongs to: ``harness.<sub-package>``, or its top-level package."""
    parts = mod.split(".")
    if parts[0] == "harness" and len(parts) > 1 or parts[:2] == ["engines", "vocab"]:
        return ".".join(parts[:2])
    return parts[0]


def test_no_module_import_cycle():
    """No cycle, the imports a type checker follows (``if TYPE_CHECKING:``) included: a
    type-only cycle is still two modules that cannot be read one without the other."""
    cycles = _cycles(import_graph(type_only=True))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_a_type_only_cycle_is_counted():
    """The graph the cycle test reads sees a type-only import (else it would pass blind)."""
    src = ROOT / "harness" / "suite" / "__init__.py"
    mod = "harness.suite"
    assert "TYPE_CHECKING" in src.read_text()
    assert "harness.config" in import_graph(type_only=True)[mod]
    assert "harness.config" not in import_graph()[mod]


def test_at_most_six_modules_at_the_top_of_harness():
    """``harness/`` holds its stages as packages; loose modules at its top (``__init__``
    counted) stay at six or fewer."""
    loose = sorted(p.name for p in (ROOT / "harness").glob("*.py"))
    assert len(loose) <= 6, loose


def test_no_stage_import_cycle():
    stages: dict[str, set[str]] = {}
    for mod, deps in import_graph().items():
        s = stage(mod)
        stages.setdefault(s, set()).update(stage(d) for d in deps if stage(d) != s)
    cycles = _cycles(stages)
    assert not cycles, "cycles between stages: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_vocabulary_imports_nothing_else_of_the_project():
    graph = import_graph()
    for mod, deps in graph.items():
        if stage(mod) == "engines.vocab":
            outside = {d for d in deps if stage(d) != "engines.vocab"}
            assert not outside, f"{mod} imports {sorted(outside)}"


def test_engines_depend_only_on_the_vocabulary_and_their_protocol():
    graph = import_graph()
    for mod, deps in graph.items():
        if stage(mod) == "engines":
            outside = {d for d in deps if stage(d) not in ("engines", "engines.vocab",
                                                           "reference_engine")}
            assert not outside, f"{mod} imports {sorted(outside)}"


def test_engines_base_is_a_face_only():
    """``engines/base.py`` re-exports the protocol's noun modules for third-party code: a
    docstring, imports from ``engines.*`` and ``__all__``, nothing else; no module of the
    project imports it (it is for code outside the project)."""
    tree = ast.parse((ROOT / "engines" / "base.py").read_text())
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engines."):
            continue
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            continue
        raise AssertionError(f"engines/base.py:{node.lineno}: not an import or __all__: "
                             f"{ast.unparse(node)[:80]}")
    graph = import_graph()
    users = sorted(m for m, deps in graph.items() if "engines.base" in deps)
    assert not users, f"modules importing the face engines.base: {users}"


def test_no_arrow_runs_from_the_engines_up_into_the_harness():
    """The vocabulary sits below the engines (``engines/vocab/``): adapters and the
    vocabulary import nothing of ``harness/``."""
    bad = sorted(f"{m} imports {d}" for m, deps in import_graph().items()
                 if stage(m) in ("engines", "engines.vocab") for d in deps
                 if d.startswith("harness"))
    assert not bad, bad


def test_reference_engine_stands_alone():
    graph = import_graph()
    for mod, deps in graph.items():
        if stage(mod) == "reference_engine":
            outside = {d for d in deps if stage(d) != "reference_engine"}
            assert not outside, f"{mod} imports {sorted(outside)}"


# --------------------------------------------------------------------------------------
# Engines and suites are plug-ins: shared code names neither.

#: Python packages of the engines under test (llama_cpp is also the e2e suite's model
#: runtime, so its imports are allowed there).
ENGINE_PACKAGES = ("xgrammar", "llguidance", "outlines_core", "vllm")

#: The modules of ``engines/`` that code outside it may import: the package (its table of
#: rows), the protocol's modules and their face ``engines.base``, and the vocabulary below
#: them. The adapters themselves are reached through the registry only.
PROTOCOL_MODULES = ("engines", "engines.base", "engines.protocol", "engines.batch",
                    "engines.bitmask", "engines.token_bytes", "engines.tool_calls",
                    "engines.reasoning")


def _protocol_module(name: str) -> bool:
    return name in PROTOCOL_MODULES or name == "engines.vocab" or name.startswith("engines.vocab.")


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _outside_engines() -> dict[str, Path]:
    return {m: p for m, p in _modules().items()
            if stage(m) not in ("engines", "engines.vocab", "reference_engine")}


def test_no_module_outside_engines_imports_an_engine():
    bad = []
    for mod, path in _outside_engines().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                top = n.split(".")[0]
                if top in ENGINE_PACKAGES or (top == "engines" and not _protocol_module(n)):
                    bad.append(f"{mod}: imports {n}")
    assert not bad, bad


#: A server's request dialect is named after the server (``vllm``, ``sglang``, ...), not
#: after an engine row: the OpenAI-compatible client may name dialects.
DIALECT_MODULES = ("harness.measure.serving.openai_client", "harness.measure.serving.canned")


def test_no_module_outside_engines_names_an_engine():
    from harness.registry import ENGINES

    names = set(ENGINES.names())
    bad = []
    for mod, path in _outside_engines().items():
        if mod in DIALECT_MODULES:
            continue
        tree = ast.parse(path.read_text())
        docs = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names and id(node) not in docs):
                bad.append(f"{mod}:{node.lineno}: {node.value!r}")
    assert not bad, bad


def test_the_framework_imports_no_suite():
    """harness/ reaches a suite only through the registry's declared entry points (the
    ``"module:attribute"`` targets a suite class names): no import of ``suites``."""
    bad = sorted(f"{mod} imports {d}" for mod, deps in import_graph().items()
                 if mod.startswith("harness") for d in deps if stage(d) == "suites")
    assert not bad, bad


def test_each_suite_is_one_folder():
    """Every registered built-in suite is a package ``suites/<name>/`` holding its code and
    its README, and the modules its class names (job, options, summary blocks, report
    sections, executor) are all inside that folder or the framework."""
    from harness.registry import SUITES, builtin_suites

    for name, target in builtin_suites().items():
        folder = ROOT / "suites" / name.replace("-", "_")
        assert (folder / "__init__.py").is_file() and (folder / "README.md").is_file(), folder
        cls = SUITES.load(name)
        for t in [cls.job, cls.run_options, cls.executor, *cls.summary_blocks,
                  *cls.report_sections]:
            if not t:
                continue
            module = t.partition(":")[0]
            assert module.startswith(("harness.", "suites.")), (name, t)


def test_shared_code_never_tests_a_suite_name():
    from harness.registry import SUITES

    names = set(SUITES.names())
    bad = []
    for mod, path in _modules().items():
        if stage(mod) in ("engines", "suites", "reference_engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            for side in [node.left, *node.comparators]:
                for c in ast.walk(side):
                    if isinstance(c, ast.Constant) and c.value in names:
                        bad.append(f"{mod}:{node.lineno}: compares with suite {c.value!r}")
    assert not bad, bad


# --------------------------------------------------------------------------------------
# A suite's imports: the suite API and the engine protocol, its own package, nothing else.

#: What a suite may import of the project, besides its own package: the suite API
#: (``harness.suite`` and its modules) and the engine protocol.
SUITE_API = ("harness.suite", "engines.protocol")

def _project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import of the project in a file, at module level,
    in functions and under ``if TYPE_CHECKING:`` alike."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        out += [(node.lineno, n) for n in names if n.split(".")[0] in PACKAGES]
    return out


def _suite_files() -> list[tuple[str, Path]]:
    """(suite package, file) of every module inside a suite's folder."""
    return [(path.relative_to(ROOT / "suites").parts[0], path)
            for path in sorted((ROOT / "suites").rglob("*.py"))
            if len(path.relative_to(ROOT / "suites").parts) > 1]


def test_suites_import_only_the_suite_api():
    """Every import of the project in ``suites/`` is of the suite API, the engine
    protocol, or the suite's own package (another suite's is the next test's)."""
    bad = []
    for folder, path in _suite_files():
        for line, name in _project_imports(path):
            own = name == f"suites.{folder}" or name.startswith(f"suites.{folder}.")
            api = any(name == a or name.startswith(a + ".") for a in SUITE_API)
            if not (own or api or name.startswith("suites.")):
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not bad, bad


def test_no_suite_imports_another():
    """What two suites share lives in the suite API (``harness.suite``), not in one of them."""
    bad = []
    for folder, path in _suite_files():
        for line, name in _project_imports(path):
            if name.startswith("suites.") and name.split(".")[1] != folder:
                bad.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert not bad, bad


def test_the_suite_import_checks_see_a_bad_import(tmp_path):
    """The checks above read function-level imports too (a lazy import is still one)."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from suites.serve import executor\n    import harness.api\n")
    assert _project_imports(f) == [(2, "suites.serve"), (3, "harness.api")]
