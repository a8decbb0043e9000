"""``harness run``: run a suite against engines; writes results/<run-id>/ and its report."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cli.common import REPORTS_DEFAULT, RESULTS_DEFAULT, fail
from harness.config import ConfigError, RunConfig


def _sample(text: str) -> int | str:
    """``--sample``'s value: a count, or ``all``."""
    import argparse

    if text == "all":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of schemas or 'all', not {text!r}") \
            from None


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a suite against engines",
                       description="Run a suite against engines; writes results/<run-id>/.")
    # Defaults are None so that --resume can tell what was given explicitly.
    from harness.registry import SUITES

    p.add_argument("--suite", help=f"suite name: {', '.join(SUITES.names())} (default: jsonschemabench)")
    p.add_argument("--engine", dest="engines",
                   help="engines as NAME[:CONFIG],... or 'all' (default: all)")
    p.add_argument("--tokenizer", help="llama3 (default), tekken, qwen2, a tokenizer.json path "
                                       "or a model folder (with --model PATH: that folder's)")
    p.add_argument("--data", help="corpus folder (default: $HARNESS_DATA or ../shared/corpora/<suite>)")
    p.add_argument("--subset", dest="subsets", action="append",
                   help="subset(s) to run, comma-separated or repeated; 'core12' = the peer table's 12 groups")
    p.add_argument("--sample", type=_sample,
                   help="N schemas, stratified by subset, deterministic; 'all': every "
                        "selected schema (suites with a smaller default sample too)")
    p.add_argument("--schemas", help="glob on corpus file names, e.g. 'Github_easy---o1*'")
    p.add_argument("--timeout", dest="timeout_s", type=float, help="wall-clock limit per job, s (default 60)")
    p.add_argument("--memory", dest="memory_gib", type=float,
                   help="address-space limit per worker, GiB (default 8; 0 = none)")
    p.add_argument("--jobs", type=int, help="worker processes (default 1)")
    p.add_argument("--serializations",
                   help="comma-separated of unicode,ascii,compact,compact_unicode (default: all four)")
    p.add_argument("--primary",
                   help="serialisation that decides schema outcomes and TBM (default unicode)")
    p.add_argument("--segmentations", type=int,
                   help="K seeded non-canonical tokenisations replayed per valid instance (default 0)")
    p.add_argument("--results", help="folder for run folders (default: results/)")
    p.add_argument("--reports", help="folder for reports (default: reports/)")
    p.add_argument("--resume", help="continue the run in this run folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where jobs run: local worker processes (default) or a Ray cluster")
    p.add_argument("--ray-address",
                   help="Ray cluster to join with --executor ray, e.g. HOST:6379 (default: "
                        "start a local Ray instance)")
    from harness.execution.session import suite_option_modules

    for mod in suite_option_modules():  # each suite's own options
        mod.add_run_arguments(p)
    p.set_defaults(handler=cmd_run)


def config_from_args(args) -> dict:
    """The options given explicitly on the command line (unset ones stay absent)."""
    given = {}
    for key in ("suite", "engines", "tokenizer", "data", "sample", "schemas", "timeout_s",
                "memory_gib", "jobs", "primary", "segmentations"):
        v = getattr(args, key)
        if v is not None:
            given[key] = v
    if args.subsets:
        given["subsets"] = [s.strip() for x in args.subsets for s in x.split(",") if s.strip()]
    if args.serializations:
        given["serializations"] = [s.strip() for s in args.serializations.split(",") if s.strip()]
    from harness.execution.session import suite_option_modules

    for mod in suite_option_modules():
        given.update(mod.config_from_args(args))
    return given


def cmd_run(args) -> int:
    from harness.api import run
    from harness.execution.executor import ExecutorError
    from harness.report import console
    from harness.store.run_store import RunStore, StoreError
    from engines.vocab import VocabularyError
    from harness.suite import SuiteError

    given = config_from_args(args)
    resume = Path(args.resume) if args.resume else None
    config = None
    try:
        if resume is not None:
            stored = RunStore.open(resume).read_meta()["config"]
            diff = {k: (v, stored.get(k)) for k, v in given.items() if stored.get(k) != v}
            if diff:
                return fail("--resume continues the stored run; these options differ from it: "
                            + ", ".join(f"{k}={v!r} (stored {s!r})" for k, (v, s) in diff.items()))
        else:
            config = RunConfig.from_dict(given, strict=True)
        handle = run(config, results=Path(args.results) if args.results else RESULTS_DEFAULT,
                     reports=Path(args.reports) if args.reports else REPORTS_DEFAULT,
                     resume=resume, executor=args.executor, ray_address=args.ray_address,
                     progress=not args.no_progress, argv=sys.argv, echo=print)
    except (ConfigError, SuiteError, VocabularyError, StoreError, ExecutorError) as e:
        return fail(str(e))
    except KeyboardInterrupt:
        print("\nharness: interrupted; finished jobs are saved. Continue with "
              f"--resume {resume or 'results/<run-id>'}", file=sys.stderr)
        return 130
    summary = handle.summary()
    print(console.render_text(summary))
    eff = summary.get("parallel_efficiency")
    jobs = handle.meta()["config"]["jobs"]
    print(f"\nrun folder: {handle.path}\nreport:     {handle.reports / 'report.md'} "
          "(and report.html)"
          + (f"\nparallel efficiency: {eff:.1%} ({jobs} jobs, wall {summary['wall_s']:.1f} s)"
             if eff else ""))
    return 0
