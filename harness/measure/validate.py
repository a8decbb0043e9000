"""Checks of generated text: bytes → UTF-8 → strict JSON → jsonschema.

A sequence that ended on a stop token the engine allowed is the engine's claim that the
output is a complete instance of the schema; one that fails here is a false accept, and its
token ids are the witness.
"""

from __future__ import annotations

from typing import Any, Sequence, TypedDict

from harness.measure.jsontext import parse_instance_text


def detokenize(tokens: Sequence[bytes], ids: Sequence[int]) -> bytes:
    return b"".join(tokens[i] for i in ids)


class Judgement(TypedDict, total=False):
    """A finished output judged: ``valid`` True, False or None (undecided), and why not."""

    valid: bool | None
    why: str


def check_output(raw: bytes, truth: Any) -> Judgement:
    """``{"valid": True|False|None, "why": ...}``; None = jsonschema could not decide.
    ``truth``: a :class:`harness.measure.groundtruth.GroundTruth` (its ``GroundTruth.judge``
    calls this)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return {"valid": False, "why": f"not UTF-8: {e}"}
    value, why = parse_instance_text(text)
    if why is not None:
        if any(ord(c) < 0x20 and c not in "\t\n\r " for c in text) or _raw_control_in_string(text):
            why += " (raw control character inside a JSON string)"
        return {"valid": False, "why": why}
    verdict, why = truth.verdict(value)
    if verdict is None:
        return {"valid": None, "why": why}
    if not verdict:
        err = None
        try:
            first = next(iter(truth.validator.iter_errors(value)), None)
            err = " ".join(str(first.message).split())[:300] if first is not None else None
        except Exception:
            pass
        return {"valid": False, "why": f"schema-invalid: {err}" if err else "schema-invalid"}
    return {"valid": True}


def _raw_control_in_string(text: str) -> bool:
    """True if a raw character below U+0020 sits inside a JSON string literal."""
    inside = escaped = False
    for c in text:
        if inside:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                inside = False
            elif ord(c) < 0x20:
                return True
        elif c == '"':
            inside = True
    return False
