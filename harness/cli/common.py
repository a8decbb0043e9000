"""What every command shares: default folders and the one-line error."""

from __future__ import annotations

import sys

from harness.store.run_store import PROJECT_ROOT

RESULTS_DEFAULT = PROJECT_ROOT / "results"
REPORTS_DEFAULT = PROJECT_ROOT / "reports"


def fail(msg: str) -> int:
    """Print ``harness: error: MSG`` on stderr; return exit code 2 (bad usage or input)."""
    print(f"harness: error: {msg}", file=sys.stderr)
    return 2
