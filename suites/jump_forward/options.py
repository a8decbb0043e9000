"""``harness run`` options of the jump-forward suite (its ``SuiteBase.run_options``).

Prefixed ``--jf-`` so that they never clash with another suite's flags (every suite's
options module adds its group to the same ``harness run`` parser).
"""

from __future__ import annotations

from typing import Any, Mapping, TypedDict

from harness.suite.options import config_from, merged, positive_float, positive_int


class JumpForwardOptions(TypedDict, total=False):
    """The run options of the jump-forward suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    jf_instances: int
    jf_oracle_timeout_s: float


#: configuration key → default
DEFAULTS: JumpForwardOptions = {
    "jf_instances": 2,            # valid instances per (schema, engine) walked step by step
    "jf_oracle_timeout_s": 30.0,  # seconds the reference engine may spend per job
}


def add_run_arguments(p) -> None:
    g = p.add_argument_group("jump-forward suite (forced continuations)")
    g.add_argument("--jf-instances", dest="jf_instances", type=positive_int,
                   help="valid instances per schema and engine walked step by step (default 2)")
    g.add_argument("--jf-oracle-timeout", dest="jf_oracle_timeout_s", type=positive_float,
                   help="seconds the reference engine (the oracle of forced bytes) may spend "
                        "per job before the job goes on without it (default 30)")


def config_from_args(args) -> JumpForwardOptions:
    return config_from(args, DEFAULTS)


def resolve(opts: Mapping[str, Any] | None) -> JumpForwardOptions:
    """The job's options: the payload's values over the defaults."""
    return merged(DEFAULTS, opts)
