"""Worker job of the ``jump-forward`` suite: one schema, one engine, its forced
continuations checked step by step against the reference engine's.

For each of the first ``jf_instances`` valid instances (jsonschema's verdict, the primary
serialisation), two walks:

1. **Steps** — the canonical tokenisation (``vocab.encode(text)``) committed token by
   token; at every step (before each token, and at the end) the engine's
   :meth:`~engines.protocol.Matcher.forced_continuation` (timed, ``ff_ns``), its mask (timed,
   ``mask_ns``) and the oracle's forced bytes (the reference engine, exact: the bytes every
   document the schema accepts continues with). Each step is classified
   (:func:`classify_step`): ``none`` (nothing offered), ``exact`` / ``short`` (the offer is
   the oracle's forced bytes / a proper prefix of them), ``unforced`` (not forced by the
   schema but the prefix + offer is still a viable prefix: the engine narrows the language,
   e.g. keys without escapes, declared property order, no leading whitespace), ``wrong``
   (prefix + offer is not a viable prefix at all: jump-forward would write an invalid
   document; kept as evidence), ``unchecked`` (no oracle). Besides: the offered tokens must
   spell the offered bytes or a prefix of them (``token_mismatch`` otherwise); they are
   ``noncanonical`` when ``vocab.encode`` of their bytes is another sequence (the
   retokenisation problem jump-forward creates); ``mask_conflict`` when the engine's own
   mask allows a token (or EOS) that does not fit its own offer.
2. **Simulation** (:func:`simulate`) — jump-forward decoding of the instance: at each
   position the engine's forced tokens are committed without a forward pass when their
   bytes continue the instance; otherwise the model produces one token (the first of the
   canonical tokenisation of the rest). ``share`` = tokens committed without a forward
   pass / all tokens committed. The same with the oracle's forced tokens
   (``oracle_sim``: what an engine that accepts the schema's whole language can skip).

A matcher that returns None (no jump-forward API) gives ``jump_forward.api = None``: the
instances are still replayed (the outcome says whether the engine accepts them) and
nothing else is measured. The oracle runs in-process within ``jf_oracle_timeout_s``
(:class:`harness.measure.tokens.oracle.Budget`); a refused or timed-out oracle leaves the
steps ``unchecked`` and says so in ``record["oracle"]``.

Outcome: ``compile_error``; ``validation_error`` when a valid instance is rejected;
``invalidation_error`` when a ``wrong`` continuation was offered (an invalid output the
engine would write); else ``passing``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from harness.suite import outcomes
from harness.suite import JobPayload
from suites.jump_forward.records import (JumpForwardBlock, JumpForwardInstance,
                                         JumpForwardOracle, JumpForwardRecord, JumpForwardSim)

__all__ = ["CLASSES", "classify_step", "conflicts_with", "noncanonical", "run_jump_forward_job",
           "simulate"]

#: step classes, in the order tables show them
CLASSES = ("none", "exact", "short", "unforced", "wrong", "unchecked")
MAX_EVIDENCE = 3    # examples kept per kind and instance (the counts are exact)
PREFIX_TAIL = 160   # characters of the prefix kept with a piece of evidence


def _text(data: bytes) -> str:
    """Bytes for a record (JSON): UTF-8, undecodable bytes as ``\\xNN``."""
    return data.decode("utf-8", errors="backslashreplace")


def classify_step(offered: bytes, oracle: bytes | None,
                  viable: Callable[[bytes], bool | None] | None) -> str:
    """The class of one step (:data:`CLASSES`).

    Parameters
    ----------
    offered:
        The bytes the engine offers as forced.
    oracle:
        The bytes the schema forces here (None: no oracle).
    viable:
        ``viable(data)``: is the prefix + ``data`` still a viable prefix of a document
        the schema accepts? (None, or a None answer: cannot tell.)
    """
    if not offered:
        return "none"
    if oracle is None:
        return "unchecked"
    if oracle.startswith(offered):
        return "exact" if offered == oracle else "short"
    ok = viable(offered) if viable is not None else None
    if ok is None:
        return "unchecked"
    return "unforced" if ok else "wrong"


def noncanonical(vocab, tokens: list[int]) -> bool:
    """True when ``tokens`` are not the canonical tokenisation of their own bytes."""
    from harness.suite.engines import encode_exact

    return bool(tokens) and encode_exact(vocab, b"".join(vocab.tokens[t] for t in tokens)) != tokens


def conflicts_with(offered: bytes, allowed_ids: np.ndarray, eos: bool, vocab,
                   first_byte: np.ndarray) -> bool:
    """True when an engine's own mask (``allowed_ids``, regular tokens, and ``eos``)
    allows something that cannot continue with ``offered``, the bytes it says are forced:
    EOS, or a token that neither is a prefix of ``offered`` nor starts with it."""
    if not offered:
        return False
    if eos:
        return True
    if allowed_ids.size and bool((first_byte[allowed_ids] != offered[0]).any()):
        return True
    if len(offered) > 1:
        toks = vocab.tokens
        for t in allowed_ids.tolist():
            b = toks[t]
            if len(b) > 1 and not (offered.startswith(b) or b.startswith(offered)):
                return True
    return False


def simulate(matcher, forced: Callable[[int], list[int]], text: bytes, vocab) -> JumpForwardSim:
    """Jump-forward decoding of ``text`` on ``matcher`` (at its start state).

    At each byte offset ``pos``: ``forced(pos)`` gives the forced token ids; when they are
    non-empty and their bytes continue ``text`` at ``pos``, they are committed without a
    forward pass (``free``); otherwise the model produces one token, the first of the
    canonical tokenisation of ``text[pos:]`` (``passes``). A token the matcher rejects
    ends the walk (``status`` ``rejected``, at ``reject_at`` bytes, ``rejected_jump``:
    it came from the jump). ``diverged``: offers whose bytes do not continue the text.
    ``share`` = ``free / (free + passes)``, the share of output tokens (EOS not counted)
    that needed no forward pass; None for an empty text.
    """
    from harness.suite.engines import encode_exact

    toks = vocab.tokens
    pos = free = passes = jumps = diverged = 0
    out: JumpForwardSim = {"status": "done"}
    while pos < len(text):
        ids = forced(pos)
        if ids:
            data = b"".join(toks[t] for t in ids)
            if text.startswith(data, pos):
                for k, t in enumerate(ids):
                    if not matcher.commit(t):
                        out.update(status="rejected", reject_at=pos, rejected_jump=True,
                                   rejected_tokens=ids[k:])
                        break
                    free += 1
                if out["status"] != "done":
                    break
                pos += len(data)
                jumps += 1
                continue
            diverged += 1
        t = encode_exact(vocab, text[pos:])[0]
        if not matcher.commit(t):
            out.update(status="rejected", reject_at=pos, rejected_jump=False)
            break
        passes += 1
        pos += len(toks[t])
    total = free + passes
    out.update(free=free, passes=passes, jumps=jumps, diverged=diverged,
               share=free / total if total else None)
    return out


_FIRST: dict[str, np.ndarray] = {}


def _first_bytes(vocab) -> np.ndarray:
    """First byte of every token (-1: empty), once per vocabulary and process."""
    a = _FIRST.get(vocab.fingerprint)
    if a is None:
        a = _FIRST[vocab.fingerprint] = np.fromiter(
            (t[0] if t else -1 for t in vocab.tokens), dtype=np.int16, count=vocab.size)
    return a


class _Oracle:
    """The reference engine's matchers under the job's time budget; ``ok`` turns False
    for good when the budget is spent (the record's ``oracle`` says where)."""

    def __init__(self, budget, info: JumpForwardOracle, vocab) -> None:
        self.grammar = None
        self.budget = budget
        self.info = info
        self.vocab = vocab
        self.ok = True
        self._bm = None

    def run(self, fn, where: str):
        from harness.suite.measure import OracleTimeout

        if not self.ok:
            return None
        try:
            with self.budget.guard():
                return fn()
        except OracleTimeout:
            self.ok = False
            self.info.update(status="timeout", timeout_at=where,
                             error="reference forced bytes over the oracle's time budget")
            return None

    def viable(self, om, data: bytes) -> bool | None:
        """Is the oracle matcher's prefix + ``data`` a viable prefix? Exact: byte by byte,
        the byte's single-byte token must be in the (exact) mask, and is then committed;
        the commits are rolled back. None when the budget runs out (or the oracle refuses
        a byte its own mask allows: its bug, recorded)."""
        from harness.suite.engines import allocate_bitmask
        from harness.suite.engines import byte_token_ids

        ids = byte_token_ids(self.vocab)
        if self._bm is None:
            self._bm = allocate_bitmask(self.vocab.size)
        bm = self._bm

        def check() -> bool | None:
            done = 0
            try:
                for k, b in enumerate(data):
                    om.fill_mask(bm)
                    tid = ids[b]
                    if not (int(bm[tid >> 5]) >> (tid & 31)) & 1:
                        return False
                    if k == len(data) - 1:
                        return True
                    if not om.commit(tid):
                        done = -1  # dead: nothing to roll back; the oracle is unusable
                        self.ok = False
                        self.info.update(status="error", error="reference refused a byte "
                                                                "its own mask allows")
                        return None
                    done += 1
                return True
            finally:
                if done > 0:
                    om.rollback(done)

        return self.run(check, "viability")


def run_jump_forward_job(job: JobPayload, phase=lambda p, info=None: None) -> JumpForwardRecord:
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import adapters
    from harness.suite.measure import target_for
    from harness.suite import pick_instances
    from harness.suite.measure import ORACLE_LABEL, ORACLE_OPTIONS, Budget, oracle_adapter
    from suites.jump_forward.options import resolve

    case = job["case"]
    o = resolve(job.get("options"))
    primary = job.get("primary", "ascii")
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)

    phase("groundtruth")
    target = target_for(case)
    instances = pick_instances(case, target, primary, int(o["jf_instances"]))

    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        grammar, m, bm = adapters.first_mask(target, adapter, vocab)
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e),
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record["ttfm_ns"] = record["compile_ns"] = time.perf_counter_ns() - t0
    api = m.forced_continuation() is not None
    jf: JumpForwardBlock = {"api": True if api else None, "instances": []}
    record["jump_forward"] = jf

    oracle = None
    if api:
        oracle_eng = oracle_adapter(vocab)  # the trie: once per process, outside the budget
        info: JumpForwardOracle = {"engine": ORACLE_LABEL, "options": ORACLE_OPTIONS}
        oracle = _Oracle(Budget(float(o["jf_oracle_timeout_s"])), info, vocab)
        t0 = time.perf_counter_ns()
        try:
            oracle.grammar = oracle.run(lambda: target.compile(oracle_eng), "compile")
        except CompileError as e:
            oracle.ok = False
            info.update(status="refused", error=one_line(e))
        if oracle.grammar is not None:
            info["status"] = "ok"
        info["compile_ns"] = time.perf_counter_ns() - t0
        record["oracle"] = info

    phase("replay", record["ttfm_ns"])
    first = _first_bytes(vocab)
    rejected = wrong = False
    for inst in instances:
        text = inst["text"].encode("utf-8")
        tokens = vocab.encode(inst["text"])
        row: JumpForwardInstance = {"index": inst["index"], "serialization": inst["ser"],
                               "n_tokens": len(tokens), "bytes": len(text)}
        if not api:
            row.update(_replay(grammar.matcher(), tokens))
        else:
            ocache: dict[int, tuple[bytes, list[int]]] = {}
            row.update(_steps(grammar.matcher(), oracle, tokens, bm, vocab, first, ocache))
            sm = grammar.matcher()
            row["sim"] = simulate(sm, lambda pos: _ids(sm.forced_continuation()), text, vocab)
            if oracle.ok:
                sim = _oracle_sim(oracle, text, vocab, ocache)
                if sim is not None:
                    row["oracle_sim"] = sim
            wrong |= bool(row["counts"]["wrong"])
        rejected |= row["status"] != "accepted"
        jf["instances"].append(row)
    record["outcome"] = (outcomes.VALIDATION_ERROR if rejected else
                         outcomes.INVALIDATION_ERROR if wrong else outcomes.PASSING)
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _replay(m, tokens: list[int]) -> dict[str, Any]:
    """The instance's tokens committed, then EOS: ``status`` accepted / rejected / no_eos."""
    for i, t in enumerate(tokens):
        if not m.commit(t):
            return {"status": "rejected", "reject_at": i}
    return {"status": "accepted" if m.eos_allowed() else "no_eos"}


def _ids(fc: tuple[bytes, list[int]] | None) -> list[int]:
    return list(fc[1]) if fc else []


def _steps(m, oracle: "_Oracle", tokens: list[int], bm: np.ndarray, vocab, first: np.ndarray,
           ocache: dict[int, tuple[bytes, list[int]]]) -> dict[str, Any]:
    from harness.suite.measure import as_bool

    clock = time.perf_counter_ns
    toks = vocab.tokens
    regular = np.ones(vocab.size, bool)
    regular[list(vocab.special_ids)] = False
    stops = tuple(vocab.stop_ids)
    om = oracle.grammar.matcher() if oracle.ok else None
    counts = dict.fromkeys(CLASSES, 0)
    ff_ns: list[int] = []
    mask_ns: list[int] = []
    ev: dict[str, list[dict[str, Any]]] = {"wrong": [], "unforced": [], "noncanonical": [],
                                           "token_mismatch": [], "mask_conflict": []}
    n_ev = dict.fromkeys(("noncanonical", "token_mismatch", "mask_conflict"), 0)
    offered_steps = oracle_forced_steps = token_steps = offered_bytes = oracle_bytes = 0
    oracle_token_steps = 0
    out: dict[str, Any] = {"status": "accepted"}
    prefix = b""
    n = len(tokens)
    for i in range(n + 1):
        t0 = clock()
        fc = m.forced_continuation()
        t1 = clock()
        m.fill_mask(bm)
        t2 = clock()
        ff_ns.append(t1 - t0)
        mask_ns.append(t2 - t1)
        eb, et = fc if fc is not None else (b"", [])
        ob = None
        if om is not None and oracle.ok:
            res = oracle.run(om.forced_continuation, f"step {i}")
            if res is not None:
                ob = res[0]
                ocache[len(prefix)] = res
        viable = None
        if om is not None and oracle.ok:
            viable = lambda data: oracle.viable(om, data)  # noqa: E731
        cls = classify_step(eb, ob, viable)
        counts[cls] += 1
        offered_steps += bool(eb)
        offered_bytes += len(eb)
        if ob:
            oracle_forced_steps += 1
            oracle_bytes += len(ob)
            oracle_token_steps += bool(res and res[1])

        def keep(kind: str, **extra: Any) -> None:
            if len(ev[kind]) < MAX_EVIDENCE:
                ev[kind].append({"step": i, "prefix": _text(prefix)[-PREFIX_TAIL:],
                                 "offered": _text(eb), **extra})

        if cls in ("wrong", "unforced"):
            keep(cls, oracle=_text(ob or b""))
        if et:
            token_steps += 1
            tb = b"".join(toks[t] for t in et)
            if not eb.startswith(tb):
                n_ev["token_mismatch"] += 1
                keep("token_mismatch", tokens=[_text(toks[t]) for t in et])
            elif noncanonical(vocab, et):
                n_ev["noncanonical"] += 1
                from harness.suite.engines import encode_exact

                keep("noncanonical", tokens=[_text(toks[t]) for t in et],
                     canonical=[_text(toks[t]) for t in encode_exact(vocab, tb)])
        if eb:
            allowed = np.flatnonzero(as_bool(bm, vocab.size) & regular)
            eos = any((int(bm[s >> 5]) >> (s & 31)) & 1 for s in stops)
            if conflicts_with(eb, allowed, eos, vocab, first):
                n_ev["mask_conflict"] += 1
                keep("mask_conflict", eos=eos, allowed=len(allowed))
        if i == n:
            if not m.eos_allowed():
                out["status"] = "no_eos"
            break
        tid = tokens[i]
        if not m.commit(tid):
            out.update(status="rejected", reject_at=i)
            break
        if om is not None and oracle.ok and not oracle.run(lambda: om.commit(tid), f"commit {i}"):
            if oracle.ok:
                out["oracle_rejected_at"] = i  # a valid instance the oracle refuses: its bug
            om = None
        prefix += toks[tid]
    out.update(steps=sum(counts.values()), counts=counts, offered_steps=offered_steps,
               offered_bytes=offered_bytes, oracle_forced_steps=oracle_forced_steps,
               oracle_forced_bytes=oracle_bytes, oracle_token_steps=oracle_token_steps,
               token_steps=token_steps, **n_ev,
               ff_ns=ff_ns, mask_ns=mask_ns,
               evidence={k: v for k, v in ev.items() if v})
    return out


def _oracle_sim(oracle: "_Oracle", text: bytes, vocab,
                ocache: dict[int, tuple[bytes, list[int]]]) -> JumpForwardSim | None:
    """:func:`simulate` with the oracle's forced tokens (cached by byte offset: the
    reference is byte-level, its state depends on the bytes only); None when the budget
    runs out."""
    om = oracle.grammar.matcher()

    def forced(pos: int) -> list[int]:
        hit = ocache.get(pos)
        if hit is None:
            hit = oracle.run(om.forced_continuation, f"simulation at byte {pos}")
            if hit is None:
                raise _OutOfBudget()
            ocache[pos] = hit
        return list(hit[1])

    class _Timed:
        # commits on the oracle's matcher also run under the budget
        def commit(self, t: int) -> bool:
            r = oracle.run(lambda: om.commit(t), "simulation commit")
            if r is None and not oracle.ok:
                raise _OutOfBudget()
            return bool(r)

    try:
        return simulate(_Timed(), forced, text, vocab)
    except _OutOfBudget:
        return None


class _OutOfBudget(Exception):
    pass
