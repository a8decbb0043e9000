"""Streaming parse events of tool calls: how early, while an output is being written, a
consumer could act on a call.

Every prefix of a constrained output is a valid prefix, so a consumer that reads the
stream could start a call before the model ends it. For each call of an output (its
tokens ``t[0:n]``, then the stop token), a *step* ``k`` is the state once ``k`` tokens
are written (``0``: before any; the stop token is step ``n + 1``). The events, each the
first step at which it holds:

``name_decided``       the grammar allows one function name only: every token the
                       engine's mask allows next spells (a prefix of) the same name, or
                       the name is already written. From the mask (``mask``, every
                       engine) and from the engine's forced continuation (``forced``:
                       the bytes it says every output continues with reach past the
                       name's closing quote; engines with a jump-forward API only).
                       Held from there to ``name_written`` (a name set that grows again
                       is no decision).
``name_written``       the token that writes the name's closing quote.
``required_complete``  every required argument's value is complete: a string, object or
                       array at its closing character, ``true`` / ``false`` / ``null``
                       at their last letter, a number at the character after it (until
                       then more digits may come); never before ``name_written``.
``end``                the stop token: ``n + 1``.

``lead_tokens = end - required_complete``: the decode steps a consumer that starts the
call at ``required_complete`` gains over one that waits for the end.

These are facts about the text and the grammar, not the model: the same output gives the
same ``name_written``, ``required_complete`` and ``end`` on every engine, and
``name_decided`` differs only where an engine's language differs (the reference engine's
is exact; the summary compares each engine's with it).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["CallFrame", "frames", "name_set", "required_end", "step_at", "trace_events"]

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


@dataclass(frozen=True)
class CallFrame:
    """One call of an output, in UTF-8 byte offsets of the output: ``before`` is every byte
    before the name (the free text, the trigger and the name prefix), ``name`` the tool's
    name; the name's closing quote is at ``len(before) + len(name)``."""

    before: bytes
    name: bytes
    required_at: int     # the byte offset at which every required value is complete
    end: int             # the byte offset just after the call

    @property
    def quote(self) -> int:
        """Offset of the name's closing quote."""
        return len(self.before) + len(self.name)


def required_end(args_text: str, required: Sequence[str]) -> int | None:
    """Character offset in ``args_text`` (one JSON object, as written) once every member
    named in ``required`` has a complete value (see the module docstring); 0 when
    ``required`` is empty; None when ``args_text`` is not an object holding them all."""
    i = 0
    n = len(args_text)

    def ws(j: int) -> int:
        while j < n and args_text[j] in _WS:
            j += 1
        return j

    i = ws(i)
    if i >= n or args_text[i] != "{":
        return None
    i += 1
    want = set(required)
    done = 0
    while want:
        i = ws(i)
        if i >= n or args_text[i] != '"':
            return None
        try:
            key, i = _DECODER.raw_decode(args_text, i)
        except ValueError:
            return None
        i = ws(i)
        if i >= n or args_text[i] != ":":
            return None
        i = ws(i + 1)
        try:
            value, j = _DECODER.raw_decode(args_text, i)
        except ValueError:
            return None
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        complete = j + 1 if number else j  # a number ends at the character after it
        if key in want:
            want.discard(key)
            done = max(done, complete)
        i = ws(j)
        if i < n and args_text[i] == ",":
            i += 1
        elif want:
            return None
    return done


def frames(text: str, calls: list[Any], fmt: Any, required: dict[str, list[str]]
           ) -> list[CallFrame]:
    """The :class:`CallFrame` of each call of ``text`` (``calls``: the ground truth's
    :class:`suites.tools.truth.Call` list; ``fmt``: the request's format; ``required``:
    tool name → its required arguments)."""
    out = []
    for c in calls:
        i = c.start + len(fmt.name_prefix)
        a = text.index(fmt.args_prefix, i + len(c.name)) + len(fmt.args_prefix)
        rel = required_end(text[a:c.end], required.get(c.name, []))
        at = a + rel if rel is not None else c.end
        before = text[:i].encode()
        quote = len(before) + len(c.name.encode())
        out.append(CallFrame(before, c.name.encode(), max(len(text[:at].encode()), quote + 1),
                             len(text[:c.end].encode())))
    return out


def step_at(offset: int, ends: Sequence[int]) -> int:
    """The step at which bytes ``[0, offset)`` are written: the number of tokens up to and
    including the one holding byte ``offset - 1`` (``ends``: each token's end offset, in
    order)."""
    if offset <= 0:
        return 0
    return int(np.searchsorted(np.asarray(ends), offset, side="left")) + 1


#: :func:`name_set`'s answer when a continuation leaves the call's frame (free text goes
#: on, the output ends, another envelope): no single name is decided
OTHER = b"\x00other"


def name_set(written: bytes, allowed: np.ndarray, token_bytes: Sequence[bytes],
             frame: CallFrame, names: Sequence[bytes], stop_ids: frozenset[int],
             limit: int = 2) -> set[bytes]:
    """The names the next token may be heading for: for each token id in ``allowed``,
    ``written + token`` read against ``frame.before + NAME + '"'`` for every candidate
    ``NAME``; a token that leaves the frame (or a stop token) adds :data:`OTHER`. Stops
    once the set holds ``limit`` members (it is then not a decision)."""
    before = frame.before
    out: set[bytes] = set()
    for t in allowed:
        t = int(t)
        if t in stop_ids:
            out.add(OTHER)
        else:
            x = written + token_bytes[t]
            if len(x) <= len(before):
                if before.startswith(x):
                    out.update(names)
                else:
                    out.add(OTHER)
            elif not x.startswith(before):
                out.add(OTHER)
            else:
                rest = x[len(before):]
                hit = [n for n in names if (n + b'"').startswith(rest)
                       or rest.startswith(n + b'"')]
                out.update(hit if hit else (OTHER,))
        if len(out) >= limit:
            break
    return out


def trace_events(grammar: Any, tokens: list[int], token_bytes: Sequence[bytes],
                 stop_ids: frozenset[int], cframes: list[CallFrame],
                 names: Sequence[bytes], bitmask: np.ndarray) -> dict[str, Any]:
    """Replay ``tokens`` on a fresh matcher of ``grammar`` and give each call's events
    (:data:`EVENTS`, steps), with what the two routes cost per step:
    ``{"calls": [...], "end": n + 1, "mask_ns", "set_ns", "forced_ns", "forced": bool,
    "steps"}`` (ns: the mean over the steps scanned, from the previous call's end to each
    name's closing quote; ``forced_ns`` None where the engine has no forced-continuation
    API)."""
    ends = np.cumsum([len(token_bytes[t]) for t in tokens]).tolist()
    m = grammar.matcher()
    clock = time.perf_counter_ns
    first = 0
    written = b""
    per_call = []
    mask_ns = set_ns = forced_ns = scanned = 0
    forced_api: bool | None = None
    k = 0  # tokens committed so far
    for f in cframes:
        quote_step = step_at(f.quote + 1, ends)
        mask_from: int | None = None
        forced_from: int | None = None
        while k < quote_step:
            if k >= first:
                t0 = clock()
                m.fill_mask(bitmask)
                t1 = clock()
                allowed = np.flatnonzero(
                    np.unpackbits(bitmask.view(np.uint8), bitorder="little"))
                got = name_set(written, allowed, token_bytes, f, names, stop_ids)
                t2 = clock()
                fc = m.forced_continuation()
                t3 = clock()
                mask_ns += t1 - t0
                set_ns += t2 - t1
                scanned += 1
                one = got == {f.name}
                mask_from = (k if mask_from is None else mask_from) if one else None
                if fc is None:
                    forced_api = False
                else:
                    forced_api = True
                    forced_ns += t3 - t2
                    reach = len(written) + len(fc[0]) > f.quote
                    forced_from = (k if forced_from is None else forced_from) if reach else None
            t = tokens[k]
            if not m.commit(t):
                return {"error": f"the engine refused token {k} ({t}) of a valid output"}
            written += token_bytes[t]
            k += 1
        per_call.append({
            "name": f.name.decode("utf-8", "replace"),
            "name_decided": quote_step if mask_from is None else mask_from,
            "name_decided_forced": (None if not forced_api else
                                    quote_step if forced_from is None else forced_from),
            "name_written": quote_step,
            "required_complete": max(quote_step, step_at(f.required_at, ends)),
            "call_end": step_at(f.end, ends),
        })
        first = step_at(f.end, ends)
    end = len(tokens) + 1
    for c in per_call:
        c["lead_tokens"] = end - c["required_complete"]
    return {"calls": per_call, "end": end, "steps": scanned,
            "mask_ns": mask_ns // scanned if scanned else None,
            "set_ns": set_ns // scanned if scanned else None,
            "forced": bool(forced_api),
            "forced_ns": forced_ns // scanned if scanned and forced_api else None}
