"""The llama.cpp runtime (optional extra: ``bash scripts/build_llamacpp.sh``; .ci/run installs
it): the harness's random-weight GGUF, the logits_processor path with its call count, the
eval loop, the ``llamacpp-gbnf`` engine row and the OpenAI-compatible serving route against
a real llama-cpp-python server started here on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (scripts/build_llamacpp.sh)")

from engines.bitmask import allocate_bitmask  # noqa: E402
from harness.registry import EngineSpec, is_installed  # noqa: E402
from suites.e2e import loop as e2e_loop  # noqa: E402
from engines.vocab.gguf import ensure_gguf  # noqa: E402
from harness.measure.serving.prompt import build_prompt  # noqa: E402
from suites.e2e.runtime_cache import get_runtime  # noqa: E402
from suites.e2e.runtime_llamacpp import processor_decode  # noqa: E402
from suites.e2e.sampling import Bitmask, Sampler, apply_kernel  # noqa: E402
from harness.measure.validate import check_output  # noqa: E402
from harness.measure.groundtruth import GroundTruth  # noqa: E402
from harness.measure.replay import replay  # noqa: E402
from engines.vocab import load_vocabulary# noqa: E402
from tests.conftest import ROOT  # noqa: E402

ENGINES = [e for e in ("xgrammar", "llguidance", "outlines") if is_installed(e)]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "n": {"type": "integer"}}, "required": ["name", "n"]}


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def rt(vocab):
    r = get_runtime({"runtime": "llamacpp", "model": "micro", "seed": 0})
    r.check_vocabulary(vocab)
    return r


def test_gguf_vocabulary_and_tokenizer(rt, vocab):
    assert rt.vocab_checked["mismatches"] == 0 and rt.vocab_checked["checked"] == 128000
    # the BPE merges derived from the ranks make llama.cpp tokenise as tiktoken does
    for text in ('{"name": "Alice", "age": 30}', "  héllo\twörld\n\n 12345 ✓ 日本語",
                 json.dumps(SCHEMA)):
        assert rt.llm.tokenize(text.encode(), add_bos=False, special=False) == vocab.encode(text)
    assert rt.llm.token_bos() == 128000 and rt.llm.token_eos() == 128009


@pytest.mark.parametrize("engine", ENGINES)
def test_logits_processor_path(engine, rt, vocab):
    text = json.dumps(SCHEMA)
    grammar = EngineSpec(engine).build(vocab).compile(text)
    truth = GroundTruth(SCHEMA)
    res = processor_decode(rt, build_prompt(vocab, text), stop_ids=vocab.stop_ids, max_tokens=40,
                           sampler=Sampler(seed=5), matchers=[grammar.matcher()],
                           bitmask=Bitmask(1, vocab.size), apply=None)
    s = res.sequences[0]
    assert "error" not in res.extra, res.extra
    assert res.extra["processor_calls"] == res.extra["tokens_sampled"] == s.n_emitted
    assert s.stop in ("eos", "runaway")
    assert len(res.steps["step"]) == s.n_emitted - 1
    if s.stop == "eos":
        raw = b"".join(vocab.tokens[t] for t in s.tokens)
        assert check_output(raw, truth)["valid"] is not None


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_swallowed_processor_exception_is_caught(rt, vocab):
    """llama-cpp-python swallows exceptions raised in a logits_processor and goes on
    unconstrained; the harness notices."""
    grammar = EngineSpec(ENGINES[0]).build(vocab).compile(json.dumps(SCHEMA))

    class Breaks:
        def __init__(self, m):
            self.m, self.n = m, 0

        def fill_mask(self, bm):
            self.n += 1
            if self.n > 3:
                raise RuntimeError("boom")
            self.m.fill_mask(bm)

        def __getattr__(self, k):
            return getattr(self.m, k)

    res = processor_decode(rt, build_prompt(vocab, "x"), stop_ids=vocab.stop_ids, max_tokens=10,
                           sampler=Sampler(seed=1), matchers=[Breaks(grammar.matcher())],
                           bitmask=Bitmask(1, vocab.size), apply=None)
    assert "boom" in res.extra.get("error", "")


@pytest.mark.parametrize("engine", ENGINES[:1])
def test_eval_loop_serial_and_overlapped(engine, rt, vocab):
    text = json.dumps(SCHEMA)
    grammar = EngineSpec(engine).build(vocab).compile(text)
    _, apply = apply_kernel(engine)
    out = []
    for overlap in (False, True):
        res = e2e_loop.decode(rt, build_prompt(vocab, text), stop_ids=vocab.stop_ids,
                              max_tokens=24, sampler=Sampler(seed=3),
                              matchers=[grammar.matcher()], bitmask=Bitmask(1, vocab.size),
                              apply=apply, overlap=overlap)
        s = res.sequences[0]
        assert s.stop in ("eos", "runaway") and len(res.steps["mask"]) == s.n_emitted
        out.append(s.tokens)
    assert out[0] == out[1]


def test_llamacpp_gbnf_engine(vocab):
    g = EngineSpec("llamacpp-gbnf").build(vocab).compile(json.dumps(SCHEMA))
    bm = allocate_bitmask(vocab.size)
    ok = replay(g.matcher(), vocab.encode('{"name": "bob", "n": 3}'), bm, vocab.stop_ids)
    assert ok.status == "accepted"
    too_long = replay(g.matcher(), vocab.encode('{"name": "abcdefghijk", "n": 3}'), bm,
                      vocab.stop_ids)
    assert too_long.status == "rejected"
    missing = replay(g.matcher(), vocab.encode('{"name": "bob"}'), bm, vocab.stop_ids)
    assert missing.status != "accepted"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(vocab):
    pytest.importorskip("uvicorn", reason="llama-cpp-python[server] not installed")
    model = ensure_gguf("micro", "Q8_0", 0, vocab)
    port = _free_port()
    log = open(os.devnull, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "suites.e2e.llamacpp_server", "--model", str(model),
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
         "--chat_format", "llama-3", "--n_ctx", "4096"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    from harness.measure.serving.openai_client import OpenAIClient

    try:
        for _ in range(120):
            if proc.poll() is not None:
                pytest.fail(f"llama-cpp-python server exited with {proc.returncode}")
            try:
                OpenAIClient(url).models()
                break
            except (OSError, RuntimeError):
                time.sleep(0.5)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_server_dialects(server):
    from harness.measure.serving.openai_client import OpenAIClient, verdict

    truth = GroundTruth({"type": "object", "properties": {"ok": {"type": "boolean"}},
                         "required": ["ok"]})
    schema = truth.validator.schema
    msgs = [{"role": "user", "content": "Answer in JSON."}]
    c = OpenAIClient(server)
    assert c.detect() == "llamacpp"
    r = c.complete(schema, msgs, max_tokens=48, temperature=1.0, seed=0)
    assert r.status == 200 and r.ttft_ns and r.ttft_ns > 0
    assert verdict(r, truth)["verdict"] in ("ok", "truncated", "constraint_not_enforced")
    # the vLLM / SGLang form is refused by llama-cpp-python's server (HTTP 500)
    r2 = OpenAIClient(server, dialect="vllm").complete(schema, msgs, max_tokens=8)
    assert r2.status == 500 and verdict(r2, truth)["verdict"] == "http_error"


def test_server_route_job(server):
    from suites.e2e.job import run_e2e_job

    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    job = {"job": "suites.e2e.job:run_e2e_job", "engine": {"name": "xgrammar", "config": "default",
                                     "label": "server"},
           "tokenizer": "llama3",
           "case": {"suite": "e2e", "case_id": "c1", "subset": "t", "source": "-",
                    "schema_text": json.dumps(schema), "instances": [], "resources": []},
           "options": {"server": server, "max_tokens": 24, "seed": 0}}
    rec = run_e2e_job(job)
    assert rec["outcome"] in ("passing", "invalidation_error"), rec
    assert rec["e2e_config"]["dialect"] == "llamacpp"
    assert rec["e2e"]["ttft_ns"] > 0 and rec["server"]["verdict"] in (
        "ok", "truncated", "constraint_not_enforced")
