"""``harness run --suite serve --launch vllm:xgrammar --model PATH``: the launched vLLM
serves a local checkpoint folder (its weights and tokenizer, not dummy ones), the client asks
a completion of the checkpoint's own prompt ids, and the served output is judged as always.

One server start (~1.5 min on the loaded 2-core machine)."""

from __future__ import annotations

import json

from tests.conftest import harness, read_records, write_case
from tests.model_fixtures import random_checkpoint
from tests.serving.servers import need_vllm


def test_serve_launches_vllm_on_a_checkpoint(tmp_path):
    need_vllm()
    ckpt = random_checkpoint(tmp_path / "model")
    data = tmp_path / "data"
    # a closed choice: the mask ends every output, whatever the random weights prefer
    write_case(data, "choice.json", {"enum": ["yes", "no", 12]},
               [{"data": "yes", "valid": True}, {"data": "maybe", "valid": False}])
    res = tmp_path / "results"
    p = harness("run", "--suite", "serve", "--launch", "vllm:xgrammar", "--model", str(ckpt),
                "--data", str(data), "--requests", "2", "--max-tokens", "16",
                "--no-baseline", "--no-progress", "--results", str(res),
                "--reports", str(tmp_path / "reports"))
    assert p.returncode == 0, p.stderr[-3000:]
    run, recs = read_records(res)
    meta = json.loads((run / "run.json").read_text())
    assert meta["model"]["path"] == str(ckpt) and meta["model"]["tokenizer_size"] == 512
    served = json.loads((run / "servers" / "servers.json").read_text())
    assert served[0]["launched"] and served[0]["model"] == str(ckpt.resolve())
    log = (run / "servers" / "vllm-xgrammar.log").read_text(errors="replace")
    start = next(x for x in log.splitlines() if "harness: starting" in x)
    assert f"--model {ckpt.resolve()}" in start
    assert "--load-format dummy" not in start  # the checkpoint's own weights
    streamed = [r for r in recs if r["serve"]["source"] != "canary"]
    assert len(streamed) == 2
    for r in streamed:
        s = r["serve"]
        assert r["outcome"] == "passing" and s["status"] == 200, s
        assert s["finish_reason"] == "stop" and s["verdict"] == "ok", s
        assert json.loads(s["text"]) in ("yes", "no", 12), s
