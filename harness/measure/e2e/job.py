"""Worker job kind ``e2e``: one schema, one engine, generated under the engine's mask.

Per job: compile (timed; part of TTFT), a constrained decode (serial or overlapped), an
unconstrained decode of the same runtime, sampler, seed and budget (the baseline of the
TPOT ratio), and the validation of every output the engine let end (strict JSON, then
jsonschema). The payload's ``options`` dict holds the run options (:data:`E2E_DEFAULTS`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from harness.measure import outcomes

E2E_DEFAULTS: dict[str, Any] = {
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
}


def resolve_options(opts: dict[str, Any] | None) -> dict[str, Any]:
    o = {**E2E_DEFAULTS, **{k: v for k, v in (opts or {}).items() if v is not None}}
    # --batch 1,4,8: every job decodes at each batch size (the first is the primary one)
    batches = [int(b) for b in (o["batch"] if isinstance(o["batch"], (list, tuple))
                                else [o["batch"]])]
    if not batches or min(batches) < 1:
        raise ValueError(f"batch sizes must be >= 1, got {o['batch']!r}")
    o["batches"], o["batch"] = batches, batches[0]
    if o["runtime"] == "auto":
        import importlib.util

        o["runtime"] = ("llamacpp" if o["device"] == "cpu" and max(batches) == 1
                        and importlib.util.find_spec("llama_cpp") is not None else "torch")
    if o["runtime"] == "llamacpp" and o["overlap"]:
        # logits_processor runs inside llama-cpp-python's own loop: overlap needs the eval path
        o["runtime"] = "llamacpp:eval"
    return o


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 4)


def step_stats(steps: dict[str, list[int]]) -> dict[str, Any]:
    """Median / p99 / mean per component, µs, over decode steps (the prefill step excluded)."""
    out = {}
    for k, v in steps.items():
        if not v:
            continue
        a = np.asarray(v[1:] if k in ("forward", "mask", "apply", "sample") and len(v) > 1
                       else v, dtype=np.float64) / 1e3
        out[k] = {"p50": round(float(np.median(a)), 2), "p99": round(float(np.percentile(a, 99)), 2),
                  "mean": round(float(a.mean()), 2)}
    return out


def run_e2e_job(job: dict[str, Any], phase=lambda p, info=None: None) -> dict[str, Any]:
    from engines.base import CompileError, one_line
    from harness.measure.e2e.prompt import build_prompt
    from harness.measure.e2e.runtime_cache import get_runtime
    from harness.measure.e2e.validate import check_output, detokenize
    from harness.measure.groundtruth import GroundTruth
    from harness.measure import adapters

    case, eng = job["case"], job["engine"]
    o = resolve_options(job.get("options"))
    if o.get("server"):
        from harness.measure.e2e.server_job import run_server_job

        return run_server_job(job, o, phase)
    from harness.registry import adapter_class

    if adapter_class(eng["name"]).serving_engine:
        from harness.measure.e2e.vllm_job import run_vllm_job

        return run_vllm_job(job, o, phase)
    record: dict[str, Any] = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"]}
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["engine_version"] = adapters.engine_version(adapter)  # as imported here
    rt = get_runtime(o)
    if getattr(rt, "vocab_checked", None) is None and hasattr(rt, "check_vocabulary"):
        rt.check_vocabulary(vocab)
    record["e2e_config"] = {**{k: o[k] for k in ("runtime", "model", "max_tokens", "batch", "batches",
                                                 "overlap", "device", "seed", "temperature",
                                                 "top_p", "apply")},
                            "runtime_info": rt.describe()}
    record["setup_ns"] = time.perf_counter_ns() - t_busy

    phase("groundtruth")  # the job's own time limit starts here
    truth = GroundTruth.for_case(case)
    prompt = build_prompt(vocab, case["schema_text"])

    # the runtime's own grammar sampler (llama.cpp: Llama.generate(grammar=...)) instead
    # of a matcher, for an engine that is that sampler
    gbnf = type(adapter).grammar_runtime == o["runtime"]
    phase("compile")
    t0 = time.perf_counter_ns()
    try:
        if gbnf:
            grammar = adapter.runtime_grammar(case["schema_text"])
            t1 = time.perf_counter_ns()
            matchers = None
        else:
            grammar = adapter.compile(case["schema_text"])
            t1 = time.perf_counter_ns()
            matchers = [grammar.matcher() for _ in range(rt.batch)]
        t2 = time.perf_counter_ns()
    except CompileError as e:
        record.update(outcome=outcomes.COMPILE_ERROR, error=one_line(e),
                      compile_ns=time.perf_counter_ns() - t0,
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    record.update(compile_ns=t1 - t0, matcher_ns=t2 - t1)

    phase("decode")
    if o["runtime"] == "llamacpp":
        from harness.measure.e2e.runtime_llamacpp import processor_decode as run_decode
    else:
        from harness.measure.e2e.loop import decode as run_decode
    if gbnf:
        con = _gbnf(rt, prompt, vocab, grammar, o)
    else:
        con = _constrained(rt, run_decode, prompt, vocab, matchers, eng["name"], o, adapter)
    unc = _unconstrained(rt, run_decode, prompt, vocab, o)
    if con.get("error"):
        record.update(outcome=outcomes.CRASH, error=con["error"],
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    res = con["result"]

    phase("validate")
    outputs, invalid, unknown = [], 0, 0
    first_invalid: str | None = None  # the first invalid output's reason, any batch size
    for s in res.sequences:
        out: dict[str, Any] = {"stop": s.stop, "n_tokens": len(s.tokens),
                               "stop_token": s.stop_token}
        raw = detokenize(vocab.tokens, s.tokens)
        out["text"] = raw[:400].decode("utf-8", "replace")
        if s.stop == "eos":
            chk = check_output(raw, truth)
            out.update(chk)
            if chk["valid"] is False:
                invalid += 1
                first_invalid = first_invalid or chk["why"]
                out["witness"] = list(s.tokens) + [s.stop_token]
            elif chk["valid"] is None:
                unknown += 1
        elif s.stop in ("rejected", "eos_refused", "mask_leak"):
            out["witness"] = list(s.tokens) + [s.stop_token]
        outputs.append(out)

    first_mask_ns = res.steps["mask"][0] if res.steps.get("mask") else 0
    con_steps = np.asarray(res.steps.get("step", []), dtype=np.float64)
    unc_steps = np.asarray(unc.steps.get("step", []), dtype=np.float64)
    tpot = float(np.median(con_steps)) if con_steps.size else None
    tpot_u = float(np.median(unc_steps)) if unc_steps.size else None
    stops = [s.stop for s in res.sequences]
    e2e = {
        "schedule": res.schedule,
        "api": con.get("api", "loop"),
        "apply_kernel": con.get("kernel"),
        "prompt_tokens": len(prompt),
        "ttft_ns": record["compile_ns"] + record["matcher_ns"] + res.ttft_ns,
        "ttft_unconstrained_ns": unc.ttft_ns,
        "prefill_ns": res.prefill_ns,
        "tpot_ns": tpot,
        "tpot_p99_ns": float(np.percentile(con_steps, 99)) if con_steps.size else None,
        "tpot_mean_ns": float(con_steps.mean()) if con_steps.size else None,
        "tpot_unconstrained_ns": tpot_u,
        "tpot_unconstrained_p99_ns": float(np.percentile(unc_steps, 99)) if unc_steps.size else None,
        "tpot_unconstrained_mean_ns": float(unc_steps.mean()) if unc_steps.size else None,
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
    for k in ("processor_calls", "tokens_sampled", "fill"):
        if k in con:
            e2e[k] = con[k]
    if len(o["batches"]) > 1 and not gbnf:
        phase("decode")
        e2e["by_batch"], record["steps_by_batch_ns"] = _batch_sweep(
            res, unc, con.get("fill"), o, rt, run_decode, prompt, vocab, grammar, eng["name"],
            adapter, truth)
        invalid += sum(b["invalid_outputs"] for b in e2e["by_batch"][1:])
        first_invalid = first_invalid or next(
            (f"batch {b['batch']}: {b['first_invalid']}" for b in e2e["by_batch"][1:]
             if b.get("first_invalid")), None)
    record["e2e"] = e2e
    record["outputs"] = outputs
    record["steps_ns"] = {k: v for k, v in res.steps.items() if v}
    record["steps_unconstrained_ns"] = {k: v for k, v in unc.steps.items() if v}
    record["ttfm_ns"] = record["compile_ns"] + record["matcher_ns"] + first_mask_ns
    record["tokens"] = e2e["tokens"]
    bad = [x for x in outputs if x["stop"] in ("rejected", "eos_refused", "mask_leak")]
    if invalid:
        # the invalid output may come from a further batch size of --batch, whose outputs
        # are validated but not kept in ``outputs`` (looking only there raised
        # StopIteration when the primary batch's outputs were all valid)
        record["outcome"] = outcomes.INVALIDATION_ERROR
        record["error"] = f"invalid output under the mask: {first_invalid}"
    elif bad:
        record["outcome"] = outcomes.VALIDATION_ERROR
        record["error"] = f"engine inconsistent: {bad[0]['stop']} at token {bad[0]['stop_token']}"
    else:
        record["outcome"] = outcomes.PASSING
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _constrained(rt, run_decode, prompt, vocab, matchers, engine_name, o,
                 adapter=None) -> dict[str, Any]:
    from engines.base import default_fill_threads
    from harness.measure.e2e.sampling import Bitmask, Sampler, apply_kernel

    kernel, apply = apply_kernel(engine_name, o["apply"], rt.device)
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
    if filler is not None:
        out["fill"] = f"{filler.method} ({filler.threads} threads)"
    extra = getattr(res, "extra", None) or {}
    out.update(extra)
    return out


def _gbnf(rt, prompt, vocab, grammar, o) -> dict[str, Any]:
    from harness.measure.e2e.runtime_llamacpp import processor_decode
    from harness.measure.e2e.sampling import Sampler

    sampler = Sampler(o["temperature"], o["top_p"], o["seed"], rt.device)
    res = processor_decode(rt, prompt, stop_ids=vocab.stop_ids, max_tokens=o["max_tokens"],
                           sampler=sampler, grammar=grammar)
    res.constrained = True
    return {"result": res, "kernel": "llama.cpp grammar sampler", **res.extra}


def _unconstrained(rt, run_decode, prompt, vocab, o):
    from harness.measure.e2e.sampling import Sampler

    sampler = Sampler(o["temperature"], o["top_p"], o["seed"], rt.device)
    return run_decode(rt, prompt, stop_ids=vocab.stop_ids, max_tokens=o["max_tokens"],
                      sampler=sampler)


def _batch_point(batch: int, fill: str | None, con, unc,
                 invalid: tuple[int, str | None]) -> dict[str, Any]:
    """One point of the TPOT-against-batch curve: per-step medians over this job (ns)."""
    cs = np.asarray(con.steps.get("step", []), dtype=np.float64)
    us = np.asarray(unc.steps.get("step", []), dtype=np.float64)
    mk = np.asarray(con.steps.get("mask", [])[1:], dtype=np.float64)
    tpot = float(np.median(cs)) if cs.size else None
    tpot_u = float(np.median(us)) if us.size else None
    return {"batch": batch, "fill": fill,
            "tpot_ns": tpot, "tpot_unconstrained_ns": tpot_u,
            "tpot_ratio": round(tpot / tpot_u, 4) if tpot and tpot_u else None,
            "mask_p50_ns": float(np.median(mk)) if mk.size else None,
            "tokens": sum(s.n_emitted for s in con.sequences),
            "runaways": sum(1 for s in con.sequences if s.stop == "runaway"),
            "invalid_outputs": invalid[0], "first_invalid": invalid[1]}


def _batch_sweep(res, unc, fill, o, rt, run_decode, prompt, vocab, grammar, engine_name,
                 adapter, truth) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Decode again at every further batch size of ``--batch`` (same weights, seed and
    budget); every output is validated like the primary batch's."""
    from harness.measure.e2e.runtime_cache import get_runtime
    from harness.measure.e2e.validate import check_output, detokenize

    def invalid_of(r) -> tuple[int, str | None]:
        """(invalid outputs, the first one's reason)."""
        whys = [chk["why"] for s in r.sequences if s.stop == "eos"
                for chk in [check_output(detokenize(vocab.tokens, s.tokens), truth)]
                if chk["valid"] is False]
        return len(whys), (whys[0] if whys else None)

    first = o["batches"][0]
    points = [_batch_point(first, fill, res, unc, invalid_of(res))]
    steps = {str(first): {"step": list(res.steps.get("step", [])),
                          "unconstrained": list(unc.steps.get("step", []))}}
    for b in o["batches"][1:]:
        rt_b = get_runtime({**o, "batch": b})
        matchers = [grammar.matcher() for _ in range(b)]
        con = _constrained(rt_b, run_decode, prompt, vocab, matchers, engine_name, o, adapter)
        if con.get("error"):
            raise RuntimeError(f"batch {b}: {con['error']}")
        u = _unconstrained(rt_b, run_decode, prompt, vocab, o)
        points.append(_batch_point(b, con.get("fill"), con["result"], u,
                                   invalid_of(con["result"])))
        steps[str(b)] = {"step": list(con["result"].steps.get("step", [])),
                         "unconstrained": list(u.steps.get("step", []))}
    get_runtime(o)  # back to the primary batch size for the next job
    return points, steps
