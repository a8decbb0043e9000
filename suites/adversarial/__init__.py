"""Suite ``adversarial``: generated hostile schemas, each a (family, size) point on a curve.

Every case is generated here (nothing is read from disk), deterministically, so that a
run measures how an engine's compile time (TTFM) and mask time grow with the size of one
hostile feature, and whether it ends within the run's limits at all. A case id is
``<family>/<size>`` (e.g. ``nesting_oneof/32``); the subset is the family, so ``--subset
enum,max_length`` picks families and ``--schemas 'nesting_*'`` globs case ids. The family,
the size and the size's unit are in each case's ``meta`` and in ``run.json``
(``suite.cases``), which is where the report reads them from.

Families (size = the number in the case id):

==========================  ==============================================================
``nesting_object``          objects nested ``size`` deep (``{"a": {"a": ... 1}}``)
``nesting_array``           arrays nested ``size`` deep (``[[[ ... 1 ]]]``)
``nesting_oneof``           ``oneOf`` nested ``size`` deep: each level an object holding
                            the next level, or a string (disjoint branches)
``enum``                    an ``enum`` of ``size`` distinct strings
``pattern_nested_quantifier`` ``^((a+)+)+$``-style: ``size`` nested ``(...)+`` groups
                            (exponential backtracking in a backtracking regex engine)
``pattern_dfa_blowup``      ``^[ab]*a[ab]{size}$``: a DFA needs 2^size states
``pattern_counted``         ``^(\\w{1,size}){1,size}$``: counted repetition inside counted
                            repetition (size² positions, overlapping)
``schema_bytes``            one object with optional string properties, padded to ``size``
                            bytes of schema text (the largest is 4 MiB)
``max_length``              ``{"type": "string", "maxLength": size}``
``ref_chain``               ``size`` ``$defs`` each referring to the next, the last back
                            to the first (a recursive cycle of length ``size``)
``ref_depth``               one recursive tree node (``$ref`` to itself); the valid
                            instance is nested ``size`` deep
==========================  ==============================================================

Instances are small wherever a larger one would only measure the replay loop: a valid one
and an invalid one per case, chosen so that ``jsonschema``'s own (backtracking) regex
engine decides them in microseconds. Their labels are the generator's; the worker
recomputes ground truth with ``jsonschema`` as for every suite.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Iterator, Sequence

from harness.suite import Case, SuiteBase, SuiteError, VerdictModel, round_robin
from harness.suite.hostile import (FAMILIES, FAMILY_BY_NAME, NAME, SOURCE, Family, case_id,
                                   enum_member, family_size, make_case,
                                   nested_quantifier_pattern)

__all__ = ["FAMILIES", "FAMILY_BY_NAME", "Adversarial", "Family", "case_id", "enum_member",
           "family_size", "make_case", "nested_quantifier_pattern"]


class Adversarial(SuiteBase):
    """The generated catalogue, filtered by family (``--subset``), glob and sample."""

    name = NAME
    summary_blocks = ("suites.adversarial.summary:extend",)
    report_sections = ("suites.adversarial.report:sec_adversarial",)
    verdict = VerdictModel(unit="hostile schema", units="hostile schemas",
                           truth="the limits (compile, time, memory) and jsonschema on each "
                                 "instance")
    smoke = {"subsets": ["nesting_oneof"], "sample": 1,
             "timeout_s": 20, "memory_gib": 4}

    def __init__(self, subsets: Sequence[str] | None = None, sample: int | None = None,
                 schemas: str | None = None, data: str | None = None) -> None:
        if data:
            raise SuiteError(f"the adversarial suite is generated, it reads no corpus; "
                             f"drop --data {data}")
        wanted = list(subsets or [])
        unknown = [s for s in wanted if s not in FAMILY_BY_NAME]
        if unknown:
            raise SuiteError(f"unknown adversarial family/families {', '.join(unknown)}; "
                             f"available: {', '.join(FAMILY_BY_NAME)}")
        points = [(f, s) for f in FAMILIES if not wanted or f.name in wanted for s in f.sizes]
        if schemas:
            points = [p for p in points if fnmatch.fnmatch(case_id(p[0].name, p[1]), schemas)]
        if sample is not None:
            by_fam: dict[str, list] = {}
            for p in points:
                by_fam.setdefault(p[0].name, []).append(p)
            picked = set(map(id, round_robin(list(by_fam.values()), sample)))
            points = [p for p in points if id(p) in picked]
        if not points:
            raise SuiteError("no adversarial cases match the selection")
        self.points = points
        self.options = {"subsets": wanted or None, "sample": sample, "schemas": schemas}

    def __len__(self) -> int:
        return len(self.points)

    def case_ids(self) -> list[str]:
        return [case_id(f.name, s) for f, s in self.points]

    def cases(self) -> Iterator[Case]:
        for f, s in self.points:
            yield make_case(f, s)

    def describe(self) -> dict[str, Any]:
        return {
            "suite": NAME,
            "data": SOURCE,
            "files_on_disk": sum(len(f.sizes) for f in FAMILIES),  # cases in the catalogue
            "selected": len(self.points),
            "families": {f.name: {"unit": f.unit, "note": f.note}
                         for f in FAMILIES if any(p[0] is f for p in self.points)},
            # case id → [family, size, unit]: what the report plots against
            "cases": {case_id(f.name, s): [f.name, s, f.unit] for f, s in self.points},
            **self.options,
        }


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = Adversarial
