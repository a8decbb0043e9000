"""``harness run`` options of the serve suite (its ``SuiteBase.run_options``).


``--model``, ``--max-tokens`` and ``--server`` are the e2e suite's flags, read here too.
``--launch ENGINE:BACKEND,...`` is ``--engine ENGINE:BACKEND,...`` with the servers started
by the harness; ``--server URL`` drives a server the user runs (the row ``external``).
"""

from __future__ import annotations

import argparse
import math
from typing import TypedDict

NAME = "serve"


class ServeOptions(TypedDict, total=False):
    """The run options of the serve suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    launch: bool
    engines: str         # the rows --launch or --server name, for the run's --engine
    server: str | None
    model: str
    max_tokens: int
    temperature: float
    seed: int
    workload: str
    rates: list[str]
    burstiness: float
    concurrency: int
    requests: int | None
    structured_ratio: float
    form: str
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None
    ready_timeout_s: float
    max_restarts: int
    baseline: bool


#: Configuration keys of the serve suite, handed to its executor as ``payload["options"]``.
DEFAULTS: ServeOptions = {
    "launch": False,          # the harness starts each engine row's server
    "server": None,           # ... or drives this URL (dialect+URL allowed)
    "model": "tiny",          # model shape of launched servers (random weights)
    "max_tokens": 128,
    "temperature": 1.0,
    "seed": 0,
    "workload": "maskbench",  # json | json-unique | maskbench | mix | regex | choice | grammar
    "rates": ["inf"],         # requests/s per stream; "inf" = all at once
    "burstiness": 1.0,        # gamma shape of the gaps (1 = Poisson)
    "concurrency": 8,         # most requests in flight (None: no cap)
    "requests": None,         # per stream (None: one per sampled schema)
    "structured_ratio": 1.0,  # mix: share of constrained requests
    "form": "response_format",  # response_format | structured_outputs | guided_json
    "slo_ttft_ms": None,
    "slo_tpot_ms": None,
    "ready_timeout_s": 600.0,
    "max_restarts": 3,
    "baseline": True,         # the same stream unconstrained, same seed
}

WORKLOADS = ("json", "json-unique", "maskbench", "mix", "regex", "choice", "grammar")


def rates(text: str) -> list[str]:
    """``--rate`` value: ``R`` or ``R1,R2,...`` requests per second, ``inf`` allowed."""
    out = []
    for x in text.split(","):
        x = x.strip()
        if not x:
            continue
        try:
            v = float(x)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a rate or inf, got {x!r}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"a rate must be > 0, got {x!r}")
        out.append("inf" if math.isinf(v) else f"{v:g}")
    if not out:
        raise argparse.ArgumentTypeError("expected R or R1,R2,...")
    return out


def add_run_arguments(p) -> None:
    g = p.add_argument_group("serve suite (a serving benchmark against an OpenAI-compatible "
                             "server)")
    g.add_argument("--launch", metavar="ENGINE:BACKEND,...",
                   help="start each server on 127.0.0.1 and stop it at the end, e.g. "
                        "vllm:xgrammar,vllm:guidance (the rows of --engine)")
    g.add_argument("--workload", choices=WORKLOADS,
                   help="json (one schema repeated), json-unique (every request a new "
                        "schema), maskbench (the stratified sample, default), mix "
                        "(--structured-ratio of the requests constrained)")
    g.add_argument("--rate", dest="rates", type=rates,
                   help="request rate(s), requests/s, e.g. 1,4,inf (a sweep; default inf)")
    g.add_argument("--burstiness", type=float,
                   help="gamma shape of the arrival gaps: 1 = Poisson (default), < 1 burstier")
    g.add_argument("--concurrency", type=int,
                   help="most requests in flight (default 8; 0 = no cap)")
    g.add_argument("--requests", type=int, help="requests per stream (default: one per "
                                                "sampled schema)")
    g.add_argument("--structured-ratio", dest="structured_ratio", type=float,
                   help="mix workload: share of constrained requests (default 1.0)")
    g.add_argument("--request-form", dest="form",
                   choices=("response_format", "structured_outputs", "guided_json"),
                   help="how the constraint is asked: response_format (default for JSON "
                        "workloads), the structured_outputs body field (default for regex / "
                        "choice / grammar), or the old guided_* fields")
    g.add_argument("--slo-ttft-ms", dest="slo_ttft_ms", type=float,
                   help="goodput counts requests with TTFT at most this (ms)")
    g.add_argument("--slo-tpot-ms", dest="slo_tpot_ms", type=float,
                   help="goodput counts requests with TPOT at most this (ms)")
    g.add_argument("--server-ready-timeout", dest="ready_timeout_s", type=float,
                   help="seconds a launched server may take to become ready (default 600)")
    g.add_argument("--no-baseline", dest="baseline", action="store_const", const=False,
                   default=None, help="skip the unconstrained stream")


def config_from_args(args) -> ServeOptions:
    out: ServeOptions = {}
    for k in ("workload", "rates", "burstiness", "concurrency", "requests", "structured_ratio",
              "form", "slo_ttft_ms", "slo_tpot_ms", "ready_timeout_s", "baseline"):
        v = getattr(args, k, None)
        if v is not None:
            out[k] = v
    if out.get("workload") in ("regex", "choice", "grammar") and "form" not in out:
        out["form"] = "structured_outputs"  # response_format carries JSON schemas only
    if getattr(args, "launch", None):
        out["launch"] = True
        out["engines"] = args.launch
    elif getattr(args, "suite", None) == NAME and getattr(args, "server", None) \
            and not getattr(args, "engines", None):
        from harness.suite.engines import EXTERNAL_SERVER
        from harness.suite.serving import server_labels

        # LABEL=URL,...: one row per named server (servers started once, shared by runs)
        out["engines"] = ",".join(server_labels(args.server) or [EXTERNAL_SERVER])
    return out
