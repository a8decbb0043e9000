"""``torch`` runtime: transformers ``LlamaForCausalLM`` with random, seeded weights.

Sizes by name (:mod:`harness.vocab.models`), ``cpu`` or ``cuda``, bf16 (default) or float32.
One intra-op thread by default on CPU (two were slower and erratic on the 2-core machine).
The KV cache is a transformers ``DynamicCache``; logits come back as float32 [B, V].
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import torch

from harness.vocab.models import BOS_ID, EOS_ID, shape

_DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "float32": torch.float32,
           "fp32": torch.float32, "f32": torch.float32, "fp16": torch.float16,
           "float16": torch.float16}


class TorchRuntime:
    name = "torch"

    def __init__(self, model: str, device: str = "cpu", dtype: str | None = None,
                 seed: int = 0, batch: int = 1, threads: int | None = 1) -> None:
        from transformers import LlamaConfig, LlamaForCausalLM

        self.shape = shape(model)
        self.device = device
        self.batch = int(batch)
        self.vocab_size = self.shape.vocab
        self.dtype_name = dtype or "bf16"
        if self.dtype_name not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(_DTYPES)}")
        dt = _DTYPES[self.dtype_name]
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError("device cuda asked but torch sees no CUDA device")
        if threads and device == "cpu":
            torch.set_num_threads(int(threads))
        self.threads = torch.get_num_threads()
        s = self.shape
        cfg = LlamaConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
            num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
            intermediate_size=s.intermediate, tie_word_embeddings=s.tied,
            max_position_embeddings=s.context, rope_theta=s.rope_theta, rms_norm_eps=s.rms_eps,
            bos_token_id=BOS_ID, eos_token_id=EOS_ID,
        )
        self.config = cfg
        t0 = time.perf_counter()
        torch.manual_seed(seed)
        prev = torch.get_default_dtype()
        try:
            # build straight in the target dtype on the target device (8B in fp32 = 32 GB)
            if dt in (torch.float16, torch.bfloat16, torch.float32):
                torch.set_default_dtype(dt)
            with torch.device(device):
                self.model = LlamaForCausalLM(cfg)
        finally:
            torch.set_default_dtype(prev)
        self.model.eval()
        self.build_s = time.perf_counter() - t0
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._cache = None
        self._pos = 0
        self._ids = torch.empty((self.batch, 1), dtype=torch.long, device=device)
        self._ids_cpu = torch.empty((self.batch, 1), dtype=torch.long)
        if device.startswith("cuda"):
            self._ids_cpu = self._ids_cpu.pin_memory()

    def set_batch(self, batch: int) -> None:
        """Decode ``batch`` sequences from the next :meth:`prefill` on (same weights)."""
        batch = int(batch)
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if batch != self.batch:
            self.batch = batch
            self._ids = torch.empty((batch, 1), dtype=torch.long, device=self.device)
            self._ids_cpu = torch.empty((batch, 1), dtype=torch.long)
            if self.device.startswith("cuda"):
                self._ids_cpu = self._ids_cpu.pin_memory()
            self._cache = None

    def _new_cache(self):
        from transformers import DynamicCache

        try:
            return DynamicCache(config=self.config)
        except TypeError:
            return DynamicCache()

    @torch.inference_mode()
    def prefill(self, ids: list[int]) -> torch.Tensor:
        self._cache = self._new_cache()
        x = torch.tensor([list(ids)] * self.batch, dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, use_cache=True, logits_to_keep=1,
                         **{self._cache_kw: self._cache})
        self._pos = len(ids)
        return out.logits[:, -1, :].float()

    @torch.inference_mode()
    def step(self, tokens: list[int]) -> torch.Tensor:
        cpu = self._ids_cpu
        for i, t in enumerate(tokens):
            cpu[i, 0] = t
        x = self._ids.copy_(cpu, non_blocking=True) if self.device != "cpu" else cpu
        out = self.model(input_ids=x, use_cache=True, **{self._cache_kw: self._cache})
        self._pos += 1
        return out.logits[:, -1, :].float()

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def describe(self) -> dict[str, Any]:
        import transformers

        return {"runtime": "torch", "model": self.shape.describe(), "device": self.device,
                "dtype": self.dtype_name, "threads": self.threads, "batch": self.batch,
                "build_s": round(self.build_s, 3), "torch": torch.__version__,
                "transformers": transformers.__version__}
