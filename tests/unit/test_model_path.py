"""``--model PATH``: a local checkpoint folder wherever a suite runs a model.

A bad path is one line naming it (exit 2); the run's vocabulary is the checkpoint's, and the
engines built on it through their own Hugging Face constructors (as vLLM builds them) give
the masks the raw-bytes construction gives; the e2e torch runtime computes on the
checkpoint's weights what ``LlamaForCausalLM.forward`` computes."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest
import torch

from engines.bitmask import allocate_bitmask
from harness.config import ConfigError, RunConfig
from harness.registry import EngineSpec, is_installed
from tests.conftest import harness
from tests.model_fixtures import random_checkpoint

ENGINES = [e for e in ("xgrammar", "llguidance", "outlines") if is_installed(e)]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return random_checkpoint(tmp_path_factory.mktemp("ckpt") / "model")


@pytest.fixture(scope="module")
def bad_folders(ckpt, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    a_file = root / "weights.bin"
    a_file.write_bytes(b"x")
    no_weights = root / "no_weights"
    no_tokenizer = root / "no_tokenizer"
    for dst, skip in ((no_weights, "model.safetensors"), (no_tokenizer, "tokenizer.json")):
        dst.mkdir()
        for f in ckpt.iterdir():
            if f.name != skip:
                shutil.copy(f, dst / f.name)
    return {"nonexistent": (root / "nope", "no such folder"),
            "a file": (a_file, "not a folder"),
            "no weights": (no_weights, "no weights"),
            "no tokenizer": (no_tokenizer, "no tokenizer.json")}


@pytest.mark.parametrize("kind", ["nonexistent", "a file", "no weights", "no tokenizer"])
def test_a_bad_model_path_is_one_line_naming_it(kind, bad_folders):
    path, why = bad_folders[kind]
    p = harness("run", "--suite", "e2e", "--model", str(path), "--sample", "1",
                "--no-progress")
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and why in lines[0], p.stderr
    assert "Traceback" not in p.stderr


def test_the_serve_suite_refuses_a_bad_model_path_before_starting_a_server(bad_folders):
    path, why = bad_folders["no weights"]
    p = harness("run", "--suite", "serve", "--launch", "vllm:xgrammar", "--model", str(path),
                "--sample", "1", "--no-progress")
    assert p.returncode == 2 and p.stderr.strip() == f"harness: error: --model {path}: " \
        f"no weights (expected one of model.safetensors, model.safetensors.index.json, " \
        f"pytorch_model.bin, pytorch_model.bin.index.json)", p.stderr


def test_a_size_name_that_is_not_one_is_refused_by_the_flag():
    p = harness("run", "--suite", "e2e", "--model", "medium", "--sample", "1")
    assert p.returncode == 2 and "neither a model size" in p.stderr


def test_the_config_takes_the_checkpoint_tokenizer_and_records_it(ckpt):
    c = RunConfig(suite="e2e", options={"model": str(ckpt)})
    assert c.tokenizer == str(ckpt.resolve())
    d = c.checkpoint
    assert d is not None and d["path"] == str(ckpt) and d["tokenizer_size"] == 512
    assert len(d["config_sha256"]) == 64 and d["architecture"] == "LlamaForCausalLM"
    assert RunConfig.from_dict(c.to_dict()).tokenizer == c.tokenizer  # --resume
    assert RunConfig(suite="e2e", options={"model": "micro"}).checkpoint is None
    with pytest.raises(ConfigError, match="brings its own tokenizer"):
        RunConfig(suite="e2e", tokenizer="qwen2", options={"model": str(ckpt)})


@pytest.fixture(scope="module")
def vocabs(ckpt):
    from engines.vocab import load_vocabulary

    hf = load_vocabulary(str(ckpt))
    return hf, dataclasses.replace(hf, hf_tokenizer=None)


def test_the_checkpoint_vocabulary(vocabs, ckpt):
    hf, raw = vocabs
    assert hf.hf_tokenizer is not None and hf.size == 512 and hf.stop_ids == (2,)
    assert hf == raw and hf.fingerprint == raw.fingerprint  # the tokenizer is not compared
    tok = hf.hf_tokenizer
    text = '{"a": [1, "x y"]}'
    assert hf.encode(text) == tok.encode(text, add_special_tokens=False)
    assert b"".join(hf.tokens[i] for i in hf.encode(text)) == text.encode()


SCHEMAS = [
    ({"type": "object", "properties": {"a": {"type": "integer"},
                                       "b": {"type": "string", "maxLength": 4}},
      "required": ["a"]}, '{"a": 12, "b": "hé"}'),
    ({"type": "array", "items": {"enum": ["x", "yz", 3]}}, '["x", 3, "yz"]'),
    ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "-1.5"),
]


def _bits(bm: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bm.view(np.uint8), bitorder="little")[:n]


@pytest.mark.parametrize("engine", ENGINES)
def test_engines_built_from_the_hf_tokenizer_give_the_raw_bytes_masks(engine, vocabs):
    """The adapter on the checkpoint's vocabulary with its Hugging Face tokenizer (xgrammar
    ``TokenizerInfo.from_huggingface``, llguidance ``llguidance.hf.from_tokenizer``,
    outlines-core's map built as vLLM's outlines backend builds it) against the adapter on
    the same vocabulary's raw bytes: the same mask at every step of a valid instance."""
    hf, raw = vocabs
    a, b = EngineSpec(engine, "default").build(hf), EngineSpec(engine, "default").build(raw)
    for schema, text in SCHEMAS:
        ma, mb = a.compile(json.dumps(schema)).matcher(), b.compile(json.dumps(schema)).matcher()
        ids = hf.encode(text)
        for step, tid in enumerate([*ids, None]):
            xa, xb = allocate_bitmask(hf.size), allocate_bitmask(hf.size)
            ma.fill_mask(xa)
            mb.fill_mask(xb)
            diff = np.nonzero(_bits(xa, hf.size) != _bits(xb, hf.size))[0]
            assert not len(diff), (engine, text, step, [(int(i), hf.tokens[i]) for i in diff[:5]])
            if tid is None:
                assert ma.eos_allowed() and mb.eos_allowed(), (engine, text)
                break
            # an engine may refuse a valid instance (outlines-core's number regex refuses
            # this "-1.5" at ".5"): the same refusal from both constructions, then stop
            ok = ma.commit(tid)
            assert mb.commit(tid) == ok, (engine, text, step)
            if not ok:
                assert engine == "outlines", (engine, text, step)
                break


def test_the_torch_runtime_computes_what_transformers_computes_on_a_checkpoint(ckpt, vocabs):
    """The runtime's static-cache step on the checkpoint's weights (shape from its
    config.json, head_dim 32) against ``LlamaForCausalLM.forward`` on the same folder,
    float32, from the checkpoint's own prompt format."""
    from transformers import DynamicCache, LlamaForCausalLM

    from harness.measure.serving.prompt import model_prompt
    from suites.e2e.runtime_torch import TorchRuntime

    hf, _ = vocabs
    rt = TorchRuntime(str(ckpt), dtype="float32", batch=2)
    assert rt.shape.vocab == 512 and rt.shape.head_dim == 32 and rt.vocab_size == 512
    ids = model_prompt(str(ckpt), hf, json.dumps({"type": "integer"}))
    # the checkpoint's format: <|bos|> + the schema minified + <|answer|>
    tok = hf.hf_tokenizer
    assert ids == ([hf.bos_id] + tok.encode('{"type":"integer"}', add_special_tokens=False)
                   + [tok.convert_tokens_to_ids("<|answer|>")])
    rt.prepare(len(ids), 5)
    got = [rt.prefill(ids).clone()]
    toks = hf.encode("123") + [5, 2]
    for t in toks:
        got.append(rt.step([t] * 2).clone())
    ref_model = LlamaForCausalLM.from_pretrained(str(ckpt), dtype=torch.float32)
    ref_model.eval()
    cache = DynamicCache(config=ref_model.config)
    with torch.no_grad():
        ref = [ref_model(input_ids=torch.tensor([ids]), past_key_values=cache,
                         use_cache=True).logits[0, -1]]
        for t in toks:
            ref.append(ref_model(input_ids=torch.tensor([[t]]), past_key_values=cache,
                                 use_cache=True).logits[0, -1])
    for g, r in zip(got, ref):
        assert g.shape == (2, 512)
        for row in g:
            assert float((row - r).norm() / r.norm()) < 1e-5


def test_the_torch_runtime_refuses_another_architecture(ckpt, tmp_path):
    from suites.e2e.runtime_torch import TorchRuntime

    other = tmp_path / "qwen"
    shutil.copytree(ckpt, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg.update(model_type="qwen2", architectures=["Qwen2ForCausalLM"])
    (other / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="decodes Llama-architecture checkpoints.*Qwen2"):
        TorchRuntime(str(other), dtype="float32")


def test_launched_servers_load_a_checkpoint_with_its_weights(ckpt, tmp_path):
    """A config-only folder (a size) starts with dummy weights; a checkpoint with its own,
    within its context (1,024 positions here)."""
    from harness.registry import adapter_class

    vllm = adapter_class("vllm")
    argv, _ = vllm.server_command("python", str(ckpt), {"backend": "xgrammar"}, "h", 1)
    assert "dummy" not in argv and argv[argv.index("--max-model-len") + 1] == "1024"
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    argv, _ = vllm.server_command("python", str(tmp_path), {"backend": "xgrammar"}, "h", 1)
    assert argv[argv.index("--load-format") + 1] == "dummy"
    assert argv[argv.index("--max-model-len") + 1] == "4096"
    argv, _ = adapter_class("sglang").server_command("python", str(ckpt),
                                                     {"backend": "xgrammar"}, "h", 1)
    assert "dummy" not in argv
