"""The jump-forward suite's figures, per engine and subset (and over all subsets), from
the records of :mod:`suites.jump_forward.job`.

A *step* is a position of the canonical token walk of a valid instance: before each
output token, and the end (where EOS comes). Per (engine, subset):

- ``steps``: steps walked; ``offered``: share of steps where the engine offered a forced
  continuation (non-empty bytes); ``spec_forced``: share of steps where the schema itself
  forces at least one byte (the reference engine; the spec allows escapes in every
  string, whitespace between tokens and properties in any order, so few bytes are
  forced);
- ``spec_bytes``: mean forced bytes per step the schema forces anything;
  ``spec_tokens``: share of steps where the schema forces at least one whole token (its
  forced bytes less a partial character, less a last token a longer allowed token could
  replace: ``"`` before ``":``). A step that forces bytes but no token lets no forward
  pass be skipped, so ``spec_share`` can be 0 while ``spec_forced`` is not;
- ``jf_share``: share of output tokens that needed no forward pass when the instance is
  decoded with the engine's jump-forward (tokens committed from the engine's forced
  tokens / all tokens committed, EOS not counted; pooled over instances);
  ``spec_share``: the same with the reference's forced tokens (what an engine that
  accepts the schema's whole language could skip). An engine above ``spec_share`` gets
  the difference by narrowing the language (canonical key spelling, declared property
  order, no leading whitespace), which it also does in its masks. Both count only the
  instances decoded to the end (a rejected instance is in ``rejected``);
- ``wrong``: steps whose offer is not even a viable prefix under the schema (jump-forward
  writes an invalid document: a correctness bug); ``unforced``: offers the schema does
  not force but allows; ``short``: offers that stop before the forced bytes end;
  ``conflicts``: steps where the engine's own mask allows a token (or EOS) that does not
  fit its own offer;
- ``noncanonical``: share of the steps with forced tokens whose tokens are not
  ``vocab.encode`` of their own bytes (the retokenisation problem); ``token_mismatch``:
  steps whose forced tokens do not spell a prefix of the forced bytes;
- ``ff_us`` / ``mask_us``: mean time of one forced-continuation call / one mask fill, µs;
- ``rejected``: valid instances the engine rejected; ``no_oracle``: cases where the
  reference refused the schema or ran out of its time budget (their steps unchecked).

Engines whose matchers have no jump-forward API are listed in ``not_measured``, never as
rows of zeros.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict
from harness.suite import Record, RunMeta, Summary, figures
from harness.suite.report import Table, text_table
from suites.jump_forward.records import (JumpForwardRecord, JumpForwardRow, JumpForwardSummary,
                                         JumpForwardSummaryBlock, NotMeasured)

__all__ = ["HEADER", "NOT_MEASURED", "jump_forward_rows", "summary_block", "table_rows"]

HEADER = ["engine", "subset", "cases", "steps", "offered", "spec forced", "spec B/step",
          "spec tokens", "JF share", "spec share", "wrong", "unforced", "short", "conflicts", "non-canon", "ff µs",
          "mask µs", "rejected", "no oracle"]
NOT_MEASURED = "no jump-forward API: not measured"
ALL = "all"
MAX_EVIDENCE = 5


class _Acc(TypedDict):
    """One (engine, subset) row's counts while the records are read (times in ns)."""

    cases: set[str]
    spec_token_known: bool  # False once a record (an older one) lacks oracle_token_steps
    compile_errors: int
    no_oracle: int
    instances: int
    rejected: int
    steps: int
    offered_steps: int
    spec_forced_steps: int
    wrong: int
    unforced: int
    short: int
    exact: int
    unchecked: int
    conflicts: int
    token_steps: int
    noncanonical: int
    token_mismatch: int
    free: int
    passes: int
    spec_free: int
    spec_passes: int
    ff_ns: int
    spec_forced_bytes: int
    spec_token_steps: int
    ff_calls: int
    mask_ns: int
    mask_calls: int


def _acc() -> _Acc:
    return {"cases": set(), "compile_errors": 0, "no_oracle": 0, "instances": 0,
            "rejected": 0, "steps": 0, "offered_steps": 0, "spec_forced_steps": 0,
            "wrong": 0, "unforced": 0, "short": 0, "exact": 0, "unchecked": 0,
            "conflicts": 0, "token_steps": 0, "noncanonical": 0, "token_mismatch": 0,
            "free": 0, "passes": 0, "spec_free": 0, "spec_passes": 0, "ff_ns": 0,
            "spec_forced_bytes": 0, "spec_token_steps": 0, "spec_token_known": True,
            "ff_calls": 0, "mask_ns": 0, "mask_calls": 0}


def _add(a: _Acc, r: JumpForwardRecord) -> None:
    a["cases"].add(r["case_id"])
    if r.get("outcome") == "compile_error":
        a["compile_errors"] += 1
        return
    if (r.get("oracle") or {}).get("status") != "ok":
        a["no_oracle"] += 1
    for inst in r["jump_forward"]["instances"]:
        a["instances"] += 1
        a["rejected"] += inst.get("status") != "accepted"
        c = inst.get("counts") or {}
        a["steps"] += inst.get("steps", 0)
        a["offered_steps"] += inst.get("offered_steps", 0)
        a["spec_forced_steps"] += inst.get("oracle_forced_steps", 0)
        a["spec_forced_bytes"] += inst.get("oracle_forced_bytes", 0)
        if "oracle_token_steps" in inst:  # records older than this count lack it
            a["spec_token_steps"] += inst["oracle_token_steps"]
        else:
            a["spec_token_known"] = False
        for k in ("wrong", "unforced", "short", "exact", "unchecked"):
            a[k] += c.get(k, 0)
        a["conflicts"] += inst.get("mask_conflict", 0)
        a["token_steps"] += inst.get("token_steps", 0)
        a["noncanonical"] += inst.get("noncanonical", 0)
        a["token_mismatch"] += inst.get("token_mismatch", 0)
        # shares only from walks that reached the end: a rejected instance's partial walk
        # would weigh its prefix alone
        sim, osim = inst.get("sim"), inst.get("oracle_sim")
        if sim and sim.get("status") == "done":
            a["free"] += sim["free"]
            a["passes"] += sim["passes"]
        if osim and osim.get("status") == "done":
            a["spec_free"] += osim["free"]
            a["spec_passes"] += osim["passes"]
        a["ff_ns"] += sum(inst.get("ff_ns", ()))
        a["ff_calls"] += len(inst.get("ff_ns", ()))
        a["mask_ns"] += sum(inst.get("mask_ns", ()))
        a["mask_calls"] += len(inst.get("mask_ns", ()))


def _share(n: int, of: int) -> float | None:
    return n / of if of else None


def _row(engine: str, subset: str, a: _Acc) -> JumpForwardRow:
    return {
        "engine": engine, "subset": subset, "cases": len(a["cases"]),
        "compile_errors": a["compile_errors"], "instances": a["instances"],
        "rejected": a["rejected"], "no_oracle": a["no_oracle"], "steps": a["steps"],
        "offered": _share(a["offered_steps"], a["steps"]),
        "spec_forced": _share(a["spec_forced_steps"], a["steps"]),
        "spec_bytes": (a["spec_forced_bytes"] / a["spec_forced_steps"]
                       if a["spec_forced_steps"] else None),
        "spec_tokens": (_share(a["spec_token_steps"], a["steps"])
                        if a["spec_token_known"] else None),
        "jf_share": _share(a["free"], a["free"] + a["passes"]),
        "spec_share": _share(a["spec_free"], a["spec_free"] + a["spec_passes"]),
        "free_tokens": a["free"], "passes": a["passes"],
        "wrong": a["wrong"], "unforced": a["unforced"], "short": a["short"],
        "exact": a["exact"], "unchecked": a["unchecked"], "conflicts": a["conflicts"],
        "token_steps": a["token_steps"],
        "noncanonical": _share(a["noncanonical"], a["token_steps"]),
        "noncanonical_steps": a["noncanonical"], "token_mismatch": a["token_mismatch"],
        "ff_us": a["ff_ns"] / a["ff_calls"] / 1e3 if a["ff_calls"] else None,
        "mask_us": a["mask_ns"] / a["mask_calls"] / 1e3 if a["mask_calls"] else None,
    }


def jump_forward_rows(records: list[JumpForwardRecord]) -> JumpForwardSummaryBlock:
    """``{"rows", "not_measured", "evidence"}``: one row per (engine, subset) plus one per
    engine over all subsets (``subset == "all"``), sorted by engine then subset;
    ``not_measured``: engines without a jump-forward API (or with no schema compiled),
    each with the reason; ``evidence``: the first wrong continuations, mask conflicts and
    non-canonical token offers, with engine, case, step, prefix tail and bytes."""
    recs = list(records)  # a summary block sees the records of its own suite only
    api: dict[str, bool | None] = {}
    for r in recs:
        jf = r.get("jump_forward")
        if jf is not None:
            api[r["engine"]] = bool(jf.get("api")) or api.get(r["engine"], False)
        else:
            api.setdefault(r["engine"], None)
    accs: dict[tuple[str, str], _Acc] = defaultdict(_acc)
    evidence: dict[str, list[dict[str, Any]]] = {"wrong": [], "mask_conflict": [],
                                                 "noncanonical": []}
    for r in recs:
        if not api.get(r["engine"]):
            continue
        if r.get("outcome") != "compile_error" and "jump_forward" not in r:
            continue  # a death (timeout, crash): the run's outcome tables count it
        for key in ((r["engine"], r["subset"]), (r["engine"], ALL)):
            _add(accs[key], r)
        for inst in (r.get("jump_forward") or {}).get("instances", ()):
            for kind, items in (inst.get("evidence") or {}).items():
                for e in items if kind in evidence else ():
                    if len(evidence[kind]) < MAX_EVIDENCE:
                        evidence[kind].append({"engine": r["engine"], "case_id": r["case_id"],
                                               "instance": inst["index"], **e})
    rows = [_row(e, s, a) for (e, s), a in accs.items()]
    rows.sort(key=lambda x: (x["engine"], x["subset"] == ALL, x["subset"]))
    not_measured: list[NotMeasured] = [{"engine": e, "reason": NOT_MEASURED if v is False else
                     "no schema compiled: not measured"}
                    for e, v in sorted(api.items()) if not v]
    return {"rows": rows, "not_measured": not_measured, "evidence": evidence}


def table_rows(block: JumpForwardSummaryBlock) -> list[list[str]]:
    """The console and report table: the rows, then one line per engine not measured."""
    pct, f = figures.percent, figures.fixed
    out = [[r["engine"], r["subset"], str(r["cases"]), str(r["steps"]), pct(r["offered"]),
            pct(r["spec_forced"]), f(r.get("spec_bytes"), 2), pct(r.get("spec_tokens")),
            pct(r["jf_share"]), pct(r["spec_share"]), str(r["wrong"]),
            str(r["unforced"]), str(r["short"]), str(r["conflicts"]), pct(r["noncanonical"]),
            f(r["ff_us"], 1), f(r["mask_us"], 1), str(r["rejected"]), str(r["no_oracle"])]
           for r in block["rows"]]
    for nm in block["not_measured"]:
        out.append([nm["engine"], ALL, nm["reason"]] + [""] * (len(HEADER) - 3))
    return out


def notes(block: JumpForwardSummaryBlock) -> list[str]:
    """Lines under the table: why a spec share of 0 can sit beside steps the spec forces."""
    out = []
    for r in block["rows"]:
        if r["subset"] == ALL and r["spec_forced"] and r.get("spec_tokens") == 0:
            out.append(f"{r['engine']}: the schemas force bytes at {100 * r['spec_forced']:.1f}% "
                       f"of steps ({r['spec_bytes']:.2f} bytes each on average) but never a "
                       "whole token (a closing quote, say, which a longer allowed token such as "
                       '": may replace): under the whole language of the schemas no forward '
                       "pass can be skipped, so the spec share is 0")
    return out


def summary_block(summary: JumpForwardSummary, meta: RunMeta, records: list[JumpForwardRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["jump_forward"]`` and ``jump_forward.json`` in the run folder; console
    text (None when the run holds no jump-forward records)."""
    block = jump_forward_rows(records)
    if not block["rows"] and not block["not_measured"]:
        return None
    summary["jump_forward"] = block
    if run_dir is not None:
        (Path(run_dir) / "jump_forward.json").write_text(json.dumps(block, indent=2))
    lines = ["Jump-forward: forced continuations (share of output tokens needing no forward "
             "pass; spec: the reference engine's forced bytes)", 
             # a not-measured line's reason spans the columns after "subset"
             text_table(Table(HEADER, table_rows(block), align="l"), span_from=2)]
    lines += notes(block)
    for e in block["evidence"]["wrong"]:
        lines.append(f"  wrong: {e['engine']} {e['case_id']} #{e['instance']} step {e['step']}: "
                     f"after …{e['prefix'][-40:]!r} offered {e['offered']!r} "
                     f"(spec forces {e.get('oracle', '')!r})")
    return "\n".join(lines)
