"""``harness run`` flags of the ``mask-diff`` and ``fuzz`` suites.

The values live in the run's configuration (run.json) and reach each job as
``payload["options"]``, so ``--resume`` continues with the same settings.
"""

from __future__ import annotations

from typing import Any

from suites.options import config_from, merged, positive_float, positive_int

#: configuration key → default
DEFAULTS: dict[str, Any] = {
    "walks": 8,            # fuzz: seeded random walks per (schema, engine)
    "walk_tokens": 384,    # fuzz and witnesses: token budget per walk (a runaway past it)
    "tight_k": 8,          # mask-diff: "at most k allowed tokens" threshold of tightness
    "diff_instances": 2,   # mask-diff: valid instances per schema diffed token by token
    "oracle_timeout_s": 30.0,  # mask-diff: time the reference engine may spend per job, s
    "corpus": "jsonschemabench",  # where the cases come from: jsonschemabench | grammars
}
KEYS = tuple(DEFAULTS)


def add_run_arguments(p) -> None:
    g = p.add_argument_group("mask-diff and fuzz suites (token level)")
    g.add_argument("--walks", type=positive_int, help="fuzz: random walks per schema and engine (default 8)")
    g.add_argument("--walk-tokens", dest="walk_tokens", type=positive_int,
                   help="fuzz / witnesses: token budget per walk; no EOS by then is a runaway "
                        "(default 384)")
    g.add_argument("--tight-k", dest="tight_k", type=positive_int,
                   help="mask-diff: k of the 'at most k allowed tokens' share (default 8)")
    g.add_argument("--diff-instances", dest="diff_instances", type=positive_int,
                   help="mask-diff: valid instances per schema compared token by token (default 2)")
    g.add_argument("--corpus", choices=("jsonschemabench", "grammars"),
                   help="mask-diff / fuzz: the cases' corpus: JSONSchemaBench schemas "
                        "(default) or the grammar corpus (regexes, choices, CFGs)")
    g.add_argument("--oracle-timeout", dest="oracle_timeout_s", type=positive_float,
                   help="mask-diff: seconds the reference engine may spend per job before "
                        "the job falls back to 'no oracle' (default 30)")


def config_from_args(args) -> dict[str, Any]:
    return config_from(args, KEYS)


def resolve(opts: dict[str, Any] | None) -> dict[str, Any]:
    """The job's options: the payload's values over the defaults."""
    return merged(DEFAULTS, opts)
