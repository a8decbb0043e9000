"""Instance picking: which of a case's instances a token-level job replays, and as what text
(shared by the ``mask-diff``, ``batch``, ``drafts`` and ``jump-forward`` suites through
:func:`harness.suite.pick_instances`)."""

from __future__ import annotations

from typing import Any, TypedDict

from harness.measure.jsontext import parse_instance_text
from harness.measure.replay import SERIALIZATIONS
from harness.records import CasePayload

__all__ = ["PickedInstance", "pick_instances"]


class PickedInstance(TypedDict):
    """An instance a token-level job replays: valid by the ground truth, as one text."""

    index: int
    label: bool          # the corpus's claim
    truth: bool          # the ground truth's verdict: always True here
    expected: bool       # True
    text: str            # the exact text replayed
    ser: str             # its serialisation: ``primary``, or ``"text"`` for an exact text


def pick_instances(case: CasePayload, target: Any, primary: str, k: int) -> list[PickedInstance]:
    """The first ``k`` instances of a job's ``case`` the ground truth calls valid, each with
    the text to replay (a grammar case's instances are texts; a schema's, values serialised
    as ``primary``, e.g. ``"ascii"``); ``target`` is the case's
    :func:`harness.suite.measure.target_for`. Fewer than ``k`` when fewer are valid."""
    out: list[PickedInstance] = []
    for item in case["instances"]:
        index, data = item["index"], item["data"]
        exact = item.get("text")
        if target.kind == "grammar":
            if exact is None or target.verdict(exact) is not True:
                continue
        else:
            if exact is not None:
                data, why = parse_instance_text(exact)
                if why:
                    continue
            verdict, _ = target.truth.verdict(data)
            if verdict is not True:
                continue
        try:
            text = exact if exact is not None else SERIALIZATIONS[primary](data)
        except (TypeError, ValueError):
            continue
        out.append({"index": index, "label": item["label"], "truth": True, "expected": True,
                    "text": text, "ser": "text" if exact is not None else primary})
        if len(out) >= k:
            break
    return out
