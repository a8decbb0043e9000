"""``harness report RUN [RUN ...] [-o DIR]``: an HTML report and its Markdown twin
(:func:`harness.make_report`).

Reads the run folders only (records.jsonl is the source of truth); never runs an engine
and never writes into a run folder. With several runs the first is the reference of the
diff section. Exit codes: 0 written, 2 bad usage or input.
"""

from __future__ import annotations

import re
from pathlib import Path


def default_dir(paths: list[Path]) -> Path:
    from harness.cli.common import REPORTS_DEFAULT
    from harness.store.run_store import RunStore

    ids = []
    for p in paths:
        try:
            ids.append(str(RunStore.open_readonly(p).read_meta().get("run_id") or Path(p).name))
        except Exception:  # reported properly when the report is built
            ids.append(Path(p).name)
    name = "-vs-".join(re.sub(r"[^A-Za-z0-9_.+-]", "_", i) for i in ids)
    return REPORTS_DEFAULT / name[:200]


def cmd_report(args) -> int:
    from harness.api import InputError, make_report
    from harness.cli.common import fail

    paths = [Path(p) for p in args.runs]
    try:
        html_path, md_path = make_report([*paths],
                                         Path(args.output) if args.output else default_dir(paths))
    except InputError as e:
        return fail(str(e))
    print(f"report: {html_path}\nmarkdown: {md_path}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="HTML + Markdown report of one or more runs (with a diff for 2+)",
        description="Write DIR/report.html (self-contained, offline) and DIR/report.md from run "
                    "folders. With several runs: side-by-side columns and a diff against the first.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folder(s), e.g. results/<run-id>")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="report folder (default reports/<run-id> or reports/<id>-vs-<id>)")
    p.set_defaults(handler=cmd_report)
