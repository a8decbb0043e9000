"""``harness run`` options of the churn suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

import argparse
from typing import Any

#: configuration key → default
DEFAULTS: dict[str, Any] = {
    "zipf": [1.0, 0.0],     # Zipf exponents, one stream each (0 = every request new)
    "churn_requests": 200,  # requests per stream
    "churn_seed": 0,        # the streams' draws
}


def _exponents(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated numbers expected") from None
    if not out or any(x < 0 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: exponents must be >= 0")
    return out


def add_run_arguments(p) -> None:
    g = p.add_argument_group("churn suite (compile cache under schema churn)")
    g.add_argument("--zipf", type=_exponents,
                   help="Zipf exponents of the schema streams, comma-separated (default 1.0,0; "
                        "0 = every request a new schema)")
    g.add_argument("--churn-requests", dest="churn_requests", type=int,
                   help="requests per stream (default 200)")
    g.add_argument("--churn-seed", dest="churn_seed", type=int,
                   help="seed of the streams' Zipf draws (default 0)")


def config_from_args(args) -> dict[str, Any]:
    out = {k: getattr(args, k) for k in DEFAULTS if getattr(args, k, None) is not None}
    return out
