"""The offline route of a serving engine's row (``vllm:BACKEND``) in the e2e suite: its own
offline engine (the adapter's ``offline``) on a model folder the harness writes, random
weights (or the checkpoint folder of ``--model PATH``, its weights and prompt format), in a worker started in the engine's environment (``.venv-vllm``). Per job: one
constrained and one unconstrained ``generate`` with the same seed and budget."""

from __future__ import annotations

import json
import time
from typing import Any

from harness.suite import outcomes
from harness.suite import JobPayload
from suites.e2e.records import E2EJobOptions, E2ERecord

_LLM: dict[tuple, Any] = {}


def run_vllm_job(job: JobPayload, o: E2EJobOptions, phase) -> E2ERecord:
    from harness.suite import adapter_class
    from harness.suite.serving import looks_like_checkpoint, model_folder, model_prompt
    from harness.suite.engines import cache_root
    from harness.suite.serving import ASK, SYSTEM, schema_excerpt
    from harness.suite.measure import check_output
    from harness.suite.measure import GroundTruth

    case, eng = job["case"], job["engine"]
    backend = adapter_class(eng["name"]).configs[eng["config"]]["backend"]
    record: E2ERecord = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"]}
    t_busy = time.perf_counter_ns()
    phase("setup")
    from harness.suite.engines import load_vocabulary

    vocab = load_vocabulary(job["tokenizer"])
    key = (o["model"], o["seed"], backend)
    if key not in _LLM:
        _LLM.clear()
        # a size's folder written here (random weights), or the checkpoint's (--model PATH)
        folder = model_folder(o["model"], vocab, cache_root() / "models")
        _LLM[key] = adapter_class(eng["name"]).offline(str(folder), backend=backend,
                                                       seed=o["seed"])
    llm = _LLM[key]
    phase("groundtruth")
    schema = json.loads(case["schema_text"])
    truth = GroundTruth.for_case(case)
    prompt: str | list[int]
    if looks_like_checkpoint(o["model"]):  # the checkpoint's own prompt format, as ids
        prompt = model_prompt(o["model"], vocab, case["schema_text"])
    else:
        prompt = (f"<|start_header_id|>system<|end_header_id|>\n\n{SYSTEM}<|eot_id|>"
                  f"<|start_header_id|>user<|end_header_id|>\n\n{ASK}{schema_excerpt(vocab, case['schema_text'])}<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n")
    phase("decode")
    try:
        con = llm.generate(schema, prompt, n=o["batch"], max_tokens=o["max_tokens"],
                           temperature=o["temperature"], seed=o["seed"])
    except Exception as e:  # vLLM refuses schemas its backend cannot compile
        record.update(outcome=outcomes.COMPILE_ERROR, error=" ".join(str(e).split())[:500],
                      busy_ns=time.perf_counter_ns() - t_busy)
        return record
    unc = llm.generate(None, prompt, n=o["batch"], max_tokens=o["max_tokens"],
                       temperature=o["temperature"], seed=o["seed"])
    outputs, invalid, runaways = [], 0, 0
    for text, ids, fin in zip(con["texts"], con["token_ids"], con["finish_reasons"]):
        out: dict[str, Any] = {"stop": "eos" if fin == "stop" else "runaway",
                               "n_tokens": len(ids), "text": text[:400]}
        if fin == "stop":
            out.update(check_output(text.encode("utf-8"), truth))
            if out["valid"] is False:
                invalid += 1
                out["witness"] = ids
        else:
            runaways += 1
        outputs.append(out)

    def tpot(r):
        # per output token after the first, ns: (whole request − one-token request) / rest
        n = max((len(t) for t in r["token_ids"]), default=0)
        if not r["ttft_ns"] or n <= 1:
            return None
        return max(0.0, (r["total_ns"] - r["ttft_ns"]) / (n - 1))

    tp, tpu = tpot(con), tpot(unc)
    record["e2e_config"] = {"runtime": eng["name"], "backend": backend, "model": o["model"],
                            "max_tokens": o["max_tokens"], "batch": o["batch"]}
    record["e2e"] = {"schedule": eng["name"], "api": f"{eng['name']}:{backend}",
                     "ttft_ns": con["ttft_ns"] or 0, "ttft_unconstrained_ns": unc["ttft_ns"] or 0,
                     "tpot_ns": tp, "tpot_unconstrained_ns": tpu,
                     "tpot_ratio": round(tp / tpu, 4) if tp and tpu else None,
                     "outputs": len(outputs), "eos": len(outputs) - runaways,
                     "valid_outputs": sum(1 for x in outputs if x.get("valid") is True),
                     "invalid_outputs": invalid, "runaways": runaways,
                     "tokens": sum(len(t) for t in con["token_ids"])}
    record["steps_ns"] = {"step": [int(tp)] if tp else []}
    record["steps_unconstrained_ns"] = {"step": [int(tpu)] if tpu else []}
    record["outputs"] = outputs
    record["outcome"] = outcomes.INVALIDATION_ERROR if invalid else outcomes.PASSING
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record
