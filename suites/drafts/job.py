"""Worker job of the ``drafts`` suite: speculative drafts validated by one engine.

For up to ``draft_instances`` instances the ground truth calls valid (the primary
serialisation, canonically tokenised ``t[0:n]``), one fresh matcher first replays the
whole instance and keeps the mask before every token (the *reference masks*, positions
``0..n``; an instance the engine rejects at token ``r`` keeps ``0..r`` and only drafts
inside that prefix are checked). Then, for each draft length ``k`` of ``draft_k``:

- ``draft_positions`` *corrupt* drafts: ``t[p:p+k]`` with the token at position ``c`` in
  ``[0, k)`` replaced by a token the engine's own reference mask forbids at ``p + c``
  (expected accepted length: exactly ``c``);
- one *clean* draft ``t[p:p+k]`` (expected ``k``);
- one *past-the-end* draft: the last ``j = k // 2`` tokens, the stop token
  (``vocab.eos_id``), then whitespace, another stop token and ``t[0]`` up to ``k``
  tokens (expected ``j + 1``; every token accepted beyond the stop is *accepted after
  termination*).

``p`` and ``c`` are drawn from a generator seeded by (``draft_seed``, case, instance,
``k``), so every engine sees the same ones. The corrupt token depends on the engine's own
mask, drawn with a seeded generator too: first from the instance's own tokens that the
mask forbids there (a realistic wrong guess), else from the whole vocabulary (never a
special token while a regular one is forbidden).

Per draft, on a fresh matcher replayed to ``p``:

1. ``validate_draft(draft)`` (:meth:`engines.protocol.Matcher.validate_draft`): the accepted
   length, compared with the expected one; ``validate_ns`` is the fastest of
   :data:`REPEATS` calls, ns.
2. The mask afterwards must equal the reference mask at ``p`` bit for bit (the state is
   unchanged).
3. The accepted prefix (its instance tokens, stop excluded) is committed one token at a
   time; the mask before each token and after the last must equal the reference mask
   there; then it is rolled back and the mask must equal the reference mask at ``p``.
   Any difference, or a commit refusing a token the draft API accepted, is a *rollback
   mismatch*. An engine that cannot roll back (``ValueError``) gets ``rollback:
   "unsupported"`` and no rollback check.
4. ``steps_ns``: the same draft as single steps, ``fill_mask`` + bit check + ``commit``
   per token up to the first forbidden token or the stop token, then ``rollback``; the
   fastest of :data:`REPEATS`, ns (without the rollback where the engine has none).

An exception inside a draft is recorded on that draft (``error``, one line) and the job
goes on.
"""

from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np

from harness.suite import outcomes
from harness.suite import InstanceRecord, JobPayload
from suites.drafts.records import (DraftNote, DraftPlan, DraftRow, DraftsBlock, DraftsRecord,
                                   SpeculativeBlock)

__all__ = ["plan_drafts", "run_drafts_job", "REPEATS"]

#: timed calls per draft (the fastest is kept: single calls of a few µs are noisy)
REPEATS = 3
#: failing drafts kept with their evidence per record (the counts are exact)
MAX_EVIDENCE = 25


def _seed(*parts: Any) -> list[int]:
    """Generator seed from the parts, stable across processes (no ``hash()``)."""
    return [zlib.crc32(str(p).encode()) for p in parts]


def plan_drafts(n: int, ks: list[int], positions: int, seed: int, case_id: str,
                instance: int) -> list[DraftPlan]:
    """The drafts of one instance of ``n`` tokens, engine-independent: each
    ``{"kind": "corrupt"|"clean"|"past_end", "k", "p", "c"?, "j"?}`` (``p``: start
    position in the instance's tokens; ``c``: corrupt position in the draft; ``j``:
    instance tokens before the stop token)."""
    out: list[DraftPlan] = []
    for k in ks:
        rng = np.random.default_rng(_seed(seed, case_id, instance, k))
        if n >= k:
            for _ in range(positions):
                out.append({"kind": "corrupt", "k": k, "p": int(rng.integers(0, n - k + 1)),
                            "c": int(rng.integers(0, k))})
            out.append({"kind": "clean", "k": k, "p": int(rng.integers(0, n - k + 1))})
        j = min(k // 2, n)
        out.append({"kind": "past_end", "k": k, "p": n - j, "j": j})
    return out


def _has(bm: np.ndarray, t: int) -> bool:
    return bool((int(bm[t >> 5]) >> (t & 31)) & 1)


def _corrupt_token(mask: np.ndarray, inst_tokens: list[int], vocab, special: np.ndarray,
                   rng: np.random.Generator) -> tuple[int | None, str]:
    """A token ``mask`` forbids, seeded: one of the instance's own tokens, else any
    regular token, else a non-stop special token (always forbidden). (None, why) when
    the mask forbids nothing at all."""
    own = [t for t in sorted(set(inst_tokens)) if not special[t] and not _has(mask, t)]
    if own:
        return int(own[int(rng.integers(0, len(own)))]), "instance"
    allowed = np.unpackbits(mask.view(np.uint8), bitorder="little")[: vocab.size].astype(bool)
    free = np.flatnonzero(~allowed & ~special)
    if free.size:
        return int(free[int(rng.integers(0, free.size))]), "vocabulary"
    stops = set(vocab.stop_ids)
    spec = [t for t in sorted(vocab.special_ids) if t not in stops and not _has(mask, t)]
    if spec:
        return int(spec[int(rng.integers(0, len(spec)))]), "special"
    return None, "the mask forbids no token"


def _past_end_tail(vocab, tokens: list[int], count: int) -> list[int]:
    """``count`` tokens to put after the stop token: whitespace (which many grammars
    still allow after a complete JSON text), another stop token, the instance's first
    token."""
    ws = vocab.encode(" ")
    other_stop = vocab.stop_ids[-1] if len(vocab.stop_ids) > 1 else vocab.eos_id
    pool = [ws[0] if len(ws) == 1 else vocab.encode("\n")[0], other_stop, tokens[0]]
    return [pool[i % len(pool)] for i in range(count)]


def _rolls_back(probe, grammar, instances: list[InstanceRecord], vocab) -> bool:
    """Can the engine roll back at all? (one token of the first instance committed and
    rolled back on a spare matcher: llama.cpp's grammar raises ValueError.)"""
    if not instances:
        return True
    m = grammar.matcher()
    if not m.commit(vocab.encode(instances[0]["text"])[0]):
        return True  # decided by the drafts themselves
    try:
        m.rollback(1)
    except ValueError:
        return False
    return True


def _fresh(grammar, tokens: list[int], p: int):
    m = grammar.matcher()
    for i, t in enumerate(tokens[:p]):
        if not m.commit(t):
            raise RuntimeError(f"a fresh replay refused instance token {i} it accepted before")
    return m


def _one_line(e: BaseException) -> str:
    from engines.protocol import one_line

    return one_line(e, 300)


def _check_draft(row: DraftRow, grammar, tokens: list[int], ref: list[np.ndarray],
                 draft: list[int], on_path: int, expected: int, stop_at: int | None,
                 stops: frozenset[int], rollback_ok: bool, bm: np.ndarray) -> None:
    """Steps 1–4 of the module docstring for one draft, written into ``row`` as they go
    (an exception half-way keeps what was found before it)."""
    clock = time.perf_counter_ns
    p = row["p"]
    row["expected"] = expected
    m = _fresh(grammar, tokens, p)
    m.fill_mask(bm)
    if not np.array_equal(bm, ref[p]):
        row["mismatch"] = "a fresh replay to p gives another mask than the reference replay"
    got = None
    best = None
    for _ in range(REPEATS):
        t0 = clock()
        g = m.validate_draft(draft)
        dt = clock() - t0
        best = dt if best is None else min(best, dt)
        if got is not None and g != got:
            row["unstable"] = [got, g]
        got = g
    row["got"] = got
    row["validate_ns"] = best
    if stop_at is not None and got > stop_at + 1:
        row["after_stop"] = got - stop_at - 1
    m.fill_mask(bm)
    if not np.array_equal(bm, ref[p]) and "mismatch" not in row:
        row["mismatch"] = "validate_draft changed the state (mask at p differs afterwards)"
    # commit what the draft API accepted (instance tokens only: a corrupt or stop token
    # accepted by mistake is already a wrong length), comparing every mask on the way
    n_commit = min(got, on_path)
    committed = 0
    for i in range(n_commit):
        m.fill_mask(bm)
        if not np.array_equal(bm, ref[p + i]) and "mismatch" not in row:
            row["mismatch"] = f"mask at draft position {i} differs from a fresh replay's"
        if not m.commit(draft[i]):
            row.setdefault("mismatch", f"commit refused draft token {i}, which "
                                       "validate_draft accepted")
            break
        committed += 1
    else:
        m.fill_mask(bm)
        if not np.array_equal(bm, ref[p + n_commit]) and "mismatch" not in row:
            row["mismatch"] = (f"mask after the {n_commit} accepted tokens differs from a "
                               "fresh replay's")
    if committed == n_commit and rollback_ok:
        m.rollback(committed)
        if committed:
            row["rollback"] = "checked"
        m.fill_mask(bm)
        if not np.array_equal(bm, ref[p]) and "mismatch" not in row:
            row["mismatch"] = (f"after rollback({committed}) the mask at p differs from "
                               "a fresh replay's")
    else:
        # no rollback (the engine has none, or the commit above left the matcher dead)
        if committed and not rollback_ok:
            row["rollback"] = "unsupported"
        m = _fresh(grammar, tokens, p)
    # k single steps: what a decoder without a draft API does per draft (an engine without
    # rollback is timed once, without it: each further repeat would need a new replay)
    best = None
    m.fill_mask(bm)  # untimed, as before validate_draft: an engine caching the mask hits it in both
    for _ in range(REPEATS if rollback_ok else 1):
        t0 = clock()
        n = 0
        for t in draft:
            m.fill_mask(bm)
            if not _has(bm, t):
                break
            m.commit(t)
            if t in stops:
                break
            n += 1
        if rollback_ok:
            m.rollback(n)
        dt = clock() - t0
        best = dt if best is None else min(best, dt)
    row["steps_ns"] = best


def run_drafts_job(job: JobPayload, phase=lambda p, info=None: None) -> DraftsRecord:
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import adapters
    from harness.suite.measure import target_for
    from harness.suite import pick_instances

    case = job["case"]
    from suites.drafts.options import DEFAULTS
    from harness.suite.options import merged

    o = merged(DEFAULTS, job.get("options"))
    ks = [int(k) for k in o["draft_k"]]
    seed = int(o["draft_seed"])
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    special = np.zeros(vocab.size, dtype=bool)
    special[list(vocab.special_ids)] = True
    stop = vocab.eos_id

    phase("groundtruth")
    target = target_for(case)
    instances = pick_instances(case, target, job.get("primary", "ascii"),
                                int(o["draft_instances"]))

    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        grammar = target.compile(adapter)
        probe = grammar.matcher()
    except CompileError as e:
        # an empty drafts block: the record still counts among the engine's schemas
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e),
                      drafts={"api": None, "rows": [], "failures": [], "notes": []},
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record["compile_ns"] = time.perf_counter_ns() - t0
    api = type(probe).draft_api
    try:
        stops = probe.draft_stop_ids()
    except NotImplementedError:
        stops = frozenset(vocab.stop_ids)
    rollback_ok = _rolls_back(probe, grammar, instances, vocab)
    del probe

    phase("replay", record["compile_ns"])
    bm = allocate_bitmask(vocab.size)
    rows: list[DraftRow] = []
    notes: list[DraftNote] = []
    for inst in instances:
        tokens = vocab.encode(inst["text"])
        n = len(tokens)
        # the reference: one fresh replay, the mask before every token
        ref: list[np.ndarray] = []
        m = grammar.matcher()
        usable = n
        try:
            for i, t in enumerate(tokens):
                m.fill_mask(bm)
                ref.append(bm.copy())
                if not m.commit(t):
                    usable = i
                    notes.append({"instance": inst["index"], "note": f"the engine rejects "
                                  f"the valid instance at token {i} of {n}: drafts past it "
                                  "are not checked"})
                    break
            else:
                m.fill_mask(bm)
                ref.append(bm.copy())
        except Exception as e:  # an engine crash inside the replay: the instance is lost
            notes.append({"instance": inst["index"], "note": f"reference replay failed: "
                          f"{_one_line(e)}"})
            continue
        del m
        eos_at_end = usable == n and _has(ref[n], stop)
        for d in plan_drafts(n, ks, int(o["draft_positions"]), seed, case["case_id"],
                             inst["index"]):
            k, p = d["k"], d["p"]
            row: DraftRow = {"instance": inst["index"], **d}
            stop_at = None
            if d["kind"] == "past_end":
                if not eos_at_end:
                    continue  # the engine does not end the instance: no stop to test
                j = d["j"]
                draft = tokens[n - j:] + [stop] + _past_end_tail(vocab, tokens, k - j - 1)
                on_path, expected, stop_at = j, j + 1, j
            else:
                if p + k > usable:
                    continue
                draft = tokens[p:p + k]
                on_path = expected = k
                if d["kind"] == "corrupt":
                    c = d["c"]
                    rng = np.random.default_rng(_seed(seed, case["case_id"], inst["index"],
                                                      k, p, c, "token"))
                    bad, source = _corrupt_token(ref[p + c], tokens, vocab, special, rng)
                    if bad is None:
                        continue
                    draft = draft[:c] + [bad] + draft[c + 1:]
                    row["corrupt_from"] = source
                    on_path = expected = c
            row["draft"] = draft
            try:
                _check_draft(row, grammar, tokens, ref, draft, on_path, expected, stop_at,
                             stops, rollback_ok, bm)
            except Exception as e:  # one draft's engine failure is its own row, never lost
                row["error"] = _one_line(e)
            rows.append(row)
        phase("replay", record["compile_ns"])
    record["drafts"] = _summarise(api, rows, notes)
    record["outcome"] = _outcome(rows)
    if o.get("model"):
        phase("decode")
        record["speculative"] = _speculative(grammar, case, vocab, bm, o)
        spec = record["speculative"]
        if any(r["wrong_states"] for r in spec["drafters"].values()) \
                and record["outcome"] == outcomes.PASSING:
            record["outcome"] = outcomes.INVALIDATION_ERROR
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _speculative(grammar, case, vocab, bm: np.ndarray, o) -> SpeculativeBlock:
    """Grammar-aware drafting with the checkpoint as the target
    (:func:`suites.drafts.aware.run_drafters`): the schema's prompt, drafts of the
    largest ``--draft-k`` tokens, ``--max-tokens`` (default :data:`MODEL_MAX_TOKENS`)."""
    import json

    from harness.suite.model import load_checkpoint, load_model
    from suites.drafts.aware import run_drafters
    from suites.drafts.options import MODEL_MAX_TOKENS

    ckpt = load_checkpoint(str(o["model"]))
    prompt = ckpt.prompt_format.prompt_ids(ckpt.tokenizer(), json.loads(case["schema_text"]))
    drafter = load_model(str(o["draft_model"])) if o.get("draft_model") else None
    return run_drafters(grammar, load_model(str(ckpt.folder)), prompt, vocab.size,
                        frozenset(ckpt.eos_ids), max(int(k) for k in o["draft_k"]),
                        int(o.get("max_tokens") or MODEL_MAX_TOKENS), bm, drafter)


def _failing(r: DraftRow) -> bool:
    return ("error" in r or "mismatch" in r or r.get("after_stop")
            or r.get("got") != r.get("expected"))


def _outcome(rows: list[DraftRow]) -> str:
    """``validation_error`` when a draft's valid prefix was cut short (fewer tokens
    accepted than expected, or an engine error); else ``invalidation_error`` when a
    forbidden token, a token after the stop or a wrong state after rollback got through;
    else ``passing``."""
    if any("error" in r or (r.get("got") is not None and r["got"] < r["expected"]) for r in rows):
        return outcomes.VALIDATION_ERROR
    if any("mismatch" in r or r.get("after_stop") or
           (r.get("got") is not None and r["got"] > r["expected"]) for r in rows):
        return outcomes.INVALIDATION_ERROR
    return outcomes.PASSING


def _summarise(api: str, rows: list[DraftRow], notes: list[DraftNote]) -> DraftsBlock:
    """The record's ``drafts`` block: every draft compact (``k``, ``kind``, ``expected``,
    ``got``, ``validate_ns``, ``steps_ns``), the failing ones with their evidence (start
    ``p``, corrupt position ``c``, draft tokens, what went wrong), at most
    :data:`MAX_EVIDENCE` of them."""
    compact, evidence = [], []
    for r in rows:
        compact.append({key: r[key] for key in ("k", "kind", "expected", "got", "validate_ns",
                                                "steps_ns", "after_stop", "rollback")
                        if key in r} | {"ok": not _failing(r), "mismatch": "mismatch" in r,
                                        "error": "error" in r})
        if _failing(r) and len(evidence) < MAX_EVIDENCE:
            evidence.append({key: r[key] for key in ("instance", "kind", "k", "p", "c", "j", "draft",
                                                     "expected", "got", "after_stop", "mismatch",
                                                     "error", "corrupt_from", "unstable")
                             if key in r})
    return {"api": api, "rows": compact, "failures": evidence, "notes": notes}
