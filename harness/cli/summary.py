"""``harness summary RUN``: rebuild summary.json, the Parquet tables and the report of a run."""

from __future__ import annotations

from pathlib import Path

from harness.cli.common import REPORTS_DEFAULT, fail


def add_parser(sub) -> None:
    s = sub.add_parser("summary", help="rebuild summary.json, Parquet tables and report.md of a run")
    s.add_argument("run", help="run folder, e.g. results/<run-id>")
    s.add_argument("-o", "--output", help="report folder (default reports/<run-id>)")
    s.set_defaults(handler=cmd_summary)


def cmd_summary(args) -> int:
    from harness.analysis import finalize as derive
    from harness.report import console as table
    from harness.report.html import write_reports
    from harness.store.run_store import RunStore, StoreError

    try:
        store = RunStore.open_readonly(Path(args.run))  # safe on a run still going
    except StoreError as e:
        return fail(str(e))
    summary = derive.finalize(store)
    out = Path(args.output) if args.output else REPORTS_DEFAULT / store.path.name
    html_report, report = write_reports([store.path], out)
    print(table.render_text(summary))
    print(f"\nreport: {report} (and {html_report.name})")
    return 0
