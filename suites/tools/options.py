"""``harness run`` options of the tools suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

import argparse
from typing import Any

from engines.base import FORMATS

#: configuration key → default
DEFAULTS: dict[str, Any] = {
    "tool_counts": [1, 5, 10, 50, 100, 500],  # tools per request, one case each
    "tool_formats": list(FORMATS),             # output formats
    "tool_seed": 0,                            # which tools make each set
    "tool_instances": 3,                       # valid outputs per request
    "tool_walks": 8,                           # fuzz walks per (request, engine)
    "tool_walk_tokens": 256,                   # token budget of a walk
}


def _ints(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated integers expected") from None
    if not out or any(x < 1 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: tool counts must be >= 1")
    return out


def _formats(text: str) -> list[str]:
    out = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in out if x not in FORMATS]
    if not out or bad:
        raise argparse.ArgumentTypeError(f"{text!r}: known formats are {', '.join(FORMATS)}")
    return out


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must be >= 0")
    return v


def add_run_arguments(p) -> None:
    g = p.add_argument_group("tools suite (tool calls with many tools)")
    g.add_argument("--tool-counts", dest="tool_counts", type=_ints,
                   help="tools per request, comma-separated (default 1,5,10,50,100,500)")
    g.add_argument("--tool-formats", dest="tool_formats", type=_formats,
                   help=f"output formats, comma-separated (default {','.join(FORMATS)})")
    g.add_argument("--tool-seed", dest="tool_seed", type=int,
                   help="seed of the tool sets and the fuzz walks (default 0)")
    g.add_argument("--tool-instances", dest="tool_instances", type=_count,
                   help="valid outputs per request (default 3)")
    g.add_argument("--tool-walks", dest="tool_walks", type=_count,
                   help="fuzz walks per request and engine (default 8; 0 = none)")


def config_from_args(args) -> dict[str, Any]:
    return {k: getattr(args, k) for k in DEFAULTS if getattr(args, k, None) is not None}
