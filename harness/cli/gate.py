"""``harness baseline RUN -o FILE`` and ``harness gate --baseline FILE RUN``.

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
    from harness.analysis.baseline import BaselineError, make_baseline, write_baseline
    from harness.store.run_store import StoreError

    command = _refresh_cmd(args.run, args.output)
    try:
        data = make_baseline(Path(args.run), command=command, comment=args.comment)
        write_baseline(data, Path(args.output))
    except (StoreError, BaselineError) as e:
        return fail(str(e))
    except OSError as e:
        return fail(f"{args.output}: cannot write: {e.strerror or e}")
    n = sum(len(v) for v in data["outcomes"].values())
    print(f"baseline: {args.output} ({n} (engine, schema) outcomes, engines "
          f"{', '.join(data['outcomes'])}; from run {data['run']['run_id']})")
    return 0


def cmd_gate(args) -> int:
    from harness.analysis import gate
    from harness.analysis.baseline import BaselineError, read_baseline
    from harness.store.run_store import RunStore
    from harness.store.run_store import StoreError

    if args.threshold < 0:
        return fail(f"--threshold must be ≥ 0 (a fraction: 0.2 = +20 %), got {args.threshold}")
    if not 0.5 <= args.confidence < 1:
        return fail(f"--confidence must be in [0.5, 1), got {args.confidence}")
    if args.bootstrap < 100:
        return fail(f"--bootstrap must be ≥ 100 resamples, got {args.bootstrap}")
    try:
        baseline = read_baseline(Path(args.baseline))
    except BaselineError as e:
        return fail(str(e))
    try:
        store = RunStore.open_readonly(Path(args.run))
        meta = store.read_meta()
        records = list(store.records())
    except StoreError as e:
        return fail(str(e))
    if not records:
        return fail(f"{store.records_path}: no records: nothing to gate")
    try:
        records, meta = gate.rename_rows(records, meta, args.compare)
    except ValueError as e:
        return fail(f"--compare: {e}")
    b_primary = baseline.get("run", {}).get("primary_serialization")
    r_primary = meta.get("config", {}).get("primary", "ascii")
    if b_primary and b_primary != r_primary:
        return fail(f"{args.run}: primary serialisation {r_primary}, baseline {args.baseline} "
                     f"uses {b_primary}: outcomes are not comparable")
    try:
        result = gate.run_gate(baseline, meta, records, threshold=args.threshold,
                               confidence=args.confidence, n_boot=args.bootstrap, seed=args.seed,
                               latency=args.latency)
    except (KeyError, TypeError, ValueError) as e:
        return fail(f"{store.records_path}: malformed records ({type(e).__name__}: {e})")
    refresh = _refresh_cmd(args.run, args.baseline)
    brun = baseline.get("run", {})
    head = [f"harness gate: run {args.run} ({meta.get('run_id')}, commit {meta.get('git_commit')}) "
            f"against baseline {args.baseline} (run {brun.get('run_id')}, commit {brun.get('git_commit')}, "
            f"written {baseline.get('created_at')})"]
    print(gate.render_text(result, refresh, head))
    if args.junit:
        try:
            gate.write_junit(result, Path(args.junit), refresh)
        except OSError as e:
            return fail(f"{args.junit}: cannot write the JUnit report: {e.strerror or e}")
        print(f"junit: {args.junit}")
    return 1 if result.failed else 0


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
