"""Argument types and helpers for the suites' ``harness run`` options modules
(``SuiteBase.run_options``): each module keeps its ``DEFAULTS`` and its argparse group,
and takes its value parsers and ``config_from_args`` from here, so that every flag refuses
bad input with the same one line."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Iterable, Mapping, TypeVar, cast

__all__ = ["add_flag", "add_token_flags", "batch_sizes", "config_from", "count", "floats", "ints",
           "merged", "model_spec", "names", "positive_float", "positive_int"]

#: The random-weight model shapes by name (``engines.vocab.models.SIZES``), for speed work.
MODEL_SIZES = ("micro", "tiny", "small", "1b", "8b")


def _number(text: str, kind: type, what: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    """An integer >= 1."""
    v = _number(text, int, "an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def count(text: str) -> int:
    """An integer >= 0."""
    v = _number(text, int, "an integer")
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must be >= 0")
    return v


def positive_float(text: str) -> float:
    """A number > 0."""
    v = _number(text, float, "a number")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{v} must be > 0")
    return v


def _items(text: str, kind: type, what: str) -> list:
    try:
        out = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated {what} expected") from None
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated {what} expected")
    return out


def ints(minimum: int, what: str, unique_sorted: bool = False) -> Callable[[str], list[int]]:
    """A parser of comma-separated integers, each >= ``minimum`` (``what`` names them in
    the error); sorted without repeats when ``unique_sorted``."""
    def parse(text: str) -> list[int]:
        out = _items(text, int, "integers")
        if any(x < minimum for x in out):
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be >= {minimum}")
        return sorted(set(out)) if unique_sorted else out
    return parse


def batch_sizes(text: str) -> int | list[int]:
    """``--batch`` value (the ``e2e`` and ``batch`` suites share the flag): ``N`` or
    ``N,M,...``, each >= 1; one size comes back as an int, several as a list."""
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected N or N,M,... with each >= 1, got {text!r}")
    return sizes[0] if len(sizes) == 1 else sizes


def floats(minimum: float, what: str) -> Callable[[str], list[float]]:
    """A parser of comma-separated numbers, each >= ``minimum``."""
    def parse(text: str) -> list[float]:
        out = _items(text, float, "numbers")
        if any(x < minimum for x in out):
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be >= {minimum:g}")
        return out
    return parse


def names(known: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """A parser of comma-separated names out of ``known``."""
    known = tuple(known)

    def parse(text: str) -> list[str]:
        out = [x.strip() for x in text.split(",") if x.strip()]
        if not out or any(x not in known for x in out):
            raise argparse.ArgumentTypeError(f"{text!r}: known {what} are {', '.join(known)}")
        return out
    return parse


def config_from(args: Any, keys: Iterable[str]) -> dict[str, Any]:
    """The options of ``keys`` given on the command line (``args``), by configuration key."""
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


M = TypeVar("M", bound=Mapping[str, Any])


def merged(defaults: M, given: Any) -> M:
    """``defaults`` with the values ``given`` sets (a mapping or None; None values ignored):
    a suite's options, or a job payload's. The result has the keys of ``defaults`` (a
    suite's options TypedDict), which is what the cast says."""
    return cast(M, {**defaults, **{k: v for k, v in (given or {}).items() if v is not None}})


def add_flag(group, *flags: str, **kwargs: Any) -> None:
    """``group.add_argument(*flags, **kwargs)``, unless another suite's options already
    added the same flag to the parser (the ``mask-diff`` and ``fuzz`` suites share
    ``--corpus`` and ``--walk-tokens``): one flag, one value, read by every suite that
    declares it, listed under the suite that came first."""
    try:
        group.add_argument(*flags, **kwargs)
    except argparse.ArgumentError:
        pass


def add_token_flags(group) -> None:
    """The flags the token-level suites share (``mask-diff``, ``fuzz``:
    :class:`harness.suite.TokenSuite`): ``--walk-tokens`` and ``--corpus``."""
    add_flag(group, "--walk-tokens", dest="walk_tokens", type=positive_int,
             help="mask-diff witnesses and fuzz walks: token budget per walk; no EOS by then "
                  "is a runaway (default 384)")
    add_flag(group, "--corpus", choices=("jsonschemabench", "grammars"),
             help="mask-diff / fuzz: the cases' corpus: JSONSchemaBench schemas (default) or "
                  "the grammar corpus (regexes, choices, CFGs)")


def model_spec(text: str) -> str:
    """``--model``: a size name (:data:`MODEL_SIZES`: random weights of that shape),
    ``build:default`` / ``build:tiny`` (the model ``harness model build`` makes, built
    first when not cached) or a path to a local Hugging Face checkpoint folder. A path is kept as given and validated
    with the run's configuration (one line naming it: exit 2)."""
    from harness.model.checkpoint import BUILT, looks_like_checkpoint

    if text in MODEL_SIZES or text in BUILT:
        return text
    if looks_like_checkpoint(text):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is neither a model size ({', '.join(MODEL_SIZES)}), the model built here "
        f"({', '.join(BUILT)}) nor a checkpoint folder (a path: ./my-model, /models/x)")
