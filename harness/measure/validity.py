"""Validity and accuracy of what a model wrote: the figures every stream of outputs gets,
whoever wrote them (the ``quality`` suite's own decode, a server of the ``serve`` suite).

One output is a :class:`ValidityOutput`: whether it parses as JSON, whether jsonschema
accepts it, the tokens written, whether the token budget ended it (a runaway), and for a
case with a reference answer (BFCL: ``{function: {argument: value}}``, the case's valid
instance) how it matches that answer (:func:`bfcl_match`). :func:`validity_figures` turns
a list of them into :class:`ValidityFigures`; shares are fractions of the outputs (0..1).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence, TypedDict

__all__ = ["VALIDITY_COLUMNS", "ValidityFigures", "ValidityOutput", "bfcl_match",
           "bfcl_reference", "validity_cell", "validity_figures", "wilson"]


class ValidityOutput(TypedDict, total=False):
    """One output, as :func:`validity_figures` reads it."""

    parse_valid: bool            # strict JSON
    schema_valid: bool           # jsonschema accepts it
    tokens: int                  # tokens written (the stop token included where counted)
    runaway: bool                # the token budget ended it
    name_match: bool | None      # BFCL: the function name equals the reference's
    args_matched: int            # BFCL: reference arguments with an equal value
    args_total: int              # BFCL: the reference's arguments


class ValidityFigures(TypedDict):
    """The figures of one stream of outputs."""

    outputs: int
    parse_valid: float | None
    schema_valid: float | None
    schema_valid_ci: list[float] | None   # 95% Wilson interval of schema_valid
    attempts_per_valid: float | None      # 1 / schema_valid; None when nothing was valid
    tokens_per_valid: float | None        # every token written / valid outputs
    runaway: float | None                 # share of outputs the token budget ended
    accuracy: dict | None                 # BFCL: {"outputs", "name", "arguments"}; None: no reference
    bfcl: dict | None                     # BFCL: {"outputs", "p", "p10", "p50"}: p per call


def wilson(k: int, n: int, z: float = 1.96) -> list[float] | None:
    """The 95% Wilson score interval of ``k`` successes in ``n``; None when ``n`` is 0."""
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(max(0.0, c - h), 6), round(min(1.0, c + h), 6)]


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 6) if flags else None


def bfcl_reference(subset: str | None, instances: Iterable[Mapping[str, Any]]) -> Any:
    """A BFCL case's reference answer: its first instance labelled valid (``{"data",
    "label"}`` as a job carries it); None for any other subset or without one."""
    if subset != "BFCL":
        return None
    refs = [i.get("data") for i in instances if i.get("label")]
    return refs[0] if refs else None


def bfcl_match(reference: Any, value: Any) -> tuple[bool | None, int, int]:
    """(name equal, arguments equal, arguments) of an output's JSON ``value`` (None: it
    did not parse) against a BFCL reference ``{function: {argument: value}}``; ``(None, 0,
    0)`` when the reference is not of that form."""
    if not (isinstance(reference, dict) and len(reference) == 1):
        return None, 0, 0
    (name, args), = reference.items()
    args = args if isinstance(args, dict) else {}
    got = value.get(name) if isinstance(value, dict) else None
    match = isinstance(value, dict) and name in value
    matched = sum(1 for k, v in args.items() if isinstance(got, dict) and k in got
                  and got[k] == v)
    return bool(match), matched, len(args)


def validity_figures(outputs: Sequence[ValidityOutput]) -> ValidityFigures:
    """The figures of one stream from its outputs (see :class:`ValidityFigures`). An output
    counts towards ``accuracy`` and ``bfcl`` when it carries ``args_total`` (a case with a
    reference answer); both are None when none does."""
    o = list(outputs)
    n = len(o)
    k = sum(1 for x in o if x.get("schema_valid"))
    tokens = sum(int(x.get("tokens", 0)) for x in o)
    bf = [x for x in o if "args_total" in x]
    accuracy = bfcl = None
    if bf:
        args_total = sum(x.get("args_total", 0) for x in bf)
        accuracy = {"outputs": len(bf),
                    "name": _share([bool(x.get("name_match")) for x in bf]),
                    "arguments": (round(sum(x.get("args_matched", 0) for x in bf)
                                        / args_total, 6) if args_total else None)}
        p = sum(1 for x in bf if x.get("schema_valid")) / len(bf)
        bfcl = {"outputs": len(bf), "p": round(p, 6), "p10": round(p ** 10, 6),
                "p50": round(p ** 50, 6)}
    return {
        "outputs": n,
        "parse_valid": _share([bool(x.get("parse_valid")) for x in o]),
        "schema_valid": _share([bool(x.get("schema_valid")) for x in o]),
        "schema_valid_ci": wilson(k, n),
        "attempts_per_valid": round(n / k, 6) if k else None,
        "tokens_per_valid": round(tokens / k, 6) if k else None,
        "runaway": _share([bool(x.get("runaway")) for x in o]),
        "accuracy": accuracy,
        "bfcl": bfcl,
    }


#: The columns of the figures in every table that shows them, in order: the column's name
#: and the figure it shows (:func:`validity_cell` formats it).
VALIDITY_COLUMNS = {"schema-valid": "schema_valid", "parse-valid": "parse_valid",
                    "attempts/valid": "attempts_per_valid",
                    "accuracy name / args": "accuracy", "tokens/valid": "tokens_per_valid",
                    "runaway": "runaway"}


def validity_cell(f: Mapping[str, Any], column: str) -> str:
    """One cell of :data:`VALIDITY_COLUMNS` for the figures ``f`` (a
    :class:`ValidityFigures`, or a mapping holding its keys): shares as percentages,
    attempts per valid output with two decimals (``– (none valid)`` when nothing was
    valid), accuracy as ``name / arguments`` (``–`` without a reference answer)."""
    from harness.measure import figures

    key = VALIDITY_COLUMNS[column]
    v = f.get(key)
    if key == "attempts_per_valid":
        return figures.fixed(v) if v else "– (none valid)"
    if key == "accuracy":
        return (f"{figures.percent(v.get('name'))} / {figures.percent(v.get('arguments'))}"
                if v else "–")
    if key == "tokens_per_valid":
        return figures.number(v)
    return figures.percent(v)
