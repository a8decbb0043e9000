"""Worker job of the ``tools`` suite: one tool-call request through one engine.

The engine gets the request in its own native form
(:meth:`engines.protocol.EngineAdapter.compile_tool_calls`; the record's ``form`` says which).
Measured, in nanoseconds:

``compile``   ``cold_ns``: the request compiled by a fresh long-lived compiler
              (:meth:`~engines.protocol.EngineAdapter.cached_compiler`, the engine's own cache
              on and empty); ``warm_ns``: the same request again through that compiler
              (``warm_hit``: its cache did not grow, where the engine reports its size);
              ``overlap_ns``: then a request sharing half its tools (``overlap_shared``
              of them) with the first. ``ttfm_ns``: cold compile + matcher + first mask.
``replay``    every instance token by token with the EOS check
              (:func:`harness.measure.replay.replay`), its verdict from the ground truth
              (:class:`suites.tools.truth.ToolTruth`); ``call_spans``: the ``[first,
              end)`` token ranges inside calls, so that the analysis splits TBM between
              free text and calls.
``fuzz``      ``tool_walks`` seeded walks under the engine's mask from the start of a
              call (after the free text of the first valid output, with the call's name
              prefix), driven by the length-aware policy
              (:mod:`harness.measure.tokens.policy`) with the tools' names and property
              names to spell; each finished output is judged by the ground truth
              (``valid`` / ``invalid`` / ``runaway`` / ``dead_end`` …).

A refused or failed compile is ``compile_error`` with its one line (``error``); a warm or
overlap compile that fails is kept as ``warm_error`` / ``overlap_error`` and the job goes on.
"""

from __future__ import annotations

import gc
import json
import time

import numpy as np

from harness.suite.measure import adapters
from harness.suite import outcomes
from harness.suite.measure import replay
from harness.suite import CasePayload, JobPayload
from suites.tools.records import (ToolsEvents, ToolsFuzzBlock, ToolsInstance, ToolsRecord,
                                  ToolsWalk)

__all__ = ["run_tools_job"]


def _byte_offsets(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(len(text[:a].encode("utf-8")), len(text[:b].encode("utf-8"))) for a, b in spans]


def call_spans(tokens: list[int], token_bytes, spans: list[tuple[int, int]]) -> list[list[int]]:
    """Token ranges ``[first, end)`` whose tokens start inside one of the byte ``spans``."""
    out: list[list[int]] = []
    pos = 0
    starts = []
    for t in tokens:
        starts.append(pos)
        pos += len(token_bytes[t])
    for a, b in spans:
        idx = [i for i, s in enumerate(starts) if a <= s < b]
        if idx:
            out.append([idx[0], idx[-1] + 1])
    return out


def run_tools_job(job: JobPayload, phase=lambda p, info=None: None) -> ToolsRecord:
    """Run one (tools case, engine) job to its record."""
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line
    from harness.suite.engines import ToolSpec
    from suites.tools.truth import ToolTruth

    case = job["case"]
    req = case["request"]
    opts = job.get("options") or {}
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    record.update(tool_count=req["tools"], tool_format=req["format"], mode=req["mode"])
    phase("groundtruth")  # setup done: the job's own time limit starts here
    spec = ToolSpec.from_json(req["spec"])
    overlap = ToolSpec.from_json(req["overlap"]) if req.get("overlap") else None
    truth = ToolTruth(spec)
    record["form"] = adapter.tool_call_form

    phase("compile")
    gc.collect()
    clock = time.perf_counter_ns
    cc = adapter.cached_compiler()
    bitmask = allocate_bitmask(vocab.size)
    t0 = clock()
    try:
        grammar = cc.compile_tool_calls(spec)
        t1 = clock()
        grammar.matcher().fill_mask(bitmask)
        t2 = clock()
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e), cold_ns=clock() - t0,
                      busy_ns=clock() - t_busy)
        return record
    record.update(cold_ns=t1 - t0, compile_ns=t1 - t0, ttfm_ns=t2 - t0,
                  form=getattr(grammar, "form", None) or adapter.tool_call_form)
    before = cc.cache_bytes()
    t0 = clock()
    try:
        cc.compile_tool_calls(spec)
        record["warm_ns"] = clock() - t0
        after = cc.cache_bytes()
        if before is not None and after is not None:
            record["warm_hit"] = after == before
    except CompileError as e:
        record["warm_error"] = one_line(e)
    if overlap is not None:
        t0 = clock()
        try:
            cc.compile_tool_calls(overlap)
            record["overlap_ns"] = clock() - t0
            record["overlap_shared"] = req.get("shared")
        except CompileError as e:
            record["overlap_error"] = one_line(e)
    record["cache"] = cc.describe

    phase("replay", record["ttfm_ns"])
    instances = []
    kinds = req.get("kinds") or []
    for item in case["instances"]:
        text = item["text"]
        v = truth.judge_text(text)
        expected = item["label"] if v["valid"] is None else v["valid"]
        tokens = vocab.encode(text)
        r = replay(grammar.matcher(), tokens, bitmask, vocab.stop_ids)
        spans = _byte_offsets(text, [(c["start"], c["end"]) for c in v.get("calls", ())])
        inst: ToolsInstance = {"index": item["index"], "kind": kinds[item["index"]] if item["index"] < len(kinds) else "", "label": item["label"],
                "truth": v["valid"], "expected": expected, "text": text,
                "results": {"text": r.to_json()}, "call_spans": call_spans(tokens, vocab.tokens, spans)}
        if not v["valid"] and v.get("why"):
            inst["why"] = v["why"]
        instances.append(inst)
    record["instances"] = instances
    record["tokens"] = sum(len(i["results"]["text"].get("mask_ns", ())) for i in instances)
    record["outcome"] = outcomes.classify(instances, "text")
    record["events"] = _events(grammar, truth, spec, case, vocab, bitmask)
    if opts.get("model"):
        phase("decode")
        record["events"] += _model_events(grammar, truth, spec, case, vocab, bitmask, opts)

    walks = int(opts.get("tool_walks", 8))
    if walks:
        phase("fuzz")
        record["fuzz"] = _fuzz(grammar, truth, spec, case, vocab, bitmask, walks,
                               int(opts.get("tool_walk_tokens", 256)))
        if any(w["status"] == "invalid" for w in record["fuzz"]["walks"]) \
                and record["outcome"] == outcomes.PASSING:
            record["outcome"] = outcomes.INVALIDATION_ERROR
    record["busy_ns"] = clock() - t_busy
    return record


def _events(grammar, truth, spec, case: CasePayload, vocab, bitmask: np.ndarray
            ) -> list[ToolsEvents]:
    """The streaming parse events of every call of each valid instance (the ground-truth
    calls, :func:`suites.tools.events.trace_events`), each on a fresh matcher."""
    out: list[ToolsEvents] = []
    for item in case["instances"]:
        if not item["label"]:
            continue
        got = _trace(grammar, truth, spec, vocab, bitmask, item["text"],
                     vocab.encode(item["text"]))
        if got is not None:
            out.append({"index": item["index"], "source": "truth", **got})
    return out


def _trace(grammar, truth, spec, vocab, bitmask: np.ndarray, text: str,
           tokens: list[int]) -> ToolsEvents | None:
    from suites.tools.events import frames, trace_events

    p = truth.parse(text)
    if p.error is not None or not p.calls:
        return None
    required = {n: list(json.loads(s).get("required") or []) for n, s in spec.tools}
    return trace_events(grammar, tokens, vocab.tokens, frozenset(vocab.stop_ids),
                        frames(text, p.calls, spec.fmt, required),
                        [n.encode() for n, _ in spec.callable_tools()], bitmask)


def _model_events(grammar, truth, spec, case: CasePayload, vocab, bitmask: np.ndarray,
                  opts) -> list[ToolsEvents]:
    """The checkpoint's own outputs under the engine's grammar (``--model``): one greedy and
    ``tool_instances`` sampled at temperature 1 (seeded by case and sample), prompted with
    the request as one schema (each tool's call as an object: ``name`` its constant,
    the arguments its parameters); the events of each valid one."""
    import hashlib

    from harness.suite.model import decode, load_checkpoint, load_model
    from suites.tools.options import MODEL_MAX_TOKENS

    ckpt = load_checkpoint(str(opts["model"]))
    tok = ckpt.tokenizer()
    args_key = spec.fmt.args_prefix.strip('", :')
    schema = {"anyOf": [{"type": "object", "properties": {"name": {"const": n},
                                                          args_key: json.loads(sch)},
                         "required": ["name", args_key]} for n, sch in spec.callable_tools()]}
    prompt = ckpt.prompt_format.prompt_ids(tok, schema)
    model = load_model(str(ckpt.folder))
    out: list[ToolsEvents] = []
    budget = int(opts.get("max_tokens") or MODEL_MAX_TOKENS)
    for k in range(int(opts.get("tool_instances", 3)) + 1):
        seed = int(hashlib.sha256(f"{case['case_id']}\0{k}".encode()).hexdigest()[:12], 16)
        temp = 0.0 if k == 0 else 1.0
        r = decode(model, prompt, stop_ids=ckpt.eos_ids, max_tokens=budget,
                   temperature=temp, seed=seed, matcher=grammar.matcher(), bitmask=bitmask,
                   vocab_size=vocab.size)
        text = b"".join(vocab.tokens[t] for t in r["tokens"]).decode("utf-8", "replace")
        v = truth.judge_text(text) if r["end"] == "eos" else {"valid": False}
        item: ToolsEvents = {"index": k, "source": "model", "temperature": temp,
                             "output_end": r["end"], "valid": bool(v.get("valid")),
                             "digest": hashlib.sha256(text.encode()).hexdigest()[:16],
                             "text": text[:400]}
        if item["valid"]:
            got = _trace(grammar, truth, spec, vocab, bitmask, text, r["tokens"])
            if got is not None:
                item.update(got)
        out.append(item)
    return out


def _fuzz(grammar, truth, spec, case: CasePayload, vocab, bitmask: np.ndarray, walks: int,
          budget: int) -> ToolsFuzzBlock:
    from harness.suite.measure import seed_for, token_classes
    from harness.suite.measure import DONE, walk, schema_names

    tc = token_classes(vocab)
    fmt = spec.fmt
    lead = ""
    kinds = case["request"].get("kinds") or []
    for item in case["instances"]:
        valid = item["index"] < len(kinds) and kinds[item["index"]] == "valid"
        if valid and fmt.trigger in item["text"]:
            lead = item["text"][: item["text"].index(fmt.trigger)]
            break
    prefix = vocab.encode(lead + fmt.name_prefix)
    names_doc = json.dumps({"required": [n for n, _ in spec.callable_tools()],
                            "anyOf": [json.loads(s) for _, s in spec.callable_tools()]})
    names = schema_names(tc, names_doc)
    out = []
    for w in range(walks):
        seed = seed_for(case["case_id"], "tool-walk", w)
        m = grammar.matcher()
        res: ToolsWalk = {"walk": w, "seed": seed}
        if not all(m.commit(t) for t in prefix):
            res.update(status="prefix_refused", why="the engine refused the start of a call")
            out.append(res)
            continue
        t0 = time.perf_counter_ns()
        wk = walk(m, bitmask, tc, np.random.default_rng(seed), budget, prefix=prefix, names=names)
        res.update(n_tokens=len(wk.tokens), ns=time.perf_counter_ns() - t0)
        if wk.status == DONE:
            raw = b"".join(vocab.tokens[t] for t in list(prefix) + wk.tokens)
            chk = truth.judge(raw)
            res["status"] = {True: "valid", False: "invalid", None: "undecided"}[chk["valid"]]
            if chk["valid"] is False:
                res.update(why=chk.get("why"), kind=chk.get("kind"),
                           text=raw.decode("utf-8", "replace")[:2000])
        else:
            res["status"] = wk.status
            if wk.why:
                res["why"] = wk.why
        out.append(res)
    return {"walks": out, "budget": budget, "prefix": lead + fmt.name_prefix}
