"""Worker job kind ``mask-diff``: one schema, one engine, compared token by token.

For each of the first ``diff_instances`` valid instances (jsonschema's verdict) the primary
serialisation is tokenised canonically and replayed through the engine and, in lockstep,
through the oracle (:mod:`harness.measure.tokens.oracle`). At every step ``i`` (before token ``i``;
step ``n`` is the end, where only EOS may come):

- **sizes**: the size of the engine's allowed set (regular tokens + 1 if EOS is allowed),
  and the oracle's (``oracle_sizes``); ``digests`` identify the engine's set, so engines can
  be compared with each other where there is no oracle.
- **diffs**: ``over`` = tokens the oracle allows and the engine forbids (over-constrained:
  the engine forbids what the spec allows), ``under`` = the reverse (under-constrained), each
  a count, the first ids, and how many of them are whitespace-only tokens (``over_ws``,
  ``under_ws``: JSON whitespace between tokens is the commonest, least harmful
  difference); ``eos`` = "over" / "under" when the stop bit differs.
- **witnesses**: for an under-constrained step, one extra token is drawn (seeded), committed
  after the prefix, and the document is completed under the engine's own mask by the
  length-aware policy (:mod:`harness.measure.tokens.policy`); the output is checked with strict JSON
  and jsonschema. ``false_accept`` = a confirmed false accept with its exact token sequence;
  ``valid`` = the completion is a valid document (the oracle was wrong: a reference bug).
  **over_witnesses** do the same for over-constrained steps under the *oracle's* mask: a
  token the engine forbids (not whitespace-only), completed to a document jsonschema calls
  ``valid`` — a document the spec allows and the engine cannot produce (``invalid`` would
  be an oracle error). They spend the oracle's time budget.
- **eos**: EOS must be allowed exactly where the text so far is a complete valid document:
  ``early`` lists steps where the engine allowed EOS on a prefix that is not one (each a
  confirmed false accept), ``refused`` steps where it refused EOS on one, ``allowed_at``
  every step where the engine allowed EOS. (With an oracle, the prefix is parsed only where
  the engine or the oracle allows EOS, and at the end: elsewhere the exact oracle already
  says no document ends there.)
- **rollback**: after the whole instance, ``rollback(k)`` and replaying the last ``k``
  tokens must give bit-identical masks (every bit, digests compared) for k in 1, 2, 8, n.

The instance's ``results[primary]`` is a replay in the form the main table reads (status,
mask / commit ns), so false rejects and TBM appear in the usual summary too (timings are
indicative: the oracle runs between the engine's steps). A refused instance (every one is
valid) carries the kind of its false reject there (``reject_kind``: ``unwritable``,
``tokenization`` with ``reachable_tokens``, ``undecided``; :mod:`harness.measure.reachability`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from harness.suite import outcomes
from harness.suite.measure import reachability
from harness.suite.measure import digest, has_bit, raw_digest, seed_for, token_classes
from harness.suite.measure import rollback_checks
from suites.mask_diff.options import resolve
from harness.suite import CasePayload, JobPayload, Record, pick_instances
from suites.mask_diff.records import (EarlyEos, MaskDiffBlock, MaskDiffOracle, MaskDiffRecord,
                                      MaskDiffStep, Witness)

MAX_IDS = 8           # ids kept per diff side (the counts are exact)
MAX_DIFFS = 200       # diff steps kept per instance (``diffs_total``, ``counts``: all)
MAX_WITNESS_STEPS = 3  # under-constrained steps per instance that get a witness
WITNESS_TRIES = 3     # completions tried per witness before giving up


#: the last non-blank byte of every complete JSON text is one of these
_ENDS = frozenset(b'}]"0123456789el')


def _complete(raw: bytes, target) -> tuple[bool | None, str | None]:
    """Is ``raw`` a complete output the case's constraint accepts? (verdict, why-not)."""
    if not target.maybe_complete(raw):  # cannot be a whole JSON text: skip the parse
        tail = raw.rstrip(b" \t\n\r")
        return False, "not JSON: the text cannot end here" if tail else "not JSON: empty"
    r = target.judge(raw)
    return r["valid"], r.get("why")


def run_mask_diff_job(job: JobPayload, phase=lambda p, info=None: None) -> MaskDiffRecord:
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import target_for
    from harness.suite.measure import (ORACLE_LABEL, ORACLE_OPTIONS, Budget, OracleTimeout,
        oracle_adapter)
    from harness.suite.measure import adapters

    case, eng = job["case"], job["engine"]
    o = resolve(job.get("options"))
    primary = job.get("primary", "ascii")
    record: MaskDiffRecord = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"],
                              "schema_text": case["schema_text"], "token_options": o}
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["engine_version"] = adapters.engine_version(adapter)  # as imported here
    tc = token_classes(vocab)
    oracle_eng = oracle_adapter(vocab)
    record["setup_ns"] = time.perf_counter_ns() - t_busy

    phase("groundtruth")
    target = target_for(case)
    instances = pick_instances(case, target, primary, int(o["diff_instances"]))

    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        grammar, m, bm = adapters.first_mask(target, adapter, vocab)
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e), instances=[],
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record["ttfm_ns"] = record["compile_ns"] = time.perf_counter_ns() - t0
    record["form"] = target.form

    budget = Budget(o["oracle_timeout_s"])
    oracle: MaskDiffOracle = {"engine": ORACLE_LABEL, "options": ORACLE_OPTIONS}
    ogrammar = None
    t0 = time.perf_counter_ns()
    try:
        with budget.guard():
            ogrammar = target.compile(oracle_eng)
        oracle["status"] = "ok"
        oracle["form"] = target.form
    except CompileError as e:
        oracle.update(status="refused", error=one_line(e))
    except OracleTimeout:
        oracle.update(status="timeout", error=f"reference compile over {o['oracle_timeout_s']:g}s")
    oracle["compile_ns"] = time.perf_counter_ns() - t0
    record["oracle"] = oracle

    phase("replay", record["ttfm_ns"])
    obm = allocate_bitmask(vocab.size)
    reach = reachability.Budget()
    for inst in instances:
        tokens = vocab.encode(inst["text"])
        om = ogrammar.matcher() if ogrammar is not None else None
        md, res = _lockstep(grammar.matcher(), om, tokens, bm, obm, tc, target, budget, oracle)
        if oracle["status"] != "ok":
            ogrammar = None  # the budget is spent: later instances run without an oracle
        if res["status"] != "accepted":  # a valid instance refused: which kind?
            reachability.classify(res, grammar, vocab, inst["text"], bm, reach)
        md["serialization"] = inst["ser"]
        md["witnesses"], md["over_witnesses"] = _witnesses(
            grammar, ogrammar, md, tokens, bm, tc, target, case["case_id"], inst["index"],
            int(o["walk_tokens"]), budget)
        if res["status"] == "accepted":
            md["rollback"] = rollback_checks(grammar.matcher(), tokens, bm, md.pop("_raw"))
        md.pop("_raw", None)
        inst["mask_diff"] = md
        inst["results"] = {inst["ser"]: res}
    record["instances"] = instances
    outcome = outcomes.classify(({**i, "results": {primary: i["results"][i["ser"]]}}
                                 for i in instances), primary)
    confirmed = any(w["verdict"] == "false_accept" for i in instances
                    for w in i["mask_diff"]["witnesses"]) or any(
        i["mask_diff"]["eos"]["early"] for i in instances)
    if outcome == outcomes.PASSING and confirmed:
        outcome = outcomes.INVALIDATION_ERROR
    record["outcome"] = outcome
    # soundness is the oracle's witness, also where a false reject decides the outcome
    record["accepts_invalid"] = confirmed
    record["tokens"] = sum(len(i["results"][i["ser"]]["mask_ns"]) for i in instances)
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _ids(mask: np.ndarray) -> list[int]:
    return [int(i) for i in np.flatnonzero(mask)[:MAX_IDS]]


def _lockstep(m, om, tokens: list[int], bm: np.ndarray, obm: np.ndarray, tc, target,
              budget, oracle: MaskDiffOracle) -> tuple[MaskDiffBlock, dict[str, Any]]:
    """Replay ``tokens`` through engine matcher ``m`` and oracle matcher ``om`` (or None)."""
    from harness.suite.measure import OracleTimeout

    vocab = tc.vocab
    clock = time.perf_counter_ns
    n = len(tokens)
    sizes: list[int] = []
    osizes: list[int | None] = []
    digests: list[str] = []
    raw: list[str] = []
    diffs: list[MaskDiffStep] = []
    n_diffs = 0
    counts = dict.fromkeys(("over_steps", "over_ws_only_steps", "under_steps",
                            "under_ws_only_steps", "eos_over", "eos_under"), 0)
    early: list[EarlyEos] = []
    eos_steps: list[int] = []
    refused: list[int] = []
    mask_ns: list[int] = []
    commit_ns: list[int] = []
    res: dict[str, Any] = {"status": "accepted", "n_tokens": n, "mask_ns": mask_ns,
                           "commit_ns": commit_ns}
    md: MaskDiffBlock = {"tokens": tokens, "sizes": sizes,
                          "oracle_sizes": osizes, "digests": digests, "diffs": diffs}
    prefix = b""
    for i in range(n + 1):
        t0 = clock()
        m.fill_mask(bm)
        t1 = clock()
        a = tc.allowed(bm)
        e = tc.eos(bm)
        sizes.append(int(a.sum()) + int(e))
        if e:
            eos_steps.append(i)
        digests.append(digest(a, e))
        raw.append(raw_digest(bm))
        oa = oe = None
        if om is not None:
            try:
                with budget.guard():
                    om.fill_mask(obm)
                oa, oe = tc.allowed(obm), tc.eos(obm)
                osizes.append(int(oa.sum()) + int(oe))
            except OracleTimeout:
                oracle.update(status="timeout", timeout_at_step=i,
                              error="reference masks over the oracle's time budget")
                om = None
        if om is None:
            osizes.append(None)
        # EOS against the spec: the text so far must be a complete valid document
        if e or i == n or om is None or oe:
            ok, why = _complete(prefix, target)
            if e and ok is False:
                early.append({"step": i, "why": why})
            elif not e and ok is True:
                refused.append(i)
        if oa is not None:
            over, under = oa & ~a, a & ~oa
            n_over, n_under = int(over.sum()), int(under.sum())
            eos = "over" if oe and not e else "under" if e and not oe else None
            if n_over or n_under or eos:
                n_diffs += 1
                n_ws_over = int((over & tc.space).sum()) if n_over else 0
                n_ws_under = int((under & tc.space).sum()) if n_under else 0
                counts["over_steps"] += bool(n_over)
                counts["over_ws_only_steps"] += bool(n_over) and n_ws_over == n_over
                counts["under_steps"] += bool(n_under)
                counts["under_ws_only_steps"] += bool(n_under) and n_ws_under == n_under
                if eos:
                    counts[f"eos_{eos}"] += 1
                if len(diffs) < MAX_DIFFS:
                    d: MaskDiffStep = {"step": i, "over": n_over, "under": n_under}
                    if n_over:
                        d["over_ids"] = _ids(over)
                        d["over_ws"] = n_ws_over
                        if d["over_ws"] < n_over:  # for the witness draw; not stored
                            d["_over"] = np.flatnonzero(over & ~tc.space)
                    if n_under:
                        d["under_ids"] = _ids(under)
                        d["under_ws"] = n_ws_under
                        d["_under"] = np.flatnonzero(under)  # for the witness draw; not stored
                    if eos:
                        d["eos"] = eos
                    diffs.append(d)
        if i == n:
            res["eos_mask_ns"] = t1 - t0
            if not e:
                res["status"] = "no_eos"
            break
        mask_ns.append(t1 - t0)
        tid = tokens[i]
        t2 = clock()
        ok = m.commit(tid)
        commit_ns.append(clock() - t2)
        if not ok or not has_bit(bm, tid):
            res.update(status="rejected", reject_at=i)
            if ok != has_bit(bm, tid):
                res["disagreement"] = "mask_only" if has_bit(bm, tid) else "commit_only"
            break
        if om is not None and not om.commit(tid):
            md["oracle_rejected_at"] = i  # a valid instance the oracle refuses: its bug
            om = None
        prefix += vocab.tokens[tid]
    md["diffs_total"] = n_diffs
    md["counts"] = counts  # over all steps, also those past MAX_DIFFS
    md["eos"] = {"early": early, "refused": refused, "allowed_at": eos_steps}
    md["_raw"] = raw
    return md, res


def _witness(grammar, tokens: list[int], step: int, cands: np.ndarray, bm: np.ndarray, tc,
             target, seed_parts: tuple, walk_tokens: int, names, goal: bool) -> Witness:
    """Commit ``tokens[:step]`` and one token drawn from ``cands`` to a fresh matcher of
    ``grammar``, complete the document under its own mask (the length-aware policy), judge
    it with the case's ground truth (strict JSON and jsonschema, or the grammar's parser). Up to :data:`WITNESS_TRIES` draws until the verdict
    is ``goal`` (False: an invalid document, True: a valid one)."""
    from harness.suite.measure import DONE, walk

    vocab = tc.vocab
    w: Witness = {"step": step, "verdict": None}
    for attempt in range(WITNESS_TRIES):
        seed = seed_for(*seed_parts, step, attempt)
        rng = np.random.default_rng(seed)
        extra = int(cands[rng.integers(cands.size)])
        m = grammar.matcher()
        if not all(m.commit(t) for t in tokens[:step]) or not m.commit(extra):
            w.update(token=extra, seed=seed, verdict="commit_refused",
                     why="the prefix or the drawn token (in the mask) was refused")
            break
        wk = walk(m, bm, tc, rng, step + 1 + walk_tokens, prefix=tokens[:step] + [extra],
                  names=names)
        seq = tokens[:step] + [extra] + wk.tokens
        w.update(token=extra, seed=seed, attempts=attempt + 1, tokens=seq)
        if wk.status != DONE:
            w.update(verdict=wk.status, why=wk.why)
            continue
        chk = target.judge(b"".join(vocab.tokens[t] for t in seq))
        w["verdict"] = {False: "false_accept" if goal is False else "invalid", True: "valid",
                        None: "undecided"}[chk["valid"]]
        w["why"] = chk.get("why")
        if chk["valid"] is goal:
            break
    return w


def _witnesses(grammar, ogrammar, md: MaskDiffBlock, tokens: list[int], bm: np.ndarray, tc,
               target, case_id: str, index: int, walk_tokens: int,
               budget) -> tuple[list[Witness], list[Witness]]:
    """Witnesses of the first under- and over-constrained steps, each with its exact token
    sequence and seed. Under: an extra token completed under the *engine's* mask, a
    ``false_accept`` when the document is invalid. Over: a token the engine forbids
    (whitespace-only ones left out) completed under the *oracle's* mask, ``valid`` when the
    document is valid (the spec allows what the engine cannot produce; ``invalid`` would be
    an oracle error). Over-witnesses spend the oracle's time budget."""
    from harness.suite.measure import OracleTimeout

    names = target.names(tc)
    under_w: list[Witness] = []
    over_w: list[Witness] = []
    for d in md["diffs"]:
        under, over = d.pop("_under", None), d.pop("_over", None)
        if under is not None and len(under_w) < MAX_WITNESS_STEPS:
            under_w.append(_witness(grammar, tokens, d["step"], under, bm, tc, target,
                                    (case_id, index), walk_tokens, names, False))
        if over is not None and ogrammar is not None and len(over_w) < MAX_WITNESS_STEPS:
            try:
                with budget.guard():
                    over_w.append(_witness(ogrammar, tokens, d["step"], over, bm, tc, target,
                                           (case_id, index, "over"), walk_tokens, names, True))
            except OracleTimeout:
                over_w.append({"step": d["step"], "verdict": "oracle_timeout"})
                ogrammar = None
    return under_w, over_w
