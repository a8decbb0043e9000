"""The JSON-Schema-Test-Suite's summary block, from ``records.jsonl`` alone (never runs an
engine).

**Keywords** (suite ``json-schema-test-suite``, :func:`keyword_table`): per draft, keyword
file and engine, instances passed / false accept / false reject / compile error (instances
of groups that did not compile) / died (instances of groups whose job timed out, ran out of
memory or crashed; counted when the suite is at hand to say how many there were), on the
primary serialisation. Written to ``keywords.json`` in the run folder.
"""


from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from harness.suite import outcomes
from harness.suite.report import Table, markdown_table, md_cell
from harness.suite import Record, RunMeta, Summary

#: The suite whose records these views read (a report may hold runs of other suites).
JSTS_SUITE = "json-schema-test-suite"


# ---------------------------------------------------------------- test-suite keywords
KEYWORD_FIELDS = ("instances", "passed", "false_accept", "false_reject", "compile_error",
                  "died", "unserialisable", "died_groups")


def keyword_table(records: Iterable[Record], primary: str = "ascii",
                  engines: Iterable[str] | None = None,
                  sizes: dict[str, int] | None = None) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{draft: {keyword: {engine: {instances, passed, false_accept, false_reject,
    compile_error, died, unserialisable, died_groups}}}}`` (keywords and drafts sorted).

    A record of a job that died holds no instances: ``sizes`` (case id → number of
    instances, :func:`case_sizes`) counts them under ``died``; without it only
    ``died_groups`` says so."""
    from suites.json_schema_test_suite import split_case_id

    records = [r for r in records if r.get("suite", JSTS_SUITE) == JSTS_SUITE]
    labels = outcomes.engines_of(records, engines)
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
            acc = outcomes.replay_accepted(inst, primary)
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
        body = [[md_cell(kw), *(_cell(cells[e]) if e in cells else "–" for e in engines)]
                for kw, cells in rows.items()]
        body += [[f"**total {part}**", *(_cell(cells[e]) if e in cells else "–" for e in engines)]
                 for part, cells in totals.get(draft, {}).items()]
        # the cells are Markdown already (names escaped, totals in bold)
        md = Table(["keyword", *(md_cell(e) for e in engines)], body)
        parts.append("\n".join([f"**{draft}**", "", *markdown_table(md, cell=str)]))
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
def case_sizes(meta: RunMeta | None) -> dict[str, int] | None:
    """case id → number of instances, from the run's suite rebuilt from its stored
    configuration (None when the corpus is not at hand any more)."""
    if not meta:
        return None
    try:
        from harness.suite import build_suite

        cfg = meta["config"]
        suite = build_suite(cfg["suite"], data=cfg.get("data"), subsets=cfg.get("subsets"),
                            sample=cfg.get("sample"), schemas=cfg.get("schemas"))
        return {c.case_id: len(c.instances) for c in suite.cases()}
    except Exception:  # a moved corpus: deaths then count as groups only
        return None


def keywords_block(summary: Summary, meta: RunMeta, records: list[Record],
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
