"""Worker job of the ``grammars`` suite: the token-by-token replay of a grammar case.

The same measurement as the JSON suites' replay (:func:`harness.measure.replay.replay`:
TTFM, TBM, false rejects / accepts with the EOS check, mask/commit disagreements), on
instances that are exact texts (serialisation ``text``), with the expected verdict from
the case's ground-truth parser (:mod:`harness.measure.languages`), never from the label.

Two kinds of instance are kept out of the engine's false rejects and accepts, in their
own lists of the record:

``translation``  the form the engine was given disagrees with the ground truth on the
                 text (by that dialect's own reader): a defect of our translation;
``dialect``      the case is marked ``dialect_sensitive``, the engine's verdict differs
                 from the ground truth, and the flagged construct, tested alone through
                 the same engine, explains the verdict (:mod:`harness.measure.dialect`;
                 the entry's ``probe`` says how): a dialect difference of the engine,
                 reported. A difference the construct does not explain stays among the
                 instances, an ordinary false reject or accept, with the probe's finding
                 under ``dialect_probe``.

Every valid instance the engine refused gets its kind (:mod:`harness.measure.reachability`,
after the replay, outside the timed region): ``reject_kind`` ``unwritable`` (no
tokenisation is accepted), ``tokenization`` (another one is, ``reachable_tokens``) or
``undecided``, in its replay result.

The record also names the form the engine was given (``form``; ``form_derived`` when
it was derived by code, e.g. a choice menu's alternation).
"""

from __future__ import annotations

import gc
import time

from harness.suite.measure import adapters, reachability
from harness.suite import outcomes
from harness.suite.measure import ConstructProbe
from harness.suite.measure import ACCEPTED, preemptions, replay
from harness.suite import JobPayload
from suites.grammars.records import (DialectFinding, GrammarInstance, GrammarRecord,
                                     TranslationFinding)

__all__ = ["run_grammar_job"]


def run_grammar_job(job: JobPayload, phase=lambda p, info=None: None) -> GrammarRecord:
    """Run one (grammar case, engine) job to its record."""
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import ReaderError
    from harness.suite.measure import GrammarTarget

    case, eng = job["case"], job["engine"]
    g = case["grammar"]
    record: GrammarRecord = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"],
                              "family": g["family"]}
    if g.get("size") is not None:
        record["grammar_size"] = g["size"]
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["setup_ns"] = time.perf_counter_ns() - t_busy
    record["engine_version"] = adapters.engine_version(adapter)

    phase("groundtruth")
    try:
        target = GrammarTarget(case)
    except ReaderError as e:  # the source form itself is broken: not an engine result
        record.update(outcome=outcomes.BAD_INPUT, error=f"{case['case_id']}: {e}",
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    instances: list[GrammarInstance] = []
    for item in case["instances"]:
        text = item["text"]
        verdict = target.verdict(text)
        inst: GrammarInstance = {"index": item["index"], "label": item["label"], "truth": verdict,
                                "expected": item["label"] if verdict is None else verdict,
                                "text": text}
        if verdict is not None and verdict != item["label"]:
            inst["label_disagrees"] = True
            inst["label_reason"] = "the ground-truth parser disagrees with the file's label"
        instances.append(inst)

    phase("compile")
    gc.collect()
    t0 = time.perf_counter_ns()
    try:
        grammar = target.compile(adapter)
        t1 = time.perf_counter_ns()
        matcher = grammar.matcher()
        bitmask = allocate_bitmask(vocab.size)
        t2 = time.perf_counter_ns()
        matcher.fill_mask(bitmask)
        t3 = time.perf_counter_ns()
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e), form=target.form,
                      compile_ns=time.perf_counter_ns() - t0, instances=instances)
        record["busy_ns"] = time.perf_counter_ns() - t_busy
        return record
    record.update(compile_ns=t1 - t0, matcher_ns=t2 - t1, first_mask_ns=t3 - t2,
                  ttfm_ns=t3 - t0, form=target.form)
    if target.derived:
        record["form_derived"] = True

    phase("replay", record["ttfm_ns"])
    kept: list[GrammarInstance] = []
    translation: list[TranslationFinding] = []
    dialect: list[DialectFinding] = []
    sensitive = g.get("dialect_sensitive")
    budget = reachability.Budget()
    probe = ConstructProbe(adapter, target, vocab, bitmask, budget) if sensitive else None
    preempted = 0
    for inst in instances:
        tokens = vocab.encode(inst["text"])
        c0 = preemptions()
        r = replay(grammar.matcher(), tokens, bitmask, vocab.stop_ids)
        if c0 is not None:  # every timed replay, the kept ones among them: an upper bound
            preempted += preemptions() - c0
        res = r.to_json()
        inst["results"] = {"text": res}
        accepted = r.status == ACCEPTED
        if inst["expected"] is True and not accepted:  # after the timed replay
            reachability.classify(res, grammar, vocab, inst["text"], bitmask, budget)
        form_verdict = target.form_verdict(target.form, inst["text"])
        if inst["truth"] is not None and form_verdict is not None \
                and form_verdict != inst["truth"]:
            translation.append({"index": inst["index"], "text": inst["text"],
                                "truth": inst["truth"], "dialect": target.form,
                                "form_verdict": form_verdict, "status": r.status})
            continue
        if probe is not None and inst["truth"] is not None and accepted != inst["truth"]:
            why = probe.explain(inst["text"], accepted)
            if why["explained"]:
                dialect.append({"index": inst["index"], "text": inst["text"],
                                "truth": inst["truth"], "status": r.status,
                                "construct": why["construct"] or sensitive, "probe": why,
                                **{k: res[k] for k in ("reject_kind", "reachable_tokens")
                                   if k in res}})
                continue
            inst["dialect_probe"] = why
        kept.append(inst)
    record["instances"] = kept
    if translation:
        record["translation"] = translation
    if dialect:
        record["dialect"] = dialect
    record["outcome"] = outcomes.classify(kept, "text")
    record["tokens"] = sum(len(i["results"]["text"].get("mask_ns", ())) for i in kept)
    if preemptions() is not None:
        record["preempted"] = preempted
    stats = getattr(grammar, "stats", None)
    if callable(stats):
        record["engine_stats"] = stats()
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record
