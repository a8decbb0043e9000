"""End-to-end decode loop (harness/measure/e2e) on the torch runtime at the test-only ``micro`` size:
a two-layer Llama with the real 128,256-row LM head and random weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from harness.registry import EngineSpec, is_installed
from suites.e2e import loop as e2e_loop
from suites.e2e.job import resolve_options, run_e2e_job
from harness.measure.serving.prompt import build_prompt
from suites.e2e.runtime_cache import get_runtime
from suites.e2e.sampling import (Bitmask, Sampler, apply_kernel, apply_shared,
                                          apply_words)
from harness.measure.validate import check_output
from harness.measure.groundtruth import GroundTruth
from engines.vocab import load_vocabulary

ENGINES = [e for e in ("xgrammar", "llguidance", "outlines") if is_installed(e)]

SCHEMAS = [
    {"type": "boolean"},
    {"enum": ["yes", "no", 12]},
    {"type": "integer"},
]  # (outlines-core drops minimum/maximum: with bounds it emits e.g. 453 for maximum 99)


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def rt():
    return get_runtime({"runtime": "torch", "model": "micro", "seed": 0})


class EosBiased:
    """The runtime with a large bias on the stop tokens: a sound mask is the only thing
    between the model and an immediate EOS, so every output must end exactly when the
    grammar allows it."""

    def __init__(self, rt, stop_ids, bias=40.0, asynchronous=False):
        self.rt, self.stop_ids, self.bias = rt, list(stop_ids), bias
        self.batch, self.device, self.vocab_size = rt.batch, rt.device, rt.vocab_size
        # True: the loop takes its pipelined path (CUDA's), here run synchronously on CPU
        self.asynchronous = asynchronous

    def _b(self, logits):
        logits[:, self.stop_ids] += self.bias
        return logits

    def prefill(self, ids):
        return self._b(self.rt.prefill(ids))

    def step(self, toks):
        return self._b(self.rt.step(toks))

    def step_device(self, ids):
        return self._b(self.rt.step_device(ids))


def test_runtime_shapes_and_seed(rt, vocab):
    ids = build_prompt(vocab, json.dumps({"type": "boolean"}))
    a = rt.prefill(ids)
    assert a.shape == (1, 128256) and a.dtype == torch.float32
    b = rt.step([vocab.encode("true")[0]])
    assert b.shape == (1, 128256)
    again = get_runtime({"runtime": "torch", "model": "micro", "seed": 0})
    assert again is rt  # built once per process
    assert torch.equal(rt.prefill(ids), a)


def test_static_step_computes_what_transformers_computes(vocab):
    """The runtime's own static-cache step (the one CUDA graphs capture) against
    ``LlamaForCausalLM.forward`` with a ``DynamicCache``, same weights, float32: prefill and
    every decode step, every row of a batch (the prompt's KV is computed once and copied)."""
    from transformers import DynamicCache

    from suites.e2e.runtime_torch import TorchRuntime

    rt = TorchRuntime("micro", dtype="float32", batch=3, graphs=True)
    assert rt.graphs is False  # never on CPU: the same step runs eagerly
    ids = build_prompt(vocab, json.dumps({"type": "integer"}))
    rt.prepare(len(ids), 6)
    got = [rt.prefill(ids).clone()]
    toks = [vocab.encode("12")[0], 11, 128009, 5]
    for t in toks:
        got.append(rt.step([t] * 3).clone())
    cache = DynamicCache(config=rt.config)
    with torch.no_grad():
        ref = [rt.model(input_ids=torch.tensor([ids]), past_key_values=cache,
                        use_cache=True).logits[0, -1]]
        for t in toks:
            ref.append(rt.model(input_ids=torch.tensor([[t]]), past_key_values=cache,
                                use_cache=True).logits[0, -1])
    for g, r in zip(got, ref):
        assert g.shape == (3, 128256)
        for row in g:
            assert float((row - r).norm() / r.norm()) < 1e-5
    # the step feeds ids from the device the same as from the host
    rt.prefill(ids)
    a = rt.step([toks[0]] * 3).clone()
    rt.prefill(ids)
    b = rt.step_device(torch.tensor([toks[0]] * 3)).clone()
    assert torch.equal(a, b)
    wb = rt.weight_bytes()
    assert wb["per_step"] == wb["all"] == rt.shape.n_params() * 4  # micro ties its LM head
    with pytest.raises(RuntimeError, match="past its bucket"):
        rt.prepare(10, 1)
        rt.prefill(list(range(10)))
        for _ in range(300):
            rt.step([1] * 3)


def test_sampler_never_draws_masked_ids():
    logits = torch.randn(1, 128256)
    bm = Bitmask(1, 128256)
    allowed = [5, 77, 128009]
    for t in allowed:
        bm.np[0, t >> 5] |= np.int32(1 << (t & 31)) if (t & 31) != 31 else np.int32(-2**31)
    apply_shared(logits, bm)
    s = Sampler(seed=3)
    draws = {s(logits.clone())[0] for _ in range(300)}
    assert draws <= set(allowed) and len(draws) >= 2


@pytest.mark.skipif(not is_installed("xgrammar"), reason="xgrammar not installed")
def test_apply_kernels_agree():
    rng = np.random.default_rng(0)
    bm = Bitmask(2, 128256)
    bm.np[:] = rng.integers(-2**31, 2**31 - 1, size=bm.np.shape, dtype=np.int64).astype(np.int32)
    a = torch.randn(2, 128256)
    b = a.clone()
    apply_shared(a, bm)
    c = torch.randn(2, 128256)
    d = c.clone()
    apply_shared(c, bm)
    apply_words(d, torch.from_numpy(bm.np), bm._one_bit)  # the shared kernel's device half
    assert torch.equal(c, d)
    label, xk = apply_kernel("xgrammar", "engine")
    assert label.startswith("xgrammar") and apply_kernel("xgrammar", "auto", "cpu")[0] == "shared"
    # auto on a GPU: the faster of the two by the microbenchmark's device times
    fast_own = {"engine:xgrammar": 3.0, "shared": 9.0}
    assert apply_kernel("xgrammar", "auto", "cuda", fast_own)[0].startswith("xgrammar")
    assert apply_kernel("xgrammar", "auto", "cuda", {"engine:xgrammar": 9.0,
                                                      "shared": 3.0})[0] == "shared"
    xk(b, bm)
    assert torch.equal(torch.isinf(a), torch.isinf(b))
    bits = np.unpackbits(bm.np.view(np.uint8), axis=-1, count=128256, bitorder="little")
    assert np.array_equal(~torch.isinf(a).numpy(), bits.astype(bool))


@pytest.mark.parametrize("engine", ENGINES)
def test_generation_under_each_mask(engine, rt, vocab):
    """Outputs end on EOS exactly when allowed, parse and validate; per-step counts match."""
    adapter = EngineSpec(engine).build(vocab)
    biased = EosBiased(rt, vocab.stop_ids)
    for schema in SCHEMAS:
        text = json.dumps(schema)
        grammar = adapter.compile(text)
        truth = GroundTruth(schema)
        # xgrammar's own kernel here (auto picks the shared one on CPU, tested as the others)
        _, apply = apply_kernel(engine, "engine" if engine == "xgrammar" else "auto")
        serial_tokens = None
        for overlap, pipelined in ((False, False), (True, False), (True, True)):
            biased.asynchronous = pipelined
            res = e2e_loop.decode(biased, build_prompt(vocab, text), stop_ids=vocab.stop_ids,
                                  max_tokens=24, sampler=Sampler(seed=7),
                                  matchers=[grammar.matcher()], bitmask=Bitmask(1, vocab.size),
                                  apply=apply, overlap=overlap)
            s = res.sequences[0]
            assert s.stop == "eos", (engine, schema, s)
            assert s.tokens, "EOS before any token: the mask let EOS through at the start"
            raw = b"".join(vocab.tokens[t] for t in s.tokens)
            assert check_output(raw, truth)["valid"] is True, (engine, schema, raw)
            n = s.n_emitted
            assert len(res.steps["mask"]) == n and len(res.steps["apply"]) == n
            assert len(res.steps["sample"]) == n and len(res.steps["forward"]) == n
            assert len(res.steps["commit"]) == n - 1 and len(res.steps["step"]) == n - 1
            if overlap:
                # same seed: same tokens, any schedule (pipelined: the draw feeds the next
                # forward on the device, the host reads the ids after queueing it)
                assert s.tokens == serial_tokens and s.stop == "eos"
                assert len(res.steps["wait"]) == (0 if pipelined else n - 1)
            else:
                serial_tokens = s.tokens
        biased.asynchronous = False


def test_unconstrained_runs_to_budget(rt, vocab):
    res = e2e_loop.decode(rt, build_prompt(vocab, "{}"), stop_ids=vocab.stop_ids,
                          max_tokens=12, sampler=Sampler(seed=1))
    s = res.sequences[0]
    assert s.stop == "runaway" and s.n_emitted == 12 and len(res.steps["step"]) == 11
    assert not res.steps["mask"]


def test_batch_decoding(vocab):
    rt2 = get_runtime({"runtime": "torch", "model": "micro", "seed": 0, "batch": 3})
    eng = ENGINES[0]
    grammar = EngineSpec(eng).build(vocab).compile(json.dumps({"type": "boolean"}))
    _, apply = apply_kernel(eng)
    seen = []
    for pipelined in (False, True):
        res = e2e_loop.decode(EosBiased(rt2, vocab.stop_ids, asynchronous=pipelined),
                              build_prompt(vocab, "x"), stop_ids=vocab.stop_ids, max_tokens=16,
                              sampler=Sampler(seed=2),
                              matchers=[grammar.matcher() for _ in range(3)],
                              bitmask=Bitmask(3, vocab.size), apply=apply, overlap=pipelined)
        for s in res.sequences:
            assert s.stop == "eos"
            assert json.loads(b"".join(vocab.tokens[t] for t in s.tokens)) in (True, False)
        seen.append([s.tokens for s in res.sequences])
    assert seen[0] == seen[1]


def test_check_output_catches_control_characters():
    truth = GroundTruth({"type": "object"})
    bad = check_output(b'{"a": "x\x01y"}', truth)
    assert bad["valid"] is False and "control character" in bad["why"]
    assert check_output(b'{"a": 1}', truth) == {"valid": True}
    assert check_output(b'[1]', truth)["valid"] is False
    assert check_output(b'\xff', truth)["valid"] is False


@pytest.mark.parametrize("engine", ENGINES[:1])
def test_job_record(engine):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    job = {"job": "suites.e2e.job:run_e2e_job", "engine": {"name": engine, "config": "default", "label": engine},
           "tokenizer": "llama3",
           "case": {"suite": "e2e", "case_id": "c1", "subset": "t", "source": "-",
                    "schema_text": json.dumps(schema), "instances": [], "resources": []},
           "options": {"runtime": "torch", "model": "micro", "max_tokens": 16, "seed": 0}}
    phases = []
    rec = run_e2e_job(job, lambda p, info=None: phases.append(p))
    assert phases[:3] == ["setup", "groundtruth", "compile"]
    assert rec["outcome"] in ("passing", "invalidation_error"), rec.get("error")
    e = rec["e2e"]
    for k in ("ttft_ns", "tpot_ns", "tpot_unconstrained_ns", "tpot_ratio", "invalid_outputs",
              "runaways"):
        assert k in e
    assert e["ttft_ns"] >= rec["compile_ns"] > 0
    assert e["outputs"] == 1 and e["unconstrained_tokens"] <= 16
    assert e["steps_us"]["forward"]["p50"] > 0
    # the protocol: a warm-up, then blocks A B A B (constrained, unconstrained) at batch 1
    p = rec["protocol"]
    w = p["warmup"]["1"]
    assert w["steps"] > 0 and w["stable"] in (True, False) and len(w["window_ms"]) > 0
    assert [(bl["mode"], bl["round"]) for bl in p["blocks"]["1"]] == [
        ("constrained", 0), ("unconstrained", 0), ("constrained", 1), ("unconstrained", 1)]
    assert p["clock_source"].startswith("not available")
    assert all(bl["sm_mhz"] == [None, None] for bl in p["blocks"]["1"])
    steps_a = [bl["steps"]["step"] for bl in p["blocks"]["1"] if bl["mode"] == "constrained"]
    assert e["tpot_ns"] == pytest.approx(np.mean(sum(steps_a, [])))
    info = rec["e2e_config"]["runtime_info"]
    assert info["kv_cache"] == "static" and info["graphs"] is False
    assert info["copy_bandwidth"]["gb_per_s"] > 0 and info["weight_bytes"]["per_step"] > 0


def test_resolve_options():
    o = resolve_options({"runtime": "torch", "model": None})
    assert o["model"] == "tiny" and o["max_tokens"] == 128 and o["batch"] == 1
    assert resolve_options({"runtime": "llamacpp", "overlap": True})["runtime"] == "llamacpp:eval"


def test_e2e_summary_block():
    from suites.e2e.summary import e2e_block, render_text

    def rec(engine, con, unc, invalid=0, runaways=0):
        return {"engine": engine, "outcome": "passing", "e2e_config": {"runtime": "torch"},
                "e2e": {"ttft_ns": 5e6, "ttft_unconstrained_ns": 4e6, "tpot_ratio": 1.1,
                        "schedule": "serial", "invalid_outputs": invalid,
                        "runaways": runaways, "outputs": 1},
                "steps_ns": {"step": con, "forward": [9] + [900] * len(con),
                             "mask": [1] + [50] * len(con), "apply": [1] + [40] * len(con),
                             "commit": [10] * len(con)},
                "steps_unconstrained_ns": {"step": unc}}

    b = e2e_block([rec("x", [1100, 1100, 1100], [1000, 1000, 1000], invalid=1),
                   rec("x", [1100], [1000], runaways=1), {"engine": "x", "outcome": "crash"}])
    assert b["schemas"] == 2 and b["invalid_outputs"] == 1 and b["runaways"] == 1
    assert b["tpot_ms"] == 0.0011 and b["tpot_unconstrained_ms"] == 0.001
    assert b["tpot_ratio"] == 1.1 and b["ttft_ms"] == 5.0
    assert b["steps_us"]["forward"]["p50"] == 0.9  # the prefill entry is not a decode step
    assert b["constraint_us"] == 0.1  # mask 50 + apply 40 + commit 10 ns
    assert e2e_block([{"engine": "x", "outcome": "passing"}]) is None
    assert "x" in render_text({"engines": {"x": {"e2e": b}}})


def test_e2e_suite_cases(tmp_path):
    from harness.registry import build_suite
    from tests.conftest import link_real

    link_real(tmp_path)
    suite = build_suite("e2e", data=str(tmp_path), subsets=None, sample=None, schemas=None)
    assert suite.job.endswith(":run_e2e_job") and len(suite) == 3  # default sample 40 > 3 files
    case = next(suite.cases())
    assert case.suite == "e2e" and case.instances == () and case.schema_text


def test_vllm_row_not_run_without_its_environment(monkeypatch, tmp_path):
    """The vllm row runs from its own environment: absent, the row is "not run" and says how
    to make it; the harness's own environment never holds vllm."""
    from harness.execution.session import engine_status

    assert not is_installed("vllm")  # vLLM must never land in the main venv
    monkeypatch.setenv("HARNESS_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    st = engine_status(EngineSpec("vllm", "xgrammar"))
    assert st["status"] == "not_run" and "setup.sh" in st["reason"]
    assert st["environment"]["available"] is False


# ---------------------------------------------------------------------- the protocol

def test_warm_up_stop_rule(vocab):
    from suites.e2e import protocol

    assert protocol.is_stable([9.0, 5.0, 5.02, 4.98])  # the transient is left behind
    assert not protocol.is_stable([5.0, 5.2, 5.0])  # 4% apart
    assert not protocol.is_stable([5.0, 5.0])  # too few windows
    rt = get_runtime({"runtime": "torch", "model": "micro", "seed": 0})
    prompt = build_prompt(vocab, "{}")
    rt.prepare(len(prompt), 20)
    w = protocol.warm_up(rt, prompt, 20, max_steps=48)
    # the steps spent are whole windows, never past the cap; "stable" is the rule's verdict
    # on the windows it reports (a cap-ended warm-up is never called stable)
    assert w["steps"] % protocol.WINDOW == 0 and protocol.WINDOW <= w["steps"] <= 48
    assert len(w["window_ms"]) * protocol.WINDOW == w["steps"]
    assert w["stable"] == protocol.is_stable(w["window_ms"])
    if not w["stable"]:
        assert w["steps"] + protocol.WINDOW > 48


def test_ratio_interval_resolves_only_a_tight_interval():
    from suites.e2e.summary import ratio_interval

    rng = np.random.default_rng(1)
    tight = [(1010.0 * 30 * (1 + rng.normal(0, 0.002)), 30, 1000.0 * 30, 30) for _ in range(12)]
    r = ratio_interval(tight)
    assert r["resolved"] and abs(r["value"] - 1.01) < 0.005
    assert r["ci"][0] <= r["value"] <= r["ci"][1]
    loose = [(1000.0 * 30 * (1 + rng.normal(0, 0.2)), 30, 1000.0 * 30, 30) for _ in range(6)]
    r = ratio_interval(loose)
    assert r["resolved"] is False and r["note"].startswith("not resolved")
    few = ratio_interval(tight[:2])
    assert few["value"] is None and "too few samples" in few["note"]
    tiny = ratio_interval([(100.0, 30, 100.0, 30)] * 5, resolution_ns=500)
    assert tiny["value"] is None and "resolution" in tiny["note"]


def test_protocol_block_of_the_summary():
    """Shares, the harness's share and the interleaved ratio from records of the protocol."""
    from suites.e2e.summary import e2e_block, render_text

    def block(mode, rd, step, fwd, extra):
        n = 30
        steps = {"step": [step] * n, "forward": [7] + [fwd] * n, "sample": [1] + [50] * n}
        if mode == "constrained":
            steps.update({"apply": [1] + [40] * n, "wait": [5] * n, "mask": [1] + [80] * n,
                          "commit": [20] * n})
        steps.update(extra)
        return {"mode": mode, "round": rd, "sm_mhz": [None, None], "steps": steps}

    recs = []
    for i in range(4):
        blocks = []
        for rd in range(2):
            blocks.append(block("constrained", rd, 1100, 1000, {}))
            blocks.append(block("unconstrained", rd, 1060, 1000, {}))
        recs.append({"engine": "x", "outcome": "passing",
                     "e2e_config": {"runtime": "torch", "batch": 1, "batches": [1],
                                    "device": "cpu", "blocks": 2,
                                    "runtime_info": {"weight_bytes": {"per_step": 2_000_000},
                                                     "copy_bandwidth": {"gb_per_s": 4.0}}},
                     "e2e": {"ttft_ns": 5e6, "ttft_unconstrained_ns": 4e6, "tpot_ratio": 1.04,
                             "schedule": "overlapped", "invalid_outputs": 0, "runaways": 0,
                             "outputs": 1},
                     "steps_ns": {"step": [1100] * 30}, "steps_unconstrained_ns": {"step": [1060] * 30},
                     "protocol": {"blocks": {"1": blocks}, "clock_source": "not available (CPU run)",
                                  "warmup": {"1": {"steps": 400, "s": 1.0, "stable": False,
                                                   "max_steps": 400, "first": i == 0}}}})
    b = e2e_block(recs)
    assert b["tpot_ratio"] == round(1100 / 1060, 4) and b["tpot_ratio_resolved"] is True
    assert b["interference"] == 1.0
    # overlapped: the engine's exposed time is min(wait 5, mask 80 + commit 20) = 5 ns; the
    # harness's own share is (1100 - 1000 - 5) / 1100
    assert b["harness_share"] == round(95 / 1100, 4)
    assert b["harness_share_unconstrained"] == round(60 / 1060, 4)
    assert b["shares"]["apply"]["share"] == round(40 / 1100, 4)
    assert b["floor"]["floor_ms"] == 0.5 and b["floor"]["step_over_floor"] == round(0.00106 / 0.5, 3)
    assert b["warmup"]["1"]["first"][0]["stable"] is False and b["warmup"]["1"]["rewarms"] == 3
    text = render_text({"engines": {"x": {"e2e": b}}})
    for want in ("1.038 [", "harness's share 8.6%", "components of the constrained step",
                 "not stable: cut off at its cap of 400", "floor: ", "SM clock"):
        assert want in text, want


def test_mask_bench_on_cpu():
    from suites.e2e import maskbench

    kernels = ("xgrammar",) if is_installed("xgrammar") else ()
    r = maskbench.run("cpu", (1, 2), 128256, engines=kernels, n=3, warmup=1)
    rows = {(x["kernel"], x["batch"]): x for x in r["rows"]}
    names = {"shared", "masked_fill"} | {f"engine:{e}" for e in kernels}
    assert {k for k, _ in rows} == names and {b for _, b in rows} == {1, 2}
    for k in names - {"masked_fill"}:
        assert rows[(k, 2)]["correct"] is True and rows[(k, 2)]["eager_us"] > 0
    assert "mask apply, 128256 ids, cpu" in maskbench.text_table(r)
    cut = maskbench.run("cpu", (1,), 128256, n=1, warmup=0, budget_s=0)
    assert all("cut_off" in x for x in cut["rows"])
    assert "cut off" in maskbench.text_table(cut)


def test_an_overlap_of_timed_components_is_no_remainder():
    """The pipelined loop's device-timed components can add up to more than the host-timed
    step: the rest of the step is then not a (negative) figure but the overlap, said so."""
    from suites.e2e.summary import component_text

    comps = {"forward": {"mean_us": 5880.6, "share": 0.986},
             "other": {"mean_us": None, "share": None, "overlap_us": 15.5}}
    text = component_text(comps)
    assert text == ("forward 5880.6 (98.6%), other – (the timed components overlap by "
                    "15.5 µs)")
    assert "-" not in text.replace("–", "")
