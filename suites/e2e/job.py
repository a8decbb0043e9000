"""Worker job kind ``e2e``: one schema, one engine, generated under the engine's mask.

Per job: compile (timed; part of TTFT), then at each batch size of ``--batch`` (the first
is the primary one) the measurement protocol:

1. the runtime is made ready outside any timed region (KV capacity, the captured step on
   CUDA) and warmed until its step time is stable (:func:`suites.e2e.protocol.warm_up`:
   the first time a batch size runs in the process up to 400 steps, before every job's
   blocks up to 64; the steps spent are recorded, and whether the rule or the cap ended it);
2. ``blocks`` rounds of two interleaved blocks, constrained (A) then unconstrained (B):
   ABAB…, in this process, on the same weights, with the same seed and budget, so a drift
   of the machine (clocks, caches, other tenants) reaches both sides of each pair alike; the
   GPU's SM clock is read before and after each block;
3. every output of the constrained blocks' first round is validated (strict JSON, then
   jsonschema).

The summary (:mod:`suites.e2e.summary`) pools the pairs of every job into the TPOT
ratio with a bootstrap interval, the forward's ``interference`` and the step's components.
The first job of each engine in a worker process also runs the mask-apply microbenchmark
(:mod:`suites.e2e.maskbench`), whose device times choose the apply kernel on a
GPU (``--apply auto``). The payload's ``options`` dict holds the run options
(:data:`E2E_DEFAULTS`).
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from harness.suite import outcomes
from harness.suite import JobPayload
from suites.e2e.records import (E2EBlock, E2EJobOptions, E2ERecord, E2EOutput, StepStat,
                                WarmUp)

E2E_DEFAULTS: E2EJobOptions = {
    "runtime": "auto",  # llamacpp where installed (CPU), else torch
    "model": "tiny",
    "quant": "Q8_0",  # llamacpp only
    "dtype": None,  # torch only: bf16 (default) or float32
    "max_tokens": 128,
    "batch": 1,
    "overlap": False,
    "device": "cpu",
    "seed": 0,
    "temperature": 1.0,
    "top_p": 1.0,
    "threads": 1,
    "apply": "auto",
    "server": None,
    "graphs": None,  # torch runtime on CUDA: captured decode step (None = on; False = off)
    "blocks": 2,  # rounds of interleaved constrained / unconstrained blocks per batch size
    "mask_bench": "auto",  # batch sizes of the microbenchmark, "auto" or "off"
}


def resolve_options(opts: Mapping[str, Any] | None) -> E2EJobOptions:
    o: E2EJobOptions = {**E2E_DEFAULTS, **{k: v for k, v in (opts or {}).items() if v is not None}}
    # --batch 1,4,8: every job decodes at each batch size (the first is the primary one)
    batches = [int(b) for b in (o["batch"] if isinstance(o["batch"], (list, tuple))
                                else [o["batch"]])]
    if not batches or min(batches) < 1:
        raise ValueError(f"batch sizes must be >= 1, got {o['batch']!r}")
    o["batches"], o["batch"] = batches, batches[0]
    if int(o["blocks"]) < 1:
        raise ValueError(f"blocks must be >= 1, got {o['blocks']!r}")
    o["blocks"] = int(o["blocks"])
    if o["runtime"] == "auto":
        import importlib.util

        from harness.suite.serving import looks_like_checkpoint

        # a checkpoint (--model PATH) decodes on the torch runtime
        o["runtime"] = ("llamacpp" if o["device"] == "cpu" and max(batches) == 1
                        and not looks_like_checkpoint(str(o["model"]))
                        and importlib.util.find_spec("llama_cpp") is not None else "torch")
    if o["runtime"] == "llamacpp" and o["overlap"]:
        # logits_processor runs inside llama-cpp-python's own loop: overlap needs the eval path
        o["runtime"] = "llamacpp:eval"
    return o


def mask_bench_plan(o: E2EJobOptions) -> tuple[tuple[int, ...], bool]:
    """(batch sizes, whether the engines' own kernels are timed) of the microbenchmark:
    ``--mask-bench N,M,...`` those sizes, every kernel; ``auto`` on a GPU: 1, 8, 32, 128,
    every kernel; ``auto`` on a CPU: the run's ``--batch`` sizes, the shared rows only (two
    engines' kernels are ``torch.compile`` functions whose first call compiled for 36 s on
    the 2-core CPU, and on a CPU ``--apply auto`` takes the shared kernel anyway);
    ``off``: none."""
    from suites.e2e.maskbench import GPU_BATCHES

    mb = o.get("mask_bench") or "auto"
    if mb == "off":
        return (), False
    if mb == "auto":
        if str(o["device"]).startswith("cuda"):
            return GPU_BATCHES, True
        return tuple(o["batches"]), False
    return tuple(int(x) for x in str(mb).split(",") if x.strip()), True


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 4)


def step_stats(steps: dict[str, list[int]]) -> dict[str, StepStat]:
    """Median / p99 / mean per component, µs, over decode steps (the prefill step excluded)."""
    out: dict[str, StepStat] = {}
    for k, v in steps.items():
        if not v:
            continue
        a = np.asarray(v[1:] if k in ("forward", "mask", "apply", "sample") and len(v) > 1
                       else v, dtype=np.float64) / 1e3
        out[k] = {"p50": round(float(np.median(a)), 2), "p99": round(float(np.percentile(a, 99)), 2),
                  "mean": round(float(a.mean()), 2)}
    return out


#: runtimes (by id) and the batch sizes already warmed in this process
_WARMED: dict[int, set[int]] = {}


def _prepare(rt, prompt: list[int], max_new: int) -> None:
    from suites.e2e.protocol import WINDOW

    prep = getattr(rt, "prepare", None)
    if prep is not None:
        # the warm-up's windows need WINDOW + 1 positions after the prompt
        prep(len(prompt), max(int(max_new), WINDOW + 1))


def _warm(rt, prompt: list[int], max_new: int) -> WarmUp:
    """The protocol's warm-up of the runtime's current batch size (first: the long one)."""
    from suites.e2e import protocol

    seen = _WARMED.setdefault(id(rt), set())
    first = rt.batch not in seen
    cap = protocol.FIRST_MAX_STEPS if first else protocol.REWARM_MAX_STEPS
    w = protocol.warm_up(rt, prompt, max(int(max_new), protocol.WINDOW + 1), max_steps=cap)
    w["first"] = first
    seen.add(rt.batch)
    if first and hasattr(rt, "warmups"):
        rt.warmups.append({"batch": rt.batch, **{k: w[k] for k in ("steps", "s", "stable")}})
    return w


def run_e2e_job(job: JobPayload, phase=lambda p, info=None: None) -> E2ERecord:
    from engines.protocol import CompileError, one_line
    from harness.suite.serving import model_prompt
    from suites.e2e.runtime_cache import get_runtime
    from harness.suite.measure import GroundTruth
    from harness.suite.measure import adapters

    case, eng = job["case"], job["engine"]
    o = resolve_options(job.get("options"))
    if o.get("server"):
        from suites.e2e.server_job import run_server_job

        return run_server_job(job, o, phase)
    from harness.suite import adapter_class

    if adapter_class(eng["name"]).serving_engine:
        from suites.e2e.vllm_job import run_vllm_job

        return run_vllm_job(job, o, phase)
    record: E2ERecord = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"]}
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["engine_version"] = adapters.engine_version(adapter)  # as imported here
    rt = get_runtime(o)
    if getattr(rt, "vocab_checked", None) is None and hasattr(rt, "check_vocabulary"):
        rt.check_vocabulary(vocab)
    prompt = model_prompt(o["model"], vocab, case["schema_text"])
    gbnf = type(adapter).grammar_runtime == o["runtime"]
    batches = o["batches"] if not gbnf else o["batches"][:1]
    # one-time costs of this process, outside the job's time limit: the first warm-up of
    # every batch size (CUDA: with its graph capture) and the microbenchmark
    first_warm: dict[str, WarmUp] = {}
    for b in batches:
        rt_b = get_runtime({**o, "batch": b})
        if b not in _WARMED.get(id(rt_b), set()):
            _prepare(rt_b, prompt, o["max_tokens"])
            first_warm[str(b)] = _warm(rt_b, prompt, o["max_tokens"])
    rt = get_runtime(o)
    bench = None
    mb, own_kernels = (mask_bench_plan(o) if not gbnf and o["runtime"] == "torch"
                       else ((), False))
    if mb:
        from suites.e2e import maskbench

        cuda = str(o["device"]).startswith("cuda")
        bench, fresh = maskbench.once(rt.device, mb, vocab.size,
                                      eng["name"] if own_kernels else None,
                                      n=200 if cuda else 20, warmup=20 if cuda else 3,
                                      budget_s=90 if cuda else 30)
        if fresh:
            record["mask_bench"] = bench
    record["e2e_config"] = {**{k: o[k] for k in ("runtime", "model", "max_tokens", "batch",
                                                 "batches", "overlap", "device", "seed",
                                                 "temperature", "top_p", "apply", "blocks")},
                            "runtime_info": rt.describe()}
    record["setup_ns"] = time.perf_counter_ns() - t_busy

    phase("groundtruth")  # the job's own time limit starts here
    truth = GroundTruth.for_case(case)

    # the runtime's own grammar sampler (llama.cpp: Llama.generate(grammar=...)) instead
    # of a matcher, for an engine that is that sampler
    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        if gbnf:
            grammar = adapter.runtime_grammar(case["schema_text"])
            t1 = time.perf_counter_ns()
        else:
            grammar = adapter.compile(case["schema_text"])
            t1 = time.perf_counter_ns()
            grammar.matcher()  # the first matcher's cost is part of TTFT
        t2 = time.perf_counter_ns()
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e),
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record.update(compile_ns=t1 - t0, matcher_ns=t2 - t1)

    phase("decode")
    if o["runtime"] == "llamacpp":
        from suites.e2e.runtime_llamacpp import processor_decode as run_decode
    else:
        from suites.e2e.loop import decode as run_decode
    points, protocol_rec, primary = [], {"blocks": {}, "warmup": {}}, None
    from suites.e2e.protocol import sm_clock

    clock = sm_clock(rt.device)
    protocol_rec["clock_source"] = clock.source
    for b in batches:
        rt_b = get_runtime({**o, "batch": b})
        _prepare(rt_b, prompt, o["max_tokens"])
        warm = first_warm.get(str(b)) or _warm(rt_b, prompt, o["max_tokens"])
        protocol_rec["warmup"][str(b)] = warm
        timings = _kernel_timings(bench, b)
        blocks, first_con, first_unc, con_info = [], None, None, {}
        for r in range(o["blocks"]):
            for mode in ("constrained", "unconstrained"):
                before = clock.read()
                if mode == "constrained":
                    if gbnf:
                        con = _gbnf(rt_b, prompt, vocab, grammar, o)
                    else:
                        matchers = [grammar.matcher() for _ in range(b)]
                        con = _constrained(rt_b, run_decode, prompt, vocab, matchers,
                                           eng["name"], o, adapter, timings)
                    if con.get("error"):
                        record.update(outcome=outcomes.CRASH, error=con["error"],
                                      busy_ns=time.perf_counter_ns() - t_busy)
                        return record
                    res = con["result"]
                    if first_con is None:
                        first_con, con_info = res, con
                else:
                    res = _unconstrained(rt_b, run_decode, prompt, vocab, o)
                    if first_unc is None:
                        first_unc = res
                after = clock.read()
                blocks.append({"mode": mode, "round": r, "sm_mhz": [before, after],
                               "tokens": sum(s.n_emitted for s in res.sequences),
                               "steps": {k: list(v) for k, v in res.steps.items() if v}})
        protocol_rec["blocks"][str(b)] = blocks
        point = _batch_point(b, con_info, first_con, first_unc, blocks,
                             _invalid_of(first_con, vocab, truth))
        points.append(point)
        if primary is None:
            primary = (con_info, first_con, first_unc)
    get_runtime(o)  # back to the primary batch size for the next job
    con, res, unc = primary
    record["protocol"] = protocol_rec

    phase("validate")
    outputs: list[E2EOutput] = []
    invalid = unknown = 0
    from harness.suite.measure import check_output, detokenize

    for s in res.sequences:
        out: E2EOutput = {"stop": s.stop, "n_tokens": len(s.tokens),
                               "stop_token": s.stop_token}
        raw = detokenize(vocab.tokens, s.tokens)
        out["text"] = raw[:400].decode("utf-8", "replace")
        if s.stop == "eos":
            chk = check_output(raw, truth)
            out.update(chk)
            if chk["valid"] is False:
                invalid += 1
                out["witness"] = list(s.tokens) + [s.stop_token]
            elif chk["valid"] is None:
                unknown += 1
        elif s.stop in ("rejected", "eos_refused", "mask_leak"):
            out["witness"] = list(s.tokens) + [s.stop_token]
        outputs.append(out)
    # the first invalid output of any batch size (a further size's outputs are validated
    # but not kept in ``outputs``: looking only there raised StopIteration when the primary
    # batch's outputs were all valid)
    first_invalid = next((f"batch {pt['batch']}: {pt['first_invalid']}" if i else
                          pt["first_invalid"] for i, pt in enumerate(points)
                          if pt.get("first_invalid")), None)

    blocks0 = protocol_rec["blocks"][str(o["batch"])]
    con_steps = np.asarray(sum((bl["steps"].get("step", []) for bl in blocks0
                                if bl["mode"] == "constrained"), []), dtype=np.float64)
    unc_steps = np.asarray(sum((bl["steps"].get("step", []) for bl in blocks0
                                if bl["mode"] == "unconstrained"), []), dtype=np.float64)
    first_mask_ns = res.steps["mask"][0] if res.steps.get("mask") else 0
    tpot = float(con_steps.mean()) if con_steps.size else None
    tpot_u = float(unc_steps.mean()) if unc_steps.size else None
    stops = [s.stop for s in res.sequences]
    e2e: E2EBlock = {
        "schedule": res.schedule,
        "api": con.get("api", "loop"),
        "apply_kernel": con.get("kernel"),
        "prompt_tokens": len(prompt),
        "ttft_ns": record["compile_ns"] + record["matcher_ns"] + res.ttft_ns,
        "ttft_unconstrained_ns": unc.ttft_ns,
        "prefill_ns": res.prefill_ns,
        # TPOT: the mean step over every block of the primary batch size (the user's time
        # per token); the median and p99 beside it
        "tpot_ns": tpot,
        "tpot_p50_ns": float(np.median(con_steps)) if con_steps.size else None,
        "tpot_p99_ns": float(np.percentile(con_steps, 99)) if con_steps.size else None,
        "tpot_unconstrained_ns": tpot_u,
        "tpot_unconstrained_p50_ns": float(np.median(unc_steps)) if unc_steps.size else None,
        "tpot_unconstrained_p99_ns": (float(np.percentile(unc_steps, 99))
                                      if unc_steps.size else None),
        "tpot_ratio": round(tpot / tpot_u, 4) if tpot and tpot_u else None,
        "steps_us": step_stats(res.steps),
        "steps_unconstrained_us": step_stats(unc.steps),
        "outputs": len(outputs),
        "eos": stops.count("eos"),
        "valid_outputs": sum(1 for x in outputs if x.get("valid") is True),
        "invalid_outputs": invalid,
        "unknown_outputs": unknown,
        "runaways": stops.count("runaway"),
        "dead_ends": stops.count("dead_end"),
        "rejected": stops.count("rejected"),
        "eos_refused": stops.count("eos_refused"),
        "mask_leaks": stops.count("mask_leak"),
        "tokens": sum(s.n_emitted for s in res.sequences),
        "unconstrained_tokens": sum(s.n_emitted for s in unc.sequences),
    }
    for k in ("processor_calls", "tokens_sampled", "fill", "apply_timings_us"):
        if k in con:
            e2e[k] = con[k]
    if len(points) > 1:
        e2e["by_batch"] = points
        record["steps_by_batch_ns"] = {
            str(pt["batch"]): {
                "step": sum((bl["steps"].get("step", []) for bl in
                             protocol_rec["blocks"][str(pt["batch"])]
                             if bl["mode"] == "constrained"), []),
                "unconstrained": sum((bl["steps"].get("step", []) for bl in
                                      protocol_rec["blocks"][str(pt["batch"])]
                                      if bl["mode"] == "unconstrained"), [])}
            for pt in points}
        invalid += sum(pt["invalid_outputs"] for pt in points[1:])
    record["e2e"] = e2e
    record["outputs"] = outputs
    record["steps_ns"] = {k: v for k, v in res.steps.items() if v}
    record["steps_unconstrained_ns"] = {k: v for k, v in unc.steps.items() if v}
    record["ttfm_ns"] = record["compile_ns"] + record["matcher_ns"] + first_mask_ns
    record["tokens"] = e2e["tokens"]
    bad = [x for x in outputs if x["stop"] in ("rejected", "eos_refused", "mask_leak")]
    if invalid:
        record["outcome"] = outcomes.INVALIDATION_ERROR
        record["error"] = f"invalid output under the mask: {first_invalid}"
    elif bad:
        record["outcome"] = outcomes.VALIDATION_ERROR
        record["error"] = f"engine inconsistent: {bad[0]['stop']} at token {bad[0]['stop_token']}"
    else:
        record["outcome"] = outcomes.PASSING
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _kernel_timings(bench: dict[str, Any] | None, batch: int) -> dict[str, float | None]:
    """Device µs per call of each apply kernel at the microbenchmark's batch size nearest
    to ``batch`` (``{}`` without a microbenchmark)."""
    if not bench or not bench.get("rows"):
        return {}
    from suites.e2e.maskbench import device_us

    sizes = sorted({r["batch"] for r in bench["rows"]})
    near = min(sizes, key=lambda s: (abs(s - batch), s))
    return {r["kernel"]: device_us(r) for r in bench["rows"] if r["batch"] == near}


def _constrained(rt, run_decode, prompt, vocab, matchers, engine_name, o,
                 adapter=None, timings: dict[str, float | None] | None = None) -> dict[str, Any]:
    from harness.suite.engines import default_fill_threads
    from suites.e2e.sampling import Bitmask, Sampler, apply_kernel

    kernel, apply = apply_kernel(engine_name, o["apply"], rt.device, timings)
    if getattr(run_decode, "__name__", "") == "processor_decode":
        kernel = "numpy, inside the logits_processor"
    bm = Bitmask(rt.batch, vocab.size, rt.device)
    sampler = Sampler(o["temperature"], o["top_p"], o["seed"], rt.device)
    kw: dict[str, Any] = {}
    filler = None
    if rt.batch > 1 and adapter is not None:
        filler = adapter.batch_filler(default_fill_threads(rt.batch))
        kw["filler"] = filler
    try:
        res = run_decode(rt, prompt, stop_ids=vocab.stop_ids, max_tokens=o["max_tokens"],
                         sampler=sampler, matchers=matchers, bitmask=bm, apply=apply,
                         overlap=bool(o["overlap"]), **kw)
    finally:
        if filler is not None:
            filler.close()
    out = {"result": res, "kernel": kernel}
    if timings:
        out["apply_timings_us"] = {k: v for k, v in timings.items()
                                   if k == "shared" or k.startswith("engine:")}
    if filler is not None:
        out["fill"] = f"{filler.method} ({filler.threads} threads)"
    extra = getattr(res, "extra", None) or {}
    out.update(extra)
    return out


def _gbnf(rt, prompt, vocab, grammar, o) -> dict[str, Any]:
    from suites.e2e.runtime_llamacpp import processor_decode
    from suites.e2e.sampling import Sampler

    sampler = Sampler(o["temperature"], o["top_p"], o["seed"], rt.device)
    res = processor_decode(rt, prompt, stop_ids=vocab.stop_ids, max_tokens=o["max_tokens"],
                           sampler=sampler, grammar=grammar)
    res.constrained = True
    return {"result": res, "kernel": "llama.cpp grammar sampler", **res.extra}


def _unconstrained(rt, run_decode, prompt, vocab, o):
    """The baseline: the same loop, schedule, sampler, seed and budget, without a mask."""
    from suites.e2e.sampling import Sampler

    sampler = Sampler(o["temperature"], o["top_p"], o["seed"], rt.device)
    kw = {} if getattr(run_decode, "__name__", "") == "processor_decode" else \
        {"overlap": bool(o["overlap"])}
    return run_decode(rt, prompt, stop_ids=vocab.stop_ids, max_tokens=o["max_tokens"],
                      sampler=sampler, **kw)


def _invalid_of(res, vocab, truth) -> tuple[int, str | None]:
    """(invalid outputs among a decode's EOS-ended sequences, the first one's reason)."""
    from harness.suite.measure import check_output, detokenize

    whys = [chk["why"] for s in res.sequences if s.stop == "eos"
            for chk in [check_output(detokenize(vocab.tokens, s.tokens), truth)]
            if chk["valid"] is False]
    return len(whys), (whys[0] if whys else None)


def _batch_point(batch: int, con: dict[str, Any], res, unc, blocks: list[dict[str, Any]],
                 invalid: tuple[int, str | None]) -> dict[str, Any]:
    """One point of the TPOT-against-batch curve: this job's blocks at one batch size (ns;
    TPOT = mean step over the blocks of a mode, the median beside it)."""
    def pooled(mode: str) -> np.ndarray:
        return np.asarray(sum((bl["steps"].get("step", []) for bl in blocks
                               if bl["mode"] == mode), []), dtype=np.float64)

    cs, us = pooled("constrained"), pooled("unconstrained")
    mk = np.asarray(res.steps.get("mask", [])[1:], dtype=np.float64)
    tpot = float(cs.mean()) if cs.size else None
    tpot_u = float(us.mean()) if us.size else None
    return {"batch": batch, "fill": con.get("fill"), "apply_kernel": con.get("kernel"),
            "tpot_ns": tpot, "tpot_unconstrained_ns": tpot_u,
            "tpot_p50_ns": float(np.median(cs)) if cs.size else None,
            "tpot_unconstrained_p50_ns": float(np.median(us)) if us.size else None,
            "tpot_ratio": round(tpot / tpot_u, 4) if tpot and tpot_u else None,
            "mask_p50_ns": float(np.median(mk)) if mk.size else None,
            "tokens": sum(s.n_emitted for s in res.sequences),
            "runaways": sum(1 for s in res.sequences if s.stop == "runaway"),
            "invalid_outputs": invalid[0], "first_invalid": invalid[1]}
