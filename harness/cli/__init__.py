"""``harness`` command line: one module per command, each thin; this one dispatches.

Each command module has ``add_parser(subparsers)``, which sets ``handler`` via
``set_defaults``. Exit codes: 0 done, 1 the run itself failed (or the gate found a
regression), 2 bad usage or input (one-line message).
"""

from __future__ import annotations

import argparse
import importlib

#: The commands' modules, in the order ``harness --help`` lists them.
COMMAND_MODULES: list[str] = ["harness.cli.run", "harness.cli.engines", "harness.cli.summary",
                              "harness.cli.report", "harness.cli.gate", "harness.cli.explain"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Benchmark and conformance harness for grammar-constrained decoding.")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``harness`` command line with ``argv`` (default: ``sys.argv[1:]``); returns
    the exit code."""
    import signal

    if hasattr(signal, "SIGPIPE"):  # `harness ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    return args.handler(args)

