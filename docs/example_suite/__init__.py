"""Suite ``max-length`` (the example of ``docs/writing-a-suite.md``): does an engine hold a
string to its ``maxLength``, and how far up?

Each case is one generated schema ``{"type": "string", "maxLength": N}`` for N in
``--max-lengths`` (default 1, 8, 64, 512), with three instances: ``N`` letters (valid),
``N + 1`` letters and a number (invalid). The worker's default job replays each instance
token by token through each engine; ground truth is jsonschema.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Iterator, Mapping, Sequence

from harness.suite import Case, Instance, SuiteBase, SuiteError, VerdictModel
from harness.suite.options import merged

NAME = "max-length"


def make_case(n: int) -> Case:
    """The case for ``maxLength`` ``n`` (deterministic: nothing is read from disk)."""
    schema = {"type": "string", "maxLength": n}
    values = [("a" * n, True), ("a" * (n + 1), False), (n, False)]
    return Case(suite=NAME, case_id=f"max_length/{n}", subset="max_length",
                source="docs/example_suite", schema=schema,
                schema_text=f'{{"type": "string", "maxLength": {n}}}',
                instances=tuple(Instance(i, v, ok, f"{len(str(v))} chars")
                                for i, (v, ok) in enumerate(values)),
                meta={"max_length": n})


class MaxLength(SuiteBase):
    """Generated ``maxLength`` schemas, one per size."""

    name = NAME
    run_options = "docs.example_suite.options"
    summary_blocks = ("docs.example_suite.summary:summary_block",)
    report_sections = ("docs.example_suite.report:sec_max_length",)
    verdict = VerdictModel(truth="jsonschema on each generated instance")
    smoke = {"sample": 2}
    uses_options = True

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from docs.example_suite.options import DEFAULTS

        if data or subsets:
            raise SuiteError("the max-length suite is generated: no --data or --subset")
        sizes = [int(n) for n in merged(DEFAULTS, options)["max_lengths"]]
        self.cases_ = [make_case(n) for n in sizes]
        if schemas:
            self.cases_ = [c for c in self.cases_ if fnmatch.fnmatch(c.case_id, schemas)]
        self.cases_ = self.cases_[:sample]  # sample None keeps them all
        if not self.cases_:
            raise SuiteError("no max-length case matches the selection")

    def __len__(self) -> int:
        return len(self.cases_)

    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases_]

    def cases(self) -> Iterator[Case]:
        yield from self.cases_

    def describe(self) -> dict[str, Any]:
        return {"suite": NAME, "data": "generated", "selected": len(self.cases_)}


#: The suite this package is (``SUITES.register("max-length", "docs.example_suite:SUITE")``).
SUITE = MaxLength
