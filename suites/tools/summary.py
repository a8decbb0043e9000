"""The tools suite's figures, from its records (:mod:`suites.tools.job`).

- **compile against tools** (per engine and number of tools, the median over the cases
  with that many tools, ``named`` requests left out: they compile one tool): *cold* — a fresh compiler; *warm* — the same request again
  through the engine's own cache; *overlap* — a request sharing half its tools with the
  one compiled before; *TTFM* — cold compile + matcher + first mask. Milliseconds.
- **decode**: TBM (time of one mask, µs, median) over the tokens of free text and over
  the tokens inside calls.
- **verdicts**: false rejects (valid outputs the engine refused, or where it refused EOS)
  and false accepts per kind of invalid output (``wrong_name``, ``wrong_args``,
  ``truncated`` — must fail the EOS check —, ``mode``).
- **fuzz**: walks under the engine's mask from the start of a call, judged by the ground
  truth; ``p`` = valid walks / walks (a runaway or dead end is a failed call) and
  ``P(50 calls)`` = ``p ** 50``, the chance that a 50-call agent task has every call valid.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.suite.measure import instance_outcome
from harness.suite import InstanceRecord, Record, RunMeta, Summary, figures
from harness.suite.report import Table, text_table
from suites.tools.records import (CallEvents, ToolsCompileRow, ToolsEngineRow, ToolsEventsRow,
                                  ToolsEvidence, ToolsInstance, ToolsRecord, ToolsSummary)

__all__ = ["COMPILE_HEADER", "ENGINE_HEADER", "EVENTS_HEADER", "compile_rows", "engine_rows",
           "event_rows", "events_table", "summary_block"]

#: kinds of invalid instance (suites.tools.corpus.instances_for)
INVALID_KINDS = ("wrong_name", "wrong_args", "truncated", "mode")
COMPILE_HEADER = ["engine", "tools", "cases", "cold ms", "warm ms", "warm hit", "overlap ms",
                  "TTFM ms", "errors"]
ENGINE_HEADER = ["engine", "form", "cases", "refused / died", "FR", "FA name", "FA args",
                 "FA truncated", "FA mode", "TBM text µs", "TBM call µs", "walks valid",
                 "P(50 calls)"]


def tools_of(r: ToolsRecord) -> int | None:
    """The number of tools of a record of this suite (from its case id where the job died
    before writing it), or None when it has none."""
    if "tool_count" in r:
        return int(r["tool_count"])
    tail = str(r.get("case_id", "")).rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _median(xs: list[float]) -> float | None:
    return float(np.median(xs)) if xs else None


def compile_rows(records: list[ToolsRecord]) -> list[ToolsCompileRow]:
    """One row per (engine, number of tools): medians over its cases, ms."""
    by: dict[tuple[str, int], list[ToolsRecord]] = defaultdict(list)
    for r in records:
        n = tools_of(r)
        if n is not None and not r.get("case_id", "").split("-")[-2:-1] == ["named"]:
            by[(r["engine"], n)].append(r)
    out = []
    for (eng, n), rs in sorted(by.items()):
        ok = [r for r in rs if r.get("cold_ns") is not None and r.get("outcome") != "compile_error"]
        hits = [r["warm_hit"] for r in ok if "warm_hit" in r]
        out.append({
            "engine": eng, "tools": n, "cases": len(rs),
            "cold_ms": _median([r["cold_ns"] / 1e6 for r in ok]),
            "warm_ms": _median([r["warm_ns"] / 1e6 for r in ok if "warm_ns" in r]),
            "warm_hit": (sum(hits) / len(hits)) if hits else None,
            "overlap_ms": _median([r["overlap_ns"] / 1e6 for r in ok if "overlap_ns" in r]),
            "ttfm_ms": _median([r["ttfm_ns"] / 1e6 for r in ok if "ttfm_ns" in r]),
            "errors": len(rs) - len(ok),
            "error": next((f"{r.get('outcome')}: {r.get('error') or ''}".strip(": ")
                           for r in rs if r not in ok), None),
        })
    return out


def _split_tbm(inst: ToolsInstance) -> tuple[list[int], list[int]]:
    ns = (inst.get("results", {}).get("text") or {}).get("mask_ns") or []
    inside = set()
    for a, b in inst.get("call_spans") or ():
        inside.update(range(a, b))
    text = [t for i, t in enumerate(ns) if i not in inside]
    call = [t for i, t in enumerate(ns) if i in inside]
    return text, call


def engine_rows(records: list[ToolsRecord]) -> list[ToolsEngineRow]:
    """One row per engine: verdicts, TBM by segment and the fuzz walks over all its cases."""
    by: dict[str, list[ToolsRecord]] = defaultdict(list)
    for r in records:
        if tools_of(r) is not None:
            by[r["engine"]].append(r)
    out = []
    for eng, rs in sorted(by.items()):
        fr = 0
        fa = {k: 0 for k in INVALID_KINDS}
        n_kind = {k: 0 for k in INVALID_KINDS}
        n_valid = 0
        text_ns: list[int] = []
        call_ns: list[int] = []
        walks = defaultdict(int)
        evidence: list[ToolsEvidence] = []
        for r in rs:
            for inst in r.get("instances") or ():
                res = inst["results"]["text"]
                kind = instance_outcome(inst["expected"], res["status"])
                if inst["expected"]:
                    n_valid += 1
                elif inst.get("kind") in n_kind:
                    n_kind[inst["kind"]] += 1
                if kind == "false_reject":
                    fr += 1
                    evidence.append({"case_id": r["case_id"], "kind": "false_reject",
                                     "status": res["status"], "text": inst["text"][:400]})
                elif kind == "false_accept":
                    k = inst.get("kind") if inst.get("kind") in fa else "mode"
                    fa[k] += 1
                    evidence.append({"case_id": r["case_id"], "kind": f"false_accept ({k})",
                                     "why": inst.get("why"), "text": inst["text"][:400]})
                t, c = _split_tbm(inst)
                text_ns += t
                call_ns += c
            for w in (r.get("fuzz") or {}).get("walks", ()):
                walks[w["status"]] += 1
        n_walks = sum(v for k, v in walks.items() if k != "undecided")
        p = walks["valid"] / n_walks if n_walks else None
        forms = sorted({r["form"] for r in rs if r.get("form")}) or ["–"]
        out.append({
            "engine": eng, "form": "; ".join(forms), "cases": len(rs),
            "refused": sum(1 for r in rs if r.get("outcome") in ("compile_error", "timeout",
                                                                 "oom", "crash")),
            "valid": n_valid, "false_rejects": fr, "invalid": n_kind, "false_accepts": fa,
            "tbm_text_us": _median([x / 1e3 for x in text_ns]),
            "tbm_call_us": _median([x / 1e3 for x in call_ns]),
            "walks": dict(walks), "p_call": p,
            "p_50_calls": (p ** 50) if p is not None else None,
            "evidence": evidence[:10],
        })
    return out


def compile_table(rows: list[ToolsCompileRow]) -> list[list[str]]:
    return [[r["engine"], str(r["tools"]), str(r["cases"]),
             *(figures.fixed(r[k]) for k in ("cold_ms", "warm_ms", "warm_hit", "overlap_ms",
                                             "ttfm_ms")),
             str(r["errors"])]
            for r in rows]


def engine_table(rows: list[ToolsEngineRow]) -> list[list[str]]:
    out = []
    for r in rows:
        fa, n = r["false_accepts"], r["invalid"]
        w = r["walks"]
        n_w = sum(v for k, v in w.items() if k != "undecided")
        out.append([r["engine"], r["form"], str(r["cases"]), str(r["refused"]),
                    f"{r['false_rejects']}/{r['valid']}",
                    *(f"{fa[k]}/{n[k]}" for k in INVALID_KINDS),
                    figures.fixed(r["tbm_text_us"], 1), figures.fixed(r["tbm_call_us"], 1),
                    f"{w.get('valid', 0)}/{n_w}" if n_w else "–",
                    figures.fixed(r["p_50_calls"], 3)])
    return out


EVENTS_HEADER = ["engine", "calls", "name decided", "name written", "required complete",
                 "end", "lead tokens", "lead ms", "lead share", "= reference",
                 "forced = mask", "forced µs/step", "mask µs/step", "read µs/step"]


def _tpot_ms(tpot: dict[str, Any] | None, engine: str) -> float | None:
    if not tpot:
        return None
    return (tpot.get("ms") or {}).get(engine, tpot.get("default_ms"))


def event_rows(records: list[ToolsRecord], tpot: dict[str, Any] | None = None,
               reference: str | None = None, source: str = "truth") -> list[ToolsEventsRow]:
    """One row per engine: the streaming parse events of every call of the valid instances
    (:mod:`suites.tools.events`), medians in decode steps; ``lead_ms`` = mean lead tokens ×
    the time per output token ``tpot`` gives for the engine (the e2e suite's measured
    TPOT, its source in ``tpot["source"]``). ``agree_ref``: calls whose ``name_decided``
    equals the ``reference`` engine's (default: the exact one, ``engines.ORACLE``) on the
    same output (None without its records);
    ``agree_forced``: calls whose forced-continuation ``name_decided`` equals the mask's
    (None: the engine has no forced-continuation API). Costs: µs per scanned step,
    medians over the instances: the engine's ``forced_continuation`` call, its
    ``fill_mask``, and the harness reading the name set from the mask (Python).
    Model outputs are compared with the reference's only where the text is the same
    (engines whose languages differ write different outputs from the same seed).
    ``source``: ``truth`` (the ground-truth outputs) or ``model`` (the checkpoint's own
    outputs, ``--model``: ``outputs`` written, ``valid`` of them traced)."""
    if reference is None:  # the exact engine (engines.ORACLE)
        from harness.suite.engines import ORACLE as reference
    by: dict[str, list[tuple[tuple[str, int, str, int], CallEvents]]] = defaultdict(list)
    cost: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    errors: dict[str, int] = defaultdict(int)
    written: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        for ev in r.get("events") or ():
            if ev.get("source", "truth") != source:
                continue
            written[r["engine"]][0] += 1
            written[r["engine"]][1] += int(ev.get("valid", True))
            if "calls" not in ev:
                continue  # a model output the ground truth rejects: no events
            if ev.get("error"):
                errors[r["engine"]] += 1
                continue
            for i, c in enumerate(ev.get("calls") or ()):
                # the same output: the same instance, or a model output of the same text
                by[r["engine"]].append(((r["case_id"], ev["index"], ev.get("digest", ""), i),
                                        c))
            for k in ("forced_ns", "mask_ns", "set_ns"):
                if ev.get(k) is not None:
                    cost[r["engine"]][k].append(ev[k] / 1e3)
    ref = {key: c["name_decided"] for key, c in by.get(reference, [])}
    out: list[ToolsEventsRow] = []
    for eng in sorted(set(by) | set(written)):
        calls = by.get(eng, [])
        cs = [c for _, c in calls]
        lead = [c["lead_tokens"] for c in cs]
        ends = [c["lead_tokens"] + c["required_complete"] for c in cs]
        t = _tpot_ms(tpot, eng)
        same = [ref[key] == c["name_decided"] for key, c in calls if key in ref]
        forced = [c["name_decided_forced"] == c["name_decided"] for c in cs
                  if c.get("name_decided_forced") is not None]
        out.append({
            "engine": eng, "calls": len(cs), "errors": errors.get(eng, 0),
            "outputs": written[eng] if source == "model" else None,
            "name_decided": _median([c["name_decided"] for c in cs]),
            "name_written": _median([c["name_written"] for c in cs]),
            "required_complete": _median([c["required_complete"] for c in cs]),
            "end": _median(ends),
            "lead_tokens": _median(lead),
            "lead_tokens_mean": float(np.mean(lead)) if lead else None,
            "lead_ms": float(np.mean(lead)) * t if lead and t is not None else None,
            "lead_share": sum(lead) / sum(ends) if ends else None,
            "agree_ref": None if eng == reference or not same else [sum(same), len(same)],
            "agree_forced": [sum(forced), len(forced)] if forced else None,
            "forced_us": _median(cost[eng]["forced_ns"]),
            "mask_us": _median(cost[eng]["mask_ns"]),
            "read_us": _median(cost[eng]["set_ns"]),
        })
    return out


def events_table(rows: list[ToolsEventsRow]) -> list[list[str]]:
    def frac(x: list[int] | None) -> str:
        return "–" if x is None else f"{x[0]}/{x[1]}"

    return [[r["engine"], str(r["calls"]), *(figures.fixed(r[k], 1) for k in (
                "name_decided", "name_written", "required_complete", "end", "lead_tokens")),
             figures.fixed(r["lead_ms"], 1), figures.fixed(r["lead_share"], 2),
             frac(r["agree_ref"]), frac(r["agree_forced"]) if r["agree_forced"] else "no API",
             figures.fixed(r["forced_us"], 1), figures.fixed(r["mask_us"], 1),
             figures.fixed(r["read_us"], 1)] for r in rows]


def summary_block(summary: ToolsSummary, meta: RunMeta, records: list[ToolsRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["tools"]`` and ``tools.json`` in the run folder; console text (None when
    the run holds no tools records)."""
    crows = compile_rows(records)
    if not crows:
        return None
    erows = engine_rows(records)
    tpot = (meta.get("suite") or {}).get("tpot")
    vrows = event_rows(records, tpot)
    mrows = event_rows(records, tpot, source="model")
    summary["tools"] = {"compile": crows, "engines": erows, "events": vrows,
                        "events_model": mrows, "tpot": tpot}
    if run_dir is not None:
        (Path(run_dir) / "tools.json").write_text(json.dumps(summary["tools"], indent=2))
    lines = ["Tool calls: compile against the number of tools (ms, median over cases)",
             text_table(Table(COMPILE_HEADER, compile_table(crows), align="l")), "",
             "Tool calls: verdicts, TBM by segment, fuzz (FR: valid outputs refused; FA: "
             "invalid outputs accepted, by kind)",
             text_table(Table(ENGINE_HEADER, engine_table(erows), align="l"))]
    if vrows:
        lines += ["", "Tool calls: streaming parse events (decode steps, medians; lead = end - "
                      "required complete; lead ms at " + (tpot or {}).get("source", "no TPOT")
                  + ")", text_table(Table(EVENTS_HEADER, events_table(vrows), align="l"))]
    if mrows:
        lines += ["", "Tool calls: streaming parse events of the model's own outputs (valid / "
                      "written: " + ", ".join(f"{r['engine']} {r['outputs'][1]}/{r['outputs'][0]}"
                                              for r in mrows if r["outputs"]) + ")",
                  text_table(Table(EVENTS_HEADER, events_table(mrows), align="l"))]
    errs = [r for r in crows if r["error"]]
    for r in errs:
        lines.append(f"  {r['engine']} @ {r['tools']} tools: {r['error'][:160]}")
    return "\n".join(lines)
