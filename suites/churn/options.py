"""``harness run`` options of the churn suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

from typing import TypedDict, cast

from harness.suite.options import config_from, floats


class ChurnOptions(TypedDict, total=False):
    """The run options of the churn suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    zipf: list[float]
    churn_requests: int
    churn_seed: int


#: configuration key → default
DEFAULTS: ChurnOptions = {
    "zipf": [1.0, 0.0],     # Zipf exponents, one stream each (0 = every request new)
    "churn_requests": 200,  # requests per stream
    "churn_seed": 0,        # the streams' draws
}


def add_run_arguments(p) -> None:
    g = p.add_argument_group("churn suite (compile cache under schema churn)")
    g.add_argument("--zipf", type=floats(0, "exponents"),
                   help="Zipf exponents of the schema streams, comma-separated (default 1.0,0; "
                        "0 = every request a new schema)")
    g.add_argument("--churn-requests", dest="churn_requests", type=int,
                   help="requests per stream (default 200)")
    g.add_argument("--churn-seed", dest="churn_seed", type=int,
                   help="seed of the streams' Zipf draws (default 0)")


def config_from_args(args) -> ChurnOptions:
    # argparse values are untyped: the flags' types are the options' (ChurnOptions)
    return cast(ChurnOptions, config_from(args, DEFAULTS))
