"""What every command shares: default folders and the one-line error."""

from __future__ import annotations

import sys

from harness.api import default_reports, default_results

#: ``--results`` and ``--reports`` when not given: ``results/`` and ``reports/`` in the
#: current directory (or ``$HARNESS_RESULTS`` / ``$HARNESS_REPORTS``).
RESULTS_DEFAULT = default_results()
REPORTS_DEFAULT = default_reports()


def fail(msg: str) -> int:
    """Print ``harness: error: MSG`` on stderr; return exit code 2 (bad usage or input)."""
    print(f"harness: error: {msg}", file=sys.stderr)
    return 2
