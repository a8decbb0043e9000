"""vLLM offline, through its documented API: ``LLM`` + ``SamplingParams(structured_outputs=
StructuredOutputsParams(json=schema))``, backend chosen with ``structured_outputs_config=
{"backend": ...}`` (xgrammar, guidance, outlines, lm-format-enforcer, auto).

The driver behind the engine row ``vllm[:BACKEND]`` (:mod:`engines.vllm_engine`) in the e2e suite. vLLM needs a
GPU and is not installed on the CPU machines: the row is then reported "not run" (the
registry's import check). The model is a Hugging Face folder the harness writes: the torch
runtime's random-weight Llama (``save_pretrained``) with a ``tokenizer.json`` converted from
the Llama-3 tiktoken file (transformers' ``TikTokenConverter``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.vocab import LLAMA3_PATTERN, Vocabulary


def write_hf_model(size: str, seed: int, vocab: Vocabulary, root: Path) -> Path:
    """A Hugging Face model folder (random weights, Llama-3 tokenizer), cached by size/seed."""
    import importlib.resources

    from harness.measure.e2e.runtime_torch import TorchRuntime

    out = root / f"hf-llama-{size}-seed{seed}-{vocab.fingerprint}"
    if (out / "tokenizer.json").exists():
        return out
    rt = TorchRuntime(size, device="cpu", dtype="bf16", seed=seed)
    rt.model.save_pretrained(out)
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = importlib.resources.files("llama_models") / "llama3" / "tokenizer.model"
    specials = [vocab.tokens[i].decode() for i in sorted(vocab.special_ids) if i >= 128000]
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=LLAMA3_PATTERN,
                            extra_special_tokens=specials).converted()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                   eos_token="<|eot_id|>")
    fast.save_pretrained(out)
    return out


class VllmOffline:
    """One ``vllm.LLM`` per (model folder, backend)."""

    def __init__(self, model_dir: str, backend: str = "auto", **llm_kwargs: Any) -> None:
        from vllm import LLM

        self.backend = backend
        self.llm = LLM(model=str(model_dir), structured_outputs_config={"backend": backend},
                       **llm_kwargs)

    def generate(self, schema: Any, prompt: str, n: int = 1, max_tokens: int = 128,
                 temperature: float = 1.0, seed: int = 0) -> dict[str, Any]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        so = StructuredOutputsParams(json=schema) if schema is not None else None
        params = SamplingParams(n=n, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                structured_outputs=so)
        t0 = time.perf_counter_ns()
        outs = self.llm.generate([prompt], params, use_tqdm=False)
        total = time.perf_counter_ns() - t0
        res = outs[0]
        m = getattr(res, "metrics", None)
        ttft = None
        if m is not None and getattr(m, "first_token_time", None) and getattr(m, "arrival_time", None):
            ttft = int((m.first_token_time - m.arrival_time) * 1e9)
        return {"texts": [o.text for o in res.outputs],
                "token_ids": [list(o.token_ids) for o in res.outputs],
                "finish_reasons": [o.finish_reason for o in res.outputs],
                "ttft_ns": ttft, "total_ns": total}
