"""Hostile schema families: deterministic generators of (family, size) cases, shared by
the ``adversarial`` suite (every family at every size, a curve per family) and the
``hazards`` suite (the largest of each family a server accepts). The families and their
sizes are described in ``suites/adversarial/__init__.py``; a case's ``suite`` is
``adversarial`` and its ``source`` that file, wherever it is generated.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from harness.suite.cases import Case, Instance

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
    props: dict[str, dict[str, str]] = {}
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
    cases: list[tuple[Any, bool]] = [(valid, True)]
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
