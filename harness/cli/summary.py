"""``harness summary RUN``: rebuild summary.json, the Parquet tables and the report of a run
(:func:`harness.summarize`)."""

from __future__ import annotations

from harness.cli.common import REPORTS_DEFAULT, fail


def add_parser(sub) -> None:
    s = sub.add_parser("summary", help="rebuild summary.json, Parquet tables and report.md of a run")
    s.add_argument("run", help="run folder, e.g. results/<run-id>")
    s.add_argument("-o", "--output", help="report folder (default reports/<run-id>)")
    s.set_defaults(handler=cmd_summary)


def cmd_summary(args) -> int:
    from pathlib import Path

    from harness.api import InputError, summarize
    from harness.report import console

    out = Path(args.output) if args.output else REPORTS_DEFAULT / Path(args.run).name
    try:
        summary = summarize(args.run, out, echo=print)
    except InputError as e:
        return fail(str(e))
    print(console.render_text(summary))
    print(f"\nreport: {out / 'report.md'} (and report.html)")
    return 0
