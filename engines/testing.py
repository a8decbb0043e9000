"""Test doubles (hidden from ``--engine all``).

``null``    allows every non-special token plus the stop tokens, always: measures the
            harness's own per-token overhead (its mask fill is one ``np.copyto``).
            Configuration ``slow`` is the planted slow matcher: each mask costs
            ``fill_us`` (2000) µs more, spent busy with the GIL held, as a slow
            engine written in Python would (suite ``batch``'s test).
``faulty``  misbehaves as the schema asks, through a top-level ``"x-faulty"`` key:

            ===============  =====================================================
            ``crash``        SIGSEGV to itself during compile
            ``hang``         busy loop forever during compile (pure Python)
            ``gil_hang``     a native call that never returns and keeps the GIL: every
                             catchable signal blocked, then libc ``pause()`` through
                             ``ctypes.PyDLL`` (which does not release the GIL); only
                             SIGKILL ends it
            ``oom``          reserve 64 MiB chunks during compile until MemoryError
                             (propagated, never caught; needs a memory limit such as
                             RLIMIT_AS, or the OS OOM killer acts first)
            ``exit``         ``os._exit(3)`` during compile
            ``compile_error`` raise :class:`CompileError`
            ``reject_all``   compiles; every ``commit`` returns False, EOS never allowed
            ``accept_all``   (or no key) behaves like ``null``
            ``sleep``        sleeps ``"x-sleep"`` seconds (default 1) in compile,
                             then behaves like ``null`` (for kill/resume tests)
            ===============  =====================================================

            Schema text that is not JSON is a :class:`CompileError`.
``canned``  a serving engine whose server is :mod:`harness.measure.serving.canned` (no model:
            the same valid JSON text streamed at a fixed pace; HTTP 400 to a schema titled
            ``refuse-me``): the serve suite's launch, crash, restart and resume paths in
            seconds (``--launch canned``; config ``slow`` paces it at 50 ms a piece).
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import numpy as np

from engines.bitmask import allocate_bitmask, bitmask_words, pack_allowed
from engines.matcher import TemplateMatcher
from engines.protocol import CompiledGrammar, CompileError, EngineAdapter
from engines.vocab import Vocabulary

FAULTY_MODES = ("crash", "hang", "gil_hang", "oom", "exit", "compile_error", "reject_all", "accept_all",
                "sleep")


def _null_mask(vocab: Vocabulary) -> np.ndarray:
    """Bitmask allowing every non-special token and every stop token."""
    allowed = np.ones(bitmask_words(vocab.size) * 32, dtype=bool)
    allowed[vocab.size :] = False
    special = np.fromiter(vocab.special_ids, dtype=np.int64, count=len(vocab.special_ids))
    allowed[special] = False
    allowed[list(vocab.stop_ids)] = True
    mask = allocate_bitmask(vocab.size)
    pack_allowed(allowed, mask)
    return mask


class NullMatcher(TemplateMatcher):
    """Accepts everything except non-stop special tokens; EOS always allowed.

    ``commit(stop_id)`` returns True and changes nothing. A rejected (special) token
    makes the matcher dead until :meth:`reset` (``commit`` False, ``eos_allowed`` False,
    all-zero mask), like the real adapters (:class:`~engines.matcher.TemplateMatcher`)."""

    __slots__ = ("_mask",)

    def __init__(self, mask: np.ndarray, stop_ids: frozenset[int], nontext: frozenset[int]):
        super().__init__(mask.size, stop_ids, nontext)
        self._mask = mask

    def _fill(self, bitmask: np.ndarray) -> None:
        np.copyto(bitmask, self._mask)

    def _advance(self, token_id: int) -> bool:
        return True

    def _can_end(self) -> bool:
        return True

    def _undo(self, n: int) -> None:
        pass

    def _restart(self) -> None:
        pass


class SlowNullMatcher(NullMatcher):
    """A ``null`` matcher whose every mask costs ``fill_ns`` more (busy, GIL held)."""

    __slots__ = ("_fill_ns",)

    def __init__(self, mask: np.ndarray, stop_ids: frozenset[int], nontext: frozenset[int],
                 fill_ns: int):
        super().__init__(mask, stop_ids, nontext)
        self._fill_ns = fill_ns

    def _fill(self, bitmask: np.ndarray) -> None:
        end = time.perf_counter_ns() + self._fill_ns
        while time.perf_counter_ns() < end:
            pass
        np.copyto(bitmask, self._mask)


class RejectAllMatcher(NullMatcher):
    """Mask like ``null``, but every commit is rejected and EOS is never allowed."""

    __slots__ = ()

    def _advance(self, token_id: int) -> bool:
        return False

    def _can_end(self) -> bool:
        return False


class _NullCompiled(CompiledGrammar):
    def __init__(self, engine: "NullEngine", cls: type[NullMatcher] = NullMatcher):
        self._mask = engine._mask
        self._stop = engine._stop
        self._nontext = engine._nontext
        self._cls = cls
        self._fill_ns = int(float(engine.options.get("fill_us", 0)) * 1000)
        self.warnings: list[str] = []

    def matcher(self) -> NullMatcher:
        if self._fill_ns:
            return SlowNullMatcher(self._mask, self._stop, self._nontext, self._fill_ns)
        return self._cls(self._mask, self._stop, self._nontext)


class NullEngine(EngineAdapter):
    """No grammar at all: the cost floor of the measurement loop."""

    name = "null"
    package = None
    hidden = True
    hidden_reason = "test double"
    configs = {"default": {}, "slow": {"fill_us": 2000}}

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        super().__init__(vocab, config, **overrides)
        self._mask = _null_mask(vocab)
        self._stop = frozenset(vocab.stop_ids)
        self._nontext = frozenset(vocab.special_ids) | self._stop  # specials: refused

    def compile(self, schema_text: str) -> CompiledGrammar:
        return _NullCompiled(self)


class FaultyEngine(NullEngine):
    """Fails in the way the schema's top-level ``"x-faulty"`` key names (see module doc)."""

    name = "faulty"
    hidden = True
    hidden_reason = "test double"
    configs = {"default": {}}

    def compile(self, schema_text: str) -> CompiledGrammar:
        try:
            schema = json.loads(schema_text)
        except ValueError as e:
            raise CompileError(f"schema is not JSON: {e}") from None
        mode = schema.get("x-faulty", "accept_all") if isinstance(schema, dict) else "accept_all"
        if mode == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
            import ctypes  # only if SIGSEGV was handled and returned: a real one

            ctypes.string_at(0)
        elif mode == "hang":
            while True:
                pass
        elif mode == "gil_hang":
            import ctypes

            signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {
                signal.SIGKILL, signal.SIGSTOP})
            ctypes.PyDLL(None).pause()  # PyDLL: the GIL stays held for the whole call
        elif mode == "oom":
            hog = []
            while True:
                # Untouched pages: RLIMIT_AS counts address space, so the limit is hit
                # at once even on a busy machine.
                hog.append(np.empty(64 << 20, dtype=np.uint8))
        elif mode == "exit":
            os._exit(3)
        elif mode == "compile_error":
            raise CompileError("faulty engine: compile_error requested by the schema")
        elif mode == "reject_all":
            return _NullCompiled(self, RejectAllMatcher)
        elif mode == "accept_all":
            return _NullCompiled(self)
        elif mode == "sleep":
            import time

            time.sleep(float(schema.get("x-sleep", 1.0)))
            return _NullCompiled(self)
        raise CompileError(
            f"faulty engine: unknown x-faulty mode {mode!r} (known: {', '.join(FAULTY_MODES)})"
        )


class CannedServer(NullEngine):
    """Test double of a serving engine: ``--suite serve --launch canned[:slow]``."""

    name = "canned"
    serving_engine = True
    dialect = "vllm"
    configs = {"default": {"interval_ms": 2.0}, "slow": {"interval_ms": 50.0}}
    hidden = True
    hidden_reason = "test double (a canned OpenAI-compatible server, no model)"

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("canned is a server only (--suite serve)")

    @classmethod
    def server_command(cls, python: str, model_dir: str, options: dict[str, Any],
                       host: str, port: int) -> tuple[list[str], dict[str, str]]:
        return ([python, "-m", "harness.measure.serving.canned", "--port", str(port),
                 "--interval-ms", str(options["interval_ms"])], {})
