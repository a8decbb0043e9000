"""``harness model build``: the tiny build (made once, then found in the user's cache) loads
as a standard checkpoint, records its split and evaluation, is deterministic, and the CLI
prints its folder last."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.training.build import (RECIPES, BuildError, _read_corpus, build_model,
                                 cache_root)
from harness.model.checkpoint import load_checkpoint
from harness.model.data import SPLIT_RULE, split_of
from tests.conftest import harness


@pytest.fixture(scope="session")
def tiny() -> Path:
    """The tiny build: a cache hit after the first session on a machine."""
    return build_model("tiny", progress=False)


def _meta(folder: Path) -> dict:
    return json.loads((folder / "harness_model.json").read_text(encoding="utf-8"))


def test_tiny_build_is_a_standard_checkpoint(tiny: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tiny), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(tiny), local_files_only=True)
    assert type(model).__name__ == "LlamaForCausalLM"
    cfg = model.config
    assert cfg.hidden_size // cfg.num_attention_heads in (32, 64)  # vLLM-CPU attention
    r = RECIPES["tiny"]
    assert cfg.max_position_embeddings >= r.schema_budget + 2 + r.eval_new_tokens
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert tok.convert_tokens_to_ids("<|answer|>") == 3
    ck = load_checkpoint(str(tiny))
    assert ck.built_here and ck.eos_ids == (2,)
    assert ck.prompt_format.schema_budget == r.schema_budget
    ids = ck.prompt_format.prompt_ids(ck.tokenizer(), {"type": "object"})
    assert ids[0] == 1 and ids[-1] == 3
    with torch.no_grad():
        logits = ck.model()(input_ids=torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), len(tok))
    # the recorded weights hash is the file's
    digest = hashlib.sha256((tiny / "model.safetensors").read_bytes()).hexdigest()
    assert _meta(tiny)["weights_sha256"] == digest


def test_tiny_build_records_its_split_and_evaluation(tiny: Path, corpus_dir: Path) -> None:
    meta = _meta(tiny)
    split = meta["split"]
    assert split["rule"] == SPLIT_RULE
    every = sorted(p.name for p in corpus_dir.glob("*.json"))
    assert split["held_out"] == [n for n in every if split_of(n) == "held_out"]
    assert 0 < len(split["held_out"]) < len(every) // 5
    assert split["train_schemas"] > 0 and split["train_instances"] >= split["train_schemas"]
    # nothing held out is trained on: the train side never holds a held-out name
    corpus = _read_corpus(corpus_dir)
    held = set(split["held_out"])
    assert not held & {n for n, _, _ in corpus.train}
    assert {n for n, _, _ in corpus.held_out} <= held
    ev = meta["eval"]
    assert ev["perplexity"] > 1
    s = ev["sampling"]
    assert s["samples"] == s["schemas"] * s["samples_per_schema"] > 0
    assert 0 <= s["schema_valid"] <= s["parse_valid"] <= 1
    assert set(s["schema_names"]) <= held
    # trained, not random: the outputs look like JSON objects (a random model's first token
    # is any of 512)
    starts = [e["output"].lstrip()[:1] for e in s["examples"]]
    assert starts and starts.count("{") * 2 > len(starts), s["examples"]
    assert meta["seed"] == 0 and meta["recipe"]["size"] == "tiny"
    assert meta["torch_threads"] == RECIPES["tiny"].threads
    assert meta["prompt"]["schema_budget"] == RECIPES["tiny"].schema_budget


def test_a_second_build_is_the_cached_folder(tiny: Path) -> None:
    before = (tiny / "model.safetensors").stat().st_mtime_ns
    lines: list[str] = []
    assert build_model("tiny", progress=False, echo=lines.append) == tiny
    assert lines and "cached" in lines[0]
    assert (tiny / "model.safetensors").stat().st_mtime_ns == before


def test_same_seed_same_weights(tmp_path: Path) -> None:
    a = build_model("tiny", out=tmp_path / "a", progress=False, echo=lambda s: None, steps=3)
    b = build_model("tiny", out=tmp_path / "b", progress=False, echo=lambda s: None, steps=3)
    c = build_model("tiny", out=tmp_path / "c", seed=1, progress=False, echo=lambda s: None,
                    steps=3)
    ha, hb, hc = (_meta(x)["weights_sha256"] for x in (a, b, c))
    assert ha == hb != hc
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert _meta(a)["build_key"] == _meta(b)["build_key"] != _meta(c)["build_key"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_out_holding_something_else_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("mine")
    with pytest.raises(BuildError, match="exists and is not this build"):
        build_model("tiny", out=tmp_path / "x", progress=False, steps=1)
    assert (tmp_path / "x" / "file").read_text() == "mine"


def test_cache_honours_xdg_cache_home(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "grammar-harness" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path.home() / ".cache" / "grammar-harness" / "models"


def test_cli_prints_the_folder_last(tiny: Path) -> None:
    r = harness("model", "build", "--size", "tiny", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == str(tiny)


def test_cli_bad_data_is_one_line(tmp_path: Path) -> None:
    r = harness("model", "build", "--size", "tiny", "--data", str(tmp_path / "nowhere"))
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "nowhere" in lines[0], r.stderr


@pytest.mark.parametrize("size", sorted(RECIPES))
def test_recipes_suit_vllm_cpu(size: str) -> None:
    r = RECIPES[size]
    assert r.hidden // r.heads in (32, 64) and r.hidden % r.heads == 0
    assert r.heads % r.kv_heads == 0
    assert r.max_positions >= r.schema_budget + 2 + max(r.answer_cap + 1, r.eval_new_tokens)
    assert r.warmup < r.steps
