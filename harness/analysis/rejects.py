"""The two kinds of false reject, counted from the records (never runs an engine).

Each false reject of a replayed valid text carries, in its replay result, the kind the
measurement found (:mod:`harness.measure.reachability`):

``unwritable``    no tokenisation of the text is accepted: the engine cannot write it;
``tokenization``  this tokenisation is refused, another is accepted (``reachable_tokens``):
                  the mask excludes a valid next token, the string is still reachable;
``undecided``     the search ran out of its budget of engine calls.

:func:`false_reject_kinds` counts them over exactly the false rejects that
``summary.json``'s ``false_rejects`` counts for the primary serialisation and for exact
texts (``text``): finished jobs, instances where the ground truth and the corpus label
agree. ``unchecked`` counts the false rejects without a kind (records written before the
check existed), so the four always add up to those false rejects.
"""

from __future__ import annotations

from typing import Any, Iterable

from harness.measure import outcomes
from harness.records import Record

__all__ = ["KEYS", "counts_cell", "describe", "false_reject_kinds"]

#: the keys of :func:`false_reject_kinds`, in the order they are shown
KEYS = ("unwritable", "tokenization", "undecided", "unchecked")

#: what each kind is called where people read it
NAMES = {"unwritable": "cannot write", "tokenization": "tokenisation refused",
         "undecided": "undecided", "unchecked": "unchecked"}

_FINISHED = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)


def false_reject_kinds(records: Iterable[Record], primary: str) -> dict[str, int]:
    """``{"unwritable", "tokenization", "undecided", "unchecked"}`` → count, over the
    false rejects of ``records`` (one engine's) in serialisation ``primary`` and in exact
    texts (``text``), the instances where the ground truth and the label agree."""
    counts = dict.fromkeys(KEYS, 0)
    for r in records:
        if r.get("outcome") not in _FINISHED:
            continue
        for inst in r.get("instances", ()):
            if inst.get("label_disagrees") or "bad_instance" in inst:
                continue
            for ser in dict.fromkeys((primary, "text")):
                res = inst.get("results", {}).get(ser)
                if not res or "status" not in res or outcomes.instance_outcome(
                        inst["expected"], res["status"]) != "false_reject":
                    continue
                kind = res.get("reject_kind")
                counts[kind if kind in counts else "unchecked"] += 1
    return counts


def describe(kinds: dict[str, int] | None) -> str:
    """``"cannot write 95 / tokenisation refused 13 / undecided 0"`` (and ``unchecked``
    when there are any); ``"–"`` for None."""
    if not kinds:
        return "–"
    parts = [f"{NAMES[k]} {kinds.get(k, 0):,}" for k in KEYS[:3]]
    if kinds.get("unchecked"):
        parts.append(f"{NAMES['unchecked']} {kinds['unchecked']:,}")
    return " / ".join(parts)


def counts_cell(kinds: dict[str, int] | None) -> str:
    """``"95 / 13 / 0"`` (cannot write / tokenisation refused / undecided, then ``+ N
    unchecked`` when there are any), for a table whose row names the kinds; ``"–"`` for
    None."""
    if not kinds:
        return "–"
    cell = " / ".join(f"{kinds.get(k, 0):,}" for k in KEYS[:3])
    return cell + (f" + {kinds['unchecked']:,} unchecked" if kinds.get("unchecked") else "")
