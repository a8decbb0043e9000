"""Formatting and escaping for reports: numbers, ratios, and text from anywhere made inert
for Markdown and for matplotlib."""

from __future__ import annotations

from typing import Any

from harness.report import console

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


def fmt(v: Any, digits: int = 1) -> str:
    return console._fmt(v, digits)


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
