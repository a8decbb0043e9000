"""A worker process's engine adapters: the vocabulary and each adapter built once.

Tokenizer objects are per worker, never per schema: every job kind asks this module for
its adapter, and the first ask of an (engine, configuration) builds it.
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING
from harness.records import JobPayload, Record

if TYPE_CHECKING:
    import numpy as np

    from engines.protocol import CompiledGrammar, EngineAdapter, Matcher
    from engines.vocab import Vocabulary
    from harness.measure.target import GrammarTarget, SchemaTarget

_vocab: "Vocabulary | None" = None
_vocab_spec: str | None = None
_adapters: "dict[tuple[str, str], EngineAdapter]" = {}


def adapter(name: str, config: str, tokenizer: str) -> "EngineAdapter":
    """The adapter of engine ``name`` in configuration ``config`` over the vocabulary
    ``tokenizer`` (a name or a ``tokenizer.json`` path), built on first use in this
    process. A different tokenizer drops every adapter built for the previous one."""
    global _vocab, _vocab_spec
    from harness.registry import EngineSpec
    from engines.vocab import load_vocabulary

    if _vocab_spec != tokenizer:
        _vocab = load_vocabulary(tokenizer)
        _vocab_spec = tokenizer
        _adapters.clear()
    key = (name, config)
    if key not in _adapters:
        _adapters[key] = EngineSpec(name, config).build(vocabulary())
        # The imports, the vocabulary and the adapters live as long as the worker: keep
        # them out of the cyclic garbage collector's full passes (tens of milliseconds
        # each, landing in whichever engine's mask allocates past the threshold).
        gc.collect()
        gc.freeze()
    return _adapters[key]


def vocabulary() -> "Vocabulary":
    """The vocabulary of the last :func:`adapter` call (raises if there was none)."""
    if _vocab is None:
        raise RuntimeError("no adapter built in this process yet")
    return _vocab


_versions: dict[type, str | None] = {}


def engine_version(adapter: "EngineAdapter") -> str | None:
    """The adapter's engine version as this worker imported it (read once per worker: the
    package metadata lookup is file I/O)."""
    cls = type(adapter)
    if cls not in _versions:
        _versions[cls] = cls.version()
    return _versions[cls]


def start_job(job: JobPayload, phase) -> "tuple[Record, EngineAdapter, Vocabulary, int]":
    """The common start of a worker job: the record's identity (``engine``, ``case_id``,
    ``suite``, ``subset``), the adapter and the vocabulary built under phase ``setup``,
    ``engine_version`` and ``setup_ns`` (ns). Returns ``(record, adapter, vocab, t_busy)``,
    ``t_busy`` the ``perf_counter_ns`` the job started at (for ``busy_ns``)."""
    case, eng = job["case"], job["engine"]
    record: Record = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"]}
    t_busy = time.perf_counter_ns()
    phase("setup")
    a = adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = vocabulary()
    record["engine_version"] = engine_version(a)
    record["setup_ns"] = time.perf_counter_ns() - t_busy
    return record, a, vocab, t_busy



def first_mask(target: "SchemaTarget | GrammarTarget", adapter: "EngineAdapter",
               vocab: "Vocabulary") -> "tuple[CompiledGrammar, Matcher, np.ndarray]":
    """``target`` compiled by ``adapter``, a matcher of it, and a bitmask over ``vocab``
    filled with its first mask: what a token-level job times as its compile and first mask
    (time to first mask). Raises :class:`engines.protocol.CompileError` when the engine
    refuses the grammar."""
    from engines.bitmask import allocate_bitmask

    grammar = target.compile(adapter)
    m = grammar.matcher()
    bm = allocate_bitmask(vocab.size)
    m.fill_mask(bm)
    return grammar, m, bm
