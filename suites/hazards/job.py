"""Worker job of the ``hazards`` suite: one standalone hazard against one engine.

The case's ``request["hazard"]`` says which (:data:`suites.hazards.HAZARDS`); every job
runs in a worker under the run's limits (``--timeout``, ``--memory``), so a hostile input
that crashes, hangs or exhausts an engine ends as that job's death, a finding, and the
run goes on. The record holds ``hazard``: the hazard's name and its measurements, with
``verdict`` and ``witness`` (what the report's cell shows), or ``not_measured`` (why).
Its ``outcome``: ``invalidation_error`` where the engine accepted what it must refuse (a
keyword ignored, a padding id allowed, a schema not enforced after the reasoning, the
output able to end inside the reasoning, a bad tool's forbidden arguments accepted),
``validation_error`` where it cannot write an instance jsonschema calls valid (a keyword
misread), ``compile_error`` where it refused the hazard's grammar or request, ``passing``
otherwise.
"""

from __future__ import annotations

import json
import time

from harness.suite.measure import adapters
from harness.suite import outcomes
from harness.suite import KEEP, RECYCLE, JobPayload
from suites.hazards.records import HazardBlock, HazardRecord

__all__ = ["run_hazard_job"]


def _keywords(adapter, vocab, case, req, phase) -> tuple[HazardBlock, str]:
    from harness.suite.measure import keywords

    schema = json.loads(case["schema_text"])
    # a compile past the node's budget is abandoned (left in its thread): the job ends
    # early and its worker is replaced (RECYCLE), instead of the run's limit killing it
    engine = keywords.AdapterEngine(adapter, vocab, compile_seconds=keywords.NODE_SECONDS)
    phase("compile")  # a death from here on is the engine's, on this schema's keywords
    # the judge stops itself at half the job's limit (a compile begun before then has the
    # other half), and every node's rows are kept as they come: a job killed by one slow
    # compile still gives the nodes judged before it (record["kept"]["rows"])
    limit = float(case.get("timeout_s") or keywords.SCHEMA_SECONDS * 2)
    judged = keywords.judge_schema(engine, schema, extended=False,
                                   root_only=bool(req.get("probe")),
                                   seconds=min(keywords.SCHEMA_SECONDS, limit / 2),
                                   memo=keywords.shared_memo(case.get("scratch")),
                                   keep=lambda rows: phase(KEEP, {"rows": rows}))
    if judged.abandoned:
        phase(RECYCLE)
    rows = judged.rows
    out: HazardBlock = {"rows": rows, "source": req.get("source"), "nodes": judged.nodes,
                        "abandoned": judged.abandoned,
                        "reused": judged.reused, "plan_s": round(judged.plan_s, 3),
                        "judge_s": round(judged.judge_s, 3)}
    for flag, outcome in (("ignored", outcomes.INVALIDATION_ERROR),
                          ("misread", outcomes.VALIDATION_ERROR)):
        hit = next((r for r in rows if r["verdict"] == flag), None)
        if hit is not None:
            out["verdict"] = flag
            out["witness"] = f"{hit['keyword']} at {hit['path'] or '/'}: {hit['witness']}"
            return out, outcome
    out["verdict"] = ("kept" if any(r["verdict"] == "kept" for r in rows) else
                      "refused" if any(r["verdict"] == "refused" for r in rows) else
                      "undecided")
    return out, outcomes.PASSING


def _padded(adapter, vocab, case, req, phase) -> tuple[HazardBlock, str]:
    from harness.suite.engines import load_vocabulary
    from suites.hazards.padding import PADDINGS, padded_width, probe

    if adapter.padded_vocab_api is None:
        return {"not_measured": f"{adapter.name}'s adapter has no padded-vocabulary probe "
                                "(EngineAdapter.padded_masks)"}, outcomes.PASSING
    if vocab.name != req["vocab"]:  # the same engine and configuration over that tokenizer
        adapter = type(adapter)(load_vocabulary(req["vocab"]), adapter.config)
    width = padded_width(adapter.vocab.size, PADDINGS[req["vocab"]])
    phase("compile")
    out = {"vocab": req["vocab"], **probe(adapter, width)}
    return out, outcomes.INVALIDATION_ERROR if out["verdict"] == "leaks" else outcomes.PASSING


def _whitespace(adapter, vocab, case, req, phase) -> tuple[HazardBlock, str]:
    from harness.suite.engines import ORACLE
    from engines.protocol import CompileError, one_line
    from suites.hazards.whitespace import BOUND, SCHEMA, describe, walk

    oracle = adapters.adapter(ORACLE, "default", case.get("tokenizer", vocab.name)) \
        if adapter.name != ORACLE else adapter
    ref = oracle.compile(SCHEMA)
    out: HazardBlock = {}
    try:
        out["default"] = walk(adapter.compile(SCHEMA), vocab, ref)
    except CompileError as e:
        return {"verdict": "refused", "witness": one_line(e, 200)}, outcomes.COMPILE_ERROR
    out["default"]["text"] = describe(out["default"])
    overrides = adapter.whitespace_bound(BOUND)
    if overrides is not None:
        setting = ", ".join(f"{k}={v}" for k, v in overrides.items())
        try:
            bounded = type(adapter)(vocab, adapter.config, **overrides)
            out["bounded"] = walk(bounded.compile(SCHEMA), vocab, ref)
            out["bounded"]["text"] = describe(out["bounded"])
        except (CompileError, ValueError, TypeError) as e:
            out["bounded"] = {"error": one_line(e, 200)}
        out["bounded"]["setting"] = setting
    else:
        out["bounded"] = {"setting": None,
                          "error": f"{adapter.name} has no whitespace-bounding setting"}
    d = out["default"]
    out["verdict"] = "unbounded" if d["unbounded"] else "bounded"
    b = out["bounded"]
    out["witness"] = (f"longest run {'≥' if d['unbounded'] else ''}{d['longest']} "
                      f"({', '.join(d['unbounded']) or 'no position unbounded'}); "
                      + (f"{b['setting']}: longest {'≥' if b.get('unbounded') else ''}"
                         f"{b.get('longest')}" if "longest" in b
                         else f"bounded setting: {b.get('error')}"))
    return out, outcomes.PASSING


def _bad_tool(adapter, vocab, case, req, phase) -> tuple[HazardBlock, str]:
    from suites.hazards.tools import judge

    if adapter.tool_call_form is None:
        return {"not_measured": f"{adapter.name} has no tool-call form"}, outcomes.PASSING
    phase("compile")
    out = judge(adapter, vocab)
    return out, {"refused": outcomes.COMPILE_ERROR, "bad_loose": outcomes.INVALIDATION_ERROR,
                 "broken": outcomes.VALIDATION_ERROR}.get(out["verdict"], outcomes.PASSING)


def _reasoning(adapter, vocab, case, req, phase) -> tuple[HazardBlock, str]:
    from engines.protocol import CompileError, one_line
    from suites.hazards.reasoning import measure, spec

    if adapter.reasoning_form is None:
        return {"not_measured": f"{adapter.name} has no reasoning-then-answer form "
                                "(EngineAdapter.compile_reasoning)"}, outcomes.PASSING
    phase("compile")
    form = [adapter.reasoning_form]
    try:
        compiled = adapter.compile_reasoning(spec())
    except CompileError as e:
        return {"form": form[0], "verdict": "refused", "witness": one_line(e, 200)}, \
            outcomes.COMPILE_ERROR
    out = {"form": form[0], **measure(compiled, vocab)}
    bad = not out["enforced"] or out["leak"]
    out["verdict"] = ("not_enforced" if not out["enforced"] else
                      "leaks" if out["leak"] else "enforced")
    cost = (f"mask {out['free_text_us']:.1f} µs/token in the free text, "
            f"{out['answer_us']:.1f} in the answer" if out.get("free_text_us") is not None
            and out.get("answer_us") is not None else "mask cost not measured")
    bound = ("length bound held" if out["bounded"] else
             f"length NOT bounded ({out['too_long_chars']} characters of reasoning accepted)")
    if "witness" not in out:
        out["witness"] = (f"can end inside the reasoning: {out['leak_witness']!r}" if out["leak"]
                          else "invalid answer refused after </think>, no end inside the "
                               "reasoning")
    out["witness"] += f"; {bound}; {cost}"
    return out, outcomes.INVALIDATION_ERROR if bad else outcomes.PASSING


JOBS = {"keywords": _keywords, "padded_vocab": _padded, "whitespace": _whitespace,
        "bad_tool": _bad_tool, "reasoning": _reasoning}


def run_hazard_job(job: JobPayload, phase=lambda p, info=None: None) -> HazardRecord:
    """One (hazard case, engine) job; see the module docstring."""
    case = job["case"]
    req = case["request"]
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    phase("groundtruth")  # setup done: the job's own time limit starts here
    name = req["hazard"]
    fn = JOBS.get(name)
    if fn is None:
        out, outcome = {"not_measured": f"{name} is a server hazard: run it with --launch "
                                        "ENGINE:BACKEND or --server URL"}, outcomes.PASSING
    else:
        out, outcome = fn(adapter, vocab, {**case, "tokenizer": job["tokenizer"],
                                           "timeout_s": job.get("timeout_s"),
                                           "scratch": job.get("scratch")}, req, phase)
    record["hazard"] = {"name": name, **out}
    record["outcome"] = outcome
    if outcome == outcomes.COMPILE_ERROR:
        record["error"] = out.get("witness")
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record
