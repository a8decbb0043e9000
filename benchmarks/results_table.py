"""Write docs/results.md: one generated, dated table of measured results from run folders.

    python benchmarks/results_table.py            # docs/results.md from results/published/
    python benchmarks/results_table.py --check    # exit 0 when docs/results.md is exactly that
    python benchmarks/results_table.py RUN_DIR [RUN_DIR ...] [-o FILE]   # any run folders

The published runs are the folders under ``results/published/`` named, in order and each
with a sentence saying what it was, by ``results/published/index.toml``; each keeps its
``run.json``, ``summary.json`` and ``records.jsonl.gz`` (the records, compressed), so every
figure of the document can be recomputed from what is committed: the table from the
summaries here, the summaries from the records by ``harness summary`` (the report is
regenerated, not stored). The document is a pure function of those files (its date is the
newest run's, not today's), which is what ``--check`` relies on: it exits 0 when the
document is exactly what they generate, and 1 with the first differing line otherwise.

Reads each run folder's ``run.json`` and ``summary.json`` and writes, with the harness's one
number formatter (:mod:`harness.measure.figures`: a value cut off by a limit shows as
``≥ LIMIT (why)``, a percentile the scheduler may have made as ``(preempted)``), one row per
(run, engine):
the run's date, commit, suite and selection, and per engine its version, schemas, outcome
counts, TBM average / p50 / p99 (µs), the share of masks over 1 ms and TTFM p50 / p90 (ms).
Runs of the serve suite go to a second table, one row per (server row, stream, mode):
throughput, TTFT / TPOT / ITL p50 and p99 (ms), invalid outputs, runaways, refusals,
crashes, and for the constrained stream its ratios to the unconstrained one (with a model
with priors, a table of the served outputs' validity and accuracy under it); runs of the
e2e suite (offline rows) to a third: TTFT and TPOT (ms) with their ratio; runs of the
grammars suite to a fourth, one row per (family, engine): coverage, the forms engines were
given, false rejects / accepts, dialect differences, TBM p50 / p99 (µs), TTFM p50 (ms), and
compile time against the size of an injected alternation; runs of the suites with their own
figures (tools, churn, jump-forward, drafts, batch: :data:`OWN_TABLES`) to one table each;
runs of the hazards suite to one hazard × engine table each. Below the tables, each run's
sentence, command (as the user typed it, paths relative to the project), machine and
tokenizer; runs marked ``gpu = true`` in the index make the GPU section, which otherwise
says that no GPU run is published.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.measure.figures import number, percent, show
from harness.report.model import Table
from harness.report.text import markdown_table, pipes

if TYPE_CHECKING:
    from harness.records import RunMeta, Summary

SCRIPT = "benchmarks/results_table.py"
ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = Path("results/published")
INDEX = PUBLISHED / "index.toml"
DOCUMENT = Path("docs/results.md")
#: The records of a published folder (what ``harness summary`` recomputes the summary from).
RECORDS = "records.jsonl.gz"


class RunFolderError(Exception):
    """A run folder that cannot be read (one-line message)."""


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFolderError(f"{path}: missing (run `harness summary {path.parent}` to "
                             "rebuild summary.json)" if path.name == "summary.json"
                             else f"{path}: missing: not a run folder") from None
    except (OSError, ValueError) as e:
        raise RunFolderError(f"{path}: cannot read: {e}") from None
    if not isinstance(data, dict):
        raise RunFolderError(f"{path}: not a JSON object")
    return data


def _utc(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "–"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


#: ``argv[0]`` of the harness's own entry points (console script, ``-m harness.cli``, ``-c``)
_HARNESS_PROGRAMS = ("harness", "__main__.py", "-c")
#: options that only say where a run wrote its folders: machine paths, not the measurement
_OUTPUT_OPTIONS = ("--results", "--reports")


def typed_command(command: Any) -> str:
    """A run's command line as the user typed it: the harness's own entry point as
    ``harness``, the options that only place its output folders left out, and every path
    below the project relative to it (no machine's folders in the document)."""
    if not isinstance(command, list) or not command:
        return str(command or "–")
    args = [str(a) for a in command]
    head = "harness" if Path(args[0]).name in _HARNESS_PROGRAMS else _relative(args[0])
    out, i = [head], 1
    while i < len(args):
        a = args[i]
        if a.split("=", 1)[0] in _OUTPUT_OPTIONS:
            i += 1 if "=" in a else 2
            continue
        out.append(_relative(a))
        i += 1
    return shlex.join(out)


def model_label(path: str) -> str:
    """A model folder as the document names it, with no machine path: the model built
    here by its cache folder's name (``build:default-<key>``), any other folder by its
    last component; a size name (``micro``) as it is."""
    text = str(path)
    bare = text[3:] if text.startswith("hf:") else text
    if "/" not in bare:
        return text
    name = Path(bare).name
    tag = f"build:{name}" if "grammar-harness/models/" in bare else name
    return f"hf:{tag}" if text.startswith("hf:") else tag


def _relative(arg: str) -> str:
    name, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if value.startswith("/") and os.path.commonpath([value, str(ROOT.parent)]) != "/":
        value = os.path.relpath(value, ROOT)  # below the project, or beside it (../shared)
    return f"{name}{eq}{value}"


def _commit(meta: RunMeta) -> str:
    c = meta.get("git_commit") or "–"
    dirty = c.endswith("-dirty")
    c = c[:-len("-dirty")] if dirty else c
    return (c[:7] if len(c) >= 7 else c) + (" (dirty)" if dirty else "")


def _selection(meta: RunMeta) -> str:
    cfg = meta.get("config", {})
    suite = cfg.get("suite") or meta.get("suite", {}).get("suite") or "–"
    parts = []
    if cfg.get("subsets"):
        parts.append("subset " + ",".join(cfg["subsets"]))
    if cfg.get("sample"):
        parts.append(f"sample {cfg['sample']}")
    if cfg.get("schemas"):
        parts.append(f"schemas {cfg['schemas']}")
    if not parts and suite == "jsonschemabench":
        parts.append("whole corpus")
    return suite + (f" ({'; '.join(parts)})" if parts else "")


def _stat(d: Any, key: str) -> str:
    return number((d or {}).get(key), 2)


def serve_rows(run_dir: Path, meta: RunMeta, summary: Summary) -> list[list[str]]:
    """Rows of the serving table (one per server row, stream and mode)."""
    date, commit = _utc(meta.get("created_at")), _commit(meta)
    model = model_label(str(summary["serve"].get("model") or "–"))
    rows = []
    for eng, streams in summary["serve"].get("streams", {}).items():
        for stream, d in streams.items():
            ratio = d.get("ratio") or {}
            for mode in ("constrained", "unconstrained"):
                m = d.get(mode)
                if not m:
                    continue
                c = mode == "constrained"
                rows.append([date, commit, eng, stream, mode[0], model,
                             f"{m.get('completed')}/{m.get('requests')}",
                             number(m.get("request_throughput"), 2),
                             number(m.get("output_throughput"), 0),
                             _stat(m.get("ttft"), "p50"), _stat(m.get("ttft"), "p99"),
                             _stat(m.get("tpot"), "p50"), _stat(m.get("tpot"), "p99"),
                             _stat(m.get("itl"), "p50"), _stat(m.get("itl"), "p99"),
                             number(m.get("invalid")) if c else "–", number(m.get("runaways")),
                             number(m.get("refusals")), number(m.get("crashes")),
                             number(ratio.get("ttft"), 2) if c else "–",
                             number(ratio.get("tpot"), 2) if c else "–",
                             number(ratio.get("itl"), 2) if c else "–"])
    return rows


def served_quality_rows(meta: RunMeta, summary: Summary) -> list[list[str]]:
    """A serve run with a model with priors: per server row, stream and mode, the served
    outputs' validity and accuracy (``summary["serve"]["streams"][row][stream]["quality"]``,
    the quality suite's columns)."""
    date = _utc(meta.get("created_at"))
    out = []
    for eng, streams in summary["serve"].get("streams", {}).items():
        for stream, d in streams.items():
            for mode, q in (d.get("quality") or {}).items():
                acc = q.get("accuracy") or {}
                bfcl = q.get("bfcl") or {}
                out.append([date, eng, stream, "c" if mode == "constrained" else "u",
                            number(q.get("outputs")), percent(q.get("parse_valid")),
                            percent(q.get("schema_valid")), number(q.get("attempts_per_valid"), 2),
                            (f"{percent(acc.get('name'))} / {percent(acc.get('arguments'))}"
                             if acc else "–"),
                            (f"{percent(bfcl.get('p'))} / {percent(bfcl.get('p50'))}"
                             if bfcl else "–"),
                            percent(q.get("runaway"))])
    return out


SERVED_QUALITY_HEADER = ["date of the run", "row", "stream", "mode", "outputs", "parse-valid",
                         "schema-valid", "attempts / valid", "accuracy name / args",
                         "BFCL p / p^50", "runaway"]

SERVE_HEADER = ["date of the run", "commit", "row", "stream", "mode", "model", "done",
                "req/s", "tok/s", "TTFT p50 (ms)", "TTFT p99", "TPOT p50 (ms)", "TPOT p99",
                "ITL p50 (ms)", "ITL p99", "invalid", "runaways", "refused", "crashed",
                "TTFT ratio", "TPOT ratio", "ITL ratio"]


def e2e_rows(run_dir: Path, meta: RunMeta, summary: Summary) -> list[list[str]]:
    """Rows of the end-to-end table (one per engine row with an ``e2e`` block)."""
    date, commit = _utc(meta.get("created_at")), _commit(meta)
    rows = []
    for label, e in summary.get("engines", {}).items():
        b = e.get("e2e") if isinstance(e, dict) else None
        if not b:
            continue
        rows.append([date, commit, label, number(e.get("version")), str(b.get("api") or "–"),
                     str(b.get("model") or "–"), number(b.get("schemas")),
                     number(b.get("ttft_ms"), 2), number(b.get("ttft_unconstrained_ms"), 2),
                     number(b.get("tpot_ms"), 3), number(b.get("tpot_unconstrained_ms"), 3),
                     number(b.get("tpot_ratio"), 3), number(b.get("invalid_outputs")),
                     number(b.get("runaways")), number(b.get("outputs"))])
    return rows


E2E_HEADER = ["date of the run", "commit", "engine", "version", "route", "model", "schemas",
              "TTFT (ms)", "unconstrained", "TPOT (ms)", "unconstrained", "TPOT ratio",
              "invalid outputs", "runaways", "outputs"]
#: the first six columns of :data:`E2E_HEADER` are words, the others figures
E2E_ALIGN = ["l"] * 6 + ["r"] * (len(E2E_HEADER) - 6)


def run_rows(run_dir: Path) -> tuple[list[list[str]], dict[str, Any]]:
    """Table rows (one per engine) and the run's details for the notes."""
    meta = _load(run_dir / "run.json")
    summary = _load(run_dir / "summary.json")
    versions = {e.get("engine"): e.get("version") for e in meta.get("engines", [])}
    date, commit, selection = _utc(meta.get("created_at")), _commit(meta), _selection(meta)
    if not any((run_dir / n).is_file() for n in (RECORDS, "records.jsonl")):
        selection += ", summary.json only"  # its records are not at hand: see the notes
    rows = []
    engines = summary.get("engines", {})
    if not engines and not summary.get("serve"):
        raise RunFolderError(f"{run_dir / 'summary.json'}: no engines")
    own = [k for k in OWN_TABLES if summary.get(_block(k))]
    hazards = summary.get("hazards")
    replay = not summary.get("serve") and not summary.get("grammars") and not own \
        and not hazards and not any(
        isinstance(e, dict) and e.get("e2e") for e in engines.values())
    for label, e in (engines.items() if replay else ()):
        head = [date, commit, selection, label, number(e.get("version") or versions.get(label))]
        if e.get("status") == "not_run":
            rows.append(head + ["not run"] + ["–"] * 11)
            continue
        o = e.get("outcomes", {})
        # the headline's TBM carries the timed steps and the worker's preemptions over them,
        # by which show() marks a percentile the scheduler may have made; TTFM carries the
        # jobs cut off by the limit, which show() prints as "≥ LIMIT (timeout)"
        head_tbm = ((summary.get("headline") or {}).get("engines") or {}).get(label, {}) \
            .get("tbm_us") or {}
        tbm = {**e.get("tbm_us", {}), **{k: head_tbm[k] for k in ("steps", "preempted")
                                          if k in head_tbm}}
        ttfm = e.get("ttfm_ms", {})
        died = sum(int(o.get(k, 0)) for k in ("timeout", "oom", "crash"))
        share = tbm.get("over_1ms_share")
        rows.append(head + [
            number(e.get("schemas")), number(o.get("passing")), number(o.get("compile_error")),
            number(died), _with_all(o, e, "validation_error"),
            _with_all(o, e, "invalidation_error"),
            show(tbm, "avg"), show(tbm, "p50"), show(tbm, "p99"), percent(share, 2),
            show(ttfm, "p50"), show(ttfm, "p90"),
        ])
    machine = meta.get("machine", {})
    tok = meta.get("tokenizer", {})
    command = meta.get("command")
    details = {
        "run_id": meta.get("run_id") or run_dir.name,
        "date": date,
        "commit": meta.get("git_commit") or "–",
        "command": typed_command(command),
        "records": next((n for n in (RECORDS, "records.jsonl") if (run_dir / n).is_file()), None),
        "machine": ", ".join(str(x) for x in (
            machine.get("cpu_model") or machine.get("processor"),
            f"{machine['cpus']} CPUs" if machine.get("cpus") else None,
            f"Python {machine['python']}" if machine.get("python") else None) if x),
        "tokenizer": f"{model_label(tok.get('name', '–'))} ({number(tok.get('size'))} ids)",
        "primary": summary.get("primary_serialization", "–"),
        "limits": meta.get("limits", {}),
        "wall_s": summary.get("wall_s"),
        "serve": serve_rows(run_dir, meta, summary) if summary.get("serve") else [],
        "served_quality": (served_quality_rows(meta, summary) if summary.get("serve")
                           else []),
        "grammars": grammar_rows(meta, summary) if summary.get("grammars") else [],
        "grammar_sizes": grammar_size_rows(meta, summary) if summary.get("grammars") else [],
        "e2e": e2e_rows(run_dir, meta, summary) if not replay and not summary.get("serve")
        and not own and not hazards else [],
        "hazards": hazard_rows(meta, hazards) if hazards else None,
        "own": {k: OWN_TABLES[k][2](meta, summary[_block(k)]) for k in own},
    }
    return rows, details


#: Longest cell of the hazards table (the full witness is in the run's hazards.json).
HAZARD_CELL = 200


def hazard_rows(meta: RunMeta, table: dict[str, Any]) -> dict[str, Any]:
    """A hazards run's table as the summary holds it (``summary["hazards"]``): one row per
    hazard, one column per engine row, each cell its verdict and witness, cut to
    :data:`HAZARD_CELL` characters."""
    def cut(text: str) -> str:
        text = " ".join(str(text).split())
        text = text if len(text) <= HAZARD_CELL else text[:HAZARD_CELL - 1] + "…"
        # witnesses quote outputs: a "<think>" must not read as an HTML tag
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    engines = list(table.get("engines") or [])
    rows = [[f"{r['number']}. {r['title']}"] + [cut((r["cells"].get(e) or {}).get("text", "–"))
                                               for e in engines]
            for r in table.get("rows") or []]
    return {"date": _utc(meta.get("created_at")), "run_id": meta.get("run_id"),
            "header": ["hazard"] + engines, "rows": rows,
            "atlas": atlas_rows(table.get("atlas") or {}, cut)}


#: The keyword atlas's verdicts, in its cells' order (suites/hazards/summary.py).
ATLAS_VERDICTS = ("kept", "ignored", "misread", "refused", "undecided")


def atlas_rows(atlas: dict[str, Any], cut: Any) -> dict[str, Any] | None:
    """A hazards run's keyword atlas (``summary["hazards"]["atlas"]``, corpus schemas only):
    one row per keyword, one column per engine, each cell its occurrences kept / ignored /
    misread / refused / undecided; each flagged count (ignored, misread) with its first
    witness and where; per engine the schemas judged and the jobs that died. None when
    the run judged no corpus schema."""
    engines = list(atlas.get("engines") or [])
    if not engines:
        return None
    cells = atlas.get("cells") or {}
    rows = [[f"`{k}`"] + [" / ".join(number(c["counts"].get(v, 0)) for v in ATLAS_VERDICTS)
                          if (c := (cells.get(e) or {}).get(k)) else "–" for e in engines]
            for k in atlas.get("keywords") or []]
    totals = ["all"] + [" / ".join(number(sum(c["counts"].get(v, 0)
                                              for c in (cells.get(e) or {}).values()))
                                   for v in ATLAS_VERDICTS) for e in engines]
    flagged = []
    for e in engines:
        for k, c in sorted((cells.get(e) or {}).items()):
            for v in ("ignored", "misread"):
                if c["counts"].get(v):
                    ex = c["examples"][v]
                    flagged.append([e, f"`{k}`", v, number(c["counts"][v]),
                                    cut(ex.get("witness") or ""),
                                    cut(f"{ex['case']} {ex.get('path') or '/'}")])
    per = atlas.get("engine") or {}
    about = [[e, number(per.get(e, {}).get("schemas")), number(per.get(e, {}).get("died")),
              number(per.get(e, {}).get("died_rows")),
              cut(per.get(e, {}).get("died_example") or "–"),
              number(per.get(e, {}).get("nodes")), number(per.get(e, {}).get("reused"))]
             for e in engines]
    return {"header": ["keyword"] + engines, "rows": rows + [totals], "flagged": flagged,
            "engines": about}


GRAMMAR_HEADER = ["date of the run", "commit", "family", "engine", "version", "cases",
                  "compiled", "forms", "false rejects", "false accepts", "dialect differences",
                  "TBM p50 (µs)", "TBM p99 (µs)", "TTFM p50 (ms)"]


def grammar_rows(meta: RunMeta, summary: Summary) -> list[list[str]]:
    """One row per (family, engine) of a grammars run's ``summary["grammars"]["table"]``."""
    date, commit = _utc(meta.get("created_at")), _commit(meta)
    versions = {k: (v or {}).get("version") for k, v in summary.get("engines", {}).items()}
    out = []
    for r in summary["grammars"].get("table", []):
        out.append([date, commit, r["family"], r["engine"], number(versions.get(r["engine"])),
                    number(r["cases"]), number(r["compiled"]),
                    ", ".join(f"{k} {v}" for k, v in sorted(r.get("forms", {}).items())) or "–",
                    number(r["false_rejects"]), number(r["false_accepts"]), number(r["dialect"]),
                    number(r.get("tbm_p50_us")), number(r.get("tbm_p99_us")),
                    number(r.get("ttfm_p50_ms"), 2)])
    return out


def grammar_size_rows(meta: RunMeta, summary: Summary) -> list[list[str]]:
    """Compile time (TTFM ms) against alternation size: one row per (grammar, engine)."""
    date = _utc(meta.get("created_at"))
    out = []
    for base, engines in summary["grammars"].get("sizes", {}).items():
        for eng, by in sorted(engines.items()):
            cells = [f"{s}: {number(v, 2) if v is not None else 'no compile'}"
                     for s, v in sorted(by.items(), key=lambda kv: int(kv[0]))]
            out.append([date, base, eng, "; ".join(cells)])
    return out


def tools_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """Compile against tools (ms): one row per (engine, number of tools) of a tools run."""
    date = _utc(meta.get("created_at"))
    return [[date, r["engine"], number(r["tools"]), number(r["cold_ms"], 2),
             number(r["warm_ms"], 2), number(r["overlap_ms"], 2), number(r["ttfm_ms"], 2),
             number(r["errors"])]
            for r in block.get("compile", [])]


def tool_event_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """Streaming parse events: one row per (engine, outputs) of a tools run, medians in
    decode steps (``summary["tools"]["events"]`` and ``["events_model"]``)."""
    date = _utc(meta.get("created_at"))
    src = (block.get("tpot") or {}).get("source") or "–"
    vocab = model_label(str((meta.get("tokenizer") or {}).get("name", "–")))

    def frac(x: Any) -> str:
        return "–" if not x else f"{number(x[0])}/{number(x[1])}"

    out = []
    for what, rows in (("ground truth", block.get("events") or []),
                       ("the model's", block.get("events_model") or [])):
        for r in rows:
            out.append([date, vocab, r["engine"], what, number(r["calls"]),
                        *(number(r[k], 1) for k in ("name_decided", "name_written",
                                                    "required_complete", "end",
                                                    "lead_tokens")),
                        number(r["lead_ms"], 1), number(r["lead_share"], 2),
                        frac(r["agree_ref"]), frac(r["agree_forced"]) if r["agree_forced"]
                        else "no API", number(r["forced_us"], 1), number(r["mask_us"], 1),
                        src])
    return out


def speculative_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """Grammar-aware drafting: one row per (engine, drafter) of a drafts run with
    ``--model`` (``summary["drafts"]["speculative"]``)."""
    date = _utc(meta.get("created_at"))
    return [[date, r["engine"], r["drafter"], number(r["schemas"]),
             number(r["accept_len"], 2), number(r["steps_per_token"], 3),
             number(r["drafted_per_step"], 2), number(r["acceptance"], 2),
             number(r["speedup"], 2), number(r["rollbacks"]), number(r["wrong_states"]),
             f"{r['lossless'][0]}/{r['lossless'][1]}"]
            for r in block.get("speculative") or []]


def churn_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """One row per (engine, Zipf exponent) of a churn run."""
    date = _utc(meta.get("created_at"))
    return [[date, r["engine"], f"{r['exponent']:g}", number(r["requests"]),
             number(r["hit_rate"], 2), number(r["ttft_ms"]["mean"], 2),
             number(r["ttft_ms"]["p50"], 2), number(r["ttft_ms"]["p99"], 2)]
            for r in block.get("rows", [])]


def jump_forward_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """One row per (engine, subset) of a jump-forward run, and engines not measured."""
    date = _utc(meta.get("created_at"))
    out = [[date, r["engine"], r["subset"], number(r["steps"]), percent(r["offered"]),
            percent(r["jf_share"]), percent(r["spec_share"]), number(r["wrong"]),
            number(r["unforced"]),
            number(r["conflicts"]), percent(r["noncanonical"])] for r in block.get("rows", [])]
    out += [[date, n["engine"], "all", "–", str(n.get("reason") or "not measured"), "–",
             "–", "–", "–", "–", "–"] for n in block.get("not_measured", [])]
    return out


def drafts_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """One row per engine of a drafts run: checks and validate / single-step times per k."""
    date = _utc(meta.get("created_at"))
    out = []
    for r in block.get("rows", []):
        per_k = "; ".join(
            f"k={k}: {number(v.get('validate_us'), 1)} / {number(v.get('steps_us'), 1)} µs"
            for k, v in sorted(r.get("per_k", {}).items(), key=lambda kv: int(kv[0])))
        out.append([date, r["engine"], str(r.get("api") or "–"), number(r["drafts"]),
                    number(r["wrong_length"]), number(r["rollback_mismatch"]),
                    number(r["after_stop"]), number(r["errors"]), per_k or "–"])
    return out


def batch_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """One row per (engine, workload, threads) of a batch run: the largest batch whose
    p99 grammar time per step stays within the budget, the ceiling it implies, and the p99
    at every batch size."""
    date = _utc(meta.get("created_at"))
    by: dict[tuple[str, str, int], list[str]] = {}
    for p in sorted(block.get("points", []), key=lambda p: p["batch"]):
        if p.get("threads") is not None:
            by.setdefault((p["engine"], p["workload"], p["threads"]), []).append(
                f"{p['batch']}: {number(p['grammar_ms']['p99'], 3)}")
    cores = next((p.get("cores") for p in block.get("points", []) if p.get("cores")), None)
    return [[date, h["engine"], h["workload"], number(h["threads"]), number(cores),
             number(h["step_ms"], 1),
             number(h["largest"]) if h["largest"] is not None else f"not measured ({h['over']})",
             number(h["p99_ms"], 3), number(h["ceiling_tok_s"]),
             "; ".join(by.get((h["engine"], h["workload"], h["threads"]), [])) or "–"]
            for h in block.get("hidden", [])]


def quality_rows(meta: RunMeta, block: dict[str, Any]) -> list[list[str]]:
    """One row per stream of a quality run (``summary["quality"]["rows"]``): validity,
    attempts per valid output, mass removed, the log-probability gap, accuracy, runaways,
    non-canonical outputs, false accepts (temperature 1)."""
    date = _utc(meta.get("created_at"))
    out = []
    for r in block.get("rows", []):
        unc = r["stream"] == "unconstrained"
        acc = r.get("accuracy") or {}
        bfcl = r.get("bfcl") or {}
        out.append([date, r["stream"], number(r.get("outputs")), percent(r.get("parse_valid")),
                    percent(r.get("schema_valid")), number(r.get("attempts_per_valid"), 2),
                    "–" if unc else percent(r.get("mass_removed")),
                    "–" if unc else percent(r.get("top_masked")),
                    "–" if unc else number(r.get("logprob_gap"), 3),
                    (f"{percent(acc.get('name'))} / {percent(acc.get('arguments'))}"
                     if acc else "–"),
                    (f"{percent(bfcl.get('p'))} / {percent(bfcl.get('p50'))}" if bfcl else "–"),
                    percent(r.get("runaway")), percent(r.get("noncanonical")),
                    "–" if unc else number(r.get("false_accepts"))])
    return out


#: columns of text (left-aligned) in those tables
TEXT_COLUMNS = {"date of the run", "engine", "subset", "API", "validate / single steps",
                "workload", "p99 ms by B", "stream", "outputs", "drafter", "TPOT source",
                "vocabulary"}

def _block(table: str) -> str:
    """The summary block an :data:`OWN_TABLES` key reads (``tools:events``: ``tools``)."""
    return table.split(":")[0]


#: summary block (``block:table`` for a second table of one block) → (heading and
#: sentence, header, rows) for suites with their own figures
OWN_TABLES: dict[str, tuple[str, list[str], Any]] = {
    "tools": ("## Tool-call runs\n\nThe tools suite ([tools.md](tools.md)): compile time "
              "against the number of tools, ms (median over the cases with that many tools): "
              "cold, warm (the same request through the engine's cache), overlap (half the "
              "tools shared); TTFM = cold compile + first mask.",
              ["date of the run", "engine", "tools", "cold (ms)", "warm (ms)", "overlap (ms)",
               "TTFM (ms)", "refused / died"], tools_rows),
    "tools:events": ("## Streaming parse events\n\nThe tools suite's events "
                     "([tools.md](tools.md#streaming-parse-events-when-could-a-consumer-act)): "
                     "per engine and outputs (the BFCL ground-truth calls, or the model's own "
                     "with `--model`), medians in decode steps of the step from which one "
                     "function name is left (from the engine's mask), the name written, every "
                     "required argument complete, and the end; lead = end − required complete "
                     "(its ms at the TPOT of the source named); = reference: calls decided at "
                     "the reference engine's step; forced = mask: the forced continuation "
                     "agrees; costs per step, µs.",
                     ["date of the run", "vocabulary", "engine", "outputs", "calls",
                      "name decided",
                      "name written", "required complete", "end", "lead tokens", "lead ms",
                      "lead share", "= reference", "forced = mask", "forced µs/step",
                      "mask µs/step", "TPOT source"], tool_event_rows),
    "churn": ("## Churn runs\n\nThe churn suite ([suites.md](suites.md)): per engine and "
              "Zipf exponent (0 = every request new), the share of requests the engine's "
              "cache served and the TTFT a request sees from its grammar (ms).",
              ["date of the run", "engine", "Zipf", "requests", "hit rate", "TTFT mean (ms)",
               "p50", "p99"], churn_rows),
    "jump_forward": ("## Jump-forward runs\n\nThe jump-forward suite ([suites.md](suites.md)): "
                     "per engine and subset, steps with a forced continuation offered, the "
                     "share of output tokens committed without a forward pass (the engine's, "
                     "and the schema's own forcing), offers the schema does not allow "
                     "(wrong) or does not force (unforced), mask conflicts, non-canonical "
                     "forced tokens.",
                     ["date of the run", "engine", "subset", "steps", "offered", "JF share",
                      "spec share", "wrong", "unforced", "conflicts", "non-canonical"],
                     jump_forward_rows),
    "drafts": ("## Speculative-draft runs\n\nThe drafts suite ([suites.md](suites.md)): per "
               "engine, the API that validated the drafts, drafts checked, wrong accept "
               "lengths, rollback mismatches, tokens accepted after the stop token, errors, "
               "and per draft length the median time of one validation against the same "
               "draft as single steps (µs).",
               ["date of the run", "engine", "API", "drafts", "wrong length",
                "rollback mismatch", "after stop", "errors", "validate / single steps"],
               drafts_rows),
    "drafts:speculative": ("## Grammar-aware drafting\n\nThe drafts suite with `--model` "
                           "([suites.md](suites.md#grammar-aware-drafting---model)): the "
                           "model decodes each schema greedily under the engine's grammar, "
                           "once per drafter; accept_len = accepted draft tokens per target "
                           "step; speedup modelled from measured step, draft and mask costs "
                           "(median over the schemas); wrong states: steps after which the "
                           "main matcher's mask differed from a twin's that never saw a "
                           "rolled-back token; lossless: outputs equal to plain greedy's.",
                           ["date of the run", "engine", "drafter", "schemas", "accept_len",
                            "steps / token", "proposed / step", "acceptance", "speedup",
                            "rollbacks", "wrong states", "lossless"], speculative_rows),
    "batch": ("## Batch-scaling runs\n\nThe batch suite ([suites.md](suites.md)): per engine, "
              "workload and host threads T, the largest batch B whose p99 grammar time per "
              "decode step (fill of all B masks + commit of all B tokens, through the "
              "engine's batch API) stays within the step budget, the throughput that batch "
              "implies (B × steps per second, tokens/s), and the p99 ms per step at every B.",
              ["date of the run", "engine", "workload", "T", "cores", "budget (ms)",
               "largest hidden B", "p99 at it (ms)", "ceiling (tok/s)", "p99 ms by B"],
              batch_rows),
    "quality": ("## Quality runs\n\nThe quality suite ([quality.md](quality.md)): a model with "
                "priors writes held-out schemas unconstrained and through each engine row, "
                "the same seeds; temperature 1, shares of outputs; mass removed and top "
                "masked per decode step; the log-probability gap in nats per token against "
                "the unconstrained stream's schema-valid outputs; accuracy against BFCL's "
                "ground truth (name / arguments); p per call on BFCL and p^50.",
                ["date of the run", "stream", "outputs", "parse-valid", "schema-valid",
                 "attempts / valid", "mass removed", "top masked", "logprob gap",
                 "accuracy name / args", "BFCL p / p^50", "runaway", "noncanonical",
                 "false accepts"], quality_rows),
}

HEADER = ["date of the run", "commit", "suite", "engine", "version", "schemas", "passing",
          "compile errors", "timeout / OOM / crash", "validation errors (every instance)",
          "invalidation errors (every instance)", "TBM avg (µs)", "TBM p50 (µs)", "TBM p99 (µs)",
          "masks > 1 ms", "TTFM p50 (ms)", "TTFM p90 (ms)"]


def _with_all(outcomes: dict[str, Any], engine: dict[str, Any], key: str) -> str:
    """The headline count (jsonschema and the corpus label agreeing), and in parentheses
    the count by jsonschema on every instance where a run has both and they differ."""
    head = number(outcomes.get(key))
    every = (engine.get("outcomes_all") or {}).get(key)
    return head if every is None or every == outcomes.get(key) else f"{head} ({number(every)})"


def _md_table(header: list[str], rows: list[list[str]], align: list[str] | str) -> list[str]:
    """A table of the document: cells are Markdown already (only ``|`` escaped)."""
    return markdown_table(Table(header, rows, align=align), cell=pipes)


@dataclass(frozen=True)
class Published:
    """One run folder of the document and the sentence that says what it was."""

    path: Path
    about: str = ""
    gpu: bool = False


def read_index(root: Path = ROOT) -> list[Published]:
    """The published runs, in the order of ``results/published/index.toml``: a list of
    ``[[run]]`` tables with ``folder`` (a folder name under ``results/published/``),
    ``about`` (what the run was, one or two sentences) and optionally ``gpu = true``.
    Raises :class:`RunFolderError` naming the file and the problem."""
    path = root / INDEX
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFolderError(f"{INDEX}: missing: it lists the published run folders") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RunFolderError(f"{INDEX}: cannot read: {e}") from None
    runs = data.get("run")
    if not isinstance(runs, list) or not runs:
        raise RunFolderError(f"{INDEX}: no [[run]] entries")
    out = []
    for n, r in enumerate(runs, 1):
        folder, about = r.get("folder"), r.get("about")
        if not isinstance(folder, str) or "/" in folder or folder.startswith("."):
            raise RunFolderError(f"{INDEX}: run {n}: 'folder' must name a folder under "
                                 f"{PUBLISHED}")
        if not isinstance(about, str) or not about.strip():
            raise RunFolderError(f"{INDEX}: run {n} ({folder}): 'about' must say what the run was")
        out.append(Published(root / PUBLISHED / folder, " ".join(about.split()),
                             bool(r.get("gpu", False))))
    listed = {p.path.name for p in out}
    loose = sorted(d.name for d in (root / PUBLISHED).iterdir() if d.is_dir()) if (
        root / PUBLISHED).is_dir() else []
    unlisted = [d for d in loose if d not in listed]
    if unlisted:
        raise RunFolderError(f"{INDEX}: {PUBLISHED / unlisted[0]} is not listed: list it "
                             "with what it was, or remove the folder")
    return out


def render(runs: list[Published], published: bool = True) -> str:
    """The document for ``runs``. With ``published`` the header names
    ``results/published/`` and the GPU section says when no GPU run is among them."""
    rows: list[list[str]] = []
    notes: list[dict[str, Any]] = []
    for run in runs:
        r, det = run_rows(run.path)
        rows += r
        notes.append({**det, "about": run.about, "gpu": run.gpu})
    dates = sorted(n["date"] for n in notes if n["date"] != "–")
    if published:
        source = (f"from the run folders in `{PUBLISHED}/` (what each run was: below the "
                  f"tables), newest run {dates[-1] if dates else '–'}; do not edit by hand. "
                  "Regenerate with")
        command = f"python {SCRIPT}"
    else:
        source = "from the run folders listed below; do not edit by hand. Regenerate with"
        command = f"python {SCRIPT} " + " ".join(shlex.quote(_relative(str(r.path)))
                                                  for r in runs)
    out = [
        "<!-- Generated by benchmarks/results_table.py; do not edit by hand. -->",
        "# Measured results",
        "",
        f"Generated by `{SCRIPT}` {source}",
        "",
        "```",
        command,
        "```",
        "",
        "Every figure below is read from a run folder's `summary.json`, which `harness "
        "summary` recomputes from the folder's records (`records.jsonl.gz`); `harness report "
        "RUN_FOLDER` renders a run's full report. Definitions of every column: "
        "[metrics.md](metrics.md). Outcomes are counted in "
        "schemas, each under the first that applies, over the instances where jsonschema "
        "and the corpus label agree (in parentheses: by jsonschema on every instance, where "
        "that differs); TBM is per token over the primary "
        "serialisation; TTFM is per schema. Absolute times depend on the machine and its "
        "load: compare engines within one run.",
        "",
    ]
    if rows:
        out += ["## Replay runs", "", *_md_table(HEADER, rows, ["l"] * 5 + ["r"] * (len(HEADER) - 5)), ""]
    serve = [r for n in notes for r in n["serve"]]
    if serve:
        out += ["## Serving runs", "",
                "The serve suite ([serving.md](serving.md)): per server row and stream, mode c "
                "= constrained, u = the same stream unconstrained; ratios are constrained / "
                "unconstrained (means). Invalid: HTTP 200 with an output that breaks the "
                "constraint. Random weights: runaways measure the whitespace a backend allows.",
                "", *_md_table(SERVE_HEADER, serve, ["l"] * 6 + ["r"] * (len(SERVE_HEADER) - 6)),
                ""]
    served_q = [r for n in notes for r in n.get("served_quality", [])]
    if served_q:
        out += ["With a model with priors (`--model`), the served outputs' validity and "
                "accuracy, the quality suite's columns ([quality.md](quality.md)): shares "
                "of the outputs that came back (HTTP 200, finished).", "",
                *_md_table(SERVED_QUALITY_HEADER, served_q,
                           ["l"] * 4 + ["r"] * (len(SERVED_QUALITY_HEADER) - 4)), ""]
    gram = [r for n in notes for r in n["grammars"]]
    if gram:
        out += ["## Grammar runs", "",
                "The grammars suite ([grammars.md](grammars.md)): per family and engine, the "
                "forms engines were given, false rejects / accepts of instances against the "
                "ground-truth parser (EOS check included), differences on dialect-sensitive "
                "cases (counted apart), TBM per token and TTFM per case.", "",
                *_md_table(GRAMMAR_HEADER, gram, ["l"] * 5 + ["r"] * 2 + ["l"]
                          + ["r"] * (len(GRAMMAR_HEADER) - 8)), ""]
        sizes = [r for n in notes for r in n["grammar_sizes"]]
        if sizes:
            out += ["Compile time against grammar size (TTFM ms at each size of the injected "
                    "alternation):", "", *_md_table(["date of the run", "grammar", "engine", "size: TTFM ms"],
                                         sizes, "l"), ""]
    for key, (heading, header, _) in OWN_TABLES.items():
        own = [r for n in notes for r in n["own"].get(key, [])]
        if own:
            align = ["l" if h in TEXT_COLUMNS else "r" for h in header]
            out += [heading, "", *_md_table(header, own, align), ""]
    hazard_runs = [n["hazards"] for n in notes if n.get("hazards")]
    if hazard_runs:
        out += ["## Production hazards", "",
                "The hazards suite ([suites/hazards/README.md](../suites/hazards/README.md)): "
                "one row per hazard, one column per engine row (standalone engines and served "
                "backends); each cell a verdict with its witness, or \"not measured: why\" "
                "(full witnesses: the `hazards` block of the run's summary.json).", ""]
        for h in hazard_runs:
            out += [f"Run `{h['run_id']}` ({h['date']}):", "", *_md_table(h["header"], h["rows"], "l"), ""]
    atlases = [h for h in hazard_runs if h.get("atlas")]
    for h in atlases:
        a = h["atlas"]
        out += ["## Keyword atlas", "",
                f"Hazard 3 over the corpus schemas of run `{h['run_id']}` ({h['date']}): every "
                "occurrence of a constraining keyword (a keyword on one node, "
                "[lint.md](lint.md)) judged on each engine, counted as kept / ignored / "
                "misread / refused / undecided. Ignored: the engine accepts an instance "
                "jsonschema rejects only for this keyword; misread: it cannot write, in any "
                "tokenization, an instance jsonschema accepts.", "",
                *_md_table(a["header"], a["rows"], ["l"] + ["r"] * (len(a["header"]) - 1)), "",
                "Each flagged count with its first witness (checked by jsonschema):", "",
                *(_md_table(["engine", "keyword", "verdict", "occurrences", "first witness",
                             "where"], a["flagged"], "l") if a["flagged"] else ["None."]), "",
                "Per engine: corpus schemas with a record, jobs that died, the occurrences "
                "those jobs had judged before they died (counted above; the nodes they had "
                "not reached have no verdict), the first death, nodes judged by the jobs "
                "that ended, and nodes whose rows the worker reused (the same node judged "
                "before on the same engine):", "",
                *_md_table(["engine", "schemas", "died", "judged before dying", "first death",
                            "nodes", "reused"],
                           a["engines"], ["l", "r", "r", "r", "l", "r", "r"]), ""]
    e2e = [r for n in notes for r in n["e2e"] if not n["gpu"]]
    if e2e:
        out += ["## End-to-end runs", "",
                "The e2e suite on this machine's CPU: TTFT and TPOT of a constrained decode "
                "and of the same decode unconstrained (for vLLM's offline rows: a one-token "
                "request's wall time, and the rest of the request per token).", "",
                *_md_table(E2E_HEADER, e2e, E2E_ALIGN), ""]
    if published:
        gpu = [r for n in notes for r in n["e2e"] if n["gpu"]]
        out += ["## GPU runs", ""]
        if gpu:
            out += ["The offline GPU kit (`benchmarks/gpu/`), run on an accelerator machine "
                    "and its run folders brought back:", "",
                    *_md_table(E2E_HEADER, gpu, E2E_ALIGN), ""]
        else:
            out += ["No GPU run is published: no run folder of the offline GPU kit "
                    "(`benchmarks/gpu/`, run on an accelerator machine) is in "
                    f"`{PUBLISHED}/`, so no GPU figure is quoted here.", ""]
    out += ["## The runs", ""]
    for n in notes:
        lim = n["limits"]
        records = (f"records `{n['records']}`" if n["records"] else
                   "**summary.json only** (its records are not published: over the size "
                   "budget of `results/published/`)")
        about = f"{n['about']} " if n["about"] else ""
        out += [
            f"- `{n['run_id']}` ({n['date']}, commit `{n['commit']}`): {about}"
            f"Command: `{n['command']}`; "
            f"{n['machine']}; tokenizer {n['tokenizer']}; primary serialisation "
            f"{n['primary']}; limits {number(lim.get('timeout_s'))} s and "
            f"{number(lim.get('memory_gib'))} GiB per job, `--jobs {lim.get('jobs', '–')}`; "
            f"wall time {number(n['wall_s'])} s; {records}.",
        ]
    out.append("")
    return "\n".join(out)


def publish(run_dir: Path, root: Path = ROOT) -> Path:
    """Copy a run folder's ``run.json``, ``summary.json`` and records (gzip-compressed, with
    no timestamp in the gzip header, so the same records give the same bytes) into
    ``results/published/<run-id>/``; return that folder. Raises :class:`RunFolderError`."""
    import gzip

    meta = _load(run_dir / "run.json")
    _load(run_dir / "summary.json")
    records = run_dir / "records.jsonl"
    if not records.is_file():
        raise RunFolderError(f"{records}: missing: not a finished run folder")
    dest = root / PUBLISHED / str(meta.get("run_id") or run_dir.name)
    if dest.exists():
        raise RunFolderError(f"{dest}: already published")
    dest.mkdir(parents=True)
    # run.json, summary.json and the facts a run recorded outside its records that its
    # summary reads (harness.analysis.finalize.PUBLISHED_INPUTS: a serve run's servers)
    for name in ("run.json", "summary.json", "servers/servers.json"):
        if (run_dir / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes((run_dir / name).read_bytes())
    with open(dest / RECORDS, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
        gz.write(records.read_bytes())
    return dest


def first_difference(want: str, got: str) -> str | None:
    """``LINE: expected ...; found ...`` for the first line where ``got`` differs from
    ``want`` (1-based), or None when they are equal."""
    if want == got:
        return None
    a, b = want.splitlines(), got.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(end of file)"
        y = b[i] if i < len(b) else "(end of file)"
        if x != y:
            cut = lambda t: t if len(t) <= 160 else t[:159] + "…"  # noqa: E731
            return f"line {i + 1}: expected {cut(x)!r}; found {cut(y)!r}"
    return "line endings or the final newline differ"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="results_table.py",
        description="Write the generated table of measured results (docs/results.md) from "
                    "the published run folders (results/published/, listed in its "
                    "index.toml), or from the run folders given.")
    ap.add_argument("runs", nargs="*", metavar="RUN_DIR",
                    help="run folders, e.g. results/<run-id> (default: the published runs; "
                         "with run folders the document goes to stdout unless -o is given)")
    ap.add_argument("-o", "--output", metavar="FILE",
                    help=f"the document (default {DOCUMENT} for the published runs)")
    ap.add_argument("--publish", metavar="RUN_DIR",
                    help="copy a run folder's run.json, summary.json and records (compressed) "
                         f"into {PUBLISHED}/ and print the entry to add to {INDEX}")
    ap.add_argument("--check", action="store_true",
                    help="write nothing: exit 0 when the document is exactly what the run "
                         "folders generate, 1 (with the first differing line) otherwise")
    args = ap.parse_args(argv)
    if args.publish:
        try:
            dest = publish(Path(args.publish))
        except (RunFolderError, OSError) as e:
            print(f"results_table.py: error: {e}", file=sys.stderr)
            return 2
        size = sum(f.stat().st_size for f in dest.iterdir())
        print(f"published {_relative(str(dest))} ({size / 2**20:.1f} MiB); add to {INDEX}:\n\n"
              f"[[run]]\nfolder = \"{dest.name}\"\nabout = \"\"\"What the run was.\"\"\"\n")
        return 0
    published = not args.runs
    out = Path(args.output) if args.output else (ROOT / DOCUMENT if published else None)
    try:
        runs = read_index() if published else [Published(Path(r)) for r in args.runs]
        text = render(runs, published)
    except RunFolderError as e:
        print(f"results_table.py: error: {e}", file=sys.stderr)
        return 2
    if args.check:
        if out is None:
            print("results_table.py: error: --check with run folders needs -o FILE",
                  file=sys.stderr)
            return 2
        try:
            have = out.read_text(encoding="utf-8")
        except OSError as e:
            print(f"results_table.py: error: {out}: cannot read: {e.strerror or e}",
                  file=sys.stderr)
            return 2
        diff = first_difference(text, have)
        if diff is None:
            print(f"{_relative(str(out))}: up to date ({len(runs)} run folder(s))")
            return 0
        print(f"{_relative(str(out))}: not what the run folders generate: {diff}; regenerate "
              f"with `python {SCRIPT}`", file=sys.stderr)
        return 1
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        print(f"results_table.py: error: {out}: cannot write: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {_relative(str(out))} ({len(text.encode())} bytes, {len(runs)} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
