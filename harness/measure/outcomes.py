"""Schema-level outcomes, in MaskBench's order: the first that applies wins.

``compile_error``      the engine refused or failed to compile the schema
``timeout``            the job passed its wall-clock limit (the worker was killed)
``oom``                the job ran out of its address-space limit
``crash``              the worker died (signal or unexpected exit)
``validation_error``   a valid instance was rejected (false reject; EOS included)
``invalidation_error`` an invalid instance was accepted (false accept)
``passing``            none of the above
``bad_input``          the corpus file itself could not be used (not an engine result)
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

COMPILE_ERROR = "compile_error"
TIMEOUT = "timeout"
OOM = "oom"
CRASH = "crash"
VALIDATION_ERROR = "validation_error"
INVALIDATION_ERROR = "invalidation_error"
PASSING = "passing"
BAD_INPUT = "bad_input"

OUTCOMES = (PASSING, COMPILE_ERROR, TIMEOUT, OOM, CRASH, VALIDATION_ERROR,
            INVALIDATION_ERROR, BAD_INPUT)

#: Outcomes that mean the job did not finish normally (the record has no instances).
DEATHS = (TIMEOUT, OOM, CRASH)


def instance_outcome(expected_valid: bool, status: str) -> str | None:
    """``"false_reject"``, ``"false_accept"`` or ``None`` (correct) for one replay."""
    accepted = status == "accepted"
    if expected_valid and not accepted:
        return "false_reject"
    if not expected_valid and accepted:
        return "false_accept"
    return None


def classify(instances: Iterable[Mapping[str, Any]], serialization: str) -> str:
    """Outcome of a compiled schema from its instance results in one serialisation.

    Each instance dict has ``expected`` (the verdict used: jsonschema's, or the corpus
    label where jsonschema could not decide) and ``results[serialization]["status"]``.
    """
    rejected_valid = accepted_invalid = False
    for inst in instances:
        res = inst["results"].get(serialization)
        if res is None:  # instance could not be serialised at all
            continue
        kind = instance_outcome(inst["expected"], res["status"])
        rejected_valid |= kind == "false_reject"
        accepted_invalid |= kind == "false_accept"
    if rejected_valid:
        return VALIDATION_ERROR
    if accepted_invalid:
        return INVALIDATION_ERROR
    return PASSING


#: The outcomes of a job whose grammar compiled and whose instances were replayed.
COMPILED = (PASSING, VALIDATION_ERROR, INVALIDATION_ERROR)


def replay_accepted(inst: Mapping[str, Any], primary: str) -> bool | None:
    """Whether an instance's replay was accepted: its exact text's replay (``"text"``) if it
    has one, else the ``primary`` serialisation's; None when neither was replayed."""
    res = inst.get("results") or {}
    r = res.get("text", res.get(primary))
    return None if r is None else r.get("status") == "accepted"


def engines_of(records: Iterable[Mapping[str, Any]], engines: Iterable[str] | None = None
               ) -> list[str]:
    """``engines`` as a list when given, else the records' engine labels in first-seen order."""
    if engines is not None:
        return list(engines)
    return list(dict.fromkeys(r["engine"] for r in records))
