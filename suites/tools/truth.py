"""Ground truth of the ``tools`` suite: an output parsed as the format's envelope, each
call's name looked up among the request's tools and its arguments validated against that
tool's parameters schema with ``jsonschema``.

The language is the one :mod:`engines.tool_calls` states (XGrammar's built-in structural
tags, as vLLM and SGLang serve them). The parse is a plain scan: free text runs to the
first occurrence of the trigger; there a whole call must follow (name prefix, a name,
the arguments prefix, one strict JSON value with nothing around it, the end string);
then free text again. The JSON value is read strictly (no ``NaN`` / ``Infinity``, no
duplicate keys), as the JSON suites' ground truth reads documents.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.suite.engines import ToolSpec
from suites.tools.records import CallSpan, ToolsJudgement

__all__ = ["Call", "Parse", "SchemaCheck", "ToolTruth"]

#: why an output is invalid: the first rule it breaks, in this order
KINDS = ("envelope", "truncated", "mode", "name", "arguments")


class _Strict(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = _Strict()


class SchemaCheck:
    """One tool's parameters schema as a jsonschema validator: the class its ``$schema``
    names (Draft 2020-12 without one), ``format`` asserted, references resolved only
    within the schema (nothing is fetched)."""

    def __init__(self, schema: Any) -> None:
        import jsonschema
        from jsonschema.validators import validator_for

        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        self.error: str | None = None
        try:
            self.validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        except Exception as e:  # a schema jsonschema cannot load
            self.validator, self.error = None, " ".join(f"{type(e).__name__}: {e}".split())[:300]

    def verdict(self, instance: Any) -> tuple[bool | None, str | None]:
        """(valid?, why jsonschema could not decide): None = undecidable here."""
        if self.validator is None:
            return None, self.error
        try:
            return bool(self.validator.is_valid(instance)), None
        except RecursionError:
            return None, "RecursionError: schema recursion too deep for jsonschema"
        except Exception as e:  # an unresolvable $ref, a bad regex...
            return None, " ".join(f"{type(e).__name__}: {e}".split())[:300]


@dataclass
class Call:
    """One call in an output: the tool's name, its arguments (a JSON value), and the call's
    span in the text (character offsets ``[start, end)``)."""

    name: str
    args: Any
    start: int
    end: int


@dataclass
class Parse:
    """An output read as the format's envelope: the calls, the free-text pieces around
    them (``len(texts) == len(calls) + 1``), or the envelope error (``error``, and
    ``truncated`` when the text ends inside a call)."""

    calls: list[Call] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    error: str | None = None
    truncated: bool = False


class ToolTruth:
    """The verdicts of one request (:class:`~engines.tool_calls.ToolSpec`)."""

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self.fmt = spec.fmt
        self._schemas = dict(spec.tools)
        self._validators: dict[str, SchemaCheck] = {}

    def parse(self, text: str) -> Parse:
        """Read ``text`` as free text and calls (see the module docstring)."""
        fmt = self.fmt
        p = Parse()
        pos = 0
        while True:
            i = text.find(fmt.trigger, pos)
            if i < 0:
                p.texts.append(text[pos:])
                return p
            p.texts.append(text[pos:i])
            call, err, cut = self._call_at(text, i)
            if call is None:
                p.error, p.truncated = err, cut
                return p
            p.calls.append(call)
            pos = call.end

    def _call_at(self, text: str, i: int) -> tuple[Call | None, str | None, bool]:
        fmt = self.fmt
        rest = text[i:]
        if not rest.startswith(fmt.name_prefix):
            cut = fmt.name_prefix.startswith(rest)
            return None, f"at {i}: the trigger is not followed by {fmt.name_prefix!r}", cut
        j = i + len(fmt.name_prefix)
        k = text.find('"', j)
        if k < 0:
            return None, f"at {j}: the tool name is not closed", True
        name = text[j:k]
        if not text.startswith(fmt.args_prefix, k):
            cut = fmt.args_prefix.startswith(text[k:])
            return None, f"at {k}: expected {fmt.args_prefix!r} after the name", cut
        a = k + len(fmt.args_prefix)
        try:
            args, e = _DECODER.raw_decode(text, a)
        except (ValueError, RecursionError) as ex:
            cut = isinstance(ex, json.JSONDecodeError) and (
                ex.pos >= len(text) or ex.msg.startswith("Unterminated string"))
            return None, f"at {a}: the arguments are not one JSON value ({ex})"[:300], cut
        if not text.startswith(fmt.end, e):
            cut = fmt.end.startswith(text[e:])
            return None, f"at {e}: expected {fmt.end!r} after the arguments", cut
        return Call(name, args, i, e + len(fmt.end)), None, False

    def _validator(self, name: str) -> "SchemaCheck":
        v = self._validators.get(name)
        if v is None:
            v = self._validators[name] = SchemaCheck(json.loads(self._schemas[name]))
        return v

    def judge_text(self, text: str) -> ToolsJudgement:
        """``{"valid": True|False|None, "why", "kind", "calls"}``: ``kind`` (for an invalid
        output) is the first of :data:`KINDS` it breaks; ``calls`` the calls read."""
        spec = self.spec
        p = self.parse(text)
        calls: list[CallSpan] = [{"name": c.name, "start": c.start, "end": c.end} for c in p.calls]
        if p.error is not None:
            kind = "truncated" if p.truncated else "envelope"
            return {"valid": False, "kind": kind, "why": p.error, "calls": calls}
        n = len(p.calls)
        mode = None
        shape = spec.shape
        if shape == "one" and (n != 1 or p.texts[0] or p.texts[1]):
            mode = "exactly one call and no free text"
        elif shape == "calls" and (n < 1 or p.texts[0]):
            mode = "at least one call, and the output starts with it"
        elif shape == "at_most_one" and (n > 1 or (n == 1 and p.texts[1])):
            mode = "at most one call, and nothing after it"
        if mode is not None:
            return {"valid": False, "kind": "mode", "why": f"{spec.choice}"
                    f"{' (parallel)' if spec.parallel else ''}: {mode}; got {n} call(s)",
                    "calls": calls}
        allowed = dict(spec.callable_tools())
        for c in p.calls:
            if c.name not in allowed:
                return {"valid": False, "kind": "name", "why": f"no tool {c.name!r} in the request",
                        "calls": calls}
            ok, reason = self._validator(c.name).verdict(c.args)
            if ok is None:
                return {"valid": None, "why": f"{c.name}: {reason}", "calls": calls}
            if not ok:
                return {"valid": False, "kind": "arguments",
                        "why": f"{c.name}: the arguments do not validate", "calls": calls}
        return {"valid": True, "calls": calls}

    def judge(self, raw: bytes) -> ToolsJudgement:
        """The :class:`harness.measure.target.Target` judge interface: a finished output's
        verdict after UTF-8."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"valid": False, "kind": "envelope", "why": f"not UTF-8: {e}"}
        return self.judge_text(text)

