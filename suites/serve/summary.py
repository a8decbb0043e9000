"""The serve suite's metrics: per engine row and stream (workload, rate), the constrained
stream beside its unconstrained twin and each metric's ratio constrained / unconstrained.

Per stream (times in ms unless said):

``request_throughput``   completed requests (HTTP 200) per second of the stream's span
                         (first send to last answer)
``output_throughput``    output tokens per second of that span
``goodput``              requests per second that were good: HTTP 200 and finished, a valid
                         output for constrained requests (a runaway is not), and within the
                         SLOs given (``--slo-ttft-ms``, ``--slo-tpot-ms``);
                         ``goodput_failures`` counts the others by the first check they
                         failed (:data:`GOODPUT_CHECKS`)
``ttft`` / ``tpot`` /    time to first token; time per output token after the first; the
``itl`` / ``e2el``       gaps between streamed tokens (pooled); end-to-end latency — each as
                         ``mean``, ``p50``, ``p99`` and ``n``. TPOT and ITL count only the
                         requests whose tokens the client could time apart
                         (:func:`per_token_resolved`); ``per_token_unresolved`` counts the
                         others (their tokens arrived bunched)
``invalid``              constrained outputs that broke the constraint (strict JSON, then
                         jsonschema; a truncated one that cannot become JSON)
``runaways``             outputs the token budget ended (``finish_reason == "length"``), with
                         the mean share of whitespace in their text
``refusals``             HTTP 4xx/5xx answers, with the server's first messages
``crashes``              requests lost to a server crash (or no answer)
``schemas``              distinct schemas (or grammar cases) among the constrained requests

Each stream also carries its ``canary`` (:func:`canary_summary`), and each constrained /
unconstrained pair its ``ratio`` per figure with ``ratio_why`` for those that are not
figures (:func:`ratios`).

With a checkpoint (``--model PATH``, a model with priors) each stream also carries
``quality``: per mode (``constrained``, ``unconstrained``) the validity and accuracy figures
the ``quality`` suite gives its standalone rows, from the one function of the suite API
(:func:`harness.suite.measure.validity_figures`: parse- and schema-valid shares with the
Wilson interval, attempts and tokens per valid output, runaways, accuracy against BFCL's
reference answers and the compounding ``p``, ``p^10``, ``p^50``); the tokens are the
server's ``completion_tokens``. The figures that need the model's logits (mass removed,
log-probabilities) are the quality suite's only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping

import numpy as np

from harness.suite import figures
from harness.suite import Record, RunMeta, Summary
from harness.suite.measure import (VALIDITY_COLUMNS, ValidityFigures, ValidityOutput,
                                   validity_cell, validity_figures)
from harness.suite.report import Table, text_table
from suites.serve.records import (CanarySummary, MsStats, ServeBlock, ServeRecord, ServeSummary,
                                  ServeSummaryBlock, StreamMetrics)

HEADLINE = ("request_throughput", "output_throughput", "ttft", "tpot", "itl", "e2el")
#: Two streamed tokens read less than this apart (ms) came in one network read: the client
#: cannot tell their times apart (its effective clock resolution for per-token times).
BUNCHED_MS = 0.05
#: Per-token figures (ms) are measurements only above this resolution.
RESOLUTION_MS = BUNCHED_MS
#: Figures whose ratio compares per-token or per-request times (ms), with their resolution;
#: throughput ratios need only enough requests.
_TIME_FIGURES = ("ttft", "tpot", "itl", "e2el")
#: Why a request is not good, in the order checked (the first that applies is counted).
GOODPUT_CHECKS = ("http_error", "no_finish", "runaway", "invalid", "slo_ttft", "slo_tpot")
_GOODPUT_WORDS = {"http_error": "not answered (HTTP error or no answer)",
                  "no_finish": "the stream broke off", "runaway": "runaway (the token "
                  "budget ended the output)", "invalid": "invalid output",
                  "slo_ttft": "over the TTFT SLO", "slo_tpot": "over the TPOT SLO"}


def _stats(values: list[float]) -> MsStats | None:
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if not a.size:
        return None
    return {"mean": round(float(a.mean()), 3), "p50": round(float(np.median(a)), 3),
            "p99": round(float(np.percentile(a, 99)), 3), "n": int(a.size)}


def per_token_resolved(x: ServeBlock) -> bool:
    """True when a request's per-token times are measurements: two tokens or more, and at
    most half of its token gaps under :data:`BUNCHED_MS` (tokens that arrived in one network
    read are timed by the read, not by the server)."""
    gaps = x.get("itl_ms") or []
    if x.get("tpot_ms") is None or not gaps:
        return False
    return 2 * sum(1 for g in gaps if g < BUNCHED_MS) <= len(gaps)


def is_verdict_unit(record: Record) -> bool:
    """The serve suite's verdict counts the constrained requests of its streams: not the
    unconstrained twin stream, not a mix stream's plain requests, not the canaries (each
    has its own line in the headline)."""
    parts = str(record.get("case_id", "")).split("/")
    s = record.get("serve") or {}
    if s.get("canary") or parts[-1:] == ["canary"]:
        return False
    if s:
        return bool(s.get("constrained"))
    return len(parts) >= 2 and parts[-2] == "c"  # a request never answered


def goodput_failure(x: ServeBlock, slo_ttft_ms: float | None,
                    slo_tpot_ms: float | None) -> str | None:
    """The first check of :data:`GOODPUT_CHECKS` a request fails, or None (a good request)."""
    if x["status"] != 200:
        return "http_error"
    if x.get("finish_reason") is None:
        return "no_finish"
    if x["constrained"] and x.get("verdict") == "runaway":
        return "runaway"  # a runaway under a constraint is not a good answer
    if x["constrained"] and x.get("verdict") != "ok":
        return "invalid"
    if slo_ttft_ms is not None and (x["ttft_ms"] is None or x["ttft_ms"] > slo_ttft_ms):
        return "slo_ttft"
    if slo_tpot_ms is not None and x["tpot_ms"] is not None and x["tpot_ms"] > slo_tpot_ms:
        return "slo_tpot"
    return None


def stream_metrics(records: list[ServeRecord], slo_ttft_ms: float | None = None,
                   slo_tpot_ms: float | None = None) -> StreamMetrics:
    """The metrics above for one stream's records (its canary excluded)."""
    s = [r["serve"] for r in records if r.get("serve") and not r["serve"].get("canary")]
    ok = [x for x in s if x["status"] == 200]
    resolved = [x for x in ok if per_token_resolved(x)]
    starts = [x["sent_s"] for x in s if x.get("sent_s") is not None]
    ends = [x["sent_s"] + (x["e2el_ms"] or 0) / 1e3 for x in s if x.get("sent_s") is not None]
    span = (max(ends) - min(starts)) if starts and ends else 0.0
    tokens = sum(x["tokens"] for x in ok)
    failures = Counter(goodput_failure(x, slo_ttft_ms, slo_tpot_ms) for x in s)
    good = failures.pop(None, 0)
    runaways = [x for x in ok if x.get("finish_reason") == "length"]
    refusals = [x for x in s if x.get("verdict") == "refused"]
    messages: list[str] = []
    for x in refusals:
        how = "in the stream" if x["status"] == 200 else f"HTTP {x['status']}"
        m = f"{how}: {(x.get('error') or '')[:200]}"
        if x.get("server_log"):
            m += f" — server log: {x['server_log'][:200]}"
        if m not in messages:
            messages.append(m)
    ws = [x["whitespace_share"] for x in runaways if x.get("whitespace_share") is not None]
    return {
        "requests": len(s), "completed": len(ok), "span_s": round(span, 3),
        "request_throughput": round(len(ok) / span, 4) if span > 0 else None,
        "output_throughput": round(tokens / span, 2) if span > 0 else None,
        "goodput": round(good / span, 4) if span > 0 else None,
        "good": good,
        "goodput_failures": {k: int(failures[k]) for k in GOODPUT_CHECKS if failures.get(k)},
        "output_tokens": tokens,
        "ttft": _stats([x["ttft_ms"] for x in ok]),
        "tpot": _stats([x["tpot_ms"] for x in resolved]),
        "itl": _stats([g for x in resolved for g in x.get("itl_ms") or ()]),
        "e2el": _stats([x["e2el_ms"] for x in ok]),
        "per_token_unresolved": len(ok) - len(resolved),
        "constrained": sum(1 for x in s if x["constrained"]),
        "schemas": len({x.get("source") for x in s if x["constrained"]}),
        "valid": sum(1 for x in s if x.get("verdict") == "ok"),
        "invalid": sum(1 for x in s if x.get("verdict") == "constraint_not_enforced"),
        "runaways": len(runaways),
        "runaway_whitespace_share": round(float(np.mean(ws)), 4) if ws else None,
        "refusals": len(refusals), "refusal_messages": messages[:3],
        "crashes": sum(1 for x in s if x.get("verdict") in ("server_crash", "no_answer")),
    }


def _side(m: Mapping[str, Any], key: str) -> tuple[float | None, int | None]:
    v = m.get(key)
    if isinstance(v, dict):
        return v.get("mean"), v.get("n")
    return v, m.get("completed")


def ratios(c: StreamMetrics, u: StreamMetrics) -> tuple[dict[str, Any], dict[str, str]]:
    """Each headline figure's ratio constrained / unconstrained, and for each one that is
    not a figure the reason (:func:`harness.measure.figures.ratio`): a side with fewer
    than three samples, or a time at or below the client's resolution (:data:`RESOLUTION_MS`).

    Means, not medians: where the client shares a small machine with the server, streamed
    tokens arrive bunched (several per read), so a median gap can read ~0 while the mean
    stays the time per token (bunched requests are left out of TPOT and ITL altogether)."""
    out, why = {}, {}
    for k in HEADLINE:
        (cv, cn), (uv, un) = _side(c, k), _side(u, k)
        out[k], reason = figures.ratio(cv, uv, n_num=cn, n_den=un,
                                       resolution=RESOLUTION_MS if k in _TIME_FIGURES else 0.0,
                                       what=f"{k.upper() if k in _TIME_FIGURES else k}:")
        if reason:
            why[k] = reason
    return out, why


def validity_outputs(records: Iterable[ServeRecord]) -> list[ValidityOutput]:
    """The outputs of a stream's records that a checkpoint's run judged (``parse_valid``
    and ``schema_valid`` in ``record["serve"]``) as
    :func:`harness.suite.measure.validity_figures` reads them: its canary and a mix
    stream's plain requests left out; the tokens are the server's count, a runaway an
    output the token budget ended."""
    out: list[ValidityOutput] = []
    for r in records:
        x = r.get("serve")
        if not x or "schema_valid" not in x or x.get("canary"):
            continue
        if x.get("mode") == "c" and not x.get("constrained"):
            continue
        v: ValidityOutput = {"parse_valid": bool(x.get("parse_valid")),
                             "schema_valid": bool(x["schema_valid"]),
                             "tokens": int(x.get("tokens") or 0),
                             "runaway": x.get("finish_reason") == "length"}
        if "args_total" in x:
            v.update(name_match=x.get("name_match"), args_matched=x.get("args_matched", 0),
                     args_total=x.get("args_total", 0))
        out.append(v)
    return out


def serve_block(records: Iterable[ServeRecord], config: Mapping[str, Any]) -> dict[str, Any]:
    """``{row: {stream: {"constrained": metrics, "unconstrained": metrics, "ratio": {...},
    "ratio_why": {...}, "canary": {...}, "quality": {"constrained": figures,
    "unconstrained": figures}}}}``; ``quality`` only where outputs were judged for it (a
    checkpoint's run, :func:`validity_outputs`)."""
    groups: dict[tuple[str, str, str], list[ServeRecord]] = defaultdict(list)
    canaries: dict[tuple[str, str], CanarySummary] = {}
    for r in records:
        s = r.get("serve")
        if s and s.get("canary"):
            canaries[(r["engine"], s["stream"])] = canary_summary(s)
        elif s:
            groups[(r["engine"], s["stream"], s["mode"])].append(r)
    out: dict[str, dict[str, Any]] = {}
    for (eng, stream, mode), recs in sorted(groups.items()):
        m = stream_metrics(recs, config.get("slo_ttft_ms"), config.get("slo_tpot_ms"))
        slot = out.setdefault(eng, {}).setdefault(stream, {})
        slot["constrained" if mode == "c" else "unconstrained"] = m
        outs = validity_outputs(recs)
        if outs:
            q: ValidityFigures = validity_figures(outs)
            slot.setdefault("quality", {})["constrained" if mode == "c" else "unconstrained"] = q
    for (eng, stream), c in canaries.items():
        out.setdefault(eng, {}).setdefault(stream, {})["canary"] = c
    for eng, streams in out.items():
        for stream, d in streams.items():
            c, u = d.get("constrained"), d.get("unconstrained")
            if c and u:
                d["ratio"], d["ratio_why"] = ratios(c, u)
    return out


def canary_summary(s: ServeBlock) -> CanarySummary:
    """A stream's canary in a word: ``enforced``, ``NOT ENFORCED``, ``refused``, ``runaway``
    (the budget ended it before it could be judged) or ``no answer``, with the text."""
    v = s.get("verdict")
    word = {"ok": "enforced", "constraint_not_enforced": "NOT ENFORCED", "refused": "refused",
            "runaway": "runaway"}.get(v, "no answer")
    out: CanarySummary = {"verdict": word, "text": (s.get("text") or "")[:80]}
    for k in ("why", "error", "server_log"):
        if s.get(k):
            out[k] = s[k]
    return out


def headline_extra(records: list[ServeRecord], meta: RunMeta) -> dict[str, Any]:
    """The serve suite's own headline figures per engine row: its units are constrained
    requests (``requests``), from ``schemas`` distinct schemas (or grammar cases); the HTTP
    200 outputs among them (``outputs``) and those that break the constraint
    (``not_enforced``); each stream's canary; and the alerts: ``NOT ENFORCED: k of n
    constrained outputs break the constraint``, and the same for a canary."""
    form = (meta.get("config") or {}).get("form") or "response_format"
    out: dict[str, Any] = {}
    for r in records:
        e = out.setdefault(r["engine"], {"requests": 0, "schemas": set(), "outputs": 0,
                                         "not_enforced": 0, "canaries": {}, "alerts": []})
        s = r.get("serve") or {}
        if s.get("canary"):
            e["canaries"][s["stream"]] = canary_summary(s)
            continue
        if not is_verdict_unit(r):
            continue
        e["requests"] += 1
        e["schemas"].add(s.get("source") or r.get("subset"))
        if s.get("status") == 200 and s.get("finish_reason") is not None:
            e["outputs"] += 1
        e["not_enforced"] += s.get("verdict") == "constraint_not_enforced"
    for e in out.values():
        e["schemas"] = len(e["schemas"])
        if e["not_enforced"]:
            e["alerts"].append(f"NOT ENFORCED: {e['not_enforced']} of {e['outputs']} constrained "
                               f"outputs break the constraint (HTTP 200; request form {form})")
        for stream, c in sorted(e["canaries"].items()):
            if c["verdict"] == "NOT ENFORCED":
                e["alerts"].append(f"NOT ENFORCED: the canary of {stream} came back "
                                   f"unconstrained ({c.get('why')}; request form {form})")
    return out


def versions_block(meta: RunMeta) -> dict[str, Any]:
    """Engine versions each launched server's environment holds, beside the harness's own
    (standalone) ones."""
    from importlib.metadata import PackageNotFoundError, version

    from harness.suite import REPORTED

    own = {}
    for d in REPORTED:
        try:
            own[d] = version(d)
        except PackageNotFoundError:
            pass
    servers = {}
    for e in meta.get("engines", []):
        env = e.get("environment")
        if env:
            servers[e["engine"]] = {"environment": env.get("name"),
                                    "versions": env.get("versions", {})}
    return {"standalone": own, "servers": servers}


def summary_block(summary: ServeSummary, meta: RunMeta, records: list[ServeRecord],
                  run_dir: Any = None) -> str | None:
    """Adds ``summary["serve"]`` (streams, versions, servers) and returns the console text."""
    import json
    from pathlib import Path

    config = meta.get("config", {})
    block = serve_block(records, config)
    if not block:
        return None
    servers = []
    if run_dir is not None and (Path(run_dir) / "servers" / "servers.json").exists():
        servers = json.loads((Path(run_dir) / "servers" / "servers.json").read_text())
    summary["serve"] = {"streams": block, "versions": versions_block(meta), "servers": servers,
                        "form": config.get("form"), "model": config.get("model"),
                        "max_tokens": config.get("max_tokens")}
    return render_text(summary["serve"])


def _f(v: Any, nd: int = 1) -> str:
    """A figure, or a distribution's p50, with ``nd`` decimals and thousands separators."""
    if isinstance(v, dict):
        v = v.get("p50")
    return figures.fixed(None if v is None else float(v), nd, grouped=True)


def rows(block: ServeSummaryBlock) -> list[list[str]]:
    """One table row per (row, stream, mode): the figures of the console and the report."""
    out = []
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            for mode in ("constrained", "unconstrained"):
                m = d.get(mode)
                if not m:
                    continue
                out.append([eng, stream, mode[0],
                            f"{m['completed']}/{m['requests']}",
                            str(m["schemas"]) if mode == "constrained" else "–",
                            _f(m["request_throughput"], 2), _f(m["output_throughput"], 0),
                            _f(m["goodput"], 2),
                            _f(m["ttft"]), _f((m["ttft"] or {}).get("p99")),
                            _f(m["tpot"], 2), _f((m["tpot"] or {}).get("p99"), 2),
                            _f(m["itl"], 2), _f((m["itl"] or {}).get("p99"), 2),
                            str(m["invalid"]) if mode == "constrained" else "–",
                            f"{m['runaways']}" + (f" ({m['runaway_whitespace_share']:.0%} ws)"
                                                  if m["runaway_whitespace_share"] is not None
                                                  else ""),
                            str(m["refusals"]), str(m["crashes"])])
    return out


HEADER = ["row", "stream", "mode", "done/requests", "schemas", "req/s", "tok/s", "goodput",
          "TTFT p50", "p99", "TPOT p50", "p99", "ITL p50", "p99", "invalid", "runaways",
          "refused", "crashed"]
#: how the columns of :data:`HEADER` align (the row, stream and mode left, figures right)
ALIGN = ["l", "l", "l"] + ["r"] * (len(HEADER) - 3)


def ratio_rows(block: ServeSummaryBlock) -> tuple[list[list[str]], list[str]]:
    """(rows, footnotes) of the ratio table: a ratio that is not a figure shows ``–`` and a
    footnote mark, the footnote its reason."""
    out, notes = [], []
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            r = d.get("ratio")
            if not r:
                continue
            cells = []
            for k in HEADLINE:
                why = (d.get("ratio_why") or {}).get(k)
                if r.get(k) is None and why:
                    notes.append(why)
                    cells.append(f"–[{len(notes)}]")
                else:
                    cells.append(_f(r.get(k), 3))
            out.append([eng, stream] + cells)
    return out, [f"[{i}] {n}" for i, n in enumerate(notes, 1)]


def notes(block: ServeSummaryBlock) -> list[str]:
    """The lines under the tables: each stream's canary, why goodput fell short, requests
    whose per-token times could not be resolved, refusals with the server log's line."""
    out = []
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            c = d.get("canary")
            if c:
                tail = {"enforced": "the constraint held",
                        "NOT ENFORCED": f"{c.get('why')}: the stream's outputs cannot be trusted",
                        "refused": f"refused ({c.get('error')}): enforcement not shown"}.get(
                            c["verdict"], f"{c.get('why') or c.get('error') or ''}")
                out.append(f"{eng} {stream} canary: {c['verdict']} — {tail}")
            for mode in ("constrained", "unconstrained"):
                m = d.get(mode)
                if not m:
                    continue
                bad = m.get("goodput_failures") or {}
                if bad:
                    out.append(f"{eng} {stream} {mode[0]} goodput: {m['good']} of {m['requests']} "
                               "requests good; " + ", ".join(
                                   f"{n} {_GOODPUT_WORDS[k]}" for k, n in bad.items()))
                if m.get("per_token_unresolved"):
                    out.append(f"{eng} {stream} {mode[0]}: {m['per_token_unresolved']} request(s) "
                               "left out of TPOT and ITL: their tokens arrived bunched (over "
                               f"half the gaps under {BUNCHED_MS} ms), so the client cannot "
                               "time them")
            for msg in (d.get("constrained") or {}).get("refusal_messages", []):
                out.append(f"{eng} {stream} refused: {msg}")
    return out


QUALITY_TITLE = "validity and accuracy (model with priors)"
QUALITY_HEADER = ["row", "stream", "mode", "outputs", *VALIDITY_COLUMNS]
#: how the columns of :data:`QUALITY_HEADER` align (names left, figures right)
QUALITY_ALIGN = ["l", "l", "l"] + ["r"] * (len(QUALITY_HEADER) - 3)
QUALITY_NOTE = ("shares of outputs (HTTP 200, finished); the columns of the quality suite: "
                "tokens/valid counts every token written (the server's count) per "
                "schema-valid output; accuracy against BFCL's reference answers")


def quality_rows(block: ServeSummaryBlock) -> tuple[list[list[str]], list[str]]:
    """(rows, lines) of the validity and accuracy table: one row per (row, stream, mode)
    whose outputs a checkpoint's run judged, and the compounding on BFCL per row that has
    it; both empty without a checkpoint."""
    out, lines = [], []
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            for mode in ("constrained", "unconstrained"):
                q = (d.get("quality") or {}).get(mode)
                if not q:
                    continue
                out.append([eng, stream, mode[0], str(q["outputs"]),
                            *(validity_cell(q, c) for c in VALIDITY_COLUMNS)])
                b = q.get("bfcl")
                if b:
                    lines.append(f"{eng} {stream} {mode[0]}: p per call on BFCL "
                                 f"{figures.percent(b['p'])} ({b['outputs']} outputs); 10 "
                                 f"calls clean {figures.percent(b['p10'])}, 50 calls "
                                 f"{figures.percent(b['p50'])}")
    return out, lines


def quality_table(block: ServeSummaryBlock) -> Table | None:
    """The validity and accuracy table (:func:`quality_rows`), None without a checkpoint."""
    qr, _ = quality_rows(block)
    return Table(QUALITY_HEADER, qr, align=QUALITY_ALIGN, note=QUALITY_NOTE) if qr else None


RATIO_HEADER = ["row", "stream", "req/s", "tok/s", "TTFT", "TPOT", "ITL", "E2EL"]
#: how the columns of :data:`RATIO_HEADER` align (names left, ratios right)
RATIO_ALIGN = ["l", "l"] + ["r"] * (len(RATIO_HEADER) - 2)


def render_text(block: ServeSummaryBlock) -> str:
    """The console tables: figures per stream (times in ms), ratios, versions, refusals."""
    parts = [f"serving benchmark (request form {block.get('form')}, model "
             f"{block.get('model')}, max_tokens {block.get('max_tokens')}; times in ms; mode "
             "c = constrained, u = the same stream unconstrained)",
             text_table(Table(HEADER, rows(block), align=ALIGN))]
    rr, foot = ratio_rows(block)
    if rr:
        parts += ["\nconstrained / unconstrained (means)", text_table(Table(RATIO_HEADER, rr, align=RATIO_ALIGN)), *foot]
    qt = quality_table(block)
    if qt is not None:
        parts += [f"\n{QUALITY_TITLE}", text_table(qt), *quality_rows(block)[1]]
    v = block.get("versions") or {}
    said = [f"{s['engine']}: the server says version {s['server_version']}"
            for s in block.get("servers") or [] if s.get("server_version")]
    held = [f"{eng}: the server's environment ({s['environment']}) holds "
            + ", ".join(f"{k} {x}" for k, x in s["versions"].items())
            for eng, s in (v.get("servers") or {}).items()]
    if said or held:
        parts.append("")
        parts += said + held
    if v.get("standalone"):
        parts.append("standalone (the harness's environment): " + ", ".join(
            f"{k} {x}" for k, x in v["standalone"].items()))
    lines = notes(block)
    if lines:
        parts += ["", *lines]
    return "\n".join(parts)
