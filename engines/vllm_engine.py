"""The engine row ``vllm[:BACKEND]``: vLLM's structured outputs with the backend it wraps.

vLLM has no standalone matcher to replay: only the e2e suite runs this row, through the
offline driver in :mod:`harness.measure.e2e.vllm_offline`. Hidden from ``--engine all``;
"not run" where the ``vllm`` package is not installed.
"""

from __future__ import annotations

from engines.base import CompiledGrammar, CompileError, EngineAdapter

#: ``structured_outputs_config={"backend": ...}`` values vLLM documents.
BACKENDS = ("auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer")


class VllmEngine(EngineAdapter):
    """The row ``vllm:BACKEND``; only the e2e suite runs it (replay has no vLLM matcher)."""

    name = "vllm"
    package = "vllm"
    configs = {"default": {"backend": "auto"}, **{b: {"backend": b} for b in BACKENDS
                                                   if b != "auto"}}
    hidden = True

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("vllm runs in the e2e suite only (harness run --suite e2e)")
