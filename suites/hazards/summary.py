"""The hazards suite's table: one row per hazard, one column per engine row (standalone
engines and served backends alike), each cell a verdict with its witness, or "not
measured: why". Computed from the records alone (:func:`hazard_table`), stored as
``summary["hazards"]`` and ``hazards.json`` in the run folder.

Cell verdicts, by hazard:

==================  =========================================================================
hostile_request     ``survived`` (every hostile request refused or answered, the ordinary
                    request after them answered, ``/health`` up) / ``crashed`` / ``hung`` /
                    ``degraded`` (up, but the ordinary request after them fails)
bad_tool            ``refused`` (the whole request) / ``others_kept`` / ``bad_loose`` /
                    ``broken``; served: ``refused`` / ``answered`` / ``crashed``
keywords            ``ignored`` (some keyword: the cell names them with a witness) /
                    ``misread`` (a valid instance the engine cannot write) / ``kept``
                    (every judged keyword kept or refused) / ``undecided``
padded_vocab        ``masked`` / ``narrow`` (the caller must pad the mask) / ``leaks``
whitespace          ``unbounded`` (some position kind reached the cap) / ``bounded``
reasoning           ``enforced`` / ``not_enforced`` / ``leaks`` (the output can end inside
                    the reasoning) / ``refused``; served also ``undecided`` (the budget
                    ended inside the free text)
==================  =========================================================================

A job that died (timeout, out of memory, crash) is the cell's verdict: ``crash: …``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from harness.suite import outcomes
from harness.suite import Record, RunMeta
from suites.hazards.records import (AtlasCell, AtlasEngine, HazardCell, HazardRecord,
                                    HazardRow, HazardsSummary, HazardsSummaryBlock,
                                    KeywordAtlas, KeywordVerdict)

__all__ = ["ATLAS_VERDICTS", "hazard_table", "is_verdict_unit", "keyword_atlas",
           "keyword_table", "summary_block"]

#: The atlas's columns, in order (harness.measure.keywords.VERDICTS).
ATLAS_VERDICTS = ("kept", "ignored", "misread", "refused", "undecided")


def is_verdict_unit(record: Record) -> bool:
    """A record is a unit of the verdict unless it says why its hazard is not measured."""
    return not (record.get("hazard") or {}).get("not_measured")


def _engines(meta: RunMeta, records: list[Record]) -> list[str]:
    out = [e["engine"] for e in meta.get("engines") or ()]
    for r in records:
        if r["engine"] not in out:
            out.append(r["engine"])
    return out


def _death(r: Record) -> str | None:
    if r["outcome"] in outcomes.DEATHS and not r.get("hazard", {}).get("verdict"):
        return f"{r['outcome']}: {(r.get('error') or '')[:160]}"
    return None


def _cell(verdict: str, witness: str | None) -> HazardCell:
    return {"verdict": verdict, "witness": witness,
            "text": verdict + (f": {witness}" if witness else "")}


def _keywords_cell(recs: list[HazardRecord]) -> HazardCell:
    if all((r.get("hazard") or {}).get("not_measured") for r in recs):
        why = (recs[0].get("hazard") or {}).get("not_measured")
        return {"verdict": "not measured", "witness": why, "text": f"not measured: {why}"}
    per = _keyword_verdicts(recs)
    deaths = [f"{r['case_id'].split('/')[-1]}: {_death(r)}" for r in recs if _death(r)]
    ignored = {k: v for k, v in per.items() if v["verdict"] == "ignored"}
    misread = {k: v for k, v in per.items() if v["verdict"] == "misread"}
    kept = sorted(k for k, v in per.items() if v["verdict"] == "kept")
    refused = sorted(k for k, v in per.items() if v["verdict"] == "refused")
    corpus = sum(1 for r in recs if "/corpus/" in r["case_id"])
    tail = (f"; kept {len(kept)}, refused {len(refused)} ({', '.join(refused) or 'none'})"
            f"; {corpus} corpus schema(s)" + (f"; {len(deaths)} job(s) died ({deaths[0]})"
                                                if deaths else ""))
    if ignored:
        names = ", ".join(sorted(ignored))
        first = sorted(ignored)[0]
        return _cell("ignored", f"{names} (e.g. {first}: {ignored[first]['witness']} "
                                f"accepted){tail}")
    if misread:
        names = ", ".join(sorted(misread))
        first = sorted(misread)[0]
        return _cell("misread", f"{names} (e.g. {first}: {misread[first]['witness']} "
                                f"valid, cannot be written){tail}")
    if deaths and not per:
        return _cell("crash", deaths[0])
    if not kept and not refused:
        return _cell("undecided", "no keyword decided by the engine's language" + tail)
    return _cell("kept", f"no keyword ignored{tail}")


#: Which verdict wins for a keyword judged more than once (probe, corpus occurrences).
_RANK = {"ignored": 0, "misread": 1, "kept": 2, "refused": 3, "undecided": 4, "not_probed": 5}


def _keyword_verdicts(recs: list[HazardRecord]) -> dict[str, KeywordVerdict]:
    per: dict[str, KeywordVerdict] = {}
    for r in recs:
        for row in (r.get("hazard") or {}).get("rows") or ():
            kw, v = row["keyword"], row["verdict"]
            if v == "not_probed":
                continue
            if kw not in per or _RANK[v] < _RANK[per[kw]["verdict"]]:
                per[kw] = {"verdict": v, "witness": row.get("witness") or row.get("error")
                           or row.get("why"), "case": r["case_id"], "path": row.get("path")}
    return per


def keyword_table(records: list[HazardRecord]) -> dict[str, dict[str, KeywordVerdict]]:
    """engine → keyword → ``{"verdict", "witness", "case", "path"}``: each keyword's
    verdict over every schema of the run (ignored anywhere wins, then misread, kept,
    refused, undecided)."""
    by: dict[str, list[HazardRecord]] = defaultdict(list)
    for r in records:
        if (r.get("hazard") or {}).get("name") == "keywords" or r["case_id"].startswith("keywords/"):
            by[r["engine"]].append(r)
    return {e: _keyword_verdicts(recs) for e, recs in by.items()}


def keyword_atlas(records: list[HazardRecord]) -> KeywordAtlas:
    """The corpus's keyword atlas: per engine and keyword, how many occurrences (node ×
    keyword, over the run's corpus schemas, ``keywords/corpus/*``; probes left out) were
    kept, ignored, misread, refused or undecided, with one witness per flagged count (the
    first in case order: ignored and misread their instance, refused the engine's error,
    undecided why). Also per engine: schemas judged, schemas whose job died (the nodes it
    had finished are counted, from the record's ``kept`` rows; the rest have no verdict),
    nodes judged and reused from the run's memo (keywords.Memo), and the seconds spent."""
    engines: list[str] = []
    cells: dict[str, dict[str, AtlasCell]] = {}
    per_engine: dict[str, AtlasEngine] = {}
    for r in sorted(records, key=lambda x: (x["engine"], x["case_id"])):
        if not r["case_id"].startswith("keywords/corpus/"):
            continue
        e = r["engine"]
        if e not in per_engine:
            engines.append(e)
            per_engine[e] = {"schemas": 0, "died": 0, "died_example": None, "died_rows": 0,
                             "nodes": 0, "reused": 0, "plan_s": 0.0, "judge_s": 0.0}
        pe = per_engine[e]
        pe["schemas"] += 1
        d = _death(r)
        h = r.get("hazard") or {}
        if d:
            pe["died"] += 1
            pe["died_example"] = pe["died_example"] or f"{r['case_id'].split('/')[-1]}: {d}"
            rows = (r.get("kept") or {}).get("rows") or []
            pe["died_rows"] += len(rows)
        else:
            rows = h.get("rows") or []
            pe["nodes"] += h.get("nodes", 0)
            pe["reused"] += h.get("reused", 0)
            pe["plan_s"] = round(pe["plan_s"] + h.get("plan_s", 0.0), 3)
            pe["judge_s"] = round(pe["judge_s"] + h.get("judge_s", 0.0), 3)
        for row in rows:
            v = row["verdict"]
            if v not in ATLAS_VERDICTS:
                continue
            cell = cells.setdefault(e, {}).setdefault(
                row["keyword"], {"counts": {x: 0 for x in ATLAS_VERDICTS}, "examples": {}})
            cell["counts"][v] += 1
            if v not in cell["examples"]:
                cell["examples"][v] = {"case": r["case_id"].split("/", 2)[-1],
                                       "path": row.get("path") or "",
                                       "witness": row.get("witness") if v in (
                                           "ignored", "misread") else None,
                                       "why": row.get("why")}
    if not any(pe["nodes"] for pe in per_engine.values()):
        # records of the judge before judge_schema (no node counts, no misreadings): no atlas
        return {"engines": [], "keywords": [], "cells": {}, "engine": {}}
    keywords = sorted({k for c in cells.values() for k in c})
    return {"engines": engines, "keywords": keywords, "cells": cells, "engine": per_engine}


def _one(recs: list[HazardRecord], hazard: str) -> HazardCell:
    """The cell of a hazard with one record per engine (or one per vocabulary)."""
    parts, verdicts = [], []
    for r in sorted(recs, key=lambda x: x["case_id"]):
        d = _death(r)
        h = r.get("hazard") or {}
        label = r["case_id"].split("/", 1)[1] if "/" in r["case_id"] else None
        if d:
            verdicts.append("crash")
            parts.append((label + ": " if label else "") + d)
            continue
        if h.get("not_measured"):
            continue
        v = h.get("verdict", "?")
        verdicts.append(v)
        parts.append((f"{label}: {v}, " if label else "") + str(h.get("witness") or ""))
    if not verdicts:
        why = next(((r.get("hazard") or {}).get("not_measured") for r in recs
                    if (r.get("hazard") or {}).get("not_measured")), "no record")
        return {"verdict": "not measured", "witness": why, "text": f"not measured: {why}"}
    worst = {"padded_vocab": ("crash", "leaks", "narrow", "masked"),
             "whitespace": ("crash", "unbounded", "refused", "bounded"),
             "reasoning": ("crash", "crashed", "hung", "not_enforced", "leaks", "refused",
                           "undecided", "enforced"),
             "bad_tool": ("crash", "crashed", "hung", "bad_loose", "broken", "refused",
                          "answered", "others_kept"),
             "hostile_request": ("crash", "crashed", "hung", "degraded", "error", "survived")}.get(hazard, ())
    verdict = next((w for w in worst if w in verdicts), verdicts[0])
    return _cell(verdict, "; ".join(p for p in parts if p))


def hazard_table(meta: RunMeta, records: list[HazardRecord]) -> HazardsSummaryBlock:
    """``{"engines": [...], "rows": [{"hazard", "number", "title", "cells": {engine:
    {"verdict", "witness", "text"}}}], "keywords": keyword_table}``."""
    from suites.hazards import HAZARDS, hazard_of

    engines = _engines(meta, records)
    by: dict[tuple[str, str], list[HazardRecord]] = defaultdict(list)
    for r in records:
        by[(hazard_of(r["case_id"]), r["engine"])].append(r)
    selected = set((meta.get("suite") or {}).get("hazards") or HAZARDS)
    rows: list[HazardRow] = []
    for hz, (num, title, concerns) in HAZARDS.items():
        if hz not in selected:
            continue
        cells: dict[str, HazardCell] = {}
        for e in engines:
            recs = by.get((hz, e), [])
            if not recs:
                cells[e] = {"verdict": "not measured", "witness": "no record",
                            "text": "not measured: not run for this row"}
            elif hz == "keywords":
                cells[e] = _keywords_cell(recs)
            else:
                cells[e] = _one(recs, hz)
        rows.append({"hazard": hz, "number": num, "title": title, "concerns": concerns,
                     "cells": cells})
    return {"engines": engines, "rows": rows, "keywords": keyword_table(records),
            "atlas": keyword_atlas(records)}


def summary_block(summary: HazardsSummary, meta: RunMeta, records: list[HazardRecord],
                  run_dir: Path | None = None) -> str | None:
    """``summary["hazards"]`` and ``hazards.json``; console text: per hazard, one line per
    engine (None when the run holds no hazard records)."""
    if not any(r["case_id"].split("/", 1)[0] in _names() for r in records):
        return None
    table = hazard_table(meta, records)
    summary["hazards"] = table
    if run_dir is not None:
        (Path(run_dir) / "hazards.json").write_text(json.dumps(table, indent=1))
    lines = ["Hazards (one verdict per hazard and engine row, with its witness)"]
    for row in table["rows"]:
        lines.append(f"{row['number']}. {row['title']}")
        for e, c in row["cells"].items():
            text = c["text"]
            lines.append(f"   {e:<22} {text if len(text) <= 200 else text[:199] + '…'}")
    atlas = table["atlas"]
    if atlas["engines"]:
        lines.append("Keyword atlas: occurrences in the corpus schemas, "
                     + " / ".join(ATLAS_VERDICTS))
        lines.append(f"   {'keyword':<20} " + " ".join(f"{e:<24}" for e in atlas["engines"]))
        for k in atlas["keywords"]:
            cells = [(atlas["cells"].get(e) or {}).get(k) for e in atlas["engines"]]
            lines.append(f"   {k:<20} " + " ".join(
                f"{' / '.join(str(c['counts'][v]) for v in ATLAS_VERDICTS) if c else '–':<24}"
                for c in cells))
    return "\n".join(lines)


def _names() -> tuple[str, ...]:
    from suites.hazards import HAZARDS

    return tuple(HAZARDS)
