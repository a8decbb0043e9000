"""What counts as a JSON document: the strict parse every suite and the ground truth share."""

from __future__ import annotations

import json
import re as _re
from typing import Any


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise _Duplicate(k)
        obj[k] = v
    return obj


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_instance_text(text: str) -> tuple[Any, str | None]:
    """Strict RFC 8259 parse of an exact instance text: (value, None) or (None, why).

    Stricter than ``json.loads``: ``NaN``/``Infinity`` are refused and duplicate object keys
    are reported (their meaning is undefined in JSON Schema's data model; callers decide the
    verdict, see ``suites/drift/probes.py``). Raw control characters in strings are refused
    (``json.loads`` is strict about them by default).
    """
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=_no_constant), None
    except _Duplicate as e:
        return None, f"duplicate object key {str(e)!r}: undefined in JSON Schema's data model"
    except ValueError as e:  # JSONDecodeError included
        return None, f"not JSON: {' '.join(str(e).split())[:200]}"


def json_prefix_error(text: str) -> str | None:
    """None when ``text`` can be continued into a JSON document (RFC 8259, one value with
    whitespace around it), else why not (one line). A syntax check only: a prefix of a
    document that no schema admits still passes."""
    stack: list[str] = []  # "{" / "[" containers; "k" = expecting a key; ":" = expecting a colon
    i, n = 0, len(text)
    expect = "value"  # value | after_value | key | colon | done
    ws = " \t\n\r"

    def at(pos: int) -> str:
        return f"at offset {pos}: {text[pos:pos + 20]!r}"

    while i < n:
        c = text[i]
        if c in ws:
            i += 1
            continue
        if expect == "done":
            return f"text after the JSON value {at(i)}"
        if expect in ("value", "key"):
            if c == '"':
                j, esc = i + 1, False
                while j < n:
                    d = text[j]
                    if esc:
                        if d not in '"\\/bfnrtu':
                            return f"bad escape {at(j)}"
                        esc = False
                    elif d == "\\":
                        esc = True
                    elif d == '"':
                        break
                    elif ord(d) < 0x20:
                        return f"raw control character in a string {at(j)}"
                    j += 1
                if j >= n:
                    return None  # an open string: any continuation may close it
                i = j + 1
                expect = "colon" if expect == "key" else "after_value"
                continue
            if expect == "key":
                if c == "}" and stack and stack[-1] == "{?":
                    stack.pop()
                    i += 1
                    expect = "after_value" if stack else "done"
                    continue
                return f"expected an object key {at(i)}"
            if c in "{[":
                stack.append("{?" if c == "{" else "[?")
                i += 1
                expect = "key" if c == "{" else "value"
                continue
            if c == "]" and stack and stack[-1] == "[?":
                stack.pop()
                i += 1
                expect = "after_value" if stack else "done"
                continue
            m = _SCALAR.match(text, i)
            if m is None or m.end() == i:
                return f"expected a value {at(i)}"
            word = m.group(0)
            if m.end() == n:  # may still grow: a prefix of a literal or a number
                if any(lit.startswith(word) for lit in _LITERALS) or \
                        _NUMBER_PREFIX.fullmatch(word):
                    return None
                return f"not a JSON value {at(i)}"
            if word not in _LITERALS and not _NUMBER.fullmatch(word):
                return f"not a JSON value {at(i)}"
            i = m.end()
            expect = "after_value" if stack else "done"
            if stack:
                stack[-1] = stack[-1][0]
            continue
        if expect == "colon":
            if c != ":":
                return f"expected ':' {at(i)}"
            i += 1
            expect = "value"
            continue
        # after_value inside a container
        top = stack[-1][0] if stack else ""
        if stack:
            stack[-1] = top
        if c == "," and top:
            i += 1
            expect = "key" if top == "{" else "value"
            stack[-1] = top + "!"  # after a comma: a close bracket is not allowed
            continue
        if (c == "}" and top == "{") or (c == "]" and top == "["):
            stack.pop()
            i += 1
            expect = "after_value" if stack else "done"
            continue
        return f"expected ',' or a closing bracket {at(i)}"
    return None


#: JSON's three literal names (true, false and the null literal)
_LITERALS = tuple(json.dumps(v) for v in (True, False, None))
_SCALAR = _re.compile(r"[A-Za-z0-9+\-.]+")
_NUMBER = _re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = _re.compile(r"-|-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
