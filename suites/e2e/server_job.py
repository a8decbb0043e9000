"""The serving route of the e2e suite (``--server URL``): the same schemas through an
OpenAI-compatible server, streamed and timed, the text validated.

``--server`` takes ``URL`` (the dialect is detected from ``/v1/models``) or
``dialect+URL`` (``vllm+http://…``, ``sglang+http://…``, ``llamacpp+http://…``). The record's
engine is the ``--engine`` label given (the server picks its own backend). Per job: one
constrained and one unconstrained completion with the same seed and budget.
"""

from __future__ import annotations

import json
import time

from harness.suite import outcomes
from harness.suite import JobPayload
from suites.e2e.records import E2EJobOptions, E2ERecord


def run_server_job(job: JobPayload, o: E2EJobOptions, phase) -> E2ERecord:
    from harness.suite.serving import OpenAIClient, server_for, split_server, takes_seeds, verdict
    from harness.suite.serving import (ASK, SYSTEM, looks_like_checkpoint, model_prompt,
                                       schema_excerpt)
    from harness.suite.engines import load_vocabulary
    from harness.suite.measure import SchemaTarget

    case, eng = job["case"], job["engine"]
    record: E2ERecord = {"engine": eng["label"], "case_id": case["case_id"],
                              "suite": case["suite"], "subset": case["subset"]}
    t_busy = time.perf_counter_ns()
    phase("setup")
    dialect, url = split_server(server_for(o["server"], eng["label"]))
    client = OpenAIClient(url, dialect=dialect)
    try:
        dialect = client.detect()
    except (OSError, RuntimeError, ValueError):
        dialect = None  # the request below records the server's failure
    seed = o["seed"] if takes_seeds(eng.get("name"), dialect) else None
    phase("groundtruth")
    schema = json.loads(case["schema_text"])
    target = SchemaTarget(case)
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": ASK + schema_excerpt(
                    load_vocabulary(job["tokenizer"]), case["schema_text"])}]
    # --model PATH: the server is asked a completion of the checkpoint's own prompt ids
    prompt = (model_prompt(o["model"], load_vocabulary(job["tokenizer"]), case["schema_text"])
              if looks_like_checkpoint(str(o["model"])) else None)
    phase("decode")
    con = client.complete(schema, messages, max_tokens=o["max_tokens"],
                          temperature=o["temperature"], seed=seed, prompt=prompt)
    unc = client.complete(None, messages, max_tokens=o["max_tokens"],
                          temperature=o["temperature"], seed=seed, prompt=prompt)
    record["e2e_config"] = {"runtime": "server", "server": o["server"],
                            "dialect": client.dialect, "model": client.model,
                            "max_tokens": o["max_tokens"], "seed": seed,
                            "temperature": o["temperature"]}
    v = verdict(con, target)
    record["server"] = {"constrained": con.to_json(), "unconstrained": unc.to_json(), **v}
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    if v["verdict"] == "http_error":
        # the server refused the request (e.g. HTTP 500 for a schema or a field it rejects)
        record.update(outcome=outcomes.COMPILE_ERROR, error=v["why"])
        return record
    tpot = con.tpot_ns
    tpot_u = unc.tpot_ns
    invalid = int(v["verdict"] == "constraint_not_enforced")
    record["e2e"] = {
        "schedule": "server", "api": f"openai:{client.dialect}",
        "ttft_ns": con.ttft_ns or 0, "ttft_unconstrained_ns": unc.ttft_ns or 0,
        "tpot_ns": tpot, "tpot_unconstrained_ns": tpot_u,
        "tpot_ratio": round(tpot / tpot_u, 4) if tpot and tpot_u else None,
        "outputs": 1, "eos": int(con.finish_reason == "stop"),
        "valid_outputs": int(v["verdict"] == "ok"), "invalid_outputs": invalid,
        "unknown_outputs": int(v["verdict"] == "unknown"),
        "runaways": int(v["verdict"] == "truncated"),
        "tokens": len(con.chunk_ns) + (1 if con.text else 0),
    }
    record["steps_ns"] = {"step": con.chunk_ns}
    record["steps_unconstrained_ns"] = {"step": unc.chunk_ns}
    record["tokens"] = record["e2e"]["tokens"]
    if invalid:
        record.update(outcome=outcomes.INVALIDATION_ERROR,
                      error=f"constraint not enforced (HTTP 200, invalid output): {v['why']}")
    else:
        record["outcome"] = outcomes.PASSING
    return record
