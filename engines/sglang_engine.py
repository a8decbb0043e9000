"""The engine row ``sglang[:BACKEND]``: SGLang's server with ``--grammar-backend BACKEND``.

SGLang is a CUDA-only package (no CPU build on the registries), so it lives in its own
environment (``.venv-sglang``), which ``benchmarks/gpu/run.sh`` makes on a machine with an
NVIDIA GPU; elsewhere the row is "not run" with that reason. The serve suite drives it
(``--suite serve --launch sglang:BACKEND``, or ``--server sglang+URL`` for a server the user
runs) through its OpenAI-compatible API, built to SGLang's documented interface:
``python -m sglang.launch_server --model-path DIR --load-format dummy --host H --port P
--grammar-backend xgrammar|llguidance|outlines``; requests take ``response_format``
``json_schema`` (and, as extra body fields, ``regex`` / ``ebnf``).
"""

from __future__ import annotations

from typing import Any

from engines.protocol import CompiledGrammar, CompileError, EngineAdapter

#: ``--grammar-backend`` values SGLang documents.
BACKENDS = ("xgrammar", "llguidance", "outlines")


class SglangEngine(EngineAdapter):
    """The row ``sglang:BACKEND`` (serve suite only)."""

    name = "sglang"
    package = "sglang"
    requires = "sglang"
    environment = "sglang"
    serving_engine = True
    dialect = "sglang"
    configs = {"default": {"backend": "xgrammar"},
               **{b: {"backend": b} for b in BACKENDS if b != "xgrammar"}}
    hidden = True
    hidden_reason = "serving engine: the serve suite (--launch sglang:BACKEND; CUDA only)"

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("sglang has no standalone matcher: run it with --suite serve")

    @classmethod
    def server_command(cls, python: str, model_dir: str, options: dict[str, Any],
                       host: str, port: int) -> tuple[list[str], dict[str, str]]:
        """The argv and extra environment that start SGLang's server on ``host:port``:
        random weights on a config-only folder, a checkpoint's own (``--model PATH``)."""
        from engines.vllm_engine import has_weights

        return ([python, "-m", "sglang.launch_server", "--model-path", model_dir,
                 *([] if has_weights(model_dir) else ["--load-format", "dummy"]),
                 "--host", host, "--port", str(port),
                 "--grammar-backend", options["backend"], "--random-seed", "0"], {})
