"""Conformance views of a run: the drift matrix, engine pairs that accept different
languages, and the JSON-Schema-Test-Suite's per-keyword table. Data + Markdown renderers;
built from ``records.jsonl`` alone (never runs an engine).

**Drift** (suite ``drift``, probes in ``suites/drift_probes.py``). Per engine (``name[:config]``)
and axis, over the axis's probes:

- ``refuses``  no schema of the axis compiled (compile error, or its job died);
- ``agrees``   every probe whose schema compiled was accepted exactly when the spec accepts it;
- ``stricter`` some spec-valid probe rejected, no spec-invalid probe accepted;
- ``looser``   some spec-invalid probe accepted, no spec-valid probe rejected;
- ``mixed``    both (a fifth value beside the issue's four: an engine can be stricter on one
  probe of an axis and looser on another, e.g. anchoring patterns while ignoring a keyword;
  folding that into either would hide half of it).

Probes whose schema did not compile while others of the axis did count as ``refused`` in the
details (:func:`drift_details`) but do not change the verdict. ``drift.json`` in the run
folder is ``{"<engine[:config]>": {"<axis>": verdict}}`` (:func:`drift_matrix`).

**Pairs** (:func:`drift_pairs`): two engines accept different languages when a probe whose
schema both compiled is accepted by one and rejected by the other; each pair lists those
probes (the first is its witness). A probe one engine refuses to compile is listed apart.

**Keywords** (suite ``json-schema-test-suite``, :func:`keyword_table`): per draft, keyword
file and engine, instances passed / false accept / false reject / compile error (instances
of groups that did not compile) / died (instances of groups whose job timed out, ran out of
memory or crashed; counted when the suite is at hand to say how many there were), on the
primary serialisation. Written to ``keywords.json`` in the run folder.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable

from harness.measure import outcomes

DRIFT_SUITE = "drift"
JSTS_SUITE = "json-schema-test-suite"
VERDICTS = ("agrees", "stricter", "looser", "mixed", "refuses")
_COMPILED = (outcomes.PASSING, outcomes.VALIDATION_ERROR, outcomes.INVALIDATION_ERROR)


def _accepted(inst: dict[str, Any], primary: str) -> bool | None:
    res = inst.get("results", {})
    r = res.get("text", res.get(primary))
    return None if r is None else r.get("status") == "accepted"


def _engines(records: list[dict[str, Any]], engines: Iterable[str] | None) -> list[str]:
    if engines is not None:
        return list(engines)
    return list(dict.fromkeys(r["engine"] for r in records))


def _probe_name(case_id: str, index: int) -> str:
    try:
        from suites.drift import probe_id

        return probe_id(case_id, index)
    except (KeyError, IndexError):  # the catalogue changed since the run
        return f"{case_id}#{index}"


# ------------------------------------------------------------------------------ drift
def drift_observations(records: Iterable[dict[str, Any]], primary: str = "ascii"
                       ) -> dict[str, dict[str, dict[str, Any]]]:
    """engine → probe id → {axis, case, index, text, spec, compiled, accepted, error}."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        if r.get("suite", DRIFT_SUITE) != DRIFT_SUITE:
            continue
        compiled = r["outcome"] in _COMPILED
        axis = r.get("subset") or r["case_id"].split("/", 1)[0]
        eng = out.setdefault(r["engine"], {})
        insts = r.get("instances") or []
        if not insts:  # a death: no instances in the record; take them from the catalogue
            from suites.drift import GROUP_BY_ID

            g = GROUP_BY_ID.get(r["case_id"], {"probes": []})
            insts = [{"index": i, "expected": p["valid"], "text": p["text"]}
                     for i, p in enumerate(g["probes"])]
        for inst in insts:
            pid = _probe_name(r["case_id"], inst["index"])
            eng[pid] = {
                "axis": axis, "case": r["case_id"], "index": inst["index"],
                "text": inst.get("text"), "spec": bool(inst["expected"]),
                "compiled": compiled,
                "accepted": _accepted(inst, primary) if compiled else None,
                "error": None if compiled else (r.get("error") or r["outcome"]),
            }
    return out


def _verdict(obs: list[dict[str, Any]]) -> str:
    done = [o for o in obs if o["compiled"] and o["accepted"] is not None]
    if not done:
        return "refuses"
    stricter = any(o["spec"] and not o["accepted"] for o in done)
    looser = any(not o["spec"] and o["accepted"] for o in done)
    return {(False, False): "agrees", (True, False): "stricter",
            (False, True): "looser", (True, True): "mixed"}[(stricter, looser)]


def _axes_in(obs: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    from suites.drift_probes import AXES

    seen = {o["axis"] for per in obs.values() for o in per.values()}
    return [a for a in AXES if a in seen] + sorted(seen - set(AXES))


def drift_details(records: list[dict[str, Any]], primary: str = "ascii",
                  engines: Iterable[str] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """engine → axis → {verdict, probes, compiled, refused, false_rejects [ids],
    false_accepts [ids]}."""
    obs = drift_observations(records, primary)
    axes = _axes_in(obs)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for eng in _engines(records, engines):
        per = obs.get(eng, {})
        out[eng] = {}
        for axis in axes:
            items = {pid: o for pid, o in per.items() if o["axis"] == axis}
            if not items:
                continue
            ol = list(items.values())
            out[eng][axis] = {
                "verdict": _verdict(ol),
                "probes": len(ol),
                "compiled": sum(o["compiled"] for o in ol),
                "refused": sum(not o["compiled"] for o in ol),
                "false_rejects": [p for p, o in items.items() if o["compiled"] and o["spec"] and o["accepted"] is False],
                "false_accepts": [p for p, o in items.items() if o["compiled"] and not o["spec"] and o["accepted"]],
            }
    return out


def drift_matrix(records: list[dict[str, Any]], primary: str = "ascii",
                 engines: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """``{"<engine[:config]>": {"<axis>": verdict}}``, the content of ``drift.json``."""
    return {eng: {axis: d["verdict"] for axis, d in axes.items()}
            for eng, axes in drift_details(records, primary, engines).items()}


def drift_pairs(records: list[dict[str, Any]], primary: str = "ascii",
                engines: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Engine pairs that accept different languages: ``[{"engines": [a, b], "differ":
    n, "axes": [...], "probes": [{probe, axis, text, spec, a, b}], "refused_by_one": [ids]}]``,
    only pairs with at least one differing probe, most differences first."""
    obs = drift_observations(records, primary)
    out = []
    for a, b in combinations(_engines(records, engines), 2):
        pa, pb = obs.get(a, {}), obs.get(b, {})
        differ, refused = [], []
        for pid in pa.keys() & pb.keys():
            oa, ob = pa[pid], pb[pid]
            if oa["compiled"] != ob["compiled"]:
                refused.append(pid)
            elif oa["compiled"] and oa["accepted"] is not None and ob["accepted"] is not None \
                    and oa["accepted"] != ob["accepted"]:
                differ.append({"probe": pid, "axis": oa["axis"], "text": oa["text"],
                               "spec": oa["spec"], a: oa["accepted"], b: ob["accepted"]})
        if differ:
            order = {pid: i for i, pid in enumerate(pa)}
            differ.sort(key=lambda d: order.get(d["probe"], 0))
            out.append({"engines": [a, b], "differ": len(differ),
                        "axes": list(dict.fromkeys(d["axis"] for d in differ)),
                        "probes": differ, "refused_by_one": sorted(refused)})
    out.sort(key=lambda p: -p["differ"])
    return out


def _md(text: Any) -> str:
    s = "" if text is None else str(text)
    for ch in ("\\", "|", "`", "*", "_", "[", "]", "<", ">"):
        s = s.replace(ch, "\\" + ch)
    return s


def visible(text: str) -> str:
    """An exact instance text with its raw control characters, DEL and NBSP shown as
    Unicode control pictures (raw LF → ␊, tab → ␉, 0x01 → ␁, DEL → ␡, NBSP → ⍽), so that a
    raw control character never looks like the escape ``\\n`` it is probed against."""
    out = []
    for c in text:
        o = ord(c)
        out.append(chr(0x2400 + o) if o < 0x20 else "\u2421" if o == 0x7F
                   else "\u237d" if o == 0xA0 else c)
    return "".join(out)


def _code(text: str | None, limit: int = 60) -> str:
    """An instance text as a Markdown code span (control characters made visible)."""
    if text is None:
        return ""
    shown = visible(text)
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return "`` " + shown.replace("|", "\\|") + " ``"


def render_drift_markdown(details: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Axes as rows, engines as columns; a cell is the verdict, with the number of probes
    of the axis the engine refused to compile when some did."""
    engines = list(details)
    axes = list(dict.fromkeys(a for e in details.values() for a in e))
    lines = ["| axis | " + " | ".join(_md(e) for e in engines) + " |",
             "|:--|" + ":--|" * len(engines)]
    for axis in axes:
        cells = []
        for e in engines:
            d = details[e].get(axis)
            if d is None:
                cells.append("–")
                continue
            cell = d["verdict"]
            if d["refused"] and d["verdict"] != "refuses":
                cell += f" ({d['refused']}/{d['probes']} refused)"
            cells.append(cell)
        lines.append(f"| {axis} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_pairs_markdown(pairs: list[dict[str, Any]], per_pair: int = 3) -> str:
    """One row per engine pair: how many probes differ, on which axes, and witnesses."""
    if not pairs:
        return "No two engines accepted different languages on these probes."
    lines = ["| engines | probes that differ | axes | witnesses (probe: text → spec / A / B) |",
             "|:--|--:|:--|:--|"]
    yn = {True: "accept", False: "reject"}
    for p in pairs:
        a, b = p["engines"]
        wit = "<br>".join(
            f"{_md(d['probe'])}: {_code(d['text'])} → {yn[d['spec']]} / {yn[d[a]]} / {yn[d[b]]}"
            for d in p["probes"][:per_pair])
        lines.append(f"| {_md(a)} vs {_md(b)} | {p['differ']} | {', '.join(p['axes'])} | {wit} |")
    return "\n".join(lines)


def render_drift_text(details: dict[str, dict[str, dict[str, Any]]],
                      pairs: list[dict[str, Any]]) -> str:
    """The console form: the matrix, then each differing pair with its first witness."""
    engines = list(details)
    axes = list(dict.fromkeys(a for e in details.values() for a in e))
    cell = {}
    for e in engines:
        for axis in axes:
            d = details[e].get(axis)
            c = "–" if d is None else d["verdict"]
            if d is not None and d["refused"] and d["verdict"] != "refuses":
                c += f" ({d['refused']}/{d['probes']}r)"
            cell[e, axis] = c
    w0 = max([len("axis")] + [len(a) for a in axes])
    ws = [max([len(e)] + [len(cell[e, a]) for a in axes]) for e in engines]
    lines = ["drift: engine × axis (agrees / stricter / looser / mixed / refuses; "
             "(n/m r) = n of the axis's m probes refused to compile)",
             "  ".join(["axis".ljust(w0)] + [e.ljust(w) for e, w in zip(engines, ws)]),
             "  ".join(["-" * w0] + ["-" * w for w in ws])]
    for a in axes:
        lines.append("  ".join([a.ljust(w0)] + [cell[e, a].ljust(w) for e, w in zip(engines, ws)]))
    lines.append("")
    lines.append(f"engine pairs that accept different languages: {len(pairs)}")
    yn = {True: "accepts", False: "rejects"}
    for p in pairs:
        a, b = p["engines"]
        d = p["probes"][0]
        lines.append(f"  {a} vs {b}: {p['differ']} probes ({', '.join(p['axes'])}); e.g. "
                     f"{d['probe']} {visible(d['text'] or '')[:60]}: "
                     f"{a} {yn[d[a]]}, {b} {yn[d[b]]}, spec {yn[d['spec']]}")
    return "\n".join(lines)


# ---------------------------------------------------------------- test-suite keywords
KEYWORD_FIELDS = ("instances", "passed", "false_accept", "false_reject", "compile_error",
                  "died", "unserialisable", "died_groups")


def keyword_table(records: Iterable[dict[str, Any]], primary: str = "ascii",
                  engines: Iterable[str] | None = None,
                  sizes: dict[str, int] | None = None) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{draft: {keyword: {engine: {instances, passed, false_accept, false_reject,
    compile_error, died, unserialisable, died_groups}}}}`` (keywords and drafts sorted).

    A record of a job that died holds no instances: ``sizes`` (case id → number of
    instances, :func:`case_sizes`) counts them under ``died``; without it only
    ``died_groups`` says so."""
    from suites.json_schema_test_suite import split_case_id

    records = [r for r in records if r.get("suite", JSTS_SUITE) == JSTS_SUITE]
    labels = _engines(records, engines)
    table: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for r in records:
        if "#" not in r["case_id"]:
            continue  # an unreadable file (bad_input): no groups to count
        draft, keyword, _ = split_case_id(r["case_id"])
        row = table.setdefault(draft, {}).setdefault(keyword, {})
        cell = row.setdefault(r["engine"], dict.fromkeys(KEYWORD_FIELDS, 0))
        insts = r.get("instances") or []
        if r["outcome"] in outcomes.DEATHS or (r["outcome"] == outcomes.BAD_INPUT):
            n = len(insts) or (sizes or {}).get(r["case_id"], 0)
            cell["died_groups"] += 1
            cell["died"] += n
            cell["instances"] += n
            continue
        for inst in insts:
            cell["instances"] += 1
            if r["outcome"] == outcomes.COMPILE_ERROR:
                cell["compile_error"] += 1
                continue
            acc = _accepted(inst, primary)
            if acc is None:
                cell["unserialisable"] += 1
            elif acc == inst["expected"]:
                cell["passed"] += 1
            elif acc:
                cell["false_accept"] += 1
            else:
                cell["false_reject"] += 1
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    from suites.json_schema_test_suite import DRAFTS

    for draft in sorted(table, key=lambda d: (DRAFTS.index(d) if d in DRAFTS else len(DRAFTS), d)):
        out[draft] = {}
        for kw in sorted(table[draft], key=lambda k: (k.count("/"), k)):
            out[draft][kw] = {e: table[draft][kw].get(e, dict.fromkeys(KEYWORD_FIELDS, 0))
                              for e in labels}
    return out


def _cell(c: dict[str, int]) -> str:
    n = c["instances"]
    if not n and not c["died_groups"]:
        return "–"
    bits = [f"{c['passed']}/{n}"]
    for key, tag in (("false_accept", "FA"), ("false_reject", "FR"), ("compile_error", "CE"),
                     ("died", "died"), ("unserialisable", "bad")):
        if c[key]:
            bits.append(f"{tag} {c[key]}")
    if c["died_groups"] and not c["died"]:
        bits.append(f"died {c['died_groups']} groups")
    return " ".join(bits)


keyword_cell = _cell  # public name for the report


def keyword_totals(table: dict[str, dict[str, dict[str, dict[str, int]]]]
                   ) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """Per draft and part (``required``, ``optional``, ``optional/format``) and engine: sums."""
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for draft, rows in table.items():
        for kw, cells in rows.items():
            part = "optional/format" if kw.startswith("optional/format/") else (
                "optional" if kw.startswith("optional/") else "required")
            for eng, c in cells.items():
                acc = out.setdefault(draft, {}).setdefault(part, {}).setdefault(
                    eng, dict.fromkeys(KEYWORD_FIELDS, 0))
                for k in KEYWORD_FIELDS:
                    acc[k] += c[k]
    return out


def render_keyword_markdown(table: dict[str, dict[str, dict[str, dict[str, int]]]]) -> str:
    """Keyword files as rows, engines as columns, one table per draft; a cell is
    ``passed/instances`` then FA (false accepts), FR (false rejects), CE (instances of
    groups that did not compile), died (instances of groups whose job died: timeout, OOM,
    crash), bad (unserialisable)."""
    parts = []
    totals = keyword_totals(table)
    for draft, rows in table.items():
        engines = list(dict.fromkeys(e for cells in rows.values() for e in cells))
        lines = [f"**{draft}**", "",
                 "| keyword | " + " | ".join(_md(e) for e in engines) + " |",
                 "|:--|" + "--:|" * len(engines)]
        for kw, cells in rows.items():
            lines.append(f"| {_md(kw)} | " + " | ".join(
                _cell(cells[e]) if e in cells else "–" for e in engines) + " |")
        for part, cells in totals.get(draft, {}).items():
            lines.append(f"| **total {part}** | " + " | ".join(
                _cell(cells[e]) if e in cells else "–" for e in engines) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def render_keyword_text(table: dict[str, dict[str, dict[str, dict[str, int]]]]) -> str:
    """The console form: per draft and part, pass rate per engine."""
    totals = keyword_totals(table)
    engines = list(dict.fromkeys(e for d in totals.values() for p in d.values() for e in p))
    lines = ["json-schema-test-suite: instances passed per engine (FA false accepts, "
             "FR false rejects, CE compile errors, died: timeout/OOM/crash)"]
    for draft, parts in totals.items():
        for part, cells in parts.items():
            row = [f"{draft}/{part}".ljust(30)]
            for e in engines:
                c = cells.get(e)
                if c and c["instances"]:
                    row.append(f"{e}: {c['passed']}/{c['instances']} "
                               f"({100 * c['passed'] / c['instances']:.0f}%; FA {c['false_accept']}, "
                               f"FR {c['false_reject']}, CE {c['compile_error']}, died {c['died']})")
            lines.append("  ".join(row))
    return "\n".join(lines)


# ------------------------------------------------------------------------- run hook
def case_sizes(meta: dict[str, Any] | None) -> dict[str, int] | None:
    """case id → number of instances, from the run's suite rebuilt from its stored
    configuration (None when the corpus is not at hand any more)."""
    if not meta:
        return None
    try:
        from harness.registry import build_suite

        cfg = meta["config"]
        suite = build_suite(cfg["suite"], data=cfg.get("data"), subsets=cfg.get("subsets"),
                            sample=cfg.get("sample"), schemas=cfg.get("schemas"))
        return {c.case_id: len(c.instances) for c in suite.cases()}
    except Exception:  # a moved corpus: deaths then count as groups only
        return None


def drift_block(summary: dict[str, Any], meta: dict[str, Any], records: list[dict[str, Any]],
                run_dir: Path | None = None) -> str | None:
    """The drift suite's block: writes ``drift.json`` into ``run_dir`` (if given) and
    returns the matrix and the disagreeing pairs as console text."""
    primary = summary.get("primary_serialization", "ascii")
    ran = [e for e, v in summary.get("engines", {}).items() if v.get("status") == "run"]
    details = drift_details(records, primary, ran)
    if run_dir is not None:
        matrix = {e: {a: d["verdict"] for a, d in axes.items()} for e, axes in details.items()}
        (Path(run_dir) / "drift.json").write_text(json.dumps(matrix, indent=2))
    return render_drift_text(details, drift_pairs(records, primary, ran))


def keywords_block(summary: dict[str, Any], meta: dict[str, Any], records: list[dict[str, Any]],
                   run_dir: Path | None = None) -> str | None:
    """The JSON-Schema-Test-Suite's block: writes ``keywords.json`` into ``run_dir`` (if
    given) and returns the keyword pass rates as console text."""
    primary = summary.get("primary_serialization", "ascii")
    ran = [e for e, v in summary.get("engines", {}).items() if v.get("status") == "run"]
    sizes = case_sizes(meta) if any(r["outcome"] in outcomes.DEATHS for r in records) else None
    table = keyword_table(records, primary, ran, sizes)
    if run_dir is not None:
        (Path(run_dir) / "keywords.json").write_text(json.dumps(table, indent=2))
    return render_keyword_text(table)
