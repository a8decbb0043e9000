"""``harness run`` options of the drafts suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

import argparse
from typing import Any

#: configuration key → default
DEFAULTS: dict[str, Any] = {
    "draft_k": [1, 4, 8],     # draft lengths, tokens
    "draft_positions": 4,     # corrupted drafts per (instance, k), each at a seeded start
    "draft_instances": 2,     # valid instances per schema the drafts are cut from
    "draft_seed": 0,          # start positions, corrupt positions and corrupt tokens
}


def _lengths(text: str) -> list[int]:
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated integers expected") from None
    if not out or any(x < 1 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: draft lengths must be >= 1")
    return out


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: an integer expected") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be >= 1")
    return n


def add_run_arguments(p) -> None:
    g = p.add_argument_group("drafts suite (speculative-decoding draft validation)")
    g.add_argument("--draft-k", dest="draft_k", type=_lengths,
                   help="draft lengths in tokens, comma-separated (default 1,4,8)")
    g.add_argument("--draft-positions", dest="draft_positions", type=_positive,
                   help="corrupted drafts per instance and length, each at a seeded start "
                        "(default 4)")
    g.add_argument("--draft-instances", dest="draft_instances", type=_positive,
                   help="valid instances per schema to cut drafts from (default 2)")
    g.add_argument("--draft-seed", dest="draft_seed", type=int,
                   help="seed of the start and corrupt positions and the corrupt tokens "
                        "(default 0)")


def config_from_args(args) -> dict[str, Any]:
    return {k: getattr(args, k) for k in DEFAULTS if getattr(args, k, None) is not None}
