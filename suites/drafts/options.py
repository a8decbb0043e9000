"""``harness run`` options of the drafts suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

from typing import TypedDict, cast

from harness.suite.options import config_from, ints, positive_int


class DraftsOptions(TypedDict, total=False):
    """The run options of the drafts suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    draft_k: list[int]
    draft_positions: int
    draft_instances: int
    draft_seed: int
    model: str | None
    max_tokens: int | None
    draft_model: str | None


#: configuration key → default
DEFAULTS: DraftsOptions = {
    "draft_k": [1, 4, 8],     # draft lengths, tokens
    "draft_positions": 4,     # corrupted drafts per (instance, k), each at a seeded start
    "draft_instances": 2,     # valid instances per schema the drafts are cut from
    "draft_seed": 0,          # start positions, corrupt positions and corrupt tokens
    "model": None,            # --model: the target of grammar-aware drafting (aware.py)
    "max_tokens": None,       # --max-tokens: its output budget (None: MODEL_MAX_TOKENS)
    "draft_model": None,      # --draft-model: a draft checkpoint on the target's tokenizer
}

#: the target's output budget when ``--max-tokens`` is not given (the default build's
#: answer cap)
MODEL_MAX_TOKENS = 96


def add_run_arguments(p) -> None:
    g = p.add_argument_group("drafts suite (speculative-decoding draft validation)")
    g.add_argument("--draft-k", dest="draft_k", type=ints(1, "draft lengths", unique_sorted=True),
                   help="draft lengths in tokens, comma-separated (default 1,4,8)")
    g.add_argument("--draft-positions", dest="draft_positions", type=positive_int,
                   help="corrupted drafts per instance and length, each at a seeded start "
                        "(default 4)")
    g.add_argument("--draft-instances", dest="draft_instances", type=positive_int,
                   help="valid instances per schema to cut drafts from (default 2)")
    g.add_argument("--draft-seed", dest="draft_seed", type=int,
                   help="seed of the start and corrupt positions and the corrupt tokens "
                        "(default 0)")
    g.add_argument("--draft-model", dest="draft_model", metavar="FOLDER|build:draft",
                   help="with --model: a draft checkpoint on the target's tokenizer for the "
                        "model drafters; build:draft = the one harness model build --size "
                        "draft makes for the target (built now when not cached)")


def config_from_args(args) -> DraftsOptions:
    # argparse values are untyped: the flags' types are the options' (DraftsOptions)
    return cast(DraftsOptions, config_from(args, DEFAULTS))
