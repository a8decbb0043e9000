"""Whole e2e jobs (suites/e2e/job.py) on the torch runtime at the ``micro`` size, in
process: regressions that need a full decode of a corpus schema under a real engine."""

from __future__ import annotations

import json

import pytest

from harness.registry import is_installed
from suites.e2e.job import run_e2e_job


@pytest.mark.skipif(not is_installed("xgrammar"), reason="xgrammar not installed")
# one schema: both regressions ran the same path (an invalid output at the further size
# only); ``Handwritten---allone1.json`` at batch 8, seed 3 drew one too
@pytest.mark.parametrize("name,batch,seed", [("JME_39.json", 16, 17)])
def test_invalid_output_of_a_further_batch_size_is_reported_not_a_crash(name, batch, seed,
                                                                        corpus_dir):
    """xgrammar lets through outputs these schemas forbid (``not``/``oneOf`` of
    ``multipleOf``; ``dependentSchemas``). When only a further size of ``--batch`` produced
    one, the job raised StopIteration looking for it among the primary batch's outputs
    ("worker raised StopIteration" on the GPU run). The seeds are ones whose draws hit it,
    in float32, whose logits any faithful step reproduces (bf16 rounding would tie them to
    one implementation of the step)."""
    schema_text = json.dumps(json.loads((corpus_dir / name).read_text())["schema"])
    job = {"job": "suites.e2e.job:run_e2e_job",
           "engine": {"name": "xgrammar", "config": "default", "label": "xgrammar"},
           "tokenizer": "llama3",
           "case": {"suite": "e2e", "case_id": name, "subset": "t", "source": "-",
                    "schema_text": schema_text, "instances": [], "resources": []},
           "options": {"runtime": "torch", "model": "micro", "dtype": "float32",
                       "max_tokens": 64, "seed": seed,
                       "batch": [1, batch], "overlap": True, "blocks": 1,
                       "mask_bench": "off"}}
    rec = run_e2e_job(job)
    e = rec["e2e"]
    invalid = [pt["invalid_outputs"] for pt in e["by_batch"]]
    assert invalid[0] == 0 and invalid[1] > 0, \
        "the seed no longer draws an invalid output at the further size only: pick another"
    assert e["invalid_outputs"] == invalid[0]  # the primary batch's; by_batch has the rest
    assert rec["outcome"] == "invalidation_error"
    assert rec["error"].startswith(f"invalid output under the mask: batch {batch}: schema-invalid")
