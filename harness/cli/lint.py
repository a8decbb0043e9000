"""``harness lint FILE... [--engine LIST] [--json]``: will my schema be enforced?

For every node of each schema (JSON pointer) and every keyword that constrains it, per
engine row, one verdict (:mod:`harness.measure.keywords`, docs/lint.md): ``kept``,
``ignored`` (an instance jsonschema calls invalid only because of this keyword, that the
engine accepts), ``misread`` (an instance jsonschema calls valid that the engine cannot
write in any tokenization), ``refused`` (its compile error), ``undecided`` (and why).

    harness lint my_schema.json
    harness lint a.json b.json --engine xgrammar,llguidance --json

The console shows a node × engine table and the witness of each flagged cell; ``--json``
prints one object per line ``{"file", "engine", "path", "keyword", "verdict", "witness",
"why"}``. Exit codes: 0 no selected engine ignores or misreads a keyword, 1 one does, 2 bad
input (unreadable, not JSON, not a schema: one line naming the file).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from harness.cli.common import fail


def add_parser(sub) -> None:
    p = sub.add_parser("lint", help="will my schema be enforced? every keyword of every node, "
                                    "per engine: kept, ignored, misread, refused, undecided",
                       description="Judge every node x keyword of each schema file per engine "
                                   "(docs/lint.md). Exit 0: nothing ignored or misread; 1: "
                                   "some engine ignores or misreads a keyword; 2: bad input.")
    p.add_argument("files", nargs="+", metavar="FILE", help="JSON Schema files")
    p.add_argument("--engine", default=None,
                   help="engine rows, NAME[:CONFIG],... (default: xgrammar,llguidance,outlines)")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per line instead of the table")
    p.add_argument("--tokenizer", default="llama3", help="vocabulary (default: llama3)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds the engines may spend on one file, side by side (default 22)")
    p.set_defaults(handler=cmd_lint)


def _cell(rows: list[dict[str, Any]]) -> str:
    from harness.measure.figures import number
    from harness.measure.keywords import VERDICTS

    parts = []
    for v in VERDICTS:
        got = [r for r in rows if r["verdict"] == v]
        if not got:
            continue
        if v in ("ignored", "misread"):
            parts.append(f"{v.upper()} " + ", ".join(r["keyword"] for r in got))
        else:
            parts.append(f"{v} {number(len(got))}")
    return "; ".join(parts) or "–"


def render(result: Any) -> str:
    """The console text of a :class:`harness.measure.lint.LintResult`."""
    from harness.measure.figures import fixed, number
    from harness.report.model import Table
    from harness.report.text import text_table

    out: list[str] = []
    files = list(dict.fromkeys(r["file"] for r in result.rows)) or list(result.nodes)
    for f in files:
        rows = [r for r in result.rows if r["file"] == f]
        paths = list(dict.fromkeys(r["path"] for r in rows))
        table = Table(header=["node"] + result.engines,
                      rows=[[p or "(root)"] + [_cell([r for r in rows if r["path"] == p
                                                      and r["engine"] == e])
                                                for e in result.engines] for p in paths],
                      align="l",
                      note=f"{number(result.nodes.get(f, 0))} nodes, "
                           f"{number(len(rows))} node x keyword x engine verdicts")
        out.append(f"{f}")
        out.append(text_table(table) if paths else "  no node with a constraining keyword")
        flagged = [r for r in rows if r["verdict"] in ("ignored", "misread")]
        for r in flagged:
            out.append(f"  {r['verdict']}: {r['engine']} {r['path'] or '(root)'} "
                       f"{r['keyword']}: witness {r['witness']}"
                       + (f" ({r['why']})" if r.get("why") else ""))
        out.append("")
    n = len(result.flagged())
    out.append(f"{number(n)} keyword verdicts ignored or misread; "
               f"{fixed(result.seconds, 1)} s elapsed")
    return "\n".join(out)


def cmd_lint(args) -> int:
    from harness.api import InputError, lint

    kwargs: dict[str, Any] = {"tokenizer": args.tokenizer}
    if args.timeout is not None:
        kwargs["seconds"] = args.timeout
    try:
        result = lint(args.files, args.engine, **kwargs)
    except InputError as e:
        return fail(str(e))
    if args.json:
        for r in result.rows:
            print(json.dumps({k: r.get(k) for k in ("file", "engine", "path", "keyword",
                                                     "verdict", "witness", "why")},
                             ensure_ascii=False))
        print(f"harness lint: {result.seconds:.1f} s elapsed", file=sys.stderr)
    else:
        print(render(result))
    return 1 if result.flagged() else 0
