"""One registry class for every kind of plug-in: engines, suites, report sections, commands.

A :class:`Registry` maps a name to a lazy ``"module:attribute"`` target (or ``"module"`` for
a whole module), imported on first use, so that listing names never imports an engine.
Built-in entries come from the package that owns them (``engines.ADAPTERS``, the folders
of the ``suites`` package (:func:`builtin_suites`, found without importing it), the
report's core sections, the CLI's commands); third-party packages add theirs through a
Python entry point group, without editing this repository::

    # pyproject.toml of a third-party package
    [project.entry-points."grammar_harness.engines"]
    myengine = "my_adapter:MyEngine"

Groups: ``grammar_harness.engines`` (an :class:`engines.protocol.EngineAdapter` subclass),
``grammar_harness.suites`` (a suite class, see :mod:`harness.suite`),
``grammar_harness.report_sections`` (``builder(ctx) -> Section | list[Section] | None``) and
``grammar_harness.commands`` (a module with ``add_parser(subparsers)``). A built-in name
wins over an entry point of the same name.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Iterator, Mapping, TypeVar

import engines

if TYPE_CHECKING:
    from engines.protocol import EngineAdapter
    from engines.vocab import Vocabulary

__all__ = ["Registry", "RegistryError", "UnknownEngine", "EngineSpec", "ENGINES", "SUITES",
           "REPORT_SECTIONS", "COMMANDS", "parse_engines", "adapter_class", "is_installed",
           "registered", "suite_class", "build_suite", "make_suite", "load_target"]

T = TypeVar("T")


class RegistryError(ValueError):
    """An unknown name, or a target that cannot be imported (one-line message)."""


class Registry(Generic[T]):
    """Names → lazily imported targets, in registration order.

    Parameters
    ----------
    kind:
        What the entries are, for messages (``"engine"``, ``"suite"``, ...).
    group:
        The entry point group third-party packages register under, or None.
    builtins:
        ``name → "module:attribute"`` (or ``"module"``) registered first.
    """

    def __init__(self, kind: str, group: str | None = None,
                 builtins: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._targets: dict[str, str] = dict(builtins or {})
        self._loaded: dict[str, T] = {}
        self._entry_points_read = group is None

    def register(self, name: str, target: str) -> None:
        """Add (or replace) ``name`` → ``target`` (``"module:attribute"`` or ``"module"``)."""
        self._targets[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Drop ``name`` (a registration made for a while, e.g. by a test); a built-in or
        an entry point comes back only with a new registry."""
        self._read_entry_points()
        self._targets.pop(name, None)
        self._loaded.pop(name, None)

    def _read_entry_points(self) -> None:
        if self._entry_points_read or self.group is None:
            return
        self._entry_points_read = True
        for ep in importlib.metadata.entry_points(group=self.group):
            self._targets.setdefault(ep.name, ep.value)

    def names(self) -> list[str]:
        """Every registered name: built-ins first, then entry points."""
        self._read_entry_points()
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        self._read_entry_points()
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def target(self, name: str) -> str:
        """The ``"module:attribute"`` of ``name``. Raises :class:`RegistryError` if unknown."""
        self._read_entry_points()
        try:
            return self._targets[name]
        except KeyError:
            raise RegistryError(f"unknown {self.kind} {name!r}; known: "
                                f"{', '.join(self._targets)}") from None

    def load(self, name: str) -> T:
        """The object ``name`` stands for, imported on first use.

        Raises :class:`RegistryError` if the name is unknown or its target does not import
        (the message names the target and the error)."""
        if name in self._loaded:
            return self._loaded[name]
        target = self.target(name)
        obj = load_target(target, f"{self.kind} {name!r}")
        self._loaded[name] = obj
        return obj


def load_target(target: str, what: str = "target") -> Any:
    """Import ``"module:attribute"`` (an attribute path may be dotted) or ``"module"``."""
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise RegistryError(f"{what}: cannot load {target!r} ({type(e).__name__}: {e})") from None
    return obj


def builtin_suites(package: str = "suites") -> dict[str, str]:
    """``--suite`` name → ``"package.<folder>:SUITE"`` for every folder of ``package`` that
    is a Python package: each built-in suite is one folder (``mask_diff`` is the suite
    ``mask-diff``) whose ``__init__`` names its class ``SUITE``. Read off the file system:
    nothing of the suites is imported until one is loaded."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return {}
    out = {}
    for root in spec.submodule_search_locations:
        for d in sorted(Path(root).iterdir()):
            if (d / "__init__.py").is_file() and not d.name.startswith(("_", ".")):
                out[d.name.replace("_", "-")] = f"{package}.{d.name}:SUITE"
    return out


#: Engine adapters (:class:`engines.protocol.EngineAdapter` subclasses).
ENGINES: Registry[type[EngineAdapter]] = Registry("engine", "grammar_harness.engines",
                                                  engines.ADAPTERS)
#: Suites (classes taking ``data``, ``subsets``, ``sample``, ``schemas``; see
#: :mod:`harness.suite`): the folders of ``suites/``, then entry points.
SUITES: Registry[type] = Registry("suite", "grammar_harness.suites", builtin_suites())
#: Sections every report tries (``builder(ctx) -> Section | list[Section] | None``): the
#: core ones, then third-party ones, then the sections the runs' suites declare
#: (``SuiteBase.report_sections``); :data:`REPORT_TAIL` (several runs compared, then the
#: metadata) always comes last.
REPORT_SECTIONS: Registry[Any] = Registry("report section", "grammar_harness.report_sections", {
    name: f"harness.report.sections.core:sec_{name.replace('-', '_')}"
    for name in ("verdict", "results", "caveats", "subsets", "latency", "slow-masks",
                 "unfinished", "diff", "engines", "metadata")})
#: The sections after every other one, in this order.
REPORT_TAIL = ("diff", "engines", "metadata")
#: ``harness`` sub-commands: modules with ``add_parser(subparsers)``.
COMMANDS: Registry[Any] = Registry("command", "grammar_harness.commands", {
    "run": "harness.cli.run",
    "engines": "harness.cli.engines",
    "summary": "harness.cli.summary",
    "report": "harness.cli.report",
    "gate": "harness.cli.gate",
    "explain": "harness.cli.explain",
    "model": "harness.cli.model",
    "lint": "harness.cli.lint",
})


def suite_class(name: str | None) -> type | None:
    """The suite class registered as ``name``, or None when there is none (or it does not
    load: a run folder of a suite this installation lacks still reads)."""
    if not name or name not in SUITES:
        return None
    try:
        return SUITES.load(name)
    except RegistryError:
        return None


def build_suite(name: str, **opts: Any) -> Any:
    """The suite ``name`` with the selection options ``data``, ``subsets``, ``sample`` and
    ``schemas`` (and ``options``, its run options, for a suite that ``uses_options``). Raises :class:`harness.suite.SuiteError` (one line) for an unknown suite or
    a selection it cannot make."""
    from harness.suite.cases import SuiteError

    if name not in SUITES:
        raise SuiteError(f"unknown suite {name!r}; known: {', '.join(SUITES.names())}")
    try:
        cls = SUITES.load(name)
    except RegistryError as e:
        raise SuiteError(str(e)) from None
    return make_suite(cls, **opts)


def make_suite(cls: type, **opts: Any) -> Any:
    """The suite class ``cls``, already resolved (e.g.
    :attr:`harness.config.RunConfig.suite_class`), built with :func:`build_suite`'s options."""
    extra = {"options": opts.get("options")} if getattr(cls, "uses_options", False) else {}
    return cls(data=opts.get("data"), subsets=opts.get("subsets"), sample=opts.get("sample"),
               schemas=opts.get("schemas"), **extra)


class UnknownEngine(RegistryError):
    """An engine or configuration name that is not registered."""


def adapter_class(name: str) -> type[EngineAdapter]:
    """The adapter class registered as ``name``. Raises :class:`UnknownEngine`."""
    if name not in ENGINES:
        raise UnknownEngine(f"unknown engine {name!r}; known: {', '.join(registered())} "
                            "(`harness engines` lists them with their configurations)")
    return ENGINES.load(name)


def is_installed(name: str) -> bool:
    """True iff the engine's own package can be imported here (the adapter's
    ``requires``; an adapter that requires nothing is always installed)."""
    req = adapter_class(name).requires
    if req is None:
        return True
    try:
        return importlib.util.find_spec(req) is not None
    except (ImportError, ValueError):
        return False


def registered(include_hidden: bool = False) -> list[str]:
    """Registered engine names; hidden ones (test doubles, e2e-only rows) only if asked."""
    return [n for n in ENGINES.names() if include_hidden or not adapter_class(n).hidden]


@dataclass(frozen=True)
class EngineSpec:
    """A resolved ``name[:config][@env]``: ``env`` is the Python environment the engine
    runs in (:mod:`harness.registry.environments`); None = the adapter's own (usually the
    harness's environment)."""

    name: str
    config: str = "default"
    env: str | None = None

    @property
    def label(self) -> str:
        """``name`` for the default configuration, else ``name:config``, then ``@env`` when
        the row names an environment (as in records)."""
        base = self.name if self.config == "default" else f"{self.name}:{self.config}"
        return f"{base}@{self.env}" if self.env else base

    @property
    def environment(self) -> str | None:
        """Where the engine runs: the row's ``@env``, else the adapter's own environment."""
        return self.env or self.adapter_class().environment

    def adapter_class(self) -> type[EngineAdapter]:
        return adapter_class(self.name)

    def installed(self) -> bool:
        """True iff the engine can run: its module importable here, or inside its
        environment."""
        env = self.environment
        if env is None:
            return is_installed(self.name)
        from harness.registry.environments import environment

        return environment(env).has(self.adapter_class().requires)

    def version(self) -> str | None:
        """The engine's version where it runs (inside its environment for ``@env`` rows)."""
        env = self.environment
        cls = self.adapter_class()
        if env is None:
            return cls.version()
        from harness.registry.environments import environment

        return environment(env).version(cls.package)

    def how_to_install(self) -> str | None:
        env = self.environment
        if env is None:
            return self.adapter_class().how_to_install()
        from harness.registry.environments import environment

        return environment(env).setup

    def build(self, vocab: Vocabulary, **overrides: Any) -> EngineAdapter:
        """The adapter in this configuration over ``vocab`` (imports the engine)."""
        return self.adapter_class()(vocab, self.config, **overrides)


def parse_engines(text: str) -> list[EngineSpec]:
    """Parse the ``--engine`` value: ``all`` = the default configuration of every
    registered engine that is not hidden, installed or not (the run reports the ones that
    are not installed as not run), or ``NAME[:CONFIG][@ENV],...`` (``@ENV``: the engine as
    the Python environment ``ENV`` holds it, e.g. ``xgrammar@vllm``). Duplicates are dropped.

    Raises :class:`UnknownEngine` for an unknown name, configuration or environment, or an
    empty list."""
    from harness.registry.environments import ENVIRONMENTS

    specs: list[EngineSpec] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        if part == "all":
            specs.extend(EngineSpec(n) for n in registered())
            continue
        part, _, env = part.partition("@")
        name, _, config = part.partition(":")
        config = config or "default"
        configs = adapter_class(name).configs
        if config not in configs:
            raise UnknownEngine(f"unknown configuration {config!r} for engine {name!r}; "
                                f"known: {', '.join(configs)}")
        if env and env not in ENVIRONMENTS:
            raise UnknownEngine(f"unknown environment {env!r} in {part}@{env}; known: "
                                f"{', '.join(ENVIRONMENTS)}")
        if env and env == adapter_class(name).environment:
            env = ""  # the adapter's own environment: the plain name says it
        specs.append(EngineSpec(name, config, env or None))
    if not specs:
        raise UnknownEngine("no engine given; try --engine all")
    seen: dict[str, EngineSpec] = {}
    for s in specs:
        seen.setdefault(s.label, s)
    return list(seen.values())
