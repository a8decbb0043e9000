"""The BFCL tools of the ``jsonschemabench`` corpus as a tool pool, and the instances of a
tool-call request made from their ground-truth calls.

Each ``BFCL_*.json`` file of the corpus is one function-calling task: its schema is an
object with one property per function (``{"name": {parameters schema}}``; several as
``anyOf``), its test the ground-truth call (``{"name": {arguments}}``). The pool keeps
each function name once (its first file, in file-name order; names with characters a
JSON string would escape are left out), with the ground-truth arguments of every file
that declares the same parameters. Every instance's label comes from the ground truth
(:class:`suites.tools.truth.ToolTruth`), never from the generator.
"""

from __future__ import annotations

import copy
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.suite.engines import ToolSpec

__all__ = ["Tool", "ToolPool", "instances_for", "load_pool"]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass
class Tool:
    """A function of the pool: its name, parameters schema (JSON text), the corpus file
    it came from, and ground-truth arguments (each checked with jsonschema)."""

    name: str
    schema: str
    source: str
    calls: list[Any] = field(default_factory=list)


@dataclass
class ToolPool:
    tools: list[Tool]
    files: int
    #: ground-truth calls dropped because jsonschema rejects them (name, file, reason)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)

    def shuffled(self, seed: int) -> list[Tool]:
        """The tools with at least one ground-truth call first, in a seeded order, then the
        others in a seeded order."""
        rng = random.Random(seed)
        with_calls = [t for t in self.tools if t.calls]
        without = [t for t in self.tools if not t.calls]
        rng.shuffle(with_calls)
        rng.shuffle(without)
        return with_calls + without


def _functions(schema: Any) -> list[tuple[str, Any]]:
    alts = schema.get("anyOf", [schema]) if isinstance(schema, dict) else []
    out = []
    for a in alts:
        props = a.get("properties") if isinstance(a, dict) else None
        if isinstance(props, dict) and len(props) == 1:
            (name, params), = props.items()
            if isinstance(params, dict):
                out.append((name, params))
    return out


def load_pool(data_dir: Path) -> ToolPool:
    """The pool from the ``BFCL_*.json`` files of ``data_dir`` (read in place)."""
    from suites.tools.truth import SchemaCheck

    tools: dict[str, Tool] = {}
    files = sorted(data_dir.glob("BFCL_*.json"))
    rejected = []
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the JSON suites report unreadable files; the pool just skips them
        for name, params in _functions(doc.get("schema")):
            if not _NAME.match(name):
                continue
            text = json.dumps(params, sort_keys=False)
            t = tools.get(name)
            if t is None:
                t = tools[name] = Tool(name, text, path.name)
            if t.schema != text:
                continue
            for test in doc.get("tests") or []:
                data = test.get("data")
                if test.get("valid") and isinstance(data, dict) and set(data) == {name}:
                    ok, why = SchemaCheck(params).verdict(data[name])
                    if ok:
                        t.calls.append(data[name])
                    else:
                        rejected.append((name, path.name, why or "jsonschema rejects it"))
    return ToolPool(list(tools.values()), len(files), rejected)


# ------------------------------------------------------------------------- instances

#: free text an assistant writes before a call (auto) or between calls (parallel)
PREAMBLE = "Let me look that up for you.\n"
BETWEEN = "\n"
NO_CALL = "I can answer this one without a tool: 42."


def _wrong_args(schema: dict[str, Any], args: Any) -> list[Any]:
    """Mutations of valid ``args`` that may break ``schema`` (the ground truth decides):
    a required property dropped, a property's value of the wrong type, an undeclared
    property added."""
    out = []
    if not isinstance(args, dict):
        return [None]
    for k in schema.get("required") or []:
        if k in args:
            a = dict(args)
            del a[k]
            out.append(a)
    for k, v in args.items():
        a = dict(args)
        a[k] = 12345 if isinstance(v, str) else "not-a-number" if isinstance(v, (int, float)) \
            else "text"
        out.append(a)
    a = copy.deepcopy(args)
    a["undeclared_argument_x"] = 1
    out.append(a)
    return out


def instances_for(spec: ToolSpec, pool_tools: dict[str, Tool], outside: list[Tool],
                  n_valid: int) -> list[tuple[str, str]]:
    """``(kind, text)`` instances of a request: ``valid`` outputs from ground-truth calls
    (``n_valid`` of them, each calling other tools where the request has them), then
    ``wrong_name`` (a real tool's call that is not in the request, or not the named one),
    ``wrong_args`` (a ground-truth call mutated until jsonschema rejects it),
    ``truncated`` (a valid output cut inside its last call) and ``mode`` (breaks the tool
    choice: text before a required call, a second call where one is allowed)."""
    fmt = spec.fmt
    callable_names = [n for n, _ in spec.callable_tools() if pool_tools[n].calls]
    if not callable_names:
        return []

    def call(name: str, k: int = 0) -> str:
        calls = pool_tools[name].calls
        return fmt.call(name, json.dumps(calls[k % len(calls)], ensure_ascii=False))

    def output(calls: list[str]) -> str:
        body = BETWEEN.join(calls)
        return PREAMBLE + body if spec.choice == "auto" else body

    per = 2 if spec.parallel else 1
    out: list[tuple[str, str]] = []
    for i in range(n_valid):
        names = [callable_names[(i * per + j) % len(callable_names)] for j in range(per)]
        out.append(("valid", output([call(nm, i) for nm in names])))
    if spec.choice == "auto":
        out.append(("valid", NO_CALL))
    first = callable_names[0]
    others = [t for t in outside if t.calls]
    if spec.choice == "named":
        others = [pool_tools[n] for n, _ in spec.tools if n != spec.named and pool_tools[n].calls] \
            + others
    if others:
        t = others[0]
        out.append(("wrong_name", output([fmt.call(t.name, json.dumps(t.calls[0],
                                                                      ensure_ascii=False))])))
    else:  # every pool tool with a call is in the request: a name no tool has
        args = json.dumps(pool_tools[first].calls[0], ensure_ascii=False)
        out.append(("wrong_name", output([fmt.call(first + "_v2", args)])))
    tool = pool_tools[first]
    for bad in _wrong_args(json.loads(tool.schema), tool.calls[0]):
        out.append(("wrong_args", output([fmt.call(first, json.dumps(bad, ensure_ascii=False))])))
    whole = output([call(first)])
    cut = len(whole) - len(fmt.end) - 2
    if cut > 0:
        out.append(("truncated", whole[:cut]))
    out.append(("truncated", whole[: len(whole) - len(fmt.end) // 2 - 1] if len(fmt.end) > 1
                else whole[:-1]))
    if spec.choice in ("required", "named"):
        out.append(("mode", "Sure. " + call(first)))
    if not spec.parallel or spec.choice == "named":
        out.append(("mode", BETWEEN.join([call(first), call(first, 1)])))
    return out
