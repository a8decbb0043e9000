"""The suite API's presentation: the report model (sections, paragraphs, the table model
:class:`Table`, its console renderer :func:`text_table` and Markdown renderer
:func:`markdown_table`; ``harness report`` renders the same model to HTML), figures and the
text helpers every renderer shares. Numbers are formatted by ``harness.suite.figures``
alone. Imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "Block": "harness.report.model:Block",
    "Bullets": "harness.report.model:Bullets",
    "Figure": "harness.report.model:Figure",
    "figure_png": "harness.report.plots:figure_png",
    "findings_blocks": "harness.report.findings:findings_blocks",
    "markdown_table": "harness.report.text:markdown_table",
    "md_cell": "harness.report.text:md_cell",
    "Para": "harness.report.model:Para",
    "pipes": "harness.report.text:pipes",
    "plot_text": "harness.report.text:plot_text",
    "pyplot": "harness.report.plots:pyplot",
    "ReportContext": "harness.report.model:ReportContext",
    "RunData": "harness.report.model:RunData",
    "Section": "harness.report.model:Section",
    "Table": "harness.report.model:Table",
    "text_table": "harness.report.text:text_table",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.report.findings import findings_blocks
    from harness.report.model import (Block, Bullets, Figure, Para, ReportContext, RunData, Section,
                                      Table)
    from harness.report.plots import figure_png, pyplot
    from harness.report.text import markdown_table, md_cell, pipes, plot_text, text_table
