"""``harness run`` options of the batch suite (its ``SuiteBase.run_options``).

``--batch`` is shared with the e2e suite (:func:`harness.suite.options.add_flag`: one flag, one
value); ``--step-ms`` takes a number of milliseconds or an e2e run folder, whose measured
unconstrained step (``tpot_unconstrained_ms`` in its ``summary.json``) becomes the budget.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TypedDict, cast

from harness.suite.options import add_flag, batch_sizes, config_from, ints, positive_int


class BatchOptions(TypedDict, total=False):
    """The run options of the batch suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    batch: int | list[int]
    threads: list[int] | None
    step_ms: float
    step_source: str | None
    same_schema: bool
    batch_steps: int
    batch_instances: int
    batch_seed: int


#: configuration key → default
DEFAULTS: BatchOptions = {
    "batch": [1, 8, 32, 128, 512],  # concurrent sequences, one case per size
    "threads": None,        # host threads per batch call; None: 1, 2, 4, … up to the cores
    "step_ms": 10.0,        # the decode step's budget, ms (an 8B-class step under load, H100)
    "step_source": None,    # where step_ms came from when not a number (an e2e run folder)
    "same_schema": False,   # also run B copies of one schema, for comparison
    "batch_steps": 200,     # timed steps per (batch size, thread count)
    "batch_instances": 8,   # valid instances per schema the sequences follow, at most
    "batch_seed": 0,        # the sequences' start offsets
}


def step_from_run(folder: str) -> float:
    """The measured decode step of an e2e run folder, ms: the median over its engine rows
    of ``summary.json``'s ``tpot_unconstrained_ms`` (the same model's step without the
    grammar). Raises ValueError (one line, naming the folder) when there is none."""
    path = Path(folder) / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read an e2e summary ({type(e).__name__})") from None
    steps = sorted(float(e["e2e"]["tpot_unconstrained_ms"])
                   for e in (summary.get("engines") or {}).values()
                   if isinstance(e, dict) and isinstance(e.get("e2e"), dict)
                   and isinstance(e["e2e"].get("tpot_unconstrained_ms"), (int, float))
                   and e["e2e"]["tpot_unconstrained_ms"] > 0)
    if not steps:
        raise ValueError(f"{path}: no engine row with an e2e tpot_unconstrained_ms")
    return steps[len(steps) // 2]


class _StepMs(argparse.Action):
    """``--step-ms X``: a number of ms > 0, or an e2e run folder (see :func:`step_from_run`);
    keeps the folder as ``step_source``."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        try:
            ms, source = float(value), None
        except ValueError:
            try:
                ms, source = step_from_run(value), value
            except ValueError as e:
                raise argparse.ArgumentError(self, f"{value!r} is neither a number of ms nor "
                                                   f"an e2e run folder: {e}") from None
        if not (ms > 0 and math.isfinite(ms)):
            raise argparse.ArgumentError(self, f"{value!r}: the step must be > 0 ms")
        namespace.step_ms, namespace.step_source = ms, source


def add_run_arguments(p) -> None:
    g = p.add_argument_group("batch suite (grammar time per decode step against batch size "
                             "and host threads)")
    add_flag(g, "--batch", type=batch_sizes,
             help="e2e: sequences decoded together (torch runtime; default 1; a list such as "
                  "1,4,8 decodes at each size and plots TPOT against batch); batch: concurrent "
                  "sequences per step, one point per size (default 1,8,32,128,512)")
    g.add_argument("--threads", type=ints(1, "thread counts", unique_sorted=True),
                   help="host threads per batch call, comma-separated (default 1, 2, 4, … up "
                        "to the cores present)")
    g.add_argument("--step-ms", dest="step_ms", action=_StepMs,
                   help="the decode step's budget in ms, or an e2e run folder whose measured "
                        "unconstrained step is taken (default 10: an 8B-class step under load "
                        "on an H100)")
    g.add_argument("--same-schema", dest="same_schema", action="store_const", const=True,
                   default=None, help="also run B copies of one schema (the sample's first) "
                                      "at each size, for comparison")
    g.add_argument("--batch-steps", dest="batch_steps", type=positive_int,
                   help="timed steps per batch size and thread count (default 200)")
    g.add_argument("--batch-instances", dest="batch_instances", type=positive_int,
                   help="valid instances per schema the sequences follow, at most (default 8)")
    g.add_argument("--batch-seed", dest="batch_seed", type=int,
                   help="seed of the sequences' start offsets (default 0)")


def config_from_args(args) -> BatchOptions:
    # argparse values are untyped: the flags' types are the options' (BatchOptions)
    return cast(BatchOptions, config_from(args, DEFAULTS))
