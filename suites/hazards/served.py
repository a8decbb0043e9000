"""The served hazards (1, 2 and 6) against one server, from the runner's process.

Each request is bounded: its body is made here (never fetched), at most ~2 MiB, its
output budget ``--max-tokens``, its wall time ``--hazard-request-timeout`` (a request
that passes it is ``hung``). After every hostile request the server is asked whether it
still lives (its process, for a launched server) and answers ``/health``; a server found
dead or unhealthy is a ``crashed`` verdict with the first error line of its log, and a
launched one is started again (:meth:`harness.suite.serving.RowServers.restart`) so
that the next request meets a live server. A server given by URL cannot be restarted:
the requests after its death are ``not sent``.

Hazard 1 (``hostile_request``): each adversarial family's largest schema up to
:data:`MAX_SCHEMA_BYTES` (:data:`suites.adversarial.FAMILIES`), a malformed schema, an
empty ``json`` string (PR #45346), a ``json`` field that is not an object, a
100,000-entry ``enum`` and a 500-deep nesting, then one ordinary request, which must be
answered with ``/health`` up (vLLM #43920: a backend locked by a first request).

Hazard 2 (``bad_tool``): the standalone request's tools (ten ordinary ones and the bad
one, :mod:`suites.hazards.tools`) as OpenAI ``tools`` with ``tool_choice="required"``:
refused (HTTP 4xx, the error as witness), answered (which tool was called, its arguments
judged by jsonschema), or crashed. A refusal counts only when the same request without
the bad tool is answered; else the hazard is not measured, with the server's reason
(vLLM takes ``tool_choice="required"`` only with a ``--tool-call-parser``).

Hazard 6 (``reasoning``): vLLM's ``structural_tag`` response format, the same
reasoning-then-schema request as standalone (:mod:`engines.reasoning`, with a short
reasoning bound so that the answer fits the output budget): ``enforced`` when the output
opens with ``<think>``, closes it and continues with JSON the schema admits (a prefix of
it where the budget cut the answer), ``not_enforced`` with the text as witness
otherwise (vLLM #52594). The launched server runs no reasoning parser (vLLM takes one at
start, ``--reasoning-parser``), so its own reasoning option is not measured.
"""

from __future__ import annotations

import json
from typing import Any

from harness.suite import Job, outcomes
from harness.suite.serving import TRANSPORT_ERRORS, Completion, RowServers, Target

__all__ = ["hostile_requests", "run_served"]

#: Largest adversarial schema sent, bytes of text.
MAX_SCHEMA_BYTES = 1_100_000
#: Seconds an ordinary request may take after a hung one before the server counts as
#: wedged (restarted when launched).
WEDGE_PROBE_S = 30.0
ORDINARY = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
MESSAGES = [{"role": "system", "content": "You answer with one JSON value and nothing else."},
            {"role": "user", "content": "Give a JSON value."}]


def hostile_requests() -> list[dict[str, Any]]:
    """The hostile requests of hazard 1: ``{"name", "fields"}`` (the body fields that carry
    the constraint)."""
    from harness.suite.hostile import FAMILIES, FAMILY_BY_NAME, make_case

    out = []
    for fam in FAMILIES:
        best = None
        for size in fam.sizes:
            case = make_case(fam, size)
            if len(case.schema_text) <= MAX_SCHEMA_BYTES:
                best = case
        if best is not None:
            out.append({"name": f"adversarial {best.case_id}",
                        "fields": {"response_format": _rf(best.schema)}})
    out.append({"name": "malformed schema (type 12, properties a list)",
                "fields": {"response_format": _rf({"type": 12, "properties": [1, 2]})}})
    out.append({"name": "empty json string", "fields": {"structured_outputs": {"json": ""}}})
    out.append({"name": "json field not an object (42)",
                "fields": {"structured_outputs": {"json": 42}}})
    out.append({"name": "enum of 100,000 strings",
                "fields": {"response_format": _rf(make_case(FAMILY_BY_NAME["enum"], 100_000).schema)}})
    nest = FAMILY_BY_NAME["nesting_object"].make(500)[0]
    out.append({"name": "nesting 500 deep", "fields": {"response_format": _rf(nest)}})
    return out


def _rf(schema: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "hazard", "schema": schema,
                                                   "strict": True}}


def _dumps(body: dict[str, Any]) -> str:
    """``json.dumps`` with room for the 500-deep nesting (three JSON levels per schema
    level: past Python's default recursion limit); the limit is restored at once."""
    import sys

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        return json.dumps(body)
    finally:
        sys.setrecursionlimit(old)


def _post(target: Target, fields: dict[str, Any], max_tokens: int,
          timeout_s: float) -> Completion:
    """One streamed chat completion with ``fields`` in the body; never raises for what the
    server does (a broken connection or a timeout is an answer with status 0, what arrived
    before it kept). Its ``error``: at most 300 characters (200 of an exception's message)."""
    client = target.client
    client.detect()
    body: dict[str, Any] = {"messages": MESSAGES, "max_tokens": max_tokens, "temperature": 1.0,
                            "stream": True, **fields}
    if client.model:
        body["model"] = client.model
    ans = client.stream(_dumps(body), timeout=timeout_s, accept_event_stream=False)
    e = ans.failure
    if e is not None:
        ans.error = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    elif ans.error is not None:
        ans.error = ans.error[:300]
    return ans


def _health(servers: RowServers, target: Target) -> tuple[bool, str | None]:
    """(healthy, why not): a launched server's process and ``/health``; a URL's
    ``/health`` (or ``/v1/models`` where it has none)."""
    if target.server is not None:
        if not target.server.alive():
            return False, f"process gone ({target.server.exit_status()})"
        if not servers.alive(target):  # watched for a moment: a dying engine shows
            return False, "/health does not answer 200"
        return True, None
    for path in ("/health", "/v1/models"):
        try:
            status, _ = target.client.get(path)
        except TRANSPORT_ERRORS as e:
            return False, f"GET {path}: {type(e).__name__}"
        if status == 200:
            return True, None
    return False, "neither /health nor /v1/models answers 200"


def _send_checked(servers: RowServers, target: Target, fields: dict[str, Any],
                  o: dict[str, Any], max_tokens: int | None = None) -> dict[str, Any]:
    """Send one request, then check the server: ``{"status", "verdict", "error",
    "health", "seconds", "text"}`` with verdict ``refused`` / ``accepted`` / ``crashed``
    / ``hung`` / ``no_answer``; a launched server found dead is started again
    (``restarted``)."""
    since = target.log_size()
    ans = _post(target, fields, int(max_tokens or o["max_tokens"]), float(o["request_timeout_s"]))
    ok, why = _health(servers, target)
    row: dict[str, Any] = {"status": ans.status, "seconds": round(ans.total_ns / 1e9, 3),
                           "finish_reason": ans.finish_reason, "text": ans.text[:200]}
    if ans.error:
        row["error"] = ans.error
    if ans.tool_calls:
        row["tool_calls"] = [ans.tool_calls[k] for k in sorted(ans.tool_calls)]
    if not ok:
        row["verdict"] = "crashed"
        row["health"] = why
        line = target.log_line((since, None))
        if line:
            row["server_log"] = line
        if target.server is not None:
            servers.restart(target)
            row["restarted"] = True
        return row
    row["health"] = "ok"
    if ans.status == 0:
        row["verdict"] = "hung" if "timed out" in (ans.error or "") else "no_answer"
    elif ans.status != 200:
        row["verdict"] = "refused"
    elif ans.finish_reason is None:
        row["verdict"] = "refused" if ans.error else "no_answer"
    else:
        row["verdict"] = "accepted"
    if row["verdict"] == "hung":
        # is the whole server stuck behind it (a grammar compile that never ends blocks
        # every later request), or only this request? An ordinary request says.
        wait = min(WEDGE_PROBE_S, float(o["request_timeout_s"]))
        probe = _post(target, {"response_format": _rf(ORDINARY)}, 4, wait)
        if probe.status != 200 or probe.finish_reason is None:
            row["wedged"] = f"an ordinary request after it got no answer in {wait:g} s either"
            if target.server is not None:
                servers.restart(target)
                row["restarted"] = True
        return row
    if row["verdict"] in ("refused", "no_answer") and not ans.error:
        line = target.log_line((since, None))
        if line:
            row["server_log"] = line
    return row


def _hostile(servers: RowServers, target: Target,
             o: dict[str, Any]) -> tuple[dict[str, Any], str]:
    rows = []
    dead_url = False
    for req in hostile_requests():
        if dead_url:
            rows.append({"name": req["name"], "verdict": "not_sent",
                         "why": "the server given by URL died earlier"})
            continue
        row = {"name": req["name"], **_send_checked(servers, target, req["fields"], o)}
        rows.append(row)
        dead_url = (row["verdict"] == "crashed" or bool(row.get("wedged"))) \
            and target.server is None
    final = ({"verdict": "not_sent"} if dead_url else
             _send_checked(servers, target, {"response_format": _rf(ORDINARY)}, o))
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    out: dict[str, Any] = {"requests": rows, "ordinary": final, "counts": counts}
    crashed = [r for r in rows if r["verdict"] == "crashed"]
    hung = [r for r in rows if r["verdict"] == "hung"]
    wedged = [r for r in hung if r.get("wedged")]
    summary = ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
    after = ("ordinary request answered, /health up" if final.get("verdict") == "accepted"
             else f"ordinary request after them: {final.get('verdict')} "
                  f"({final.get('error') or final.get('health') or ''})")
    if crashed:
        c = crashed[0]
        out["verdict"] = "crashed"
        out["witness"] = (f"{c['name']}: {c.get('health')}"
                          + (f" ({c['server_log']})" if c.get("server_log") else "")
                          + f"; {len(rows)} hostile: {summary}; {after}")
        return out, outcomes.CRASH
    if hung or final.get("verdict") != "accepted":
        # up, but the ordinary request after them fails (vLLM #43920) or one hung
        out["verdict"] = "hung" if hung else "degraded"
        h = (wedged or hung)[0] if hung else None
        out["witness"] = ((f"{h['name']}: no answer in {o['request_timeout_s']:g} s"
                           + (f", server wedged ({h['wedged']})" if h.get("wedged") else "")
                           + "; " if h else "") + f"{len(rows)} hostile: {summary}; {after}")
        return out, outcomes.TIMEOUT if hung else outcomes.CRASH
    out["verdict"] = "survived"
    out["witness"] = f"{len(rows)} hostile: {summary}; {after}"
    return out, outcomes.PASSING


def _bad_tool(servers: RowServers, target: Target,
              o: dict[str, Any]) -> tuple[dict[str, Any], str]:
    import jsonschema

    from suites.hazards.tools import BAD_NAME, BAD_SCHEMAS, N_GOOD, good_tools

    schema = BAD_SCHEMAS[0][0]
    tools = good_tools()
    tools.insert(N_GOOD // 2, (BAD_NAME, json.dumps(schema)))
    fields: dict[str, Any] = {
        "tools": [{"type": "function", "function": {"name": n, "parameters": json.loads(s)}}
                  for n, s in tools],
        "tool_choice": "required"}
    budget = max(int(o["max_tokens"]), 64)
    row = _send_checked(servers, target, fields, o, max_tokens=budget)
    out: dict[str, Any] = {"tools": len(tools), "bad_schema": json.dumps(schema), "request": row}
    v = row["verdict"]
    if v == "refused":
        # a refusal is the bad tool's only when the same request without it is answered
        good = {**fields, "tools": [t for t in fields["tools"]
                                    if t["function"]["name"] != BAD_NAME]}
        control = _send_checked(servers, target, good, o, max_tokens=budget)
        out["control"] = control
        if control["verdict"] != "accepted":
            out["not_measured"] = (f"the server refuses the request without the bad tool too "
                                   f"(HTTP {control['status']}: "
                                   f"{(control.get('error') or control['verdict'])[:160]})")
            return out, outcomes.PASSING
    if v == "crashed":
        out.update(verdict="crashed", witness=f"{row.get('health')}"
                   + (f" ({row['server_log']})" if row.get("server_log") else ""))
        return out, outcomes.CRASH
    if v == "hung":
        out.update(verdict="hung", witness=f"no answer in {o['request_timeout_s']:g} s")
        return out, outcomes.TIMEOUT
    if v != "accepted":
        out.update(verdict="refused", witness=f"HTTP {row['status']}: {row.get('error') or ''}"[:240])
        return out, outcomes.COMPILE_ERROR
    schemas = dict(tools)
    calls = row.get("tool_calls") or []
    judged = []
    bad = None
    for c in calls:
        try:
            args = json.loads(c["arguments"])
            valid = (jsonschema.Draft202012Validator(json.loads(schemas[c["name"]])).is_valid(args)
                     if c["name"] in schemas else False)
        except (ValueError, KeyError):
            valid = False
        judged.append({**c, "valid": valid})
        if not valid and bad is None:
            bad = c
    out["calls"] = judged
    out["verdict"] = "answered"
    if not calls:
        out["witness"] = (f"HTTP 200, no tool call (finish {row.get('finish_reason')}); "
                          f"content {row.get('text', '')[:80]!r}")
        return out, outcomes.INVALIDATION_ERROR
    if bad is not None:
        out["witness"] = f"called {bad['name']} with {bad['arguments'][:80]!r}: not valid"
        return out, outcomes.INVALIDATION_ERROR
    out["witness"] = "called " + ", ".join(c["name"] for c in calls) + " with valid arguments"
    return out, outcomes.PASSING


def _judge_reasoning(row: dict[str, Any], opened: bool) -> tuple[str, str, str]:
    """(verdict, witness, outcome) of a reasoning request's answer; ``opened``: the form
    makes the output open with ``<think>``."""
    import jsonschema

    from harness.suite.measure import json_prefix_error
    from suites.hazards.reasoning import CLOSE, OPEN, SCHEMA

    text = row.get("text", "")
    cut = row.get("finish_reason") == "length"
    if opened and not text.startswith(OPEN):
        return "not_enforced", f"the output does not open with {OPEN}: {text[:100]!r}", \
            outcomes.INVALIDATION_ERROR
    if CLOSE not in text:
        if cut:
            return "undecided", (f"the budget ended inside the free text, the answer not "
                                 f"reached: {text[:80]!r}"), outcomes.PASSING
        return "leaks", (f"the output ended inside the reasoning, no answer: {text[:80]!r}"), \
            outcomes.INVALIDATION_ERROR
    answer = text.split(CLOSE, 1)[1]
    if cut:
        err = json_prefix_error(answer)
        if err:
            return "not_enforced", f"answer cannot become JSON: {err}", \
                outcomes.INVALIDATION_ERROR
        return "enforced", f"answer a JSON prefix when the budget ended: {answer[:60]!r}", \
            outcomes.PASSING
    try:
        valid = jsonschema.Draft202012Validator(SCHEMA).is_valid(json.loads(answer))
    except ValueError:
        valid = False
    if valid:
        return "enforced", f"answer after {CLOSE}: {answer[:80]!r}", outcomes.PASSING
    return "not_enforced", f"answer after {CLOSE} not valid: {answer[:80]!r}", \
        outcomes.INVALIDATION_ERROR


def _reasoning(servers: RowServers, target: Target,
               o: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The reasoning request in vLLM's structural-tag format (``format``: a sequence of
    the ``<think>`` tag and the schema); where the server refuses that format, again in the
    older one (``structures`` + ``triggers``: free text until ``</think>``, then the
    schema), whose output may end inside the reasoning: the hazard itself."""
    from harness.suite.engines import ReasoningSpec, xgrammar_structural_tag
    from suites.hazards.reasoning import CLOSE, OPEN, SCHEMA

    spec = ReasoningSpec(json.dumps(SCHEMA), OPEN, CLOSE, max_chars=16, max_tokens=None)
    tag = xgrammar_structural_tag(spec)
    budget = max(int(o["max_tokens"]), 64)
    row = _send_checked(servers, target,
                        {"response_format": {"type": "structural_tag", "format": tag["format"]}},
                        o, max_tokens=budget)
    out: dict[str, Any] = {"form": "response_format structural_tag (format)", "request": row,
                           "reasoning_option": "not measured: the launched server runs no "
                                               "reasoning parser (--reasoning-parser)"}
    v = row["verdict"]
    if v in ("crashed", "hung"):
        out.update(verdict=v, witness=row.get("health") or row.get("error"))
        return out, outcomes.CRASH if v == "crashed" else outcomes.TIMEOUT
    if v == "accepted":
        verdict, witness, outcome = _judge_reasoning(row, opened=True)
        out.update(verdict=verdict, witness=witness)
        return out, outcome
    refusal = f"HTTP {row['status']}: {row.get('error') or ''}"[:160]
    legacy = {"type": "structural_tag", "triggers": [CLOSE],
              "structures": [{"begin": CLOSE, "schema": SCHEMA, "end": ""}]}
    old = _send_checked(servers, target, {"response_format": legacy}, o, max_tokens=budget)
    out["legacy"] = old
    if old["verdict"] != "accepted":
        out.update(verdict="refused" if old["verdict"] in ("refused", "no_answer")
                   else old["verdict"],
                   witness=f"structural tag refused ({refusal}); the older form too "
                           f"(HTTP {old['status']}: {(old.get('error') or '')[:100]})")
        return out, (outcomes.COMPILE_ERROR if out["verdict"] == "refused" else
                     outcomes.CRASH if out["verdict"] == "crashed" else outcomes.TIMEOUT)
    verdict, witness, outcome = _judge_reasoning(old, opened=False)
    out.update(form="response_format structural_tag (structures + triggers)", verdict=verdict,
               witness=f"structural tag refused ({refusal}); older form: {witness}")
    return out, outcome


HAZARDS = {"hostile_request": _hostile, "bad_tool": _bad_tool, "reasoning": _reasoning}


def run_served(servers: RowServers, target: Target, job: Job,
               o: dict[str, Any]) -> dict[str, Any]:
    """One served hazard job's record (see the module docstring)."""
    from suites.hazards import hazard_of

    name = hazard_of(job.case_id)
    out, outcome = HAZARDS[name](servers, target, o)
    rec: dict[str, Any] = {"engine": job.engine, "case_id": job.case_id, "subset": job.subset,
                           "suite": "hazards", "outcome": outcome,
                           "hazard": {"name": name, "server": target.label, **out}}
    if outcome != outcomes.PASSING:
        rec["error"] = str(out.get("witness"))[:300]
    return rec
