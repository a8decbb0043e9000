"""The drafts suite's figures ("the speculative table"), per engine:

- *API*: what :meth:`engines.protocol.Matcher.validate_draft` calls (the engine's own draft
  API, or ``token by token``);
- *schemas*: records of the engine; *compiled*: those that compiled; *died*: jobs whose
  worker was killed or crashed (timeout, OOM, crash: their drafts are lost);
- *drafts*: drafts checked (corrupt, clean and past-the-end together);
- *wrong length*: drafts whose accepted length differs from the expected one (a corrupt
  draft must stop exactly at its corrupt token, a clean one accept all ``k`` tokens, a
  past-the-end one its ``j`` tokens and the stop token); *short* / *long* split them;
- *rollback mismatch*: drafts after which some mask differs bit for bit from a fresh
  replay's (the state after ``validate_draft``, along the committed accepted prefix, or
  after rolling it back), or a commit refused a token the draft API accepted;
- *after stop*: tokens accepted after a stop token, all drafts together;
- *errors*: drafts on which the engine raised;
- *rollback*: ``checked`` where committed prefixes were rolled back and compared,
  ``unsupported`` where the engine cannot roll back (then not checked);
- per draft length ``k``: the median time of one ``validate_draft`` call, the median time
  of the same draft as single steps (``fill_mask`` + ``commit`` per token, then
  ``rollback``), both µs, and their ratio (validate / steps: below 1, the draft API is
  faster than stepping).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from harness.suite import figures, outcomes
from harness.suite import Record, RunMeta, Summary
from harness.suite.report import Table, text_table
from typing import Any

from suites.drafts.records import (DraftsEngineRow, DraftsPerK, DraftsRecord, DraftsSummary,
                                   SpeculativeRow)

#: the records' block (and summary.json's) this module reads and writes
KEY = "drafts"

__all__ = ["HEADER", "KEY", "SPECULATIVE_HEADER", "draft_rows", "speculative_rows",
           "speculative_table", "summary_block", "table_header", "table_rows"]

HEADER = ["engine", "API", "schemas", "compiled", "died", "drafts", "wrong length", "short",
          "long", "rollback mismatch", "after stop", "errors", "rollback"]


#: Below this (µs) a median of perf_counter_ns spans is the clock's, not the engine's.
CLOCK_RESOLUTION_US = 0.1


def _median_us(xs: list[int]) -> float | None:
    return float(np.median(np.asarray(xs, dtype=float))) / 1e3 if xs else None


def draft_rows(records: list[DraftsRecord]) -> list[DraftsEngineRow]:
    """One row per engine (sorted by name); the figures of the module docstring.
    ``per_k`` maps each draft length (as text) to ``{"drafts", "validate_us",
    "steps_us", "ratio"}`` (medians over the drafts of that length; None without data)."""
    by: dict[str, list[DraftsRecord]] = defaultdict(list)
    for r in records:
        # a job whose worker died has no drafts block: it still counts (as died)
        if r.get(KEY) is not None or r.get("outcome") in outcomes.DEATHS:
            by[r["engine"]].append(r)
    out = []
    for eng in sorted(by):
        recs = by[eng]
        blocks = [r[KEY] for r in recs if r.get(KEY) is not None]
        apis = sorted({b["api"] for b in blocks if b.get("api")})
        rows = [d for b in blocks for d in b["rows"]]
        got = [d for d in rows if d.get("got") is not None]
        rb = {d.get("rollback") for d in rows if d.get("rollback")}
        per_k: dict[str, DraftsPerK] = {}
        for k in sorted({d["k"] for d in rows}):
            ds = [d for d in rows if d["k"] == k]
            vs = [d["validate_ns"] for d in ds if d.get("validate_ns") is not None]
            ss = [d["steps_ns"] for d in ds if d.get("steps_ns") is not None]
            v, s = _median_us(vs), _median_us(ss)
            r, why = figures.ratio(v, s, n_num=len(vs), n_den=len(ss),
                                   resolution=CLOCK_RESOLUTION_US, what="draft time")
            per_k[str(k)] = {"drafts": len(ds), "validate_us": v, "steps_us": s,
                             "ratio": r, "ratio_why": why}
        out.append({
            "engine": eng, "api": ", ".join(apis) or None, "schemas": len(recs),
            "compiled": sum(r.get(KEY) is not None
                            and r.get("outcome") != outcomes.COMPILE_ERROR for r in recs),
            "died": sum(r.get("outcome") in outcomes.DEATHS for r in recs),
            "drafts": len(rows),
            "wrong_length": sum(d["got"] != d["expected"] for d in got),
            "short": sum(d["got"] < d["expected"] for d in got),
            "long": sum(d["got"] > d["expected"] for d in got),
            "rollback_mismatch": sum(bool(d.get("mismatch")) for d in rows),
            "after_stop": sum(int(d.get("after_stop") or 0) for d in rows),
            "errors": sum(bool(d.get("error")) for d in rows),
            "rollback": ("unsupported" if "unsupported" in rb else
                         "checked" if "checked" in rb else "–"),
            "per_k": per_k,
            "failures": [dict(f, case_id=r["case_id"]) for r in recs
                         if r.get(KEY) is not None for f in r[KEY]["failures"]],
        })
    return out


def _ks(rows: list[DraftsEngineRow]) -> list[str]:
    return sorted({k for r in rows for k in r["per_k"]}, key=int)


def table_header(rows: list[DraftsEngineRow]) -> list[str]:
    """:data:`HEADER` and one column per draft length: ``validate / steps µs (ratio)``."""
    return HEADER + [f"k={k}: validate / steps µs (ratio)" for k in _ks(rows)]


def table_rows(rows: list[DraftsEngineRow]) -> list[list[str]]:
    ks = _ks(rows)
    out = []
    for r in rows:
        cells = [r["engine"], r["api"] or "–", str(r["schemas"]), str(r["compiled"]),
                 str(r["died"]), str(r["drafts"]), str(r["wrong_length"]), str(r["short"]), str(r["long"]),
                 str(r["rollback_mismatch"]), str(r["after_stop"]), str(r["errors"]),
                 r["rollback"]]
        for k in ks:
            pk = r["per_k"].get(k)
            cells.append("–" if pk is None else
                         f"{figures.fixed(pk['validate_us'], 1)} / "
                         f"{figures.fixed(pk['steps_us'], 1)} ({figures.fixed(pk['ratio'], 2)})")
        out.append(cells)
    return out


SPECULATIVE_HEADER = ["engine", "drafter", "schemas", "accept_len", "steps / token",
                      "proposed / step", "acceptance", "speedup (model)", "rollbacks",
                      "wrong states", "lossless"]


def speculative_rows(records: list[DraftsRecord]) -> list[SpeculativeRow]:
    """One row per (engine, drafter) of grammar-aware drafting (``--model``,
    :mod:`suites.drafts.aware`): ``accept_len`` = accepted draft tokens / target steps and
    ``steps_per_token`` = target steps / output tokens, pooled over the schemas;
    ``speedup`` the median over the schemas of the modelled speedup; rollbacks and wrong
    states (the main matcher's mask unlike the twin's after a step) summed."""
    from suites.drafts.aware import DRAFTERS

    by: dict[tuple[str, str], list[Any]] = {}
    first_wrong: dict[tuple[str, str], dict[str, Any]] = {}
    for r in sorted(records, key=lambda x: x.get("case_id", "")):
        for d, run in ((r.get("speculative") or {}).get("drafters") or {}).items():
            by.setdefault((r["engine"], d), []).append(run)
            if run.get("wrong") and (r["engine"], d) not in first_wrong:
                first_wrong[(r["engine"], d)] = {"case_id": r["case_id"], **run["wrong"][0]}
    out: list[SpeculativeRow] = []
    order = {d: i for i, d in enumerate(DRAFTERS)}
    for (eng, d), runs in sorted(by.items(), key=lambda x: (x[0][0], order.get(x[0][1], 9))):
        steps = sum(x["steps"] for x in runs)
        toks = sum(x["output_tokens"] for x in runs)
        acc = sum(x["accepted"] for x in runs)
        prop = sum(x["drafted"] + x["siblings"] for x in runs)
        sp = [x["speedup"] for x in runs if x.get("speedup") is not None]
        out.append({"engine": eng, "drafter": d, "schemas": len(runs),
                    "steps_per_token": steps / toks if toks else None,
                    "accept_len": acc / steps if steps else None,
                    "drafted_per_step": prop / steps if steps else None,
                    "acceptance": acc / prop if prop else None,
                    "speedup": float(np.median(sp)) if sp else None,
                    "rollbacks": sum(x["rollbacks"] for x in runs),
                    "wrong_states": sum(x["wrong_states"] for x in runs),
                    "lossless": [sum(bool(x.get("lossless")) for x in runs), len(runs)],
                    "wrong_example": first_wrong.get((eng, d))})
    return out


def speculative_table(rows: list[SpeculativeRow]) -> list[list[str]]:
    return [[r["engine"], r["drafter"], str(r["schemas"]), figures.fixed(r["accept_len"], 2),
             figures.fixed(r["steps_per_token"], 3), figures.fixed(r["drafted_per_step"], 2),
             figures.fixed(r["acceptance"], 2), figures.fixed(r["speedup"], 2),
             str(r["rollbacks"]), str(r["wrong_states"]),
             f"{r['lossless'][0]}/{r['lossless'][1]}"] for r in rows]


def summary_block(summary: DraftsSummary, meta: RunMeta, records: list[DraftsRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["drafts"]`` (``{"rows": [...]}``, failures with their evidence included)
    and ``drafts.json`` in the run folder; console text (None when the run holds no drafts
    records)."""
    rows = draft_rows(records)
    if not rows:
        return None
    spec = speculative_rows(records)
    summary["drafts"] = {"rows": rows, "speculative": spec}
    if run_dir is not None:
        (Path(run_dir) / "drafts.json").write_text(json.dumps(rows, indent=2))
    text = ["Speculative drafts (accepted length vs expected; masks after rollback vs a fresh "
            "replay; time of one draft vs k single steps)",
            text_table(Table(table_header(rows), table_rows(rows), align="l"))]
    if spec:
        text += ["", "Grammar-aware drafting, the model as the target (greedy; accept_len: "
                     "accepted draft tokens per target step; speedup modelled from the "
                     "measured step, draft and mask costs)",
                 text_table(Table(SPECULATIVE_HEADER, speculative_table(spec), align="l"))]
        for row in spec:
            w = row.get("wrong_example")
            if w:
                text.append(f"  wrong state: {row['engine']} {row['drafter']} {w['case_id']} "
                            f"after {w['at']} tokens, {w['rolled_back']} rolled back: ids only "
                            f"the main matcher allows {w['main_only']}, only the twin "
                            f"{w['twin_only']}")
    for r in rows:
        for f in r["failures"][:3]:
            what = f.get("error") or f.get("mismatch") or (
                f"{f['after_stop']} token(s) accepted after the stop" if f.get("after_stop") else None)
            text.append(f"  {r['engine']} {f['case_id']} instance {f['instance']} {f['kind']} "
                        f"k={f['k']} p={f['p']}" + (f" c={f['c']}" if "c" in f else "")
                        + f": got {f.get('got')}, expected {f['expected']}"
                        + (f" ({what})" if what else ""))
    return "\n".join(text)
