"""The serve suite's executor: its requests, stream by stream, to servers.

It takes the run's jobs (one per request, in case order: engine by engine, rate by rate,
the constrained stream then its unconstrained twin) and sends each stream's requests on
their arrival schedule (:mod:`suites.serve.load`); every answer becomes one record,
appended at once, so a killed run resumes losing and duplicating nothing.

Servers: with ``--launch`` each engine row's server is started on 127.0.0.1 (its command from
the adapter's ``server_command``, its interpreter from the row's environment), probed until
ready, logged to ``servers/<row>.log`` in the run folder, and stopped when the row is done,
at the end, and on Ctrl-C or a kill (:class:`harness.suite.serving.RowServers`). A server that
dies mid-stream: the requests in flight are recorded as a server crash, it is started again,
and the stream goes on (at most ``max_restarts`` times per row). A server that never becomes
ready ends the run with one line naming its log. With ``--server URL`` the user's server is
driven as it is.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from harness.suite import RunConfig
from harness.suite import ExecutorError, Job
from harness.suite import outcomes
from harness.suite import RunStore
from harness.suite import Record
from harness.suite.serving import Completion, RowServers, ServerUnavailable, Target
from suites.serve.records import ServeBlock, ServeRecord

if TYPE_CHECKING:
    from engines.protocol import Vocabulary

log = logging.getLogger("harness")


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 3)


def whitespace_share(text: str) -> float | None:
    """Share of the text's characters that are JSON whitespace (space, tab, CR, LF)."""
    if not text:
        return None
    return round(sum(1 for c in text if c in " \t\r\n") / len(text), 4)


def canary_verdict(text: str, canary: dict[str, Any]) -> tuple[bool, str | None]:
    """(met, why not) of a canary's output: for kind ``json`` the text must be one JSON value
    among ``canary["accept"]`` (strict JSON, whitespace around it allowed); for the other
    kinds the text itself must be one of them."""
    accept = canary["accept"]
    shown = text if len(text) <= 80 else text[:77] + "..."
    if canary["kind"] == "json":
        try:
            value = json.loads(text)
        except ValueError:
            return False, f"not JSON: {shown!r} (asked for the const {json.dumps(accept[0])})"
        if value in accept:
            return True, None
        return False, f"{shown!r} is not the const {json.dumps(accept[0])}"
    if text in accept:
        return True, None
    return False, f"{shown!r} is none of {', '.join(repr(a) for a in accept)}"


class ServeExecutor:
    """Runs the serve suite's request jobs (see the module's docstring)."""

    def __init__(self, store: RunStore, config: RunConfig,
                 on_record: Callable[[Record], None] = lambda r: None) -> None:
        from suites.serve.options import DEFAULTS

        self.store = store
        self.config = config
        self.o = {**DEFAULTS, **{k: v for k, v in config.options.items() if k in DEFAULTS}}
        self.on_record = on_record
        self.rows = RowServers(Path(store.path), config.tokenizer, config.options)
        self._vocab: Vocabulary | None = None  # the run's tokenizer: prompts carry at most 2,048 schema tokens
        self._is_checkpoint: bool | None = None

    # -- records -----------------------------------------------------------------------
    def _append(self, rec: Record) -> None:
        self.store.append(rec)
        self.on_record(rec)

    def _base(self, job: Job) -> ServeRecord:
        return {"engine": job.engine, "case_id": job.case_id, "subset": job.subset}

    def _record(self, job: Job, res: Completion, stream_t0: float,
                crashed: str | None) -> ServeRecord:
        from harness.suite.serving import verdict as judge
        from harness.suite.measure import target_for
        from harness.suite.measure import json_prefix_error

        case, req = job.payload["case"], job.payload["case"]["request"]
        rec: ServeRecord = {**self._base(job), "suite": case["suite"]}
        ttft = res.ttft_ns
        tokens = res.tokens
        tpot = ((res.total_ns - ttft) / (tokens - 1)) if ttft and tokens > 1 else None
        s: ServeBlock = {
            "stream": req["stream"], "rate": req["rate"], "mode": req["mode"],
            "index": req["index"], "constrained": req["constrained"], "form": self.o["form"],
            "kind": req["kind"], "source": req["source"], "status": res.status,
            "sent_s": round((res.sent_ns - stream_t0) / 1e9, 6) if res.sent_ns else None,
            "arrival_s": req["arrival_s"],
            "ttft_ms": _ms(ttft), "e2el_ms": _ms(res.total_ns), "tpot_ms": _ms(tpot),
            "itl_ms": [round(x / 1e6, 3) for x in res.chunk_ns], "tokens": tokens,
            "finish_reason": res.finish_reason, "text": res.text[:300],
        }
        rec["serve"] = s
        rec["tokens"] = tokens
        failed = crashed or res.status != 200 or res.finish_reason is None
        row = self.rows.target
        if failed and row is not None and row.server is not None:
            line = row.log_line(res.log_span)
            if line:
                s["server_log"] = line
                s["server_log_path"] = str(row.server.log_path)
        if crashed:
            s["verdict"] = "server_crash"
            rec.update(outcome=outcomes.CRASH,
                       error=f"server crashed ({crashed}) with the request in flight: "
                             f"{res.error or 'connection lost'}")
            return rec
        if res.status == 200 and res.finish_reason is None:
            # the server answered, then broke the stream off with an error of its own while
            # staying healthy (e.g. a backend that fails on the schema mid-request): a refusal
            s["error"] = res.error
            if res.error:
                s["verdict"] = "refused"
                rec.update(outcome=outcomes.COMPILE_ERROR,
                           error=f"refused in the stream (HTTP 200, then): {res.error}")
            else:
                s["verdict"] = "no_answer"
                rec.update(outcome=outcomes.CRASH,
                           error="the stream broke off without a finish_reason or an error")
            return rec
        if res.status != 200:
            s["verdict"] = "refused" if res.status else "no_answer"
            s["error"] = res.error
            rec.update(outcome=outcomes.COMPILE_ERROR if res.status else outcomes.CRASH,
                       error=(f"refused: HTTP {res.status}: {res.error}" if res.status
                              else f"no answer from the server: {res.error}"))
            return rec
        if res.finish_reason == "length":
            s["whitespace_share"] = whitespace_share(res.text)
        if not req["constrained"]:
            s["verdict"] = "runaway" if res.finish_reason == "length" else "unconstrained"
            rec["outcome"] = outcomes.PASSING
            self._validity(case, req, res, s, None)
            return rec
        if req.get("canary"):
            s["canary"] = True
            ok, why = canary_verdict(res.text, req["canary"])
            s["verdict"] = "ok" if ok else "constraint_not_enforced"
            if ok:
                rec["outcome"] = outcomes.PASSING
            else:
                s["why"] = why
                rec.update(outcome=outcomes.INVALIDATION_ERROR,
                           error=f"canary: constraint not enforced (HTTP 200): {why}")
            return rec
        target = target_for(case)
        v = judge(res, target)
        # jsonschema's verdict on the whole text, where the server's verdict is one
        valid = None if v["verdict"] == "truncated" else v["verdict"] == "ok"
        if v["verdict"] == "truncated":
            # the budget ended it: judged by syntax only (can it still become JSON?); a
            # grammar's truncated output is a runaway
            why = json_prefix_error(res.text) if target.kind == "json-schema" else None
            v = ({"verdict": "constraint_not_enforced",
                  "why": f"truncated output cannot become JSON: {why}"} if why
                 else {"verdict": "runaway"})
        s["verdict"] = v["verdict"]
        if v.get("why"):
            s["why"] = v["why"]
        if v["verdict"] == "constraint_not_enforced":
            rec.update(outcome=outcomes.INVALIDATION_ERROR,
                       error=f"constraint not enforced (HTTP 200, invalid output): {v['why']}")
        else:
            rec["outcome"] = outcomes.PASSING
        self._validity(case, req, res, s, valid, target)
        return rec

    def _checkpoint(self) -> bool:
        """The run's model is a checkpoint (``--model PATH``: a model with priors), whose
        outputs get the validity and accuracy figures."""
        if self._is_checkpoint is None:
            from harness.suite.serving import looks_like_checkpoint

            self._is_checkpoint = looks_like_checkpoint(str(self.o.get("model") or ""))
        return self._is_checkpoint

    def _validity(self, case: dict[str, Any], req: dict[str, Any], res: Completion,
                  s: ServeBlock, valid: bool | None, target: Any = None) -> None:
        """With a checkpoint, what :func:`harness.suite.measure.validity_figures` reads of a
        JSON request's answer (HTTP 200, finished): ``parse_valid`` (strict JSON),
        ``schema_valid`` (``valid``, the verdict already given; judged here only where none
        was: an unconstrained or truncated output) and, for a BFCL case, the match to its
        reference answer (``name_match``, ``args_matched``, ``args_total``)."""
        if not self._checkpoint() or req.get("kind", "json") != "json" or req.get("canary"):
            return
        from harness.suite.measure import bfcl_match, parse_instance_text, target_for

        value, why = parse_instance_text(res.text)
        if valid is None:
            target = target if target is not None else target_for(case)
            valid = target.judge(res.text.encode("utf-8")).get("valid") is True
        s["parse_valid"] = why is None
        s["schema_valid"] = bool(valid)
        if "bfcl_answer" in req:
            nm, am, at = bfcl_match(req["bfcl_answer"], value if why is None else None)
            s.update(name_match=nm, args_matched=am, args_total=at)

    # -- streams -----------------------------------------------------------------------
    def _send(self, target: Target, job: Job) -> Completion:
        from harness.suite.serving import Constraint
        from harness.suite.serving import ASK, SYSTEM

        case, req = job.payload["case"], job.payload["case"]["request"]
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": ASK + self._excerpt(case["schema_text"])}]
        constraint = None
        log_from = target.log_size()
        if req.get("canary"):
            c = req["canary"]
            res = target.client.complete(None, messages, max_tokens=max(64, int(self.o["max_tokens"])),
                                         temperature=float(self.o["temperature"]),
                                         seed=int(self.o["seed"]) if target.seeded else None,
                                         constraint=Constraint(c["kind"], c["value"]),
                                         form=self.o["form"],
                                         prompt=self._prompt_ids(case["schema_text"]))
            res.log_span = (log_from, target.log_size())
            return res
        if req["constrained"]:
            kind = req.get("kind", "json")
            if kind == "json":
                constraint = Constraint("json", json.loads(case["schema_text"]))
            else:  # a grammar workload: the form the request field carries
                from suites.serve import GRAMMAR_WORKLOADS

                constraint = Constraint(kind, case["grammar"]["forms"][GRAMMAR_WORKLOADS[kind][1]])
        seed = int(self.o["seed"]) + int(req["index"]) if target.seeded else None
        res = target.client.complete(None, messages, max_tokens=int(self.o["max_tokens"]),
                                     temperature=float(self.o["temperature"]), seed=seed,
                                     constraint=constraint, form=self.o["form"],
                                     prompt=self._prompt_ids(case["schema_text"]))
        res.log_span = (log_from, target.log_size())
        return res

    def _prompt_ids(self, schema_text: str) -> list[int] | None:
        """A checkpoint's own prompt format as token ids (``--model PATH``: a completion of
        them is asked), None for a size (a chat request with :data:`SYSTEM` and :data:`ASK`).
        A workload that is not a JSON schema gets the schema-less prompt."""
        from harness.suite.serving import looks_like_checkpoint, model_prompt
        from harness.suite.engines import load_vocabulary

        model = str(self.o.get("model") or "")
        if not looks_like_checkpoint(model):
            return None
        if self._vocab is None:
            self._vocab = load_vocabulary(self.config.tokenizer)
        try:
            json.loads(schema_text)
        except (TypeError, ValueError):
            schema_text = "{}"
        return model_prompt(model, self._vocab, schema_text)

    def _excerpt(self, schema_text: str) -> str:
        from harness.suite.serving import schema_excerpt
        from harness.suite.engines import load_vocabulary

        if self._vocab is None:
            self._vocab = load_vocabulary(self.config.tokenizer)
        return schema_excerpt(self._vocab, schema_text)

    def _run_stream(self, jobs: list[Job]) -> None:
        from suites.serve.load import Stream

        runnable = []
        for job in jobs:
            if job.payload is None:  # a corpus file that could not be read
                self._append({**self._base(job), "outcome": outcomes.BAD_INPUT,
                              "error": job.load_error})
            else:
                runnable.append(job)
        if not runnable:
            return
        target = self.rows.open(runnable[0].payload["engine"])
        for job in [j for j in runnable if j.payload["case"]["request"].get("canary")]:
            # alone, before the stream: its answer says whether the form is enforced at all
            if target.server is not None and not target.server.alive():
                self.rows.restart(target)
            rec = self._record(job, self._send(target, job), time.perf_counter_ns(), None)
            self._append(rec)
            if rec["serve"].get("verdict") == "constraint_not_enforced":
                log.warning("%s %s: the canary came back unconstrained (%s): request form %s "
                            "is NOT ENFORCED; the stream's outputs cannot be trusted",
                            target.label, rec["serve"]["stream"], rec["serve"].get("why"),
                            self.o["form"])
        runnable = [j for j in runnable if not j.payload["case"]["request"].get("canary")]
        if not runnable:
            return
        restarts = 0
        pending = runnable
        concurrency = int(self.o["concurrency"] or 0) or None
        while pending:
            if target.server is not None and not target.server.alive():
                self.rows.restart(target)
            first = pending[0].payload["case"]["request"]["arrival_s"]
            offsets = [j.payload["case"]["request"]["arrival_s"] - first for j in pending]
            t0 = time.perf_counter_ns()
            dead: dict[str, str | None] = {"why": None}

            def broken(res) -> bool:
                return dead["why"] is not None

            def on_result(job: Job, res) -> None:
                crashed = None
                failed = res.status == 0 or res.status >= 500 or (
                    res.status == 200 and res.finish_reason is None)
                if target.server is not None and failed and not self.rows.alive(target):
                    crashed = dead["why"] = target.server.exit_status()
                self._append(self._record(job, res, t0, crashed))

            out = Stream(lambda j: self._send(target, j), concurrency, broken).run(
                pending, offsets, on_result)
            pending = out.unsent
            if pending:
                restarts += 1
                if restarts > int(self.o["max_restarts"]):
                    for job in pending:
                        self._append({**self._base(job), "suite": job.payload["case"]["suite"],
                                      "outcome": outcomes.CRASH,
                                      "error": f"not sent: the server crashed {restarts} times "
                                               f"({dead['why']})"})
                    return
                log.warning("%s died (%s) mid-stream; its requests in flight are recorded as "
                            "a server crash; starting it again", target.label, dead["why"])
                self.rows.restart(target)

    def run(self, jobs: Iterable[Job]) -> None:
        """Run every job (consumed lazily, in order) until each has a record."""
        batch: list[Job] = []
        key = None
        try:
            for job in jobs:
                req = (job.payload or {}).get("case", {}).get("request") or {}
                k = (job.engine, req.get("stream"), req.get("mode"))
                if batch and k != key:
                    self._run_stream(batch)
                    batch = []
                key = k
                batch.append(job)
            if batch:
                self._run_stream(batch)
        except ServerUnavailable as e:  # no server to send to: the run ends with this line
            raise ExecutorError(str(e)) from None
        finally:
            self.rows.close()
