"""The oracle of the mask diff, in-process, with a deadline.

The oracle is the engine row the engines package names (:data:`engines.ORACLE`, built with
:data:`engines.ORACLE_OPTIONS`): exact by construction, every token of its mask can be
completed to a document the schema accepts, and every other token cannot. Where it refuses
a schema (a keyword it cannot enforce exactly) the job has *no oracle* and says so.

It runs in this process: a job gives it at most ``oracle_timeout_s`` seconds in all
(compile and masks); past that, the rest of the job runs without an oracle (status
``timeout``). The deadline is a SIGALRM, which interrupts pure-Python code between
bytecodes.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import engines

if TYPE_CHECKING:
    from engines.protocol import EngineAdapter
    from engines.vocab import Vocabulary

#: the oracle's options and its label in records and reports
ORACLE_OPTIONS: dict[str, Any] = dict(engines.ORACLE_OPTIONS)
ORACLE_LABEL: str = engines.ORACLE

#: vocabulary fingerprint → the oracle adapter over it
_ADAPTERS: dict[str, EngineAdapter] = {}


class OracleTimeout(Exception):
    """The oracle spent its time budget."""


def oracle_adapter(vocab: "Vocabulary") -> "EngineAdapter":
    """The oracle's adapter, built once per process and vocabulary."""
    from harness.registry import EngineSpec

    a = _ADAPTERS.get(vocab.fingerprint)
    if a is None:
        a = _ADAPTERS[vocab.fingerprint] = EngineSpec(ORACLE_LABEL).build(vocab, **ORACLE_OPTIONS)
    return a


class Budget:
    """Seconds left to the oracle in this job; :meth:`guard` enforces them with SIGALRM
    (the reference engine is pure Python, so the alarm interrupts it between bytecodes)."""

    def __init__(self, seconds: float) -> None:
        self.left = float(seconds)

    @contextmanager
    def guard(self) -> Iterator[None]:
        if self.left <= 0:
            raise OracleTimeout()
        t0 = time.perf_counter()

        def _alarm(signum, frame):
            raise OracleTimeout()

        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, self.left)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            self.left -= time.perf_counter() - t0
