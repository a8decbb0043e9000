"""The registry of report sections that suites add to every report.

Each entry is ``builder(ctx: ReportContext) -> Section | list[Section] | None`` and returns
``None`` when its data is absent from the runs (so a report of a plain run is unchanged).
They are placed after the core sections and before the diff section.
"""

from __future__ import annotations

from typing import Callable, Union

from harness.report.model import ReportContext, Section

SectionBuilder = Callable[[ReportContext], Union[Section, "list[Section]", None]]

OPTIONAL_SECTIONS: list[SectionBuilder] = []


def register_section(builder: SectionBuilder) -> SectionBuilder:
    """Add an optional section builder (usable as a decorator)."""
    if builder not in OPTIONAL_SECTIONS:
        OPTIONAL_SECTIONS.append(builder)
    return builder
