"""``harness run`` options of the hazards suite (its ``SuiteBase.run_options``).

The served hazards read the serve and e2e suites' flags: ``--launch ENGINE:BACKEND,...``
(the rows whose servers the harness starts), ``--server URL``, ``--model`` (the launched
server's random-weight model), ``--max-tokens`` and ``--server-ready-timeout``.
"""

from __future__ import annotations

from typing import TypedDict, cast

from harness.suite.options import add_flag, config_from, positive_float


class HazardsOptions(TypedDict, total=False):
    """The run options of the hazards suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    launch: bool
    engines: str         # the row of a --server URL given alone, for the run's --engine
    server: str | None
    model: str
    max_tokens: int
    ready_timeout_s: float
    request_timeout_s: float


#: configuration key → default
DEFAULTS: HazardsOptions = {
    "launch": False,            # the harness starts each served row's server (--launch)
    "server": None,             # ... or drives this URL (--server)
    "model": "micro",           # model shape of launched servers (random weights)
    "max_tokens": 16,           # output budget of each served request
    "ready_timeout_s": 600.0,   # seconds a launched server may take to become ready
    "request_timeout_s": 120.0,  # seconds one served request may take before it "hung"
}


def add_run_arguments(p) -> None:
    g = p.add_argument_group("hazards suite (production hazards; served ones read --launch, "
                             "--server, --model, --max-tokens)")
    add_flag(g, "--hazard-request-timeout", dest="request_timeout_s", type=positive_float,
             help="seconds a served hazard request may take before it counts as hung "
                  "(default 120)")


def config_from_args(args) -> HazardsOptions:
    # argparse values are untyped: the flags' types are the options' (HazardsOptions)
    out = cast(HazardsOptions, config_from(args, ("request_timeout_s",)))
    if getattr(args, "suite", None) == "hazards" and getattr(args, "server", None) \
            and not getattr(args, "engines", None) and not getattr(args, "launch", None):
        from harness.suite.engines import EXTERNAL_SERVER

        out["engines"] = EXTERNAL_SERVER  # --server URL alone: the row of that server
    return out
