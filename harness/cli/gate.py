"""``harness baseline RUN -o FILE`` and ``harness gate --baseline FILE RUN``
(:func:`harness.baseline`, :func:`harness.gate`).

Both read the run folder's ``records.jsonl`` (the source of truth) and never write into
the run folder. ``gate`` exit codes: 0 pass, 1 regression (outcome ratchet, missing
coverage, or a latency interval wholly above the threshold), 2 usage or input error (a
one-line message naming the file and the problem).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.cli.common import fail


def _refresh_cmd(run: str, baseline: str) -> str:
    return f"harness baseline {shlex.quote(run)} -o {shlex.quote(baseline)}"


def cmd_baseline(args) -> int:
    from harness.api import InputError, baseline

    try:
        data = baseline(args.run, args.output, comment=args.comment,
                        command=_refresh_cmd(args.run, args.output))
    except InputError as e:
        return fail(str(e))
    n = sum(len(v) for v in data["outcomes"].values())
    print(f"baseline: {args.output} ({n} (engine, unit) outcomes, engines "
          f"{', '.join(data['outcomes'])}; from run {data['run']['run_id']})")
    return 0


def cmd_gate(args) -> int:
    from harness.api import InputError, gate

    try:
        outcome = gate(args.baseline, args.run, threshold=args.threshold,
                       confidence=args.confidence, bootstrap=args.bootstrap, seed=args.seed,
                       latency=args.latency, compare=args.compare, junit=args.junit,
                       refresh=_refresh_cmd(args.run, args.baseline))
    except InputError as e:
        return fail(str(e))
    print(outcome.text)
    if args.junit:
        print(f"junit: {args.junit}")
    return outcome.exit_code


def add_parser(sub) -> None:
    b = sub.add_parser(
        "baseline", help="write a gate baseline (expected outcomes + latency sketches) from a run",
        description="Write a small JSON baseline for `harness gate` from a run folder's records.")
    b.add_argument("run", metavar="RUN", help="run folder, e.g. results/<run-id>")
    b.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="baseline file, e.g. results/baselines/main.json")
    b.add_argument("--comment", help="free text stored in the baseline (e.g. how to refresh it)")
    b.set_defaults(handler=cmd_baseline)

    g = sub.add_parser(
        "gate", help="check a run against a baseline (exit 0 pass, 1 regression, 2 input error)",
        description="Outcome ratchet and latency check of a run against a baseline. Exit codes: "
                    "0 pass, 1 regression, 2 usage or input error.")
    g.add_argument("run", metavar="RUN", help="run folder, e.g. results/<run-id>")
    g.add_argument("--baseline", required=True, metavar="FILE", help="baseline file (harness baseline)")
    g.add_argument("--threshold", type=float, default=0.2,
                   help="latency: fail when the whole CI of run/baseline is above 1+THRESHOLD (default 0.2)")
    g.add_argument("--latency", choices=("gate", "warn", "off"), default="gate",
                   help="gate (default): latency regressions fail; warn: reported only; off: not checked")
    g.add_argument("--confidence", type=float, default=0.95, help="CI level (default 0.95)")
    g.add_argument("--bootstrap", type=int, default=2000, help="schema resamples (default 2000)")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    g.add_argument("--compare", action="append", default=[], metavar="BASE=RUN",
                   help="judge the run's row RUN against the baseline's row BASE, e.g. "
                        "xgrammar@vllm=xgrammar: what moving from vLLM's bundled xgrammar to "
                        "the standalone release changes (repeatable)")
    g.set_defaults(handler=cmd_gate)
