"""Suite ``drift``: the probe catalogue of :mod:`suites.drift.probes` as cases.

One case per catalogue group (one schema, compiled once per engine); its instances are the
group's probes, each an exact JSON *text* (``Instance.text``) that the worker replays as is
(serialisation ``text``). ``case_id`` is ``<axis>/<group>``, the subset is the axis, so
``--subset whitespace,format`` picks axes and ``--schemas 'number_forms/*'`` globs case ids.
A probe's id is ``<axis>/<group>/<probe>`` (``probe_id``); instance ``i`` of a case is the
group's probe ``i``.

The expected verdict is jsonschema's on ``json.loads(text)`` where it can decide, else the
catalogue's (texts that are not JSON, duplicate keys); the catalogue's verdicts agree with
jsonschema wherever both decide (a test checks it).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any, Iterator, Sequence

from harness.suite.measure import parse_instance_text
from harness.suite import Case, Instance, SuiteBase, SuiteError, VerdictModel, round_robin
from suites.drift.probes import AXES, GROUPS
from suites.drift.records import ProbeGroup

NAME = "drift"
SOURCE = "suites/drift/probes.py"


def case_id(group: ProbeGroup) -> str:
    return f"{group['axis']}/{group['name']}"


def probe_id(cid: str, index: int) -> str:
    """``<axis>/<group>/<probe>`` of instance ``index`` of case ``cid``."""
    return f"{cid}/{GROUP_BY_ID[cid]['probes'][index]['id']}"


GROUP_BY_ID: dict[str, ProbeGroup] = {case_id(g): g for g in GROUPS}


def to_case(group: ProbeGroup) -> Case:
    cid = case_id(group)
    instances = []
    for i, p in enumerate(group["probes"]):
        value, _ = parse_instance_text(p["text"])
        instances.append(Instance(i, value, p["valid"], f"{cid}/{p['id']}", text=p["text"]))
    return Case(
        suite=NAME,
        case_id=cid,
        subset=group["axis"],
        source=SOURCE,
        schema=group["schema"],
        schema_text=json.dumps(group["schema"]),
        instances=tuple(instances),
        meta={"axis": group["axis"], "note": group.get("note", ""),
              "probes": [p["id"] for p in group["probes"]]},
        resources=tuple(group.get("resources", {}).items()),
    )


class Drift(SuiteBase):
    """The catalogue, filtered by axis (``--subset``), glob on case ids and sample."""

    name = NAME
    summary_blocks = ("suites.drift.summary:drift_block",)
    report_sections = ("suites.drift.report:sec_drift",)
    verdict = VerdictModel(unit="probe group", units="probe groups",
                           truth="jsonschema on each probe's exact text")
    smoke = {"subsets": ["whitespace"]}

    def __init__(self, subsets: Sequence[str] | None = None, sample: int | None = None,
                 schemas: str | None = None, data: str | None = None) -> None:
        del data  # the catalogue is code, not a corpus
        wanted = list(subsets or [])
        unknown = [s for s in wanted if s not in AXES]
        if unknown:
            raise SuiteError(f"unknown drift axis/axes {', '.join(unknown)}; "
                             f"available: {', '.join(AXES)}")
        groups = [g for g in GROUPS if not wanted or g["axis"] in wanted]
        if schemas:
            groups = [g for g in groups if fnmatch.fnmatch(case_id(g), schemas)]
        if sample is not None:
            by_axis: dict[str, list] = {}
            for g in groups:
                by_axis.setdefault(g["axis"], []).append(g)
            picked = round_robin(list(by_axis.values()), sample)
            groups = [g for g in groups if any(g is p for p in picked)]
        if not groups:
            raise SuiteError("no drift probes match the selection")
        self.groups = groups
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.groups)

    def case_ids(self) -> list[str]:
        return [case_id(g) for g in self.groups]

    def cases(self) -> Iterator[Case]:
        for g in self.groups:
            yield to_case(g)

    def describe(self) -> dict[str, Any]:
        return {
            "suite": NAME,
            "data": SOURCE,
            "files_on_disk": len(GROUPS),  # groups (schemas) in the catalogue
            "axes": sorted({g["axis"] for g in self.groups}, key=AXES.index),
            "selected": len(self.groups),
            "probes": sum(len(g["probes"]) for g in self.groups),
            **self.options,
        }


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Drift
