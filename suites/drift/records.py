"""The drift suite's derived data, typed: what :mod:`suites.drift.summary` reads from the
records (one observation per probe and engine) and derives (the per-axis verdicts of
``drift.json`` and the engine pairs that accept different languages). Its records are the
core records: each probe is an instance."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["AxisDetail", "DriftObservation", "DriftPair", "Probe", "ProbeGroup"]


class Probe(TypedDict):
    """One probe: a JSON text and the specification's verdict on it."""

    id: str
    text: str
    valid: bool


class ProbeGroup(TypedDict):
    """A group of probes under one schema (one case of the suite)."""

    axis: str            # the drift axis (suites.drift.probes.AXES)
    name: str
    schema: Any          # the JSON schema (an object, or a boolean schema)
    note: str
    resources: dict[str, Any]  # URI → schema: what ``$ref`` may resolve against
    probes: list[Probe]


class DriftObservation(TypedDict):
    """One probe as one engine saw it."""

    axis: str            # the drift axis (suites.drift.probes.AXES)
    case: str
    index: int           # the probe's instance index
    text: str | None
    spec: bool           # the specification's verdict: valid
    compiled: bool       # the engine compiled the probe's schema
    accepted: bool | None  # None: not compiled, or no replay
    error: str | None    # not compiled: the error or the outcome


class AxisDetail(TypedDict):
    """One engine on one axis (``drift.json`` keeps ``verdict``)."""

    verdict: str         # agrees | stricter | looser | mixed | refuses
    probes: int
    compiled: int
    refused: int
    false_rejects: list[str]  # probe ids
    false_accepts: list[str]


class DriftPair(TypedDict, total=False):
    """Two engines that accept different languages."""

    engines: list[str]   # [a, b]
    differ: int          # probes they judge differently
    axes: list[str]
    probes: list[dict[str, object]]  # {probe, axis, text, spec, <a>, <b>}: a verdict per engine
    refused_by_one: list[str]
