"""``harness explain RUN CASE``: one token-level finding, replayed from its record alone
(:func:`harness.explain`, :mod:`harness.measure.tokens.explain`).

The record of a ``mask-diff`` or ``fuzz`` job holds the schema text, the instance text, the
exact token ids and the step; with the run's tokenizer (run.json) that is all a replay
needs. ``explain`` prints the schema, the instance (or walk seed), the token sequence with
each token's bytes around the step, the step where it went wrong, and then replays the
sequence through every engine of the run and the reference engine (the oracle) to show what
each allowed at that step, and whether the replay reproduces the record's claim.

    harness explain results/<run> Github_easy---o43998.json                  # most severe
    harness explain results/<run> CASE --engine xgrammar --kind false_accept --n 1
    harness explain results/<run> CASE --list                                 # all findings
    harness explain results/<run> CASE --instance 0 --step 12                 # any step

Exit codes: 0 printed (reproduced or not: the text says which), 2 bad input (no run folder,
no such case, no finding), with a one-line message.
"""

from __future__ import annotations

from harness.cli.common import fail


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="print one token-level finding of a run, replayed",
                       description="Print one finding of a mask-diff / fuzz run (schema, "
                                   "instance, token sequence, the step, what each engine "
                                   "allowed there), replayed from its record.")
    p.add_argument("run", help="run folder, e.g. results/<run-id>")
    p.add_argument("case", help="case id as in records.jsonl (the corpus file name)")
    p.add_argument("--engine", help="only findings of this engine[:config]")
    p.add_argument("--kind", help="only findings of this kind (see --list)")
    p.add_argument("--n", type=int, default=0, help="which finding of the selection (0 = first)")
    p.add_argument("--list", action="store_true", help="list the selected findings and stop")
    p.add_argument("--instance", type=int, help="with --step: any step of this mask-diff "
                                                "instance, finding or not")
    p.add_argument("--step", type=int, help="with --instance: the step to compare engines at")
    p.add_argument("--no-replay", action="store_true", help="print the record only")
    p.add_argument("--full", action="store_true", help="whole schema and token sequence")
    p.set_defaults(handler=cmd_explain)


def cmd_explain(args) -> int:
    from harness.api import InputError, explain

    try:
        text = explain(args.run, args.case, engine=args.engine, kind=args.kind, n=args.n,
                       instance=args.instance, step=args.step, list_only=args.list,
                       replay=not args.no_replay, full=args.full)
    except InputError as e:
        return fail(str(e))
    print(text)
    return 0
