"""``harness run --suite e2e --model PATH``: the torch runtime decodes a local checkpoint's
weights in its own prompt format, every engine on its tokenizer, and run.json records it."""

from __future__ import annotations

import json

import pytest

from harness.registry import is_installed
from tests.conftest import harness, link_real, read_records
from tests.model_fixtures import random_checkpoint

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not (is_installed("xgrammar") and is_installed("llguidance")),
                    reason="xgrammar and llguidance needed")
def test_cli_e2e_run_on_a_checkpoint(tmp_path):
    ckpt = random_checkpoint(tmp_path / "model")
    data = tmp_path / "data"
    link_real(data, names=("Glaiveai2K---calculate_area_5c088303.json",
                           "Github_easy---o43998.json"))
    res = tmp_path / "results"
    p = harness("run", "--suite", "e2e", "--runtime", "torch", "--model", str(ckpt),
                "--engine", "xgrammar,llguidance", "--sample", "2", "--max-tokens", "16",
                "--data", str(data), "--results", str(res),
                "--reports", str(tmp_path / "reports"), "--no-progress")
    assert p.returncode == 0, p.stderr[-3000:]
    run, recs = read_records(res)
    meta = json.loads((run / "run.json").read_text())
    # the checkpoint as given, its config's hash, its tokenizer's size
    model = meta["model"]
    assert model["path"] == str(ckpt) and model["tokenizer_size"] == 512
    assert len(model["config_sha256"]) == 64 and model["architecture"] == "LlamaForCausalLM"
    assert meta["config"]["model"] == str(ckpt)
    assert meta["tokenizer"]["size"] == 512 and meta["tokenizer"]["hf_tokenizer"] is True
    assert sorted((r["engine"], r["case_id"]) for r in recs) == sorted(
        (e, c) for e in ("xgrammar", "llguidance")
        for c in ("Glaiveai2K---calculate_area_5c088303.json", "Github_easy---o43998.json"))
    for r in recs:
        assert r["outcome"] in ("passing", "invalidation_error"), r.get("error")
        info = r["e2e_config"]["runtime_info"]
        assert info["model"]["name"] == str(ckpt) and info["model"]["vocab"] == 512
        # the checkpoint's prompt format: <|bos|> + the schema (cut to 64 tokens) + <|answer|>
        assert r["e2e"]["prompt_tokens"] == 66
        for out in r["outputs"]:
            assert out["n_tokens"] <= 16
            if out["stop"] == "eos":
                assert out["valid"] is True, out
    assert "end to end" in p.stdout
