"""The engine row ``vllm[:BACKEND]``: vLLM's structured outputs with the backend it wraps.

vLLM has no standalone matcher to replay: only the e2e suite runs this row, through
:class:`VllmOffline` (``LLM`` + ``SamplingParams(structured_outputs=
StructuredOutputsParams(json=schema))``, the backend chosen with
``structured_outputs_config={"backend": ...}``) on a model folder the harness writes.
Hidden from ``--engine all``; "not run" where the ``vllm`` package is not installed.
"""

from __future__ import annotations

import time
from typing import Any

from engines.base import CompiledGrammar, CompileError, EngineAdapter

#: ``structured_outputs_config={"backend": ...}`` values vLLM documents.
BACKENDS = ("auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer")


class VllmEngine(EngineAdapter):
    """The row ``vllm:BACKEND``; only the e2e suite runs it (replay has no vLLM matcher)."""

    name = "vllm"
    package = "vllm"
    requires = "vllm"
    serving_engine = True
    configs = {"default": {"backend": "auto"}, **{b: {"backend": b} for b in BACKENDS
                                                   if b != "auto"}}
    hidden = True
    hidden_reason = "serving engine: the e2e suite only (--suite e2e --engine vllm)"
    install_hint = "pip install vllm (needs a GPU build of torch)"

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("vllm runs in the e2e suite only (harness run --suite e2e)")

    @classmethod
    def offline(cls, model_dir: str, backend: str = "auto", **llm_kwargs: Any) -> "VllmOffline":
        """vLLM's offline engine on ``model_dir`` with the structured-output ``backend``."""
        return VllmOffline(model_dir, backend=backend, **llm_kwargs)


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
