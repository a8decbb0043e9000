"""Engine registry: ``--engine NAME[:CONFIG][,NAME[:CONFIG]...]`` → adapters.

Adapter modules import their engine package lazily (inside the adapter), so listing
engines and configurations never needs the engine installed; :func:`is_installed`
says whether it can run here.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from engines.base import EngineAdapter
from harness.vocab import Vocabulary

#: name → (adapter module, class, importable module that must exist to run it)
_ENGINES: dict[str, tuple[str, str, str | None]] = {
    "xgrammar": ("engines.xgrammar_engine", "XGrammarEngine", "xgrammar"),
    "llguidance": ("engines.llguidance_engine", "LLGuidanceEngine", "llguidance"),
    "outlines": ("engines.outlines_engine", "OutlinesEngine", "outlines_core"),
    # llama.cpp's own JSON-schema → GBNF path (optional: scripts/build_llamacpp.sh); hidden
    # from --engine all, asked for by name.
    "llamacpp-gbnf": ("engines.llamacpp_gbnf_engine", "LlamaCppGbnfEngine", "llama_cpp"),
    # vLLM offline (e2e suite only; GPU machines): "not run" where vllm is not installed
    "vllm": ("engines.vllm_engine", "VllmEngine", "vllm"),
    # Our own engine (reference_engine/): pure Python + numpy, nothing to install.
    "reference": ("engines.reference", "ReferenceEngine", None),
    # Test doubles: hidden from --engine all and from `harness engines` unless asked.
    "null": ("engines.testing", "NullEngine", None),
    "faulty": ("engines.testing", "FaultyEngine", None),
}


class UnknownEngine(ValueError):
    """An engine or configuration name that is not registered."""


@dataclass(frozen=True)
class EngineSpec:
    """A resolved ``name[:config]``."""

    name: str
    config: str = "default"

    @property
    def label(self) -> str:
        return self.name if self.config == "default" else f"{self.name}:{self.config}"

    def adapter_class(self) -> type[EngineAdapter]:
        return adapter_class(self.name)

    def installed(self) -> bool:
        return is_installed(self.name)

    def build(self, vocab: Vocabulary, **overrides: Any) -> EngineAdapter:
        return self.adapter_class()(vocab, self.config, **overrides)


def adapter_class(name: str) -> type[EngineAdapter]:
    mod, cls, _ = _ENGINES[name]
    return getattr(importlib.import_module(mod), cls)


def is_installed(name: str) -> bool:
    req = _ENGINES[name][2]
    if req is None:
        return True
    try:
        return importlib.util.find_spec(req) is not None
    except (ImportError, ValueError):
        return False


def registered(include_hidden: bool = False) -> list[str]:
    return [n for n in _ENGINES if include_hidden or not adapter_class(n).hidden]


def parse_engines(text: str) -> list[EngineSpec]:
    """Parse the ``--engine`` value. ``all`` = the default configuration of every
    registered (non-test) engine, installed or not: the runner reports the ones that
    are not installed as not run."""
    specs: list[EngineSpec] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        if part == "all":
            specs.extend(EngineSpec(n) for n in registered())
            continue
        name, _, config = part.partition(":")
        config = config or "default"
        if name not in _ENGINES:
            raise UnknownEngine(
                f"unknown engine {name!r}; known: {', '.join(registered())} "
                "(`harness engines` lists them with their configurations)"
            )
        configs = adapter_class(name).configs
        if config not in configs:
            raise UnknownEngine(
                f"unknown configuration {config!r} for engine {name!r}; "
                f"known: {', '.join(configs)}"
            )
        specs.append(EngineSpec(name, config))
    if not specs:
        raise UnknownEngine("no engine given; try --engine all")
    seen: dict[str, EngineSpec] = {}
    for s in specs:
        seen.setdefault(s.label, s)
    return list(seen.values())
