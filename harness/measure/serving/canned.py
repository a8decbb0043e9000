"""A canned OpenAI-compatible server: ``python -m harness.measure.serving.canned --port P``.

No model: every chat completion streams the same text (``--text``, split into ``--chunk``
character pieces), one piece every ``--interval-ms``, with ``usage`` at the end and, in the
final chunk, ``server_gaps_ns``: the gaps between the pieces as the server sent them. A
client's own cost shows as the difference between the gaps it measured and those. It
listens on 127.0.0.1 only, says ``owned_by: vllm`` (so clients use that dialect), and
answers HTTP 400 to a request whose JSON schema has the title ``refuse-me`` (a refusal a
test can ask for), writing ``ERROR canned: …`` to its log first as a real server would. It
honours one constraint: a JSON schema ``{"const": V}`` in ``response_format`` or
``structured_outputs`` (the canary a serve stream begins with) is answered with ``V`` as
JSON; like new vLLM it ignores the old ``guided_*`` fields. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_handler(text: str, chunk: int, interval_s: float):
    pieces = [text[i:i + chunk] for i in range(0, len(text), chunk)] or [""]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # noqa: A002
            pass

        def _json(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            if self.path == "/health":
                self._json(200, {})
            elif self.path == "/v1/models":
                self._json(200, {"data": [{"id": "canned-model", "owned_by": "vllm"}]})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self):  # noqa: N802
            n = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except json.JSONDecodeError:
                return self._json(400, {"error": {"message": "body is not JSON"}})
            schema = (((body.get("response_format") or {}).get("json_schema") or {})
                      .get("schema")) or (body.get("structured_outputs") or {}).get("json")
            if isinstance(schema, dict) and schema.get("title") == "refuse-me":
                print("ERROR canned: schema refused: its title is refuse-me", file=sys.stderr,
                      flush=True)
                return self._json(400, {"error": {"message": "schema refused (canned)"}})
            out = pieces
            if isinstance(schema, dict) and "const" in schema:
                t = json.dumps(schema["const"])
                out = [t[i:i + chunk] for i in range(0, len(t), chunk)]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def send(obj) -> None:
                data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) \
                    + b"\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            sent: list[int] = []
            for i, p in enumerate(out):
                if i:
                    time.sleep(interval_s)
                send({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
                sent.append(time.perf_counter_ns())
            gaps = [b - a for a, b in zip(sent, sent[1:])]
            send({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                  "server_gaps_ns": gaps})
            send({"choices": [], "usage": {"completion_tokens": len(out)}})
            send(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client hangs up once it has read ``[DONE]``, racing the chunked body's last
        # bytes: the reset then meets the next read of the kept-alive connection. That is no
        # server error, and logging it as one put a Traceback among the error lines a
        # refused request's log window is searched for
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--text", default='{"name": "canned", "tags": ["a", "b"], "count": 3}')
    p.add_argument("--chunk", type=int, default=2, help="characters per streamed piece")
    p.add_argument("--interval-ms", type=float, default=10.0)
    a = p.parse_args(argv)
    server = _Server(("127.0.0.1", a.port), make_handler(a.text, a.chunk, a.interval_ms / 1e3))
    print(f"canned server on 127.0.0.1:{a.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
