"""``harness run`` flags of the ``mask-diff`` suite.

The values live in the run's configuration (run.json) and reach each job as
``payload["options"]``, so ``--resume`` continues with the same settings. ``--corpus`` and
``--walk-tokens`` are shared with the ``fuzz`` suite
(:func:`harness.suite.options.add_token_flags`).
"""

from __future__ import annotations

from typing import Any, Mapping, TypedDict

from harness.suite.options import (add_token_flags, config_from, merged, positive_float,
                                   positive_int)


class MaskDiffOptions(TypedDict, total=False):
    """The run options of the mask-diff suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    walk_tokens: int
    tight_k: int
    diff_instances: int
    oracle_timeout_s: float
    corpus: str


#: configuration key → default
DEFAULTS: MaskDiffOptions = {
    "walk_tokens": 384,    # witnesses: token budget per completion walk (a runaway past it)
    "tight_k": 8,          # "at most k allowed tokens" threshold of tightness
    "diff_instances": 2,   # valid instances per schema diffed token by token
    "oracle_timeout_s": 30.0,  # time the reference engine may spend per job, s
    "corpus": "jsonschemabench",  # where the cases come from: jsonschemabench | grammars
}
KEYS = tuple(DEFAULTS)


def add_run_arguments(p) -> None:
    g = p.add_argument_group("mask-diff suite (masks against the reference engine)")
    add_token_flags(g)
    g.add_argument("--tight-k", dest="tight_k", type=positive_int,
                   help="k of the 'at most k allowed tokens' share (default 8)")
    g.add_argument("--diff-instances", dest="diff_instances", type=positive_int,
                   help="valid instances per schema compared token by token (default 2)")
    g.add_argument("--oracle-timeout", dest="oracle_timeout_s", type=positive_float,
                   help="seconds the reference engine may spend per job before the job falls "
                        "back to 'no oracle' (default 30)")


def config_from_args(args) -> MaskDiffOptions:
    return config_from(args, KEYS)


def resolve(opts: Mapping[str, Any] | None) -> MaskDiffOptions:
    """The job's options: the payload's values over the defaults."""
    return merged(DEFAULTS, opts)
