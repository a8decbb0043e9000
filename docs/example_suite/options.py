"""``harness run`` flags of the ``max-length`` suite: their values are stored in run.json's
configuration and reach each job as ``payload["options"]``."""

from __future__ import annotations

from typing import Any

from harness.suite.options import config_from, ints

#: configuration key → default
DEFAULTS: dict[str, Any] = {"max_lengths": [1, 8, 64, 512]}  # maxLength of each case, chars


def add_run_arguments(p: Any) -> None:
    g = p.add_argument_group("max-length suite (the writing-a-suite example)")
    g.add_argument("--max-lengths", dest="max_lengths", type=ints(0, "--max-lengths"),
                   help="comma-separated maxLength values, one case each (default 1,8,64,512)")


def config_from_args(args: Any) -> dict[str, Any]:
    return config_from(args, DEFAULTS)
