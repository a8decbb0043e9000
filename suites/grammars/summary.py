"""The grammar suite's figures: a family × engine table, compile time against grammar size,
and the translation and dialect findings.

All figures come from the records of :mod:`suites.grammars.job` (and, for the
translation findings, from ``fuzz`` / ``mask-diff`` records of grammar cases):

- *coverage*: compiled cases / cases the engine was asked to run;
- *false rejects / accepts*: instances (exact texts) whose replay disagrees with the
  ground-truth parser, the EOS check included; translation defects and dialect differences
  (a verdict the flagged construct, tested alone, explains) are counted apart, never here;
- *false reject kinds* (``rej kinds c/t/u``): of those false rejects, how many the engine
  cannot write under any tokenisation, how many only had this tokenisation refused while
  another is accepted, how many stayed undecided (:mod:`harness.analysis.rejects`);
- *mask/commit*: replays where the engine's commit and its own mask disagreed on a token
  (``commit_only``: the commit took a token the mask forbids; ``mask_only``: the reverse);
- *TBM*: mask fill + commit per token, µs, over every replayed instance of the family;
- *TTFM*: compile + matcher + first mask, ms, per compiled case.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from harness.suite import figures, rejects
from harness.suite import outcomes
from harness.suite import Record, RunMeta, Summary
from harness.suite.report import Table, text_table
from suites.grammars.records import (DialectExplained, DialectNotExplained, FamilyRow,
                                     GrammarRecord, GrammarsSummary, GrammarsSummaryBlock,
                                     TranslationDrift, WrongInstance)

__all__ = ["construct_alone", "dialect_findings", "dialect_not_explained", "false_accepts",
           "false_rejects", "family_table", "reject_kinds_by_engine", "size_series",
           "summary_block", "translation_block", "translation_findings", "KINDS_NOTE",
           "TABLE_HEADER"]

_FINISHED = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)

TABLE_HEADER = ["family", "engine", "cases", "coverage", "forms", "false rej", "rej kinds c/t/u",
                "false acc", "dialect", "mask/commit", "TBM p50 µs", "TBM p99 µs", "TTFM p50 ms"]

#: the table's note on ``rej kinds c/t/u``
KINDS_NOTE = ("rej kinds c/t/u: of the false rejects, valid texts the engine cannot write "
              "under any tokenisation / whose tokenisation here was refused while another "
              "is accepted / undecided")


def _grammar_records(records: Iterable[Record]) -> list[GrammarRecord]:
    """Records of grammar cases. A job that died (timeout, OOM, crash) leaves a record the
    runner wrote, without ``family``: it takes the family its case has in the other
    engines' records, so a death still counts against coverage."""
    records = list(records)
    family = {r["case_id"]: r["family"] for r in records if r.get("family")}
    return [r if r.get("family") else {**r, "family": family[r["case_id"]]}
            for r in records if r.get("family") or (r.get("case_id") in family
                                                    and r.get("outcome") in outcomes.DEATHS)]


def family_table(records: Iterable[GrammarRecord]) -> list[FamilyRow]:
    """One row per (family, engine), families in corpus order, engines as they ran."""
    groups: dict[tuple[str, str], list[GrammarRecord]] = defaultdict(list)
    for r in _grammar_records(records):
        groups[(r["family"], r["engine"])].append(r)
    order = {"regex": 0, "choice": 1, "cfg": 2}
    rows: list[FamilyRow] = []
    for (fam, eng), rs in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])):
        compiled = [r for r in rs if r["outcome"] in _FINISHED]
        fr = fa = dis = 0
        kinds = dict.fromkeys(rejects.KEYS, 0)
        tbm: list[np.ndarray] = []
        for r in compiled:
            for i in r.get("instances", ()):
                res = i.get("results", {}).get("text") or {}
                kind = outcomes.instance_outcome(i["expected"], res.get("status", ""))
                fr += kind == "false_reject"
                fa += kind == "false_accept"
                if kind == "false_reject":
                    rk = res.get("reject_kind")
                    kinds[rk if rk in kinds else "unchecked"] += 1
                dis += bool(res.get("disagreement"))
                if res.get("mask_ns"):
                    tbm.append(np.asarray(res["mask_ns"], np.int64)
                               + np.asarray(res["commit_ns"], np.int64))
        t = np.concatenate(tbm) / 1e3 if tbm else np.zeros(0)
        ttfm = [r["ttfm_ns"] / 1e6 for r in compiled if r.get("ttfm_ns") is not None]
        forms = Counter(r.get("form") for r in compiled if r.get("form"))
        rows.append({
            "family": fam, "engine": eng, "cases": len(rs), "compiled": len(compiled),
            "coverage": len(compiled) / len(rs) if rs else None,
            "forms": dict(forms),
            "compile_errors": sum(r["outcome"] == outcomes.COMPILE_ERROR for r in rs),
            "deaths": sum(r["outcome"] in outcomes.DEATHS for r in rs),
            "false_rejects": fr, "false_reject_kinds": kinds, "false_accepts": fa,
            "mask_commit": dis,
            "dialect": sum(len(r.get("dialect", ())) for r in rs),
            "translation": sum(len(r.get("translation", ())) for r in rs),
            "tokens": int(t.size),
            "tbm_p50_us": float(np.percentile(t, 50)) if t.size else None,
            "tbm_p99_us": float(np.percentile(t, 99)) if t.size else None,
            "ttfm_p50_ms": float(np.median(ttfm)) if ttfm else None,
        })
    return rows


def size_series(records: Iterable[Record]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Compile time against the size of an injected alternation (``[inject]`` cases, e.g.
    the SQL grammar at 10, 100 and 1,000 columns): ``{file: {engine: {size: ms}}}`` with
    ms = TTFM of the case at that size (None where it did not compile)."""
    out: dict[str, dict[str, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for r in _grammar_records(records):
        size = r.get("grammar_size")
        if size is None:
            continue
        base = r["case_id"].split("@", 1)[0]
        out[base][r["engine"]][str(size)] = (round(r["ttfm_ns"] / 1e6, 3)
                                             if r.get("ttfm_ns") is not None else None)
    return {k: dict(v) for k, v in out.items()}


def translation_findings(records: Iterable[Record]) -> list[TranslationDrift]:
    """Every text on which a translation's reader disagrees with the ground truth, once per
    (case, dialect, text): from replays (the engine's own form) and from fuzz outputs
    (every form, on every engine's outputs)."""
    seen: set[tuple[str, str, str]] = set()
    out: list[TranslationDrift] = []
    for r in records:
        items = [(t["dialect"], t["text"], t["truth"], t.get("form_verdict"), "instance")
                 for t in r.get("translation", ())]
        for w in (r.get("fuzz") or {}).get("walks", ()):
            for t in w.get("translation", ()):
                items.append((t["dialect"], t.get("text", ""), t["truth"], t["verdict"],
                              f"fuzz output of {r['engine']}"))
        for dialect, text, truth, verdict, where in items:
            key = (r["case_id"], dialect, text)
            if key in seen:
                continue
            seen.add(key)
            out.append({"case": r["case_id"], "dialect": dialect, "text": text,
                        "truth": truth, "translation_says": verdict, "where": where})
    return out


def dialect_findings(records: Iterable[Record]) -> list[DialectExplained]:
    """Engine verdicts that differ from the ground truth on a ``dialect_sensitive`` case
    and that the flagged construct, tested alone through the engine, explains (``chars``:
    the text's characters the engine's construct reads otherwise than Python's, each with
    the engine's verdict on it alone)."""
    return [{"engine": r["engine"], "case": r["case_id"], "form": r.get("form"),
             "construct": d["construct"], "text": d["text"], "truth": d["truth"],
             "status": d["status"], "chars": (d.get("probe") or {}).get("chars")}
            for r in _grammar_records(records) for d in r.get("dialect", ())]


def dialect_not_explained(records: Iterable[Record]) -> list[DialectNotExplained]:
    """Verdicts on a ``dialect_sensitive`` case that differ from the ground truth but that
    the flagged construct, tested alone, does not explain: ordinary false rejects or
    accepts of the engine (counted as such), listed with the probe's reason."""
    out: list[DialectNotExplained] = []
    for r in _grammar_records(records):
        for i in r.get("instances", ()):
            p = i.get("dialect_probe")
            if p is not None:
                res = i.get("results", {}).get("text") or {}
                out.append({"engine": r["engine"], "case": r["case_id"], "form": r.get("form"),
                            "construct": p.get("construct"), "text": i["text"],
                            "truth": i.get("truth"), "status": res.get("status"),
                            "reject_kind": res.get("reject_kind"), "why": p.get("why")})
    return out


def _wrong_instances(records: Iterable[GrammarRecord], kind: str) -> list[WrongInstance]:
    """Instances of finished jobs whose replay is a ``kind`` (``false_accept`` or
    ``false_reject``) against the ground truth, with engine, case, form and text."""
    out = []
    for r in _grammar_records(records):
        if r["outcome"] not in _FINISHED:
            continue
        for i in r.get("instances", ()):
            res = i.get("results", {}).get("text") or {}
            if outcomes.instance_outcome(i["expected"], res.get("status", "")) == kind:
                item = {"engine": r["engine"], "case": r["case_id"], "form": r.get("form"),
                        "text": i["text"]}
                if kind == "false_reject":
                    item.update(status=res.get("status"), reject_at=res.get("reject_at"),
                                reject_kind=res.get("reject_kind"))
                    if "reachable_tokens" in res:
                        item["reachable_tokens"] = res["reachable_tokens"]
                out.append(item)
    return out


def false_accepts(records: Iterable[GrammarRecord]) -> list[WrongInstance]:
    """Every confirmed false accept: an instance the ground truth calls invalid that the
    engine accepted (EOS included), with the text as its witness."""
    return _wrong_instances(records, "false_accept")


def false_rejects(records: Iterable[GrammarRecord]) -> list[WrongInstance]:
    """Every false reject: a valid instance the engine refused (where, how, and its kind:
    ``reject_kind``, with ``reachable_tokens`` for ``tokenization``)."""
    return _wrong_instances(records, "false_reject")


def reject_kinds_by_engine(rows: list[FamilyRow]) -> dict[str, dict[str, int]]:
    """engine → the false reject kinds of :func:`family_table`'s rows, summed over
    families."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        acc = out.setdefault(r["engine"], dict.fromkeys(rejects.KEYS, 0))
        for k, v in (r.get("false_reject_kinds") or {}).items():
            acc[k] = acc.get(k, 0) + v
    return out


def table_rows(rows: list[FamilyRow]) -> list[list[str]]:
    """:data:`TABLE_HEADER` rows as text."""
    return [[r["family"], r["engine"], str(r["cases"]),
             f"{r['compiled']}/{r['cases']}",
             ", ".join(f"{k} {v}" for k, v in sorted(r["forms"].items())) or "–",
             str(r["false_rejects"]), rejects.counts_cell(r.get("false_reject_kinds")),
             str(r["false_accepts"]), str(r["dialect"]),
             str(r.get("mask_commit", 0)),
             figures.fixed(r["tbm_p50_us"], 1), figures.fixed(r["tbm_p99_us"], 1),
             figures.fixed(r["ttfm_p50_ms"], 2)]
            for r in rows]


def _short(text: str, n: int = 60) -> str:
    s = json.dumps(text, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 1] + "…"


def summary_block(summary: GrammarsSummary, meta: RunMeta, records: list[Record],
                  run_dir: Path | None = None) -> str | None:
    """Add ``summary["grammars"]`` (table, size series, findings); write ``grammars.json``
    into ``run_dir``; return console text (None when the run holds no grammar records)."""
    recs = _grammar_records(records)
    if not recs:
        return None
    table = family_table(recs)
    block: GrammarsSummaryBlock = {"table": table, "sizes": size_series(recs),
             "translation": translation_findings(records), "dialect": dialect_findings(recs),
             "dialect_not_explained": dialect_not_explained(recs),
             "false_accepts": false_accepts(recs), "false_rejects": false_rejects(recs),
             "false_reject_kinds": reject_kinds_by_engine(table)}
    summary["grammars"] = block
    if run_dir is not None:
        (Path(run_dir) / "grammars.json").write_text(json.dumps(block, indent=2, ensure_ascii=False))
    return render_text(block)


def render_text(block: GrammarsSummaryBlock) -> str:
    lines = ["Grammars: family × engine (false rej / acc: instances against the ground-truth "
             "parser; dialect: differences on dialect-sensitive cases that the construct, "
             "tested alone, explains, counted apart)",
             text_table(Table(TABLE_HEADER, table_rows(block["table"]), align="l")), KINDS_NOTE]
    kinds = block.get("false_reject_kinds") or {}
    if any(sum(v.values()) for v in kinds.values()):
        lines.append("False rejects by kind:")
        lines += [f"  {eng}: {rejects.describe(v)}" for eng, v in kinds.items() if sum(v.values())]
    tok = [x for x in block["false_rejects"] if x.get("reject_kind") == "tokenization"]
    if tok:
        lines.append(f"Tokenisation refused, the text still reachable ({len(tok)}; "
                     "an accepted tokenisation as witness):")
        lines += [f"  {x['engine']} {x['case']}: {_short(x['text'])} "
                  f"accepted as {x.get('reachable_tokens')}" for x in tok[:20]]
    for base, engines in block["sizes"].items():
        sizes = sorted({s for v in engines.values() for s in v}, key=int)
        lines.append(f"Compile time (TTFM ms) against alternation size, {base}:")
        lines.append(text_table(Table(["engine", *sizes],
                                      [[e, *(figures.fixed(v.get(s), 2) for s in sizes)]
                                       for e, v in sorted(engines.items())], align="l")))
    fa = block["false_accepts"]
    lines.append(f"Confirmed false accepts: {len(fa)}" + ("" if not fa else ":"))
    lines += [f"  {x['engine']} {x['case']} ({x['form']}): {_short(x['text'])}" for x in fa[:20]]
    tr = block["translation"]
    lines.append(f"Translation defects (ours): {len(tr)}" + ("" if not tr else ":"))
    lines += [f"  {x['case']} {x['dialect']} says {x['translation_says']} on {_short(x['text'])} "
              f"(truth {x['truth']}; {x['where']})" for x in tr[:20]]
    dl = block["dialect"]
    if dl:
        lines.append(f"Dialect differences (the construct alone explains the verdict; "
                     f"reported, not counted as errors): {len(dl)}:")
        lines += [f"  {x['engine']} {x['case']} [{x['construct']}]: {_short(x['text'])} "
                  f"truth {x['truth']}, engine {x['status']}" + construct_alone(x.get("chars"))
                  for x in dl[:20]]
    ne = block.get("dialect_not_explained") or []
    if ne:
        lines.append(f"On dialect-sensitive cases but not explained by the construct "
                     f"(counted as ordinary errors): {len(ne)}:")
        lines += [f"  {x['engine']} {x['case']} [{x['construct']}]: {_short(x['text'])} "
                  f"truth {x['truth']}, engine {x['status']}"
                  + (f" ({rejects.NAMES.get(x['reject_kind'], x['reject_kind'])})"
                     if x.get("reject_kind") else "") + f": {x.get('why')}" for x in ne[:20]]
    return "\n".join(lines)


def construct_alone(chars: dict[str, Any] | None) -> str:
    """`` (the construct alone: ٣ refused, …)``: the engine's verdict on the flagged
    construct alone, for each character it reads otherwise than Python's ``re``."""
    if not chars:
        return ""
    said = {True: "accepted", False: "refused", None: "undecided"}
    return " (the construct alone: " + ", ".join(
        f"{c} {said[v]}" for c, v in list(chars.items())[:6]) + (
        ", …" if len(chars) > 6 else "") + ")"


def translation_block(summary: GrammarsSummary, meta: RunMeta,
                      records: list[Record], run_dir: Path | None = None) -> str | None:
    """For ``fuzz`` / ``mask-diff`` on the grammar corpus: the translation findings on the
    engines' outputs (``summary["grammar_translation"]``); None when none were checked."""
    if not any(r.get("form") not in (None, "json-schema") for r in records):
        return None
    found = translation_findings(records)
    summary["grammar_translation"] = found
    head = f"Translation drift on the engines' outputs: {len(found)} disagreement(s)"
    return "\n".join([head, *(f"  {x['case']} {x['dialect']} says {x['translation_says']} on "
                              f"{_short(x['text'])} (truth {x['truth']}; {x['where']})"
                              for x in found[:20])])
