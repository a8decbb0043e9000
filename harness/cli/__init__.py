"""``harness`` command line: one module per command, each thin; this one dispatches.

The commands are the entries of :data:`harness.registry.COMMANDS` (third-party ones through
the entry point group ``grammar_harness.commands``): modules with ``add_parser(subparsers)``,
which sets ``handler`` via ``set_defaults``. Exit codes: 0 done, 1 the run itself failed (or the gate found a
regression), 2 bad usage or input (one-line message).
"""

from __future__ import annotations

import argparse

from harness.registry import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Benchmark and conformance harness for grammar-constrained decoding.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS.names():
        COMMANDS.load(name).add_parser(sub)
    return parser


def _log_to_stderr() -> None:
    """The library's warnings (engines not run, bad corpus files) as ``harness: ...``
    lines on stderr."""
    import logging
    import sys

    class _StderrHandler(logging.StreamHandler):
        # the stderr of the moment, not the one at the first call: a caller that redirects
        # sys.stderr (a test running the CLI in process) gets the warnings of its own run
        @property
        def stream(self):  # noqa: D401
            return sys.stderr

        @stream.setter
        def stream(self, _value) -> None:
            pass

    log = logging.getLogger("harness")
    if not any(getattr(h, "_harness_cli", False) for h in log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("harness: %(message)s"))
        handler._harness_cli = True  # type: ignore[attr-defined]
        log.addHandler(handler)
        log.setLevel(logging.WARNING)
        log.propagate = False


def main(argv: list[str] | None = None) -> int:
    """Run the ``harness`` command line with ``argv`` (default: ``sys.argv[1:]``); returns
    the exit code."""
    import signal

    if hasattr(signal, "SIGPIPE"):  # `harness ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _log_to_stderr()
    args = build_parser().parse_args(argv)
    return args.handler(args)

