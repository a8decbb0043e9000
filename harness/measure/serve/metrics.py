"""The serve suite's metrics: per engine row and stream (workload, rate), the constrained
stream beside its unconstrained twin and each metric's ratio constrained / unconstrained.

Per stream (times in ms unless said):

``request_throughput``   completed requests (HTTP 200) per second of the stream's span
                         (first send to last answer)
``output_throughput``    output tokens per second of that span
``goodput``              requests per second that were good: HTTP 200 and finished, a valid
                         output for constrained requests (a runaway is not), and within the
                         SLOs given (``--slo-ttft-ms``, ``--slo-tpot-ms``)
``ttft`` / ``tpot`` /    time to first token; time per output token after the first; the
``itl`` / ``e2el``       gaps between streamed tokens (pooled); end-to-end latency — each as
                         ``mean``, ``p50`` and ``p99``
``invalid``              constrained outputs that broke the constraint (strict JSON, then
                         jsonschema; a truncated one that cannot become JSON)
``runaways``             outputs the token budget ended (``finish_reason == "length"``), with
                         the mean share of whitespace in their text
``refusals``             HTTP 4xx/5xx answers, with the server's first messages
``crashes``              requests lost to a server crash (or no answer)
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import numpy as np

HEADLINE = ("request_throughput", "output_throughput", "ttft", "tpot", "itl", "e2el")


def _stats(values: list[float]) -> dict[str, float] | None:
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if not a.size:
        return None
    return {"mean": round(float(a.mean()), 3), "p50": round(float(np.median(a)), 3),
            "p99": round(float(np.percentile(a, 99)), 3)}


def stream_metrics(records: list[dict[str, Any]], slo_ttft_ms: float | None = None,
                   slo_tpot_ms: float | None = None) -> dict[str, Any]:
    """The metrics above for one stream's records."""
    s = [r["serve"] for r in records if r.get("serve")]
    ok = [x for x in s if x["status"] == 200]
    starts = [x["sent_s"] for x in s if x.get("sent_s") is not None]
    ends = [x["sent_s"] + (x["e2el_ms"] or 0) / 1e3 for x in s if x.get("sent_s") is not None]
    span = (max(ends) - min(starts)) if starts and ends else 0.0
    tokens = sum(x["tokens"] for x in ok)

    def good(x: dict[str, Any]) -> bool:
        if x["status"] != 200 or x.get("finish_reason") is None:
            return False
        if x["constrained"] and x.get("verdict") != "ok":
            return False  # a runaway under a constraint is not a good answer
        if slo_ttft_ms is not None and (x["ttft_ms"] is None or x["ttft_ms"] > slo_ttft_ms):
            return False
        if slo_tpot_ms is not None and x["tpot_ms"] is not None and x["tpot_ms"] > slo_tpot_ms:
            return False
        return True

    runaways = [x for x in ok if x.get("finish_reason") == "length"]
    refusals = [x for x in s if x.get("verdict") == "refused"]
    messages: list[str] = []
    for x in refusals:
        how = "in the stream" if x["status"] == 200 else f"HTTP {x['status']}"
        m = f"{how}: {(x.get('error') or '')[:200]}"
        if m not in messages:
            messages.append(m)
    ws = [x["whitespace_share"] for x in runaways if x.get("whitespace_share") is not None]
    return {
        "requests": len(s), "completed": len(ok), "span_s": round(span, 3),
        "request_throughput": round(len(ok) / span, 4) if span > 0 else None,
        "output_throughput": round(tokens / span, 2) if span > 0 else None,
        "goodput": round(sum(1 for x in s if good(x)) / span, 4) if span > 0 else None,
        "output_tokens": tokens,
        "ttft": _stats([x["ttft_ms"] for x in ok]),
        "tpot": _stats([x["tpot_ms"] for x in ok]),
        "itl": _stats([g for x in ok for g in x.get("itl_ms") or ()]),
        "e2el": _stats([x["e2el_ms"] for x in ok]),
        "constrained": sum(1 for x in s if x["constrained"]),
        "valid": sum(1 for x in s if x.get("verdict") == "ok"),
        "invalid": sum(1 for x in s if x.get("verdict") == "constraint_not_enforced"),
        "runaways": len(runaways),
        "runaway_whitespace_share": round(float(np.mean(ws)), 4) if ws else None,
        "refusals": len(refusals), "refusal_messages": messages[:3],
        "crashes": sum(1 for x in s if x.get("verdict") in ("server_crash", "no_answer")),
    }


def ratio(c: Any, u: Any) -> float | None:
    """``c / u`` for two numbers or two stats' means; None when either is missing or zero.

    Means, not medians: where the client shares a small machine with the server, streamed
    tokens arrive bunched (several per read), so a median gap can read ~0 while the mean
    stays the time per token."""
    if isinstance(c, dict):
        c = c.get("mean")
    if isinstance(u, dict):
        u = u.get("mean")
    if not c or not u:
        return None
    return round(float(c) / float(u), 4)


def serve_block(records: Iterable[dict[str, Any]], config: dict[str, Any]) -> dict[str, Any]:
    """``{row: {stream: {"constrained": metrics, "unconstrained": metrics, "ratio": {...}}}}``."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        s = r.get("serve")
        if s:
            groups[(r["engine"], s["stream"], s["mode"])].append(r)
    out: dict[str, dict[str, Any]] = {}
    for (eng, stream, mode), recs in sorted(groups.items()):
        m = stream_metrics(recs, config.get("slo_ttft_ms"), config.get("slo_tpot_ms"))
        slot = out.setdefault(eng, {}).setdefault(stream, {})
        slot["constrained" if mode == "c" else "unconstrained"] = m
    for eng, streams in out.items():
        for stream, d in streams.items():
            c, u = d.get("constrained"), d.get("unconstrained")
            if c and u:
                d["ratio"] = {k: ratio(c.get(k), u.get(k)) for k in HEADLINE}
    return out


def versions_block(meta: dict[str, Any]) -> dict[str, Any]:
    """Engine versions each launched server's environment holds, beside the harness's own
    (standalone) ones."""
    from importlib.metadata import PackageNotFoundError, version

    from harness.environments import REPORTED

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


def summary_block(summary: dict[str, Any], meta: dict[str, Any], records: list[dict[str, Any]],
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
    if v is None:
        return "–"
    if isinstance(v, dict):
        v = v.get("p50")
        if v is None:
            return "–"
    return f"{v:,.{nd}f}"


def rows(block: dict[str, Any]) -> list[list[str]]:
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


HEADER = ["row", "stream", "mode", "done", "req/s", "tok/s", "goodput", "TTFT p50", "p99",
          "TPOT p50", "p99", "ITL p50", "p99", "invalid", "runaways", "refused", "crashed"]


def ratio_rows(block: dict[str, Any]) -> list[list[str]]:
    out = []
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            r = d.get("ratio")
            if r:
                out.append([eng, stream] + [_f(r[k], 3) for k in HEADLINE])
    return out


RATIO_HEADER = ["row", "stream", "req/s", "tok/s", "TTFT", "TPOT", "ITL", "E2EL"]


def text_table(header: list[str], body: list[list[str]]) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]
    fmt = lambda r: "  ".join(c.ljust(w) if i < 3 else c.rjust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([fmt(header)] + [fmt(r) for r in body])


def render_text(block: dict[str, Any]) -> str:
    """The console tables: figures per stream (times in ms), ratios, versions, refusals."""
    parts = [f"serving benchmark (request form {block.get('form')}, model "
             f"{block.get('model')}, max_tokens {block.get('max_tokens')}; times in ms; mode "
             "c = constrained, u = the same stream unconstrained)",
             text_table(HEADER, rows(block))]
    rr = ratio_rows(block)
    if rr:
        parts += ["\nconstrained / unconstrained (means)", text_table(RATIO_HEADER, rr)]
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
    for eng, streams in block["streams"].items():
        for stream, d in streams.items():
            for msg in (d.get("constrained") or {}).get("refusal_messages", []):
                parts.append(f"{eng} {stream} refused: {msg}")
    return "\n".join(parts)
