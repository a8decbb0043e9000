"""``harness model build``: train the small Llama with priors here, or find it in the cache
(:func:`harness.training.build.build_model`). The checkpoint folder is the last line of
stdout; the stages, the progress bar and the evaluation go to stderr."""

from __future__ import annotations

from harness.cli.common import fail


def add_parser(sub) -> None:
    m = sub.add_parser("model", help="models with priors: build the one trained here")
    msub = m.add_subparsers(dest="model_command", metavar="SUBCOMMAND", required=True)
    b = msub.add_parser("build", help="train (or find cached) a small Llama on the corpus; "
                                      "prints the checkpoint folder last")
    b.add_argument("--size", choices=("default", "tiny", "draft"), default="default",
                   help="default: the model with priors (<= 15 min on 2 cores); "
                        "tiny: <= 2 min, for tests and CI; draft: the tiny shape on "
                        "--target's tokenizer, a draft model for speculative decoding "
                        "(default: %(default)s)")
    b.add_argument("--target", help="--size draft: the checkpoint folder whose tokenizer "
                                     "and prompt the draft shares, or build:default / "
                                     "build:tiny (default: build:default)")
    b.add_argument("--out", help="checkpoint folder (default: the cache, "
                                 "$XDG_CACHE_HOME/grammar-harness/models/<size>-<key>)")
    b.add_argument("--data", help="jsonschemabench corpus folder (default: as the suites "
                                  "find it)")
    b.add_argument("--seed", type=int, default=0, help="training seed (default: %(default)s)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    b.set_defaults(handler=cmd_build)


def cmd_build(args) -> int:
    from harness.training.build import BuildError, build_model

    try:
        folder = build_model(args.size, out=args.out, data=args.data, seed=args.seed,
                             progress=not args.no_progress, target=args.target)
    except BuildError as e:
        return fail(str(e))
    print(folder)
    return 0
