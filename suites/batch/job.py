"""Worker job of the ``batch`` suite: ``B`` sequences decoded together, one step at a time.

Setup (untimed, apart from each schema's compile, kept as ``compile_ns``): the members'
valid instances (jsonschema on the primary serialisation, up to ``batch_instances`` per
schema), canonically tokenised, each followed by the stop token, kept where the engine
takes them alone (one untimed replay of commits; the ones it refuses are listed as the
member's ``rejected_instances``: an engine's strictness is the replay suites' business,
and a refused sequence would only churn the batch); every member schema
compiled once (a server's grammar cache: a sequence that joins later makes a matcher from
it). The worker keeps the compiled grammars of the last job's members for the next job on
the same adapter (the cases of one run share their members): a member taken from there has
``cached: true`` and no ``compile_ns``. A schema the engine refuses, or whose every
instance it rejects, leaves the workload (``refused``); the slots it would have served go
to the others.

Then, for each thread count ``T`` of the case's ``threads``, on one filler
(:meth:`engines.protocol.EngineAdapter.batch_filler`, the engine's own batch API):

1. The batch is filled: slot ``i`` serves member ``i mod n`` (:func:`slot_member`), its
   ``k``-th sequence on instance :func:`slot_instance`; the first sequence of each slot
   starts at a seeded offset into its instance (:func:`start_offset`: the batch is in
   steady state from the first step), the tokens before it committed untimed.
2. :data:`WARMUP` untimed steps, then ``batch_steps`` timed ones. A step:

   - *join*: a slot whose sequence ended (or failed a check) gets a fresh matcher from
     the compiled grammar on its next instance: ``join_ns`` (its first mask is in the
     step's fill; the compile is the schema's ``compile_ns``, once);
   - *fill*: one ``filler.fill`` of all ``B`` rows: ``fill_ns``;
   - *check* (untimed for the step): each sequence's *twin*, a second matcher that
     follows the same tokens one by one, fills its own mask (timed alone:
     ``slowest_ns`` is the slowest of them, ``solo_ns`` their sum); the batch row must
     equal it bit for bit and allow the instance's next token;
   - *commit*: one ``filler.commit`` of the ``B`` next tokens: ``commit_ns``; each must be
     accepted. The twins commit the same tokens (untimed).

   The grammar's time per step is ``fill_ns + commit_ns``: what the host adds to a step
   before the next forward can start.

Failures are counted per point (``checks``) with the first :data:`MAX_EVIDENCE` of them:
``batch_forbids`` (a row forbids a token the twin's own mask allows), ``batch_allows``
(a row allows a token the twin's mask forbids), ``refused_valid`` (the instance's next
token forbidden by the engine's own mask too, or its commit refused by both paths: the
engine rejects a valid instance), ``commit_mismatch`` (the batch commit and the twin's
answer differ). A sequence that fails a check is replaced at the next step.
"""

from __future__ import annotations

import gc
import time
import zlib
from typing import Any

import numpy as np

from harness.suite import outcomes
from harness.suite import JobPayload
from suites.batch.records import BatchBlock, BatchPoint, BatchRecord

__all__ = ["run_batch_job", "slot_member", "slot_instance", "start_offset", "WARMUP"]

#: untimed steps before the timed ones, per thread count
WARMUP = 5
#: failing checks kept with their evidence per point (the counts are exact)
MAX_EVIDENCE = 10
CHECKS = ("batch_forbids", "batch_allows", "refused_valid", "commit_mismatch")


def slot_member(slot: int, n_members: int) -> int:
    """The member (schema) slot ``slot`` serves: ``slot mod n``."""
    return slot % n_members


def slot_instance(slot: int, k: int, n_members: int, n_instances: int) -> int:
    """The instance of slot ``slot``'s ``k``-th sequence: copy ``c = slot // n`` of its
    member starts on instance ``c`` and each later sequence of the slot moves on by one,
    so that the member's copies in flight start on different instances where the schema
    has enough, and every slot cycles through all of them."""
    return (slot // n_members + k) % n_instances


def start_offset(seed: int, batch: int, slot: int, length: int) -> int:
    """Tokens of its instance the first sequence of ``slot`` has already committed when
    the timed steps begin: seeded, in ``[0, length)`` (``length`` counts the stop token)."""
    rng = np.random.default_rng([zlib.crc32(f"{seed}/{batch}/{slot}".encode())])
    return int(rng.integers(0, max(1, length)))


class _Seq:
    __slots__ = ("member", "instance", "tokens", "pos", "m", "twin", "k")

    def __init__(self, member: int, instance: int, tokens: list[int], k: int) -> None:
        self.member, self.instance, self.tokens, self.k = member, instance, tokens, k
        self.pos = 0
        self.m = self.twin = None


def _has(row: np.ndarray, t: int) -> bool:
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


def _diff_token(a: np.ndarray, b: np.ndarray) -> int:
    """The first token whose bit is set in ``a`` and clear in ``b``."""
    words = np.flatnonzero(a & ~b)
    w = int(words[0])
    bits = (int(a[w]) & ~int(b[w])) & 0xFFFFFFFF
    return w * 32 + (bits & -bits).bit_length() - 1


#: (adapter object id, schema text) → compiled grammar: the last job's members, in this
#: worker (an adapter lives as long as its worker: harness.measure.adapters)
_compiled: dict[tuple[int, str], Any] = {}


def _members(job: JobPayload, adapter, vocab, n_instances: int, primary: str,
             phase) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(usable members, refused ones): each usable one with its compiled grammar,
    ``compile_ns`` and its instances' token lists (stop token appended)."""
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import SchemaTarget
    from harness.suite import pick_instances

    usable, refused = [], []
    stop = vocab.eos_id
    keep: dict[tuple[int, str], Any] = {}
    for payload in job["case"]["request"]["members"]:
        target = SchemaTarget(payload)
        insts = pick_instances(payload, target, primary, n_instances)
        if not insts:
            refused.append({"case_id": payload["case_id"],
                            "why": "no instance the ground truth calls valid"})
            continue
        key = (id(adapter), payload["schema_text"])
        entry: dict[str, Any] = {"case_id": payload["case_id"]}
        if key in _compiled:
            keep[key] = grammar = _compiled[key]
            entry["cached"] = True
        else:
            phase("compile")
            t0 = time.perf_counter_ns()
            try:
                grammar = target.compile(adapter)
                grammar.matcher()  # an engine may fail only when it makes a matcher
            except CompileError as e:
                refused.append({"case_id": payload["case_id"], "why": one_line(e, 200),
                                "compile_ns": time.perf_counter_ns() - t0})
                continue
            entry["compile_ns"] = time.perf_counter_ns() - t0
            keep[key] = grammar
        # the instances the engine follows alone (its strictness is the replay's business)
        tokens, ids, rejects = [], [], []
        for i in insts:
            toks = vocab.encode(i["text"]) + [stop]
            at = _refused_at(grammar, toks)
            if at is None:
                tokens.append(toks)
                ids.append(i["index"])
            else:
                rejects.append({"instance": i["index"], "position": at, "token": toks[at]})
        if not tokens:
            refused.append({"case_id": payload["case_id"], "why": "the engine rejects every "
                            f"valid instance it was given ({len(insts)})",
                            "rejects": rejects, **entry})
            continue
        entry.update(grammar=grammar, instances=tokens, instance_ids=ids, rejects=rejects)
        usable.append(entry)
    _compiled.clear()  # only this job's members stay
    _compiled.update(keep)
    return usable, refused


def _refused_at(grammar, tokens: list[int]) -> int | None:
    """The position of the first token of ``tokens`` a fresh matcher refuses (its commit),
    or None when it takes them all."""
    m = grammar.matcher()
    for k, t in enumerate(tokens):
        if not m.commit(t):
            return k
    return None


def _run_point(members: list[dict[str, Any]], filler, batch: int, steps: int, seed: int,
               words: int, phase, info: Any) -> dict[str, Any]:
    """One (batch size, thread count) point: the timed steps (see the module docstring)."""
    clock = time.perf_counter_ns
    n = len(members)
    bitmask = np.zeros((batch, words), dtype=np.int32)
    scratch = np.zeros(words, dtype=np.int32)
    started = [0] * batch  # sequences each slot has begun
    checks = dict.fromkeys(CHECKS, 0)
    evidence: list[dict[str, Any]] = []
    counts = {"sequences": 0, "finished": 0, "retired": 0, "tokens": 0}

    def fresh(slot: int) -> _Seq:
        mi = slot_member(slot, n)
        mem = members[mi]
        k = started[slot]
        started[slot] += 1
        ii = slot_instance(slot, k, n, len(mem["instances"]))
        counts["sequences"] += 1
        return _Seq(mi, ii, mem["instances"][ii], k)

    def note(kind: str, s: _Seq, **more: Any) -> None:
        checks[kind] += 1
        if len(evidence) < MAX_EVIDENCE:
            evidence.append({"check": kind, "case_id": members[s.member]["case_id"],
                             "instance": members[s.member]["instance_ids"][s.instance],
                             "position": s.pos, **more})

    # the batch in steady state: each slot's first sequence already part-way through
    seqs: list[_Seq] = []
    for slot in range(batch):
        s = fresh(slot)
        g = members[s.member]["grammar"]
        s.m, s.twin = g.matcher(), g.matcher()
        for t in s.tokens[:start_offset(seed, batch, slot, len(s.tokens))]:
            ok, twin_ok = s.m.commit(t), s.twin.commit(t)  # both, always: no short cut
            if not (ok and twin_ok):
                break  # refused here: the first step's checks say so (dead rows)
            s.pos += 1
        seqs.append(s)
    rows = list(range(batch))
    out: dict[str, list[int]] = {k: [] for k in ("fill_ns", "commit_ns", "join_ns", "joined",
                                                 "slowest_ns", "solo_ns")}
    gc.collect()
    for step in range(WARMUP + steps):
        timed = step >= WARMUP
        # join: fresh sequences for the slots whose sequence ended last step
        joined = [b for b, s in enumerate(seqs) if s.m is None]
        join_ns = 0
        for b in joined:
            s = seqs[b] = fresh(b)
            g = members[s.member]["grammar"]
            t0 = clock()
            s.m = g.matcher()
            join_ns += clock() - t0
            s.twin = g.matcher()
        matchers = [s.m for s in seqs]
        t0 = clock()
        filler.fill(matchers, bitmask, rows)
        fill_ns = clock() - t0
        # check every row against its twin's own mask and the instance's next token
        slowest = solo = 0
        bad = [False] * batch
        for b, s in enumerate(seqs):
            t1 = clock()
            s.twin.fill_mask(scratch)
            dt = clock() - t1
            solo += dt
            slowest = max(slowest, dt)
            row, tok = bitmask[b], s.tokens[s.pos]
            if not np.array_equal(row, scratch):
                if (row & ~scratch).any():
                    note("batch_allows", s, token=_diff_token(row, scratch))
                if (scratch & ~row).any():
                    note("batch_forbids", s, token=_diff_token(scratch, row))
                bad[b] = True
            if not _has(scratch, tok):
                note("refused_valid", s, token=tok, why="the engine's own mask forbids it")
                bad[b] = True
        toks = [s.tokens[s.pos] for s in seqs]
        t0 = clock()
        accepted = filler.commit(matchers, toks)
        commit_ns = clock() - t0
        for b, (s, ok) in enumerate(zip(seqs, accepted)):
            twin_ok = s.twin.commit(toks[b])
            if bool(ok) != twin_ok:
                note("commit_mismatch", s, token=toks[b], batch=bool(ok), twin=twin_ok)
                bad[b] = True
            elif not ok and not bad[b]:
                note("refused_valid", s, token=toks[b], why="both paths refuse the commit")
                bad[b] = True
            counts["tokens"] += 1
            s.pos += 1
            if bad[b] or s.pos >= len(s.tokens):
                counts["finished" if not bad[b] else "retired"] += 1
                s.m = s.twin = None  # replaced at the next step
        if timed:
            for key, v in (("fill_ns", fill_ns), ("commit_ns", commit_ns),
                           ("join_ns", join_ns), ("joined", len(joined)),
                           ("slowest_ns", slowest), ("solo_ns", solo)):
                out[key].append(int(v))
        if step % 50 == 0:
            phase("replay", info)
    return {**out, "checks": checks, "evidence": evidence, **counts}


def run_batch_job(job: JobPayload, phase=lambda p, info=None: None) -> BatchRecord:
    from harness.suite.engines import bitmask_words
    from harness.suite.measure import adapters
    from harness.suite.options import merged
    from suites.batch import cores
    from suites.batch.options import DEFAULTS

    case = job["case"]
    req = case["request"]
    o = merged(DEFAULTS, job.get("options"))
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    phase("groundtruth")
    members, refused = _members(job, adapter, vocab, int(o["batch_instances"]),
                                job.get("primary", "unicode"), phase)
    batch = int(req["batch"])
    block: BatchBlock = {
        "batch": batch, "workload": req["workload"], "step_ms": float(o["step_ms"]),
        "cores": cores(), "warmup": WARMUP,
        "members": [{"case_id": m["case_id"], "instances": len(m["instances"]),
                     "rejected_instances": m["rejects"],
                     **({"cached": True} if m.get("cached") else
                        {"compile_ns": m["compile_ns"]})} for m in members],
        "refused": refused, "points": []}
    record["batch"] = block
    if not members:
        record.update(outcome=outcomes.COMPILE_ERROR,
                      error=(refused[0]["why"] if refused else "no member schema"),
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    compiled = [m["compile_ns"] for m in members if "compile_ns" in m]
    if compiled:
        record["compile_ns"] = int(np.median(compiled))
    phase("replay", record.get("compile_ns"))
    words = bitmask_words(vocab.size)
    for threads in req["threads"]:
        filler = adapter.batch_filler(int(threads))
        try:
            point = _run_point(members, filler, batch, int(o["batch_steps"]),
                               int(o["batch_seed"]), words, phase, record.get("compile_ns"))
        finally:
            filler.close()
        block["points"].append({"threads": int(threads), "method": filler.method,
                                "commit_method": filler.commit_method,
                                "oversubscribed": int(threads) > block["cores"], **point})
    record["outcome"] = _outcome(block["points"])
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _outcome(points: list[BatchPoint]) -> str:
    """``invalidation_error`` when a batch row allowed a token the sequence's own mask
    forbids; else ``validation_error`` when a valid token was forbidden or refused (by
    the batch path or the engine itself) or the two paths' commits differ; else
    ``passing``."""
    total = {k: sum(p["checks"][k] for p in points) for k in CHECKS}
    if total["batch_allows"]:
        return outcomes.INVALIDATION_ERROR
    if total["batch_forbids"] or total["refused_valid"] or total["commit_mismatch"]:
        return outcomes.VALIDATION_ERROR
    return outcomes.PASSING
