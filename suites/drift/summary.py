"""The drift suite's summary: the drift matrix and the engine pairs that accept different
languages. Data + Markdown renderers, built from ``records.jsonl`` alone (never runs an
engine).

**Drift** (suite ``drift``, probes in ``suites/drift/probes.py``). Per engine (``name[:config]``)
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
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable

from harness.suite import outcomes
from harness.suite.report import Table, markdown_table, text_table
from harness.suite import Record, RunMeta, Summary
from suites.drift.records import AxisDetail, DriftObservation, DriftPair

#: The suite whose records these views read (a report may hold runs of other suites).
DRIFT_SUITE = "drift"
VERDICTS = ("agrees", "stricter", "looser", "mixed", "refuses")




def _probe_name(case_id: str, index: int) -> str:
    try:
        from suites.drift import probe_id

        return probe_id(case_id, index)
    except (KeyError, IndexError):  # the catalogue changed since the run
        return f"{case_id}#{index}"


# ------------------------------------------------------------------------------ drift
def drift_observations(records: Iterable[Record], primary: str = "ascii"
                       ) -> dict[str, dict[str, DriftObservation]]:
    """engine → probe id → {axis, case, index, text, spec, compiled, accepted, error}."""
    out: dict[str, dict[str, DriftObservation]] = {}
    for r in records:
        if r.get("suite", DRIFT_SUITE) != DRIFT_SUITE:
            continue
        compiled = r["outcome"] in outcomes.COMPILED
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
                "accepted": outcomes.replay_accepted(inst, primary) if compiled else None,
                "error": None if compiled else (r.get("error") or r["outcome"]),
            }
    return out


def _verdict(obs: list[DriftObservation]) -> str:
    done = [o for o in obs if o["compiled"] and o["accepted"] is not None]
    if not done:
        return "refuses"
    stricter = any(o["spec"] and not o["accepted"] for o in done)
    looser = any(not o["spec"] and o["accepted"] for o in done)
    return {(False, False): "agrees", (True, False): "stricter",
            (False, True): "looser", (True, True): "mixed"}[(stricter, looser)]


def _axes_in(obs: dict[str, dict[str, DriftObservation]]) -> list[str]:
    from suites.drift.probes import AXES

    seen = {o["axis"] for per in obs.values() for o in per.values()}
    return [a for a in AXES if a in seen] + sorted(seen - set(AXES))


def drift_details(records: list[Record], primary: str = "ascii",
                  engines: Iterable[str] | None = None) -> dict[str, dict[str, AxisDetail]]:
    """engine → axis → {verdict, probes, compiled, refused, false_rejects [ids],
    false_accepts [ids]}."""
    obs = drift_observations(records, primary)
    axes = _axes_in(obs)
    out: dict[str, dict[str, AxisDetail]] = {}
    for eng in outcomes.engines_of(records, engines):
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


def drift_matrix(records: list[Record], primary: str = "ascii",
                 engines: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """``{"<engine[:config]>": {"<axis>": verdict}}``, the content of ``drift.json``."""
    return {eng: {axis: d["verdict"] for axis, d in axes.items()}
            for eng, axes in drift_details(records, primary, engines).items()}


def drift_pairs(records: list[Record], primary: str = "ascii",
                engines: Iterable[str] | None = None) -> list[DriftPair]:
    """Engine pairs that accept different languages: ``[{"engines": [a, b], "differ":
    n, "axes": [...], "probes": [{probe, axis, text, spec, a, b}], "refused_by_one": [ids]}]``,
    only pairs with at least one differing probe, most differences first."""
    obs = drift_observations(records, primary)
    out = []
    for a, b in combinations(outcomes.engines_of(records, engines), 2):
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


def md_cell(text: Any) -> str:
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


def render_drift_markdown(details: dict[str, dict[str, AxisDetail]]) -> str:
    """Axes as rows, engines as columns; a cell is the verdict, with the number of probes
    of the axis the engine refused to compile when some did."""
    engines = list(details)
    axes = list(dict.fromkeys(a for e in details.values() for a in e))
    rows = []
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
        rows.append([axis, *cells])
    # the cells are Markdown already: engine names escaped, axes and verdicts plain words
    return "\n".join(markdown_table(Table(["axis", *(md_cell(e) for e in engines)], rows,
                                           align="l"), cell=str))


def render_pairs_markdown(pairs: list[DriftPair], per_pair: int = 3) -> str:
    """One row per engine pair: how many probes differ, on which axes, and witnesses."""
    if not pairs:
        return "No two engines accepted different languages on these probes."
    rows = []
    yn = {True: "accept", False: "reject"}
    for p in pairs:
        a, b = p["engines"]
        wit = "<br>".join(
            f"{md_cell(d['probe'])}: {_code(d['text'])} → {yn[d['spec']]} / {yn[d[a]]} / {yn[d[b]]}"
            for d in p["probes"][:per_pair])
        rows.append([f"{md_cell(a)} vs {md_cell(b)}", str(p["differ"]), ", ".join(p["axes"]), wit])
    return "\n".join(markdown_table(Table(
        ["engines", "probes that differ", "axes", "witnesses (probe: text → spec / A / B)"],
        rows, align=["l", "r", "l", "l"]), cell=str))


def render_drift_text(details: dict[str, dict[str, AxisDetail]],
                      pairs: list[DriftPair]) -> str:
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
    matrix = Table(["axis", *engines], [[a, *(cell[e, a] for e in engines)] for a in axes],
                   align="l")
    lines = ["drift: engine × axis (agrees / stricter / looser / mixed / refuses; "
             "(n/m r) = n of the axis's m probes refused to compile)",
             text_table(matrix, rule=True), ""]
    lines.append(f"engine pairs that accept different languages: {len(pairs)}")
    yn = {True: "accepts", False: "rejects"}
    for p in pairs:
        a, b = p["engines"]
        d = p["probes"][0]
        lines.append(f"  {a} vs {b}: {p['differ']} probes ({', '.join(p['axes'])}); e.g. "
                     f"{d['probe']} {visible(d['text'] or '')[:60]}: "
                     f"{a} {yn[d[a]]}, {b} {yn[d[b]]}, spec {yn[d['spec']]}")
    return "\n".join(lines)


def drift_block(summary: Summary, meta: RunMeta, records: list[Record],
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
