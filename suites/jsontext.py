"""What counts as a JSON document: the strict parse every suite and the ground truth share."""

from __future__ import annotations

import json
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
    verdict, see ``suites/drift_probes.py``). Raw control characters in strings are refused
    (``json.loads`` is strict about them by default).
    """
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=_no_constant), None
    except _Duplicate as e:
        return None, f"duplicate object key {str(e)!r}: undefined in JSON Schema's data model"
    except ValueError as e:  # JSONDecodeError included
        return None, f"not JSON: {' '.join(str(e).split())[:200]}"
