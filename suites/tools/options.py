"""``harness run`` options of the tools suite (its ``SuiteBase.run_options``)."""

from __future__ import annotations

from typing import TypedDict, cast

from harness.suite.engines import FORMATS
from harness.suite.options import config_from, count, ints, names


class ToolsOptions(TypedDict, total=False):
    """The run options of the tools suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    tool_counts: list[int]
    tool_formats: list[str]
    tool_seed: int
    tool_instances: int
    tool_walks: int
    tool_walk_tokens: int
    tool_tpot: str
    model: str | None
    max_tokens: int | None


#: configuration key → default
DEFAULTS: ToolsOptions = {
    "tool_counts": [1, 5, 10, 50, 100, 500],  # tools per request, one case each
    "tool_formats": list(FORMATS),             # output formats
    "tool_seed": 0,                            # which tools make each set
    "tool_instances": 3,                       # valid outputs per request
    "tool_walks": 8,                           # fuzz walks per (request, engine)
    "tool_walk_tokens": 256,                   # token budget of a walk
    "tool_tpot": "auto",                       # the TPOT that converts lead tokens to ms
    "model": None,        # --model: a checkpoint whose outputs are traced too (events)
    "max_tokens": None,   # --max-tokens: a model output's budget (None: MODEL_MAX_TOKENS)
}

#: a model output's token budget when ``--max-tokens`` is not given
MODEL_MAX_TOKENS = 160


def add_run_arguments(p) -> None:
    g = p.add_argument_group("tools suite (tool calls with many tools)")
    g.add_argument("--tool-counts", dest="tool_counts", type=ints(1, "tool counts"),
                   help="tools per request, comma-separated (default 1,5,10,50,100,500)")
    g.add_argument("--tool-formats", dest="tool_formats", type=names(FORMATS, "formats"),
                   help=f"output formats, comma-separated (default {','.join(FORMATS)})")
    g.add_argument("--tool-seed", dest="tool_seed", type=int,
                   help="seed of the tool sets and the fuzz walks (default 0)")
    g.add_argument("--tool-instances", dest="tool_instances", type=count,
                   help="valid outputs per request (default 3)")
    g.add_argument("--tool-walks", dest="tool_walks", type=count,
                   help="fuzz walks per request and engine (default 8; 0 = none)")
    g.add_argument("--tool-tpot", dest="tool_tpot", metavar="auto|RUN_FOLDER|MS",
                   help="time per output token that converts the streaming events' lead "
                        "tokens to ms: an e2e run folder (its measured TPOT per engine), a "
                        "number of ms, or auto (default: the newest published e2e run of "
                        "the harness's own decode loop)")


def config_from_args(args) -> ToolsOptions:
    # argparse values are untyped: the flags' types are the options' (ToolsOptions);
    # --model and --max-tokens are the e2e suite's flags (one flag, one value)
    return cast(ToolsOptions, config_from(args, DEFAULTS))
