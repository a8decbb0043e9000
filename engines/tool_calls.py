"""Tool-call requests: the request model (:class:`ToolSpec` in one of the output formats,
:data:`FORMATS`) and the native forms adapters build from a request.

The language of a request (what the ground truth, :mod:`suites.tools.truth`, accepts) is
the one XGrammar's built-in structural tags give serving stacks (vLLM, SGLang), written
out here so that every engine is held to the same one. With ``T`` any text that does not
contain the format's trigger, and ``C`` a call, ``begin(name) ARGS end`` for a tool of the
request (``ARGS``: a JSON value valid against the tool's parameters schema, nothing
around it):

=================  ==================
tool choice        output
=================  ==================
auto, parallel     ``T (C T)*``
auto, single       ``T C?``  (nothing after the call)
required, single   ``C``
required, parallel ``C (T C)* T``
named              ``C`` of the named tool
=================  ==================

The native forms (each adapter's :meth:`~engines.protocol.EngineAdapter.compile_tool_calls`
says which it uses): XGrammar's built-in structural tag for the format's model
(:func:`xgrammar_structural_tag`), a Lark grammar with ``%json`` per tool and a lazy
trigger for llguidance (:func:`lark_grammar`), one regular expression for engines that
read only regexes (:func:`regex`), and the reference engine's own CFG (built in
``engines/reference.py`` from :func:`text_regex` and the tools' compiled schemas).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # xgrammar is imported only where a structural tag is built
    from xgrammar.builtin_structural_tag import BuiltinToolParam, FunctionToolParam

__all__ = ["CHOICES", "FORMATS", "ToolFormat", "ToolSpec", "lark_grammar", "regex",
           "rx_escape", "text_regex", "xgrammar_structural_tag"]

# ------------------------------------------------------------------ the request model

#: ``tool_choice`` values (OpenAI's ``{"type": "function", ...}`` is ``named``)
CHOICES = ("auto", "required", "named")


@dataclass(frozen=True)
class ToolFormat:
    """One output format: a call is ``name_prefix + NAME + args_prefix + ARGS + end``;
    free text ends where ``trigger`` (a prefix of every call) appears."""

    name: str
    #: the key of XGrammar's built-in structural tag for the format
    xgrammar_model: str
    trigger: str
    name_prefix: str
    args_prefix: str
    end: str
    #: what the format is, for docs and reports
    about: str

    def begin(self, tool: str) -> str:
        return self.name_prefix + tool + self.args_prefix

    def call(self, tool: str, args_json: str) -> str:
        """A call's exact text, with ``args_json`` as given."""
        return self.begin(tool) + args_json + self.end


#: format name → format
FORMATS: dict[str, ToolFormat] = {
    "llama3.1": ToolFormat(
        "llama3.1", "llama", '{"name": ', '{"name": "', '", "parameters": ', "}",
        "Llama 3.1 JSON tool calling: {\"name\": …, \"parameters\": {…}}"),
    "tool_call": ToolFormat(
        "tool_call", "qwen_3", "<tool_call>", '<tool_call>\n{"name": "', '", "arguments": ',
        "}\n</tool_call>",
        "Hermes / Qwen <tool_call> tags: <tool_call>\\n{\"name\": …, \"arguments\": {…}}\\n</tool_call>"),
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool-call request: the output format, the tools (name, parameters schema as
    JSON text) in request order, the tool choice and whether calls may come in parallel
    (more than one per output). ``named`` is the tool a ``named`` choice forces."""

    format: str
    tools: tuple[tuple[str, str], ...]
    choice: str = "required"
    parallel: bool = False
    named: str | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown tool-call format {self.format!r}; known: "
                             f"{', '.join(FORMATS)}")
        if self.choice not in CHOICES:
            raise ValueError(f"unknown tool choice {self.choice!r}; known: {', '.join(CHOICES)}")
        if not self.tools:
            raise ValueError("a tool-call request needs at least one tool")
        if self.choice == "named" and self.named not in dict(self.tools):
            raise ValueError(f"the named tool {self.named!r} is not among the request's tools")

    @property
    def fmt(self) -> ToolFormat:
        return FORMATS[self.format]

    def callable_tools(self) -> tuple[tuple[str, str], ...]:
        """The tools a call may name: all of them, or the named one."""
        if self.choice == "named":
            return tuple((n, s) for n, s in self.tools if n == self.named)
        return self.tools

    @property
    def shape(self) -> str:
        """The output's shape, with ``T`` free text without the trigger and ``C`` a call:
        ``"one"`` — ``C`` (required single, named); ``"calls"`` — ``C (T C)* T``
        (required, parallel); ``"any"`` — ``T (C T)*`` (auto, parallel); ``"at_most_one"``
        — ``T C?`` (auto single)."""
        if self.choice == "named" or (self.choice == "required" and not self.parallel):
            return "one"
        if self.choice == "required":
            return "calls"
        return "any" if self.parallel else "at_most_one"

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "tools": [list(t) for t in self.tools],
                "choice": self.choice, "parallel": self.parallel, "named": self.named}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ToolSpec:
        return cls(d["format"], tuple((n, s) for n, s in d["tools"]), d["choice"],
                   bool(d["parallel"]), d.get("named"))


# ------------------------------------------------------------------ regular expressions

_META = set("\\.+*?()|[]{}^$#&-~/")


def rx_escape(text: str) -> str:
    """``text`` as a literal in both Python's ``re`` and Rust's ``regex`` syntax (and
    inside llguidance's ``/…/``): metacharacters and ``/`` escaped, control characters as
    ``\\xHH``, everything else as is."""
    out = []
    for ch in text:
        if ch in _META:
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _class_escape(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[" else (f"\\x{ord(ch):02x}" if ord(ch) < 0x20 else ch)


def text_regex(trigger: str) -> str:
    """A regex for every text that does not contain ``trigger`` (free text ``T``).

    Built from the trigger's matching automaton (state = how much of the trigger the text
    ends with): a text stays out of the last state by ending each partial match with a
    character that neither continues it nor starts a new one, or with the first
    character again (a new attempt). Exact when the trigger's first character occurs
    nowhere else in it, which every format here satisfies (checked: ValueError otherwise).
    """
    if not trigger:
        raise ValueError("empty trigger")
    c0 = trigger[0]
    if c0 in trigger[1:]:
        raise ValueError(f"trigger {trigger!r}: its first character recurs in it")
    m = len(trigger)
    prefixes = [rx_escape(trigger[:i]) for i in range(1, m)]  # proper, non-empty
    attempts = "(?:" + "|".join(prefixes) + ")*"
    loop = [f"[^{_class_escape(c0)}]"]
    for i in range(1, m):
        ci = trigger[i]
        loop.append(f"{attempts}{rx_escape(trigger[:i])}[^{_class_escape(ci)}{_class_escape(c0)}]")
    return "(?:" + "|".join(loop) + ")*" + attempts


def compose(spec: ToolSpec, call: str, rest: str, text: str) -> str:
    """The request's language as one regex, from regexes for ``call`` (any call of the
    request), ``rest`` (a call without its leading trigger) and ``text`` (free text
    without the trigger): a call after free text is ``text + trigger + rest``, so that the
    text ends exactly where the first trigger starts (see the module docstring's table)."""
    pre = f"{text}{rx_escape(spec.fmt.trigger)}"
    return {"one": call, "calls": f"{call}(?:{pre}{rest})*{text}",
            "any": f"(?:{pre}{rest})*{text}",
            "at_most_one": f"{text}(?:{rx_escape(spec.fmt.trigger)}{rest})?"}[spec.shape]


def regex(spec: ToolSpec, args_regex: Callable[[str], str]) -> str:
    """The request as one regular expression, ``args_regex(schema_text)`` giving each
    tool's arguments (e.g. outlines-core's ``build_regex_from_schema``)."""
    fmt = spec.fmt
    tools = spec.callable_tools()
    calls, rests = [], []
    for name, schema in tools:
        args = f"(?:{args_regex(schema)})"
        calls.append(rx_escape(fmt.begin(name)) + args + rx_escape(fmt.end))
        rests.append(rx_escape(fmt.begin(name)[len(fmt.trigger):]) + args + rx_escape(fmt.end))
    call = "(?:" + "|".join(calls) + ")"
    rest = "(?:" + "|".join(rests) + ")"
    return compose(spec, call, rest, text_regex(fmt.trigger))


# ------------------------------------------------------------------------ llguidance


def _lark_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


def lark_grammar(spec: ToolSpec) -> str:
    """The request as an llguidance Lark grammar: each tool's arguments as ``%json``, free
    text as a lazy lexeme that ends at the first trigger (so a trigger always opens a
    call), and the text after the last call as a regex intersected with the complement
    of "contains the trigger" (llguidance's ``&`` / ``~``)."""
    fmt = spec.fmt
    trig = rx_escape(fmt.trigger)
    lines = ["%llguidance {}"]
    tools = spec.callable_tools()
    call_alts, rest_alts = [], []
    for i, (name, schema) in enumerate(tools):
        lines.append(f"args_{i}: %json {json.dumps(json.loads(schema))}")
        begin = fmt.begin(name)
        lines.append(f"call_{i}: {_lark_string(begin)} args_{i} {_lark_string(fmt.end)}")
        lines.append(f"rest_{i}: {_lark_string(begin[len(fmt.trigger):])} args_{i} "
                     f"{_lark_string(fmt.end)}")
        call_alts.append(f"call_{i}")
        rest_alts.append(f"rest_{i}")
    lines.append("call: " + " | ".join(call_alts))
    lines.append("rest: " + " | ".join(rest_alts))
    lines.append(f"pre[lazy]: /(?s:.*){trig}/")
    lines.append("tail: TAIL")
    lines.append(f"TAIL: /(?s:.*)/ & ~/(?s:.*){trig}(?s:.*)/")
    start = {"one": "call", "calls": "call (pre rest)* tail", "any": "(pre rest)* tail",
             "at_most_one": "tail | pre rest"}[spec.shape]
    lines.insert(1, f"start: {start}")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------------- xgrammar


def xgrammar_structural_tag(spec: ToolSpec, any_order: bool = False,
                            max_whitespace_cnt: int | None = None) -> Any:
    """XGrammar's built-in structural tag for the format's model
    (``xgrammar.builtin_structural_tag.get_model_structural_tag``), reasoning disabled and
    special-token exclusions off (free text is then any text without the trigger)."""
    from xgrammar.builtin_structural_tag import get_model_structural_tag

    tools: list[FunctionToolParam | BuiltinToolParam | dict[Any, Any]] = [
        {"type": "function", "function": {"name": n, "parameters": json.loads(s)}}
             for n, s in spec.tools]
    choice: Any = spec.choice
    if spec.choice == "named":
        choice = {"type": "function", "function": {"name": spec.named}}
    return get_model_structural_tag(
        spec.fmt.xgrammar_model, tools=tools, tool_choice=choice, reasoning="disabled",
        any_order=any_order, exclude_special_tokens=False,
        max_whitespace_cnt=max_whitespace_cnt, parallel_tool_calls=spec.parallel)
