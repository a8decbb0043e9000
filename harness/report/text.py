"""The console renderer of the table model (:func:`text_table`; Markdown's and HTML's are in
:mod:`harness.report.markdown` and :mod:`harness.report.html`), ratios, and text from
anywhere made inert for Markdown and for matplotlib. Numbers are formatted by
:mod:`harness.measure.figures` alone."""

from __future__ import annotations

from typing import Any, Callable

from harness.report.model import Table

#: Markdown output: ``<``, ``>``, ``&`` become entities (so no tag can form, even for a
#: renderer that ignores backslash escapes); these are backslash-escaped: table cells
#: (``|``), emphasis, code, links, strike-through and math.
MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
MD_SPECIAL = frozenset("\\|`*_[]~$")


def md_text(text: Any, limit: int | None = 300) -> str:
    """Text from anywhere (corpus, engine) made inert for Markdown, on one line."""
    s = "" if text is None else str(text)
    s = " ".join(s.split())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    out = []
    for ch in s:
        if ch in MD_ENTITIES:
            out.append(MD_ENTITIES[ch])
        elif ch in MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def short(text: Any, limit: int = 200) -> str:
    s = " ".join(("" if text is None else str(text)).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def text_table(t: Table, *, rule: bool = False, span_from: int | None = None) -> str:
    """``t`` as console text: columns two spaces apart, each as wide as its widest cell and
    aligned as :meth:`Table.aligns` says, no trailing blanks; ``rule``: a line of dashes
    under the header; the table's note on the last line.

    ``span_from``: a row whose cells after column ``span_from`` are all empty writes that
    column's cell (a reason, say) after the cells before it, across the columns after it,
    without widening its column.
    """
    aligns = t.aligns()
    spans = set() if span_from is None else {
        j for j, r in enumerate(t.rows) if len(r) > span_from and not any(r[span_from + 1:])}
    # a spanning cell widens no column: only the cells before it count
    widths = [max([len(h)] + [len(r[i]) for j, r in enumerate(t.rows)
                              if j not in spans or i < (span_from or 0)])
              for i, h in enumerate(t.header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(cells, widths, aligns)).rstrip()

    lines = [line(t.header)]
    if rule:
        lines.append("  ".join("-" * w for w in widths))
    for j, r in enumerate(t.rows):
        lines.append(line(r[:span_from]) + "  " + r[span_from]
                     if j in spans and span_from is not None else line(r))
    if t.note:
        lines.append(t.note)
    return "\n".join(lines)


def markdown_table(t: Table, cell: Callable[[str], str] | None = None) -> list[str]:
    """``t`` as the lines of a Markdown table (alignment row from :meth:`Table.aligns`), its
    note below after a blank line. ``cell`` escapes every header cell, cell and the note;
    by default :func:`md_text` (cells cut at 300 characters, the header and note whole)."""
    head = cell or (lambda s: md_text(s, None))
    body = cell or md_text
    al = {"l": ":--", "r": "--:"}
    lines = ["| " + " | ".join(head(h) for h in t.header) + " |",
             "|" + "|".join(al[a] for a in t.aligns()) + "|"]
    lines += ["| " + " | ".join(body(c) for c in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", head(t.note)]
    return lines


def pipes(text: str) -> str:
    """A Markdown cell whose text is already Markdown: only ``|`` escaped, a line break a
    space."""
    return text.replace("|", "\\|").replace("\n", " ")


def ratio(new: float | None, old: float | None) -> str:
    if new is None or old is None or not old:
        return "–"
    return f"×{new / old:.2f}"


def plot_text(s: str) -> str:
    """Matplotlib text: no mathtext from corpus names."""
    return str(s).replace("$", r"\$")


def md_cell(text: Any) -> str:
    """Text for a Markdown table cell of a report block rendered elsewhere: backslash
    escapes for table, emphasis, code and link characters."""
    s = "" if text is None else str(text)
    for ch in ("\\", "|", "`", "*", "_", "[", "]", "<", ">"):
        s = s.replace(ch, "\\" + ch)
    return s
