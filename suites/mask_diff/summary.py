"""summary.json blocks of the ``mask-diff`` suite, from records alone.

Per engine (``summary["engines"][label]``):

``mask_diff``     ``schemas`` diffed, ``schemas_oracle`` (with the reference as oracle) and
                  ``schemas_no_oracle`` (reference refused the schema or ran out of time:
                  those steps are compared with the other engines, ``no_oracle_pairs``);
                  ``instances``, ``steps`` (steps compared with the oracle);
                  ``over_steps`` / ``under_steps``: steps where the engine forbids tokens the
                  spec allows / allows tokens it forbids (``*_ws_only_steps``: those whose
                  every differing token is whitespace-only); ``eos_over`` / ``eos_under``:
                  steps where the stop bit differs; ``witnesses``: count per verdict
                  (``false_accept`` = confirmed, with its token sequence in the record);
                  ``over_witnesses``: the same for over-constrained steps, completed under
                  the oracle's mask (``valid`` = confirmed: a document the spec allows);
                  ``schemas_false_accept``: schemas with a confirmed false accept (witness or
                  early EOS); ``false_rejects``: canonical tokenisations refused;
                  ``oracle_rejected``: valid instances the oracle itself refused (its bugs);
                  ``diff_steps_not_kept``: differing steps counted but not kept in detail in
                  the records (past 200 per instance).
``eos_rollback``  ``eos_early`` (steps where EOS was allowed on a prefix that is not a
                  valid document), ``eos_refused`` (steps where EOS was refused on one),
                  ``rollback_checks``, ``rollback_identical``, ``rollback_differs``,
                  ``rollback_refused`` (the engine declined the rollback, e.g. past its
                  window).
``tightness``     ``steps``, ``k``, ``forced_share`` (share of steps with exactly one allowed
                  token, EOS counting as a token), ``le_k_share`` (at most k), ``median_size``.

Top level ``summary["tokens"]``: ``k``; ``tightness_subsets``
(``{subset: {engine: {steps, forced_share, le_k_share}}}``, ``reference`` = the oracle's own
sets, i.e. the spec's); ``tightness_schemas`` (the same per case); ``tightness_pairs``
(per engine pair over the steps both reached on the same instance: ``steps``,
``size_differs``, ``forced_differs``, ``le_k_differs`` shares); ``no_oracle_pairs`` (per
engine pair over steps without an oracle: ``steps``, ``mask_differs``, ``schemas``,
``first`` = (case, instance, step) of the first difference).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from itertools import combinations
from typing import Any, Iterable

import numpy as np

from harness.suite import figures, outcomes
from harness.suite.engines import ORACLE
from suites.mask_diff.options import DEFAULTS
from harness.suite import Record, RunMeta, Summary
from suites.mask_diff.records import (EosRollbackBlock, MaskDiffEngineBlock, MaskDiffRecord,
                                      MaskDiffSummary, NoOraclePair, TightnessBlock,
                                      TightnessPair)
from harness.suite.report import Table, text_table



def _md_records(records: Iterable[Record]) -> list[MaskDiffRecord]:
    return [r for r in records if r.get("instances") and "mask_diff" in r["instances"][0]
            and r["outcome"] not in outcomes.DEATHS]


def _k(records: list[MaskDiffRecord], default: int | None = None) -> int:
    for r in records:
        if r.get("token_options", {}).get("tight_k"):
            return int(r["token_options"]["tight_k"])
    return int(default or DEFAULTS["tight_k"])


def mask_diff_block(recs: list[MaskDiffRecord]) -> MaskDiffEngineBlock:
    c: Counter = Counter()
    wit: Counter = Counter()
    owit: Counter = Counter()
    for r in recs:
        has_oracle = r.get("oracle", {}).get("status") == "ok"
        c["schemas"] += 1
        c["schemas_oracle" if has_oracle else "schemas_no_oracle"] += 1
        confirmed = False
        for inst in r["instances"]:
            md = inst["mask_diff"]
            c["instances"] += 1
            c["steps"] += sum(s is not None for s in md["oracle_sizes"])
            if "counts" in md:  # every step, also those past the diffs kept in the record
                c.update(md["counts"])
            else:  # a record without counts: its kept diffs only
                for d in md["diffs"]:
                    if d.get("over"):
                        c["over_steps"] += 1
                        c["over_ws_only_steps"] += d["over"] == d.get("over_ws", 0)
                    if d.get("under"):
                        c["under_steps"] += 1
                        c["under_ws_only_steps"] += d["under"] == d.get("under_ws", 0)
                    if d.get("eos"):
                        c[f"eos_{d['eos']}"] += 1
            c["diff_steps_not_kept"] += md["diffs_total"] - len(md["diffs"])
            for w in md["witnesses"]:
                wit[w["verdict"] or "none"] += 1
                confirmed |= w["verdict"] == "false_accept"
            for w in md.get("over_witnesses", ()):
                owit[w["verdict"] or "none"] += 1
            confirmed |= bool(md["eos"]["early"])
            res = next(iter(inst["results"].values()))
            c["false_rejects"] += res["status"] == "rejected"
            c["oracle_rejected"] += md.get("oracle_rejected_at") is not None
        c["schemas_false_accept"] += confirmed
    keys = ("schemas", "schemas_oracle", "schemas_no_oracle", "instances", "steps", "over_steps",
            "over_ws_only_steps", "under_steps", "under_ws_only_steps", "eos_over", "eos_under",
            "schemas_false_accept", "false_rejects", "oracle_rejected", "diff_steps_not_kept")
    out: MaskDiffEngineBlock = {k: int(c[k]) for k in keys}
    out["witnesses"] = dict(sorted(wit.items()))
    out["over_witnesses"] = dict(sorted(owit.items()))
    return out


def eos_rollback_block(recs: list[MaskDiffRecord]) -> EosRollbackBlock:
    c: Counter = Counter()
    for r in recs:
        for inst in r["instances"]:
            md = inst["mask_diff"]
            c["eos_early"] += len(md["eos"]["early"])
            c["eos_refused"] += len(md["eos"]["refused"])
            for rb in md.get("rollback") or ():
                c["rollback_checks"] += 1
                c[f"rollback_{rb['status']}"] += 1
    return {k: int(c[k]) for k in ("eos_early", "eos_refused", "rollback_checks",
                                   "rollback_identical", "rollback_differs", "rollback_refused")}


def _share(mask: np.ndarray) -> float | None:
    return round(float(mask.mean()), 4) if mask.size else None


def tightness_of(sizes: np.ndarray, k: int) -> TightnessBlock:
    return {"steps": int(sizes.size), "k": k, "forced_share": _share(sizes == 1),
            "le_k_share": _share(sizes <= k),
            "median_size": float(np.median(sizes)) if sizes.size else None}


def sizes_by(records: list[MaskDiffRecord]) -> dict[str, dict[tuple[str, int, int], tuple[str, int]]]:
    """engine → (case, instance, step) → (subset, allowed-set size); ``reference`` holds the
    oracle's sizes (taken once per instance)."""
    out: dict[str, dict[tuple[str, int, int], tuple[str, int]]] = {}
    for r in records:
        eng = out.setdefault(r["engine"], {})
        ref = out.setdefault(ORACLE, {})
        for inst in r["instances"]:
            md = inst["mask_diff"]
            for s, (n, on) in enumerate(zip(md["sizes"], md["oracle_sizes"])):
                key = (r["case_id"], inst["index"], s)
                eng[key] = (r["subset"], n)
                if on is not None:
                    ref.setdefault(key, (r["subset"], on))
    if not out.get(ORACLE):
        out.pop(ORACLE, None)
    return out


def tightness_subsets(sizes: dict[str, dict], k: int) -> dict[str, dict[str, TightnessBlock]]:
    per: dict[str, dict[str, list[int]]] = {}
    for eng, d in sizes.items():
        for (subset, n) in d.values():
            per.setdefault(subset, {}).setdefault(eng, []).append(n)
    return {s: {e: tightness_of(np.asarray(v), k) for e, v in sorted(per[s].items())}
            for s in sorted(per)}


def tightness_schemas(sizes: dict[str, dict], k: int) -> dict[str, dict[str, TightnessBlock]]:
    """case → engine → :func:`tightness_of` over that schema's steps."""
    per: dict[str, dict[str, list[int]]] = {}
    for eng, d in sizes.items():
        for (case, _, _), (_, n) in d.items():
            per.setdefault(case, {}).setdefault(eng, []).append(n)
    return {c: {e: tightness_of(np.asarray(v), k) for e, v in sorted(per[c].items())}
            for c in sorted(per)}


def tightness_pairs(sizes: dict[str, dict], k: int) -> list[TightnessPair]:
    out: list[TightnessPair] = []
    for a, b in combinations(sorted(sizes), 2):
        common = sizes[a].keys() & sizes[b].keys()
        if not common:
            continue
        x = np.asarray([sizes[a][key][1] for key in common])
        y = np.asarray([sizes[b][key][1] for key in common])
        out.append({"engines": [a, b], "steps": int(x.size),
                    "size_differs": _share(x != y),
                    "forced_differs": _share((x == 1) != (y == 1)),
                    "le_k_differs": _share((x <= k) != (y <= k))})
    return out


def no_oracle_pairs(records: list[MaskDiffRecord]) -> list[NoOraclePair]:
    """Engines compared with each other, by allowed-set digest, where no oracle ran."""
    dig: dict[str, dict[tuple[str, int, int], str]] = {}
    for r in records:
        for inst in r["instances"]:
            md = inst["mask_diff"]
            for s, (d, on) in enumerate(zip(md["digests"], md["oracle_sizes"])):
                if on is None:
                    dig.setdefault(r["engine"], {})[(r["case_id"], inst["index"], s)] = d
    out: list[NoOraclePair] = []
    for a, b in combinations(sorted(dig), 2):
        common = dig[a].keys() & dig[b].keys()
        if not common:
            continue
        differ = [key for key in common if dig[a][key] != dig[b][key]]
        out.append({"engines": [a, b], "steps": len(common), "mask_differs": len(differ),
                    "schemas": len({key[0] for key in common}),
                    "first": sorted(differ)[0] if differ else None})
    return out


def summary_block(summary: MaskDiffSummary, meta: RunMeta, records: list[Record],
                  run_dir: Any = None) -> str | None:
    """Add the blocks above to ``summary`` (in place); return console text, or None when
    the run holds no mask-diff records."""
    md = _md_records(records)
    if not md:
        return None
    k = _k(md)
    for label, e in summary.get("engines", {}).items():
        mine = [r for r in md if r["engine"] == label]
        if mine:
            e["mask_diff"] = mask_diff_block(mine)
            e["eos_rollback"] = eos_rollback_block(mine)
            sizes = np.asarray([n for r in mine for i in r["instances"]
                                for n in i["mask_diff"]["sizes"]])
            e["tightness"] = tightness_of(sizes, k)
    sizes = sizes_by(md)
    summary["tokens"] = {"k": k, "tightness_subsets": tightness_subsets(sizes, k),
                         "tightness_schemas": tightness_schemas(sizes, k),
                         "tightness_pairs": tightness_pairs(sizes, k),
                         "no_oracle_pairs": no_oracle_pairs(md)}
    return render_text(summary)


def render_text(summary: Summary) -> str:
    """Console table: one row per engine (mask diff, EOS/rollback, tightness)."""
    lines = []
    md = {l: e for l, e in summary.get("engines", {}).items() if "mask_diff" in e}
    if md:
        lines.append("mask diff against the reference engine (steps; witnesses confirmed: "
                     "FA = false accepts, over ok = forbidden tokens completed to valid documents):")
        pct = figures.percent
        table = Table(["engine", "schemas", "no-oracle", "steps", "over", "(ws)", "under", "(ws)",
                       "witness FA", "over ok", "EOS early", "EOS refused", "rollback≠",
                       "forced", "≤k"], [])
        for l, e in md.items():
            d, er, t = e["mask_diff"], e["eos_rollback"], e["tightness"]
            table.rows.append([l, *(str(x) for x in (
                d["schemas"], d["schemas_no_oracle"], d["steps"], d["over_steps"],
                d["over_ws_only_steps"], d["under_steps"], d["under_ws_only_steps"],
                d["witnesses"].get("false_accept", 0), d["over_witnesses"].get("valid", 0),
                er["eos_early"], er["eos_refused"], er["rollback_differs"])),
                pct(t["forced_share"]), pct(t["le_k_share"])])
        lines.append(textwrap.indent(text_table(table), "  "))
        tok = summary.get("tokens", {})
        for p in tok.get("no_oracle_pairs", ()):
            lines.append(f"  no oracle: {p['engines'][0]} vs {p['engines'][1]}: masks differ on "
                         f"{p['mask_differs']} of {p['steps']} steps ({p['schemas']} schemas)")
    return "\n".join(lines) if lines else ""
