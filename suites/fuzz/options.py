"""``harness run`` flags of the ``fuzz`` suite (``--corpus`` and ``--walk-tokens`` shared
with ``mask-diff``: :func:`harness.suite.options.add_token_flags`)."""

from __future__ import annotations

from typing import Any, Mapping, TypedDict

from harness.suite.options import add_token_flags, config_from, merged, positive_int


class FuzzOptions(TypedDict, total=False):
    """The run options of the fuzz suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    walks: int
    walk_tokens: int
    corpus: str


#: configuration key → default
DEFAULTS: FuzzOptions = {
    "walks": 8,            # seeded random walks per (schema, engine)
    "walk_tokens": 384,    # token budget per walk (a runaway past it)
    "corpus": "jsonschemabench",  # where the cases come from: jsonschemabench | grammars
}
KEYS = tuple(DEFAULTS)


def add_run_arguments(p) -> None:
    g = p.add_argument_group("fuzz suite (random walks under the mask)")
    g.add_argument("--walks", type=positive_int,
                   help="random walks per schema and engine (default 8)")
    add_token_flags(g)


def config_from_args(args) -> FuzzOptions:
    return config_from(args, KEYS)


def resolve(opts: Mapping[str, Any] | None) -> FuzzOptions:
    """The job's options: the payload's values over the defaults."""
    return merged(DEFAULTS, opts)
