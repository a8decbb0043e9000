"""Worker job kind ``fuzz``: seeded random walks under one engine's mask for one schema.

``walks`` walks per job, walk ``w`` seeded with ``seed_for(case_id, "walk", w)`` (the same
seeds for every engine), each driven by the length-aware policy
(:mod:`harness.measure.tokens.policy`) within ``walk_tokens`` tokens. A walk that ends on EOS is the
engine's claim that its output is a valid document: it is checked with strict JSON
(``json.loads`` without NaN, duplicate keys or raw control characters) and jsonschema, or,
for a grammar case, by its ground-truth parser and every translation's own reader
(``translation``: the dialects that disagree with the ground truth on the output).

Per walk the record keeps ``seed``, ``status`` (``valid``, ``invalid`` — a witness of a false
accept —, ``undecided`` — jsonschema could not decide —, ``dialect`` — invalid by the ground
truth on a grammar case marked ``dialect_sensitive`` where the flagged construct, tested
alone through the engine, explains the output (:mod:`harness.measure.dialect`; the walk's
``probe`` says how), a dialect difference; an invalid output it does not explain stays
``invalid``, with ``dialect_probe`` —, ``dead_end``, ``runaway``,
``commit_refused``, ``error``), the exact ``tokens`` and, for a runaway, the share of
whitespace-only tokens (``ws_share``: the "endless whitespace" users report).
Outcome: ``invalidation_error`` if any walk is invalid, else ``passing``.
"""

from __future__ import annotations

import time

import numpy as np

from harness.suite import outcomes
from harness.suite.measure import seed_for, token_classes
from suites.fuzz.options import resolve
from harness.suite import JobPayload, Record
from suites.fuzz.records import FuzzRecord, FuzzWalk


def run_fuzz_job(job: JobPayload, phase=lambda p, info=None: None) -> FuzzRecord:
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import target_for
    from harness.suite.measure import DONE, RUNAWAY, walk
    from harness.suite.measure import adapters

    case, eng = job["case"], job["engine"]
    o = resolve(job.get("options"))
    record: Record = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"],
                              "schema_text": case["schema_text"], "token_options": o,
                              "instances": []}
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["engine_version"] = adapters.engine_version(adapter)  # as imported here
    tc = token_classes(vocab)
    record["setup_ns"] = time.perf_counter_ns() - t_busy

    phase("groundtruth")
    target = target_for(case)
    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        grammar = target.compile(adapter)
        bm = allocate_bitmask(vocab.size)
        grammar.matcher().fill_mask(bm)
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e),
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record["ttfm_ns"] = record["compile_ns"] = time.perf_counter_ns() - t0
    record["form"] = target.form

    phase("replay", record["ttfm_ns"])
    budget = int(o["walk_tokens"])
    names = target.names(tc)
    probe = None
    walks: list[FuzzWalk] = []
    for w in range(int(o["walks"])):
        seed = seed_for(case["case_id"], "walk", w)
        t1 = time.perf_counter_ns()
        wk = walk(grammar.matcher(), bm, tc, np.random.default_rng(seed), budget, names=names)
        res: FuzzWalk = {"seed": seed, "walk": w, "n_tokens": len(wk.tokens),
                               "tokens": wk.tokens, "ns": time.perf_counter_ns() - t1}
        if wk.status == DONE:
            raw = b"".join(vocab.tokens[t] for t in wk.tokens)
            chk = target.judge(raw)
            res["status"] = {True: "valid", False: "invalid", None: "undecided"}[chk["valid"]]
            if chk.get("why"):
                res["why"] = chk["why"]
            text = raw.decode("utf-8", "replace")
            if chk["valid"] is False and target.dialect_sensitive and text.encode() == raw:
                # a construct whose meaning differs between dialects: a dialect difference
                # (reported, not an error) only when the construct alone explains the output
                if probe is None:
                    from harness.suite.measure import ConstructProbe, reachability

                    probe = ConstructProbe(adapter, target, vocab, bm, reachability.Budget())
                why = probe.explain(text, True)
                if why["explained"]:
                    res.update(status="dialect", construct=why["construct"], probe=why)
                else:
                    res["dialect_probe"] = why
            # translation drift on every engine's outputs: each form's reader against the
            # ground truth (a disagreement is a defect of the translation, not the engine's)
            drift = [{**t, "text": text} for t in target.translations(text, chk["valid"])]
            if drift:
                res["translation"] = drift
        else:
            res["status"] = wk.status
            if wk.why:
                res["why"] = wk.why
            if wk.status == RUNAWAY and wk.tokens:
                res["ws_share"] = round(float(np.mean(tc.space[wk.tokens])), 3)
        walks.append(res)
    record["fuzz"] = {"walks": walks, "budget": budget}
    record["outcome"] = (outcomes.INVALIDATION_ERROR if any(w["status"] == "invalid" for w in walks)
                         else outcomes.PASSING)
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record
