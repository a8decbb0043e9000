"""Suite ``adversarial``: generated hostile schemas, each a (family, size) point on a curve.

Every case is generated here (nothing is read from disk), deterministically, so that a
run measures how an engine's compile time (TTFM) and mask time grow with the size of one
hostile feature, and whether it ends within the run's limits at all. A case id is
``<family>/<size>`` (e.g. ``nesting_oneof/32``); the subset is the family, so ``--subset
enum,max_length`` picks families and ``--schemas 'nesting_*'`` globs case ids. The family,
the size and the size's unit are in each case's ``meta`` and in ``run.json``
(``suite.cases``), which is where the report reads them from.

Families (size = the number in the case id):

==========================  ==============================================================
``nesting_object``          objects nested ``size`` deep (``{"a": {"a": ... 1}}``)
``nesting_array``           arrays nested ``size`` deep (``[[[ ... 1 ]]]``)
``nesting_oneof``           ``oneOf`` nested ``size`` deep: each level an object holding
                            the next level, or a string (disjoint branches)
``enum``                    an ``enum`` of ``size`` distinct strings
``pattern_nested_quantifier`` ``^((a+)+)+$``-style: ``size`` nested ``(...)+`` groups
                            (exponential backtracking in a backtracking regex engine)
``pattern_dfa_blowup``      ``^[ab]*a[ab]{size}$``: a DFA needs 2^size states
``pattern_counted``         ``^(\\w{1,size}){1,size}$``: counted repetition inside counted
                            repetition (size² positions, overlapping)
``schema_bytes``            one object with optional string properties, padded to ``size``
                            bytes of schema text (the largest is 4 MiB)
``max_length``              ``{"type": "string", "maxLength": size}``
``ref_chain``               ``size`` ``$defs`` each referring to the next, the last back
                            to the first (a recursive cycle of length ``size``)
``ref_depth``               one recursive tree node (``$ref`` to itself); the valid
                            instance is nested ``size`` deep
==========================  ==============================================================

Instances are small wherever a larger one would only measure the replay loop: a valid one
and an invalid one per case, chosen so that ``jsonschema``'s own (backtracking) regex
engine decides them in microseconds. Their labels are the generator's; the worker
recomputes ground truth with ``jsonschema`` as for every suite.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from harness.suite import Case, Instance, SuiteBase, SuiteError, VerdictModel, round_robin

NAME = "adversarial"
SOURCE = "suites/adversarial/__init__.py"


@dataclass(frozen=True)
class Family:
    """A generator of cases: ``make(size)`` → (schema, [(instance, valid?), ...])."""

    name: str
    sizes: tuple[int, ...]
    unit: str  # what ``size`` counts, e.g. "depth", "strings", "bytes"
    make: Callable[[int], tuple[Any, list[tuple[Any, bool]]]]
    note: str


# ---------------------------------------------------------------------------- nesting


def _nest(depth: int, leaf: Any, wrap: Callable[[Any], Any]) -> Any:
    """``wrap`` applied ``depth`` times around ``leaf``, built iteratively (no recursion
    limit on the generator side, whatever the depth)."""
    node = leaf
    for _ in range(depth):
        node = wrap(node)
    return node


def _nesting_object(depth: int):
    schema = _nest(depth, {"type": "integer"}, lambda s: {
        "type": "object", "properties": {"a": s}, "required": ["a"],
        "additionalProperties": False})
    wrap = lambda v: {"a": v}  # noqa: E731
    return schema, [(_nest(depth, 1, wrap), True), (_nest(depth, "x", wrap), False)]


def _nesting_array(depth: int):
    schema = _nest(depth, {"type": "integer"}, lambda s: {
        "type": "array", "items": s, "minItems": 1, "maxItems": 2})
    wrap = lambda v: [v]  # noqa: E731
    return schema, [(_nest(depth, 1, wrap), True), (_nest(depth, "x", wrap), False)]


def _nesting_oneof(depth: int):
    schema = _nest(depth, {"type": "integer"}, lambda s: {"oneOf": [
        {"type": "object", "properties": {"a": s}, "required": ["a"],
         "additionalProperties": False},
        {"type": "string"}]})
    wrap = lambda v: {"a": v}  # noqa: E731
    return schema, [(_nest(depth, 7, wrap), True), (_nest(depth // 2, "s", wrap), True),
                    (_nest(depth, True, wrap), False)]


# ---------------------------------------------------------------------------- enum


def enum_member(i: int) -> str:
    """The ``i``-th enum string: distinct, varied (a hash suffix defeats prefix sharing
    that would make a trie trivially small) and deterministic."""
    return f"v{i}-{hashlib.sha256(str(i).encode()).hexdigest()[:8]}"


def _enum(n: int):
    members = [enum_member(i) for i in range(n)]
    return {"enum": members}, [(members[n // 2], True), (members[-1], True),
                               ("not-a-member", False)]


# ---------------------------------------------------------------------------- patterns


def _pattern(p: str, valid: list[str], invalid: list[Any]):
    return ({"type": "string", "pattern": p},
            [(v, True) for v in valid] + [(v, False) for v in invalid])


def nested_quantifier_pattern(n: int) -> str:
    return "^" + "(" * n + "a+" + ")+" * n + "$"


def _pattern_nested_quantifier(n: int):
    # 8 a's then "!" keeps jsonschema's own backtracking search cheap at every n here
    return _pattern(nested_quantifier_pattern(n), ["aaaa"], ["aaaaaa!", ""])


def _pattern_dfa_blowup(n: int):
    return _pattern(f"^[ab]*a[ab]{{{n}}}$", ["a" + "b" * n, "b" + "a" * (n + 1)],
                    ["b" * (n + 1)])


def _pattern_counted(n: int):
    return _pattern(f"^(\\w{{1,{n}}}){{1,{n}}}$", ["abc_12"], ["abc def", ""])


# ---------------------------------------------------------------------------- size


def _schema_bytes(target: int):
    """An object with optional string properties whose text is ``target`` bytes ± one
    property (each ~200 bytes: a name and a description)."""
    pad = "lorem ipsum dolor sit amet " * 6
    props: dict[str, Any] = {}
    size = len('{"type": "object", "properties": {}}')
    i = 0
    while size < target:
        name = f"p{i:06d}"
        prop = {"type": "string", "description": f"{name} {pad}"}
        size += len(json.dumps({name: prop})) - 2 + 2  # '"k": {...}' plus ', '
        props[name] = prop
        i += 1
    schema = {"type": "object", "properties": props}
    return schema, [({"p000000": "x", f"p{i - 1:06d}": "y"}, True), ({"p000001": 5}, False)]


def _max_length(n: int):
    valid = "x" * min(n, 64)
    cases = [(valid, True)]
    # a too-long string only where it is cheap to replay; a wrong type otherwise
    cases.append(("x" * (n + 1), False) if n <= 1000 else (5, False))
    return {"type": "string", "maxLength": n}, cases


# ---------------------------------------------------------------------------- $ref


def _ref_chain(n: int):
    defs = {f"d{i}": {"type": "object",
                      "properties": {"v": {"type": "integer"},
                                     "n": {"$ref": f"#/$defs/d{(i + 1) % n}"}},
                      "additionalProperties": False}
            for i in range(n)}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    depth = min(n + 2, 40)  # once round the cycle (and a little) where it is short
    wrap = lambda v: {"v": 1, "n": v}  # noqa: E731
    return schema, [(_nest(depth, {"v": 0}, wrap), True),
                    (_nest(3, {"v": "x"}, wrap), False)]


def _ref_depth(depth: int):
    schema = {"$defs": {"node": {
        "type": "object",
        "properties": {"v": {"type": "integer"},
                       "c": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"], "additionalProperties": False}},
        "$ref": "#/$defs/node"}
    wrap = lambda v: {"v": 1, "c": [v]}  # noqa: E731
    return schema, [(_nest(depth, {"v": 0}, wrap), True),
                    (_nest(depth, {"v": 0, "x": 1}, wrap), False)]


FAMILIES: tuple[Family, ...] = (
    Family("nesting_object", (8, 16, 32, 64), "depth", _nesting_object,
           "objects nested size deep"),
    Family("nesting_array", (8, 16, 32, 64), "depth", _nesting_array,
           "arrays nested size deep"),
    Family("nesting_oneof", (8, 16, 32, 64), "depth", _nesting_oneof,
           "oneOf nested size deep (object holding the next level | string)"),
    Family("enum", (1_000, 10_000, 100_000), "strings", _enum,
           "enum of size distinct strings"),
    Family("pattern_nested_quantifier", (1, 2, 4, 8), "nested groups", _pattern_nested_quantifier,
           "^((a+)+)+$ with size nested (...)+ groups"),
    Family("pattern_dfa_blowup", (4, 8, 12, 16), "n in [ab]*a[ab]{n}", _pattern_dfa_blowup,
           "^[ab]*a[ab]{n}$: 2^n DFA states"),
    Family("pattern_counted", (4, 16, 64), "n in (\\w{1,n}){1,n}", _pattern_counted,
           "^(\\w{1,n}){1,n}$: counted repetition in counted repetition"),
    Family("schema_bytes", (256 << 10, 1 << 20, 4 << 20), "bytes", _schema_bytes,
           "one object with optional properties, size bytes of schema text"),
    Family("max_length", (10, 1_000, 100_000), "maxLength", _max_length,
           "string with maxLength size"),
    Family("ref_chain", (8, 64, 512), "$defs in the cycle", _ref_chain,
           "size $defs referring round a cycle"),
    Family("ref_depth", (8, 32, 128), "instance depth", _ref_depth,
           "recursive tree node; valid instance nested size deep"),
)
FAMILY_BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}


def case_id(family: str, size: int) -> str:
    return f"{family}/{size}"


def family_size(cid: str) -> tuple[str, int] | None:
    """``(family, size)`` of a case id ``<family>/<size>``; None if it is not one."""
    fam, _, size = cid.partition("/")
    return (fam, int(size)) if fam in FAMILY_BY_NAME and size.isdigit() else None


def make_case(family: Family, size: int) -> Case:
    """Generate one case (deterministic)."""
    schema, instances = family.make(size)
    text = json.dumps(schema)
    cid = case_id(family.name, size)
    return Case(
        suite=NAME, case_id=cid, subset=family.name, source=SOURCE, schema=schema,
        schema_text=text,
        instances=tuple(Instance(i, v, ok, f"{cid}#{i}") for i, (v, ok) in enumerate(instances)),
        meta={"family": family.name, "size": size, "unit": family.unit,
              "schema_bytes": len(text.encode())},
    )


class Adversarial(SuiteBase):
    """The generated catalogue, filtered by family (``--subset``), glob and sample."""

    name = NAME
    summary_blocks = ("suites.adversarial.summary:extend",)
    report_sections = ("suites.adversarial.report:sec_adversarial",)
    verdict = VerdictModel(unit="hostile schema", units="hostile schemas",
                           truth="the limits (compile, time, memory) and jsonschema on each "
                                 "instance")
    smoke = {"subsets": ["nesting_oneof"], "sample": 1,
             "timeout_s": 20, "memory_gib": 4}

    def __init__(self, subsets: Sequence[str] | None = None, sample: int | None = None,
                 schemas: str | None = None, data: str | None = None) -> None:
        if data:
            raise SuiteError(f"the adversarial suite is generated, it reads no corpus; "
                             f"drop --data {data}")
        wanted = list(subsets or [])
        unknown = [s for s in wanted if s not in FAMILY_BY_NAME]
        if unknown:
            raise SuiteError(f"unknown adversarial family/families {', '.join(unknown)}; "
                             f"available: {', '.join(FAMILY_BY_NAME)}")
        points = [(f, s) for f in FAMILIES if not wanted or f.name in wanted for s in f.sizes]
        if schemas:
            points = [p for p in points if fnmatch.fnmatch(case_id(p[0].name, p[1]), schemas)]
        if sample is not None:
            by_fam: dict[str, list] = {}
            for p in points:
                by_fam.setdefault(p[0].name, []).append(p)
            picked = set(map(id, round_robin(list(by_fam.values()), sample)))
            points = [p for p in points if id(p) in picked]
        if not points:
            raise SuiteError("no adversarial cases match the selection")
        self.points = points
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.points)

    def case_ids(self) -> list[str]:
        return [case_id(f.name, s) for f, s in self.points]

    def cases(self) -> Iterator[Case]:
        for f, s in self.points:
            yield make_case(f, s)

    def describe(self) -> dict[str, Any]:
        return {
            "suite": NAME,
            "data": SOURCE,
            "files_on_disk": sum(len(f.sizes) for f in FAMILIES),  # cases in the catalogue
            "selected": len(self.points),
            "families": {f.name: {"unit": f.unit, "note": f.note}
                         for f in FAMILIES if any(p[0] is f for p in self.points)},
            # case id → [family, size, unit]: what the report plots against
            "cases": {case_id(f.name, s): [f.name, s, f.unit] for f, s in self.points},
            **self.options,
        }


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Adversarial
