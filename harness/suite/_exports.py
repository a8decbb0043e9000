"""Lazy re-exports for the suite API's modules: a name is imported from where it is
defined when first read, so that importing the API imports none of the stages."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_exports(module: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``module``, which re-exports each name of
    ``exports`` from its target (``"module:attribute"``, or ``"module"`` for a module)."""

    def __getattr__(name: str) -> Any:
        try:
            target = exports[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        mod, _, attr = target.partition(":")
        obj = importlib.import_module(mod)
        return getattr(obj, attr) if attr else obj

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
