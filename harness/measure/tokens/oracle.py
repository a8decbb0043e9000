"""The oracle of the mask diff: the project's reference engine, in-process, with a deadline.

The reference engine (``reference_engine/``, adapter ``engines/reference.py``) is exact by
construction: every token of its mask can be completed to a document the schema accepts,
and every other token cannot. It is built here with unbounded whitespace
(``max_ws=None``; its default caps a whitespace gap at 32 characters, which would make
every longer whitespace token look like an engine's error). Where it refuses a schema
(a keyword it cannot enforce exactly) the job has *no oracle* and says so.

It is pure Python: a job gives it at most ``oracle_timeout_s`` seconds in all (compile and
masks); past that, the rest of the job runs without an oracle (status ``timeout``).
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from engines.reference import ReferenceEngine
    from harness.vocab import Vocabulary

#: the reference engine's options when it serves as the oracle
ORACLE_OPTIONS: dict[str, Any] = {"max_ws": None}
ORACLE_LABEL = "reference"

_ADAPTERS: dict[str, Any] = {}


class OracleTimeout(Exception):
    """The oracle spent its time budget."""


def oracle_adapter(vocab: "Vocabulary") -> "ReferenceEngine":
    """The reference adapter used as oracle, built once per process and vocabulary."""
    from engines.reference import ReferenceEngine

    a = _ADAPTERS.get(vocab.fingerprint)
    if a is None:
        a = _ADAPTERS[vocab.fingerprint] = ReferenceEngine(vocab, "default", **ORACLE_OPTIONS)
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
