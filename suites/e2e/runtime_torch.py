"""``torch`` runtime: a Llama decoder with random, seeded weights, decoding like a server.

Sizes by name (:mod:`engines.vocab.models`), or a local Llama-architecture checkpoint
folder (``--model PATH``: its weights, its shape from ``config.json``), ``cpu`` or
``cuda``, bf16 (default) or float32.
One intra-op thread by default on CPU (two were slower and erratic on the 2-core machine).

The weights are those of a transformers ``LlamaForCausalLM`` built in place (random, seeded);
the decode step is the harness's own, over a **static KV cache**, the way serving engines
run it rather than transformers' eager ``DynamicCache`` loop (launch-bound: ~6x the
weight-read floor for 8B on an H200):

- one KV buffer per batch size, ``[layers, B, kv_heads, capacity, head_dim]``; a decode
  attends over the first ``bucket`` slots (``prompt + max_new`` rounded up to
  :data:`BUCKET` positions; later slots are masked), so its shapes are fixed;
- on CUDA each ``(batch, bucket)`` step is captured once as a ``torch.cuda.CUDAGraph``
  (:meth:`prepare`) and replayed: one launch per token instead of hundreds. ``graphs=False``
  (``--no-graphs``) runs the same step eagerly, to compare; on CPU it always runs eagerly;
- the position lives on the device and the graph advances it, and :meth:`step_device` feeds
  the previous step's sampled ids without a trip through the host, so the next forward can
  be queued before the host has read the tokens (:mod:`suites.e2e.loop`).

The step computes what ``LlamaForCausalLM.forward`` computes (the same weights, RMSNorm,
RoPE table, grouped-query attention, SwiGLU, LM head; ``tests/unit/test_e2e.py`` checks the
logits against it in float32). Logits come back as float32 ``[B, V]`` in a buffer the
runtime owns: valid until the next call, masked in place by the loop.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.nn.functional as F

from harness.suite.engines import BOS_ID, EOS_ID, shape
from suites.e2e.records import CopyBandwidth, GraphCapture, RuntimeWarmUp

_DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "float32": torch.float32,
           "fp32": torch.float32, "f32": torch.float32, "fp16": torch.float16,
           "float16": torch.float16}

#: KV positions per attention bucket: a decode attends over ``prompt + max_new`` rounded up
#: to a multiple of this (at most BUCKET - 1 masked slots read per sequence and layer).
BUCKET = 256


def _bucket(n: int) -> int:
    return max(BUCKET, -(-int(n) // BUCKET) * BUCKET)


class _Slots:
    """The static buffers of one batch size: input ids, position, KV cache, logits."""

    def __init__(self, rt: "TorchRuntime", batch: int, capacity: int) -> None:
        s, dev = rt.shape, rt.device
        self.batch, self.capacity = batch, capacity
        kv = (s.layers, batch, s.kv_heads, capacity, s.head_dim)
        self.k = torch.zeros(kv, dtype=rt.dt, device=dev)
        self.v = torch.zeros(kv, dtype=rt.dt, device=dev)
        self.ids = torch.zeros((batch, 1), dtype=torch.long, device=dev)
        self.pos = torch.zeros((1,), dtype=torch.long, device=dev)  # next position to write
        self.logits = torch.zeros((batch, s.vocab), dtype=torch.float32, device=dev)
        cuda = dev.startswith("cuda")
        self.ids_host = torch.zeros((batch, 1), dtype=torch.long, pin_memory=cuda)
        self.graphs: dict[int, Any] = {}  # bucket -> torch.cuda.CUDAGraph
        self.p = 0  # host copy of pos


def checkpoint_shape(ckpt: Any) -> Any:
    """The :class:`ModelShape` of a checkpoint's ``config.json``; raises ValueError (one
    line naming the path) for one the runtime's own step does not compute: not a Llama
    (``LlamaForCausalLM``), or a Llama with biases or another activation."""
    from harness.suite.engines import ModelShape

    c = ckpt.config
    arch = (c.get("architectures") or [None])[0]
    if c.get("model_type") != "llama" or arch not in (None, "LlamaForCausalLM"):
        raise ValueError(f"--model {ckpt.path}: the torch runtime decodes Llama-architecture "
                         f"checkpoints (LlamaForCausalLM); this one is "
                         f"{arch or c.get('model_type')}")
    if c.get("attention_bias") or c.get("mlp_bias") or c.get("hidden_act", "silu") != "silu":
        raise ValueError(f"--model {ckpt.path}: the torch runtime decodes Llama checkpoints "
                         "without biases and with SiLU (this one has attention_bias, "
                         "mlp_bias or another hidden_act)")
    rope = c.get("rope_parameters") or {}
    heads = int(c["num_attention_heads"])
    return ModelShape(
        name=ckpt.path, hidden=int(c["hidden_size"]), layers=int(c["num_hidden_layers"]),
        heads=heads, kv_heads=int(c.get("num_key_value_heads") or heads),
        intermediate=int(c["intermediate_size"]), tied=bool(c.get("tie_word_embeddings")),
        vocab=int(c["vocab_size"]),
        rope_theta=float(c.get("rope_theta") or rope.get("rope_theta") or 10000.0),
        rms_eps=float(c.get("rms_norm_eps", 1e-6)),
        context=int(c.get("max_position_embeddings") or 2048),
        dims=int(c.get("head_dim") or 0))


class TorchRuntime:
    """A Llama decoder (random weights) with a static KV cache and, on CUDA, a
    graph-captured decode step per (batch size, attention bucket)."""

    name = "torch"

    def __init__(self, model: str, device: str = "cpu", dtype: str | None = None,
                 seed: int = 0, batch: int = 1, threads: int | None = 1,
                 graphs: bool | None = None) -> None:
        from transformers import LlamaConfig, LlamaForCausalLM

        from harness.suite.serving import load_checkpoint, looks_like_checkpoint

        #: a local checkpoint (``--model PATH``): its weights, its shape; None for a size
        self.checkpoint = load_checkpoint(model) if looks_like_checkpoint(model) else None
        self.shape = (checkpoint_shape(self.checkpoint) if self.checkpoint is not None
                      else shape(model))
        self.device = device
        self.batch = int(batch)
        self.vocab_size = self.shape.vocab
        self.dtype_name = dtype or "bf16"
        if self.dtype_name not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(_DTYPES)}")
        dt = self.dt = _DTYPES[self.dtype_name]
        cuda = device.startswith("cuda")
        if cuda and not torch.cuda.is_available():
            raise ValueError("device cuda asked but torch sees no CUDA device")
        if threads and device == "cpu":
            torch.set_num_threads(int(threads))
        self.threads = torch.get_num_threads()
        #: CUDA graphs: on by default on CUDA, never on CPU (``graphs=False`` compares)
        self.graphs = bool(cuda if graphs is None else (graphs and cuda))
        self.graphs_asked = graphs
        self.graphs_error: str | None = None  # why capture failed (then the step runs eagerly)
        #: the forward is queued on the device and returns before it finished (CUDA)
        self.asynchronous = cuda
        s = self.shape
        t0 = time.perf_counter()
        if self.checkpoint is not None:
            folder = str(self.checkpoint.folder)
            self.model = LlamaForCausalLM.from_pretrained(folder, local_files_only=True,
                                                          dtype=dt).to(device)
            self.config = self.model.config
        else:
            cfg = LlamaConfig(
                vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
                num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
                intermediate_size=s.intermediate, tie_word_embeddings=s.tied,
                max_position_embeddings=s.context, rope_theta=s.rope_theta,
                rms_norm_eps=s.rms_eps, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
            )
            self.config = cfg
            torch.manual_seed(seed)
            prev = torch.get_default_dtype()
            try:
                # build straight in the target dtype on the target device (8B in fp32 = 32 GB)
                torch.set_default_dtype(dt)
                with torch.device(device):
                    self.model = LlamaForCausalLM(cfg)
            finally:
                torch.set_default_dtype(prev)
        self.model.eval()
        self.model.requires_grad_(False)
        self._bind_weights()
        self.build_s = time.perf_counter() - t0
        self._slots: dict[int, _Slots] = {}
        self._bucket = _bucket(1)  # the attention bucket of the current decode
        self._pool = None  # one CUDA graph memory pool shared by every captured step
        self.captures: list[GraphCapture] = []
        self.warmups: list[RuntimeWarmUp] = []  # filled by the job's first warm-ups
        self.copy_bandwidth: CopyBandwidth | None = None  # filled by measure_floor

    # ------------------------------------------------------------------ weights
    def _bind_weights(self) -> None:
        m = self.model.model
        self.embed = m.embed_tokens.weight
        self.lm_head = self.model.lm_head.weight
        self.final_norm = m.norm.weight
        self.eps = float(self.shape.rms_eps)
        # Fused projections, as serving engines run them: one [q; k; v] matrix and one
        # [gate; up] matrix per layer, so a step launches 2 GEMMs where it would launch 5.
        # The model's own parameters become views into them (no second copy of the
        # weights; LlamaForCausalLM.forward still computes with the same numbers).
        self.layers = []
        for ly in m.layers:
            at, mlp = ly.self_attn, ly.mlp
            qkv = self._fuse(at.q_proj, at.k_proj, at.v_proj)
            gate_up = self._fuse(mlp.gate_proj, mlp.up_proj)
            self.layers.append((ly.input_layernorm.weight, qkv, at.o_proj.weight,
                                ly.post_attention_layernorm.weight, gate_up,
                                mlp.down_proj.weight))
        # the RoPE table as transformers computes it (its rotary module, its dtype cast)
        with torch.no_grad():
            pos = torch.arange(self.shape.context, device=self.device).unsqueeze(0)
            cos, sin = m.rotary_emb(self.embed[:1].unsqueeze(0), pos)
        self.cos, self.sin = cos[0].contiguous(), sin[0].contiguous()  # [context, head_dim]
        self.scale = self.shape.head_dim ** -0.5

    @staticmethod
    def _fuse(*linears) -> torch.Tensor:
        """The linears' weights stacked by rows; each linear's weight then views its rows."""
        with torch.no_grad():
            fused = torch.cat([lin.weight.data for lin in linears], dim=0)
        row = 0
        for lin in linears:
            n = lin.weight.shape[0]
            lin.weight.data = fused[row:row + n]
            row += n
        return fused

    def weight_bytes(self) -> dict[str, int]:
        """Bytes of the weights: ``all`` of them, and ``per_step``: what one decode step
        must read (every matrix once; of the embedding table only the batch's rows, unless
        it is tied to the LM head, which reads it whole)."""
        seen, total = set(), 0
        for p in self.model.parameters():
            if p.data_ptr() not in seen:
                seen.add(p.data_ptr())
                total += p.numel() * p.element_size()
        emb = self.embed.numel() * self.embed.element_size()
        per_step = total if self.shape.tied else total - emb
        return {"all": total, "per_step": per_step}

    # ------------------------------------------------------------------ the step
    def _rms(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        # torch's rms_norm (one fused kernel where torch has one): in float32 it equals
        # transformers' LlamaRMSNorm; in bf16 it rounds once less (weight × normed in fp32)
        return F.rms_norm(x, (x.shape[-1],), w, self.eps)

    @staticmethod
    def _rot(x: torch.Tensor) -> torch.Tensor:
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, k_all: torch.Tensor,
                 v_all: torch.Tensor, span: int) -> torch.Tensor:
        """Logits (model dtype) of the last position of ``ids`` [B, T], written at KV slots
        ``positions`` [T] (device), attending over the first ``span`` slots. Only device
        ops with shapes fixed by (B, T, span): capturable in a CUDA graph."""
        s = self.shape
        B, T = ids.shape
        Hk, G, D = s.kv_heads, s.heads // s.kv_heads, s.head_dim
        h = F.embedding(ids, self.embed)  # [B, T, hidden]
        cos = self.cos.index_select(0, positions)  # [T, D]
        sin = self.sin.index_select(0, positions)
        # query row g*T + t sits at positions[t]; key slot j is visible to it iff j <= that
        slots = torch.arange(span, device=ids.device)
        hidden_mask = slots.unsqueeze(0) > positions.repeat(G).unsqueeze(1)  # [G*T, span]
        nq, nk = s.heads * D, Hk * D
        inter = s.intermediate
        for i, (w_in, w_qkv, wo, w_post, w_gu, wd) in enumerate(self.layers):
            x = self._rms(h, w_in)
            qkv = F.linear(x, w_qkv)  # [B, T, (H + 2 Hk) D]
            # RoPE on q and k at once: they are adjacent heads of the fused output
            qk = qkv[..., :nq + nk].view(B, T, s.heads + Hk, D)
            qk = qk * cos.unsqueeze(1) + self._rot(qk) * sin.unsqueeze(1)
            q = qk[:, :, :s.heads].view(B, T, Hk, G, D).permute(0, 2, 3, 1, 4)  # [B,Hk,G,T,D]
            k = qk[:, :, s.heads:].transpose(1, 2)  # [B, Hk, T, D]
            v = qkv[..., nq + nk:].view(B, T, Hk, D).transpose(1, 2)
            kc, vc = k_all[i], v_all[i]
            kc.index_copy_(2, positions, k)
            vc.index_copy_(2, positions, v)
            # grouped-query attention without repeating K/V: the G query heads of a KV head
            # are rows of one matmul, so each cached K and V is read once
            sc = torch.matmul(q.reshape(B, Hk, G * T, D) * self.scale,
                              kc[:, :, :span].transpose(-1, -2))
            sc.masked_fill_(hidden_mask, float("-inf"))
            pr = torch.softmax(sc, dim=-1, dtype=torch.float32).to(qkv.dtype)
            o = torch.matmul(pr, vc[:, :, :span])  # [B, Hk, G*T, D]
            o = o.view(B, Hk, G, T, D).permute(0, 3, 1, 2, 4).reshape(B, T, Hk * G * D)
            h = h + F.linear(o, wo)
            gu = F.linear(self._rms(h, w_post), w_gu)
            h = h + F.linear(F.silu(gu[..., :inter]) * gu[..., inter:], wd)
        return F.linear(self._rms(h[:, -1], self.final_norm), self.lm_head)

    def _decode_body(self, sl: _Slots, bucket: int) -> None:
        """One decode step on the slots' static buffers: ids → logits, position + 1."""
        out = self._forward(sl.ids, sl.pos, sl.k, sl.v, bucket)
        sl.logits.copy_(out)
        sl.pos.add_(1)

    # ------------------------------------------------------------------ batch, capacity
    def _slots_for(self, batch: int, capacity: int) -> _Slots:
        sl = self._slots.get(batch)
        if sl is None or sl.capacity < capacity:
            # a larger cache: graphs of this batch size pointed at the old one. Normal
            # tensors even when a caller runs under inference_mode: other callers update
            # them in place outside it
            with torch.inference_mode(False):
                self._slots[batch] = sl = _Slots(self, batch, capacity)
        return sl

    def set_batch(self, batch: int) -> None:
        """Decode ``batch`` sequences from the next :meth:`prefill` on (same weights; each
        batch size keeps its own cache and graphs)."""
        batch = int(batch)
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        self.batch = batch

    @torch.no_grad()
    def prepare(self, prompt_len: int, max_new: int) -> None:
        """Make ready, outside any timed region, a decode of ``max_new`` tokens after a
        prompt of ``prompt_len``: the KV capacity and, on CUDA with graphs, the captured
        step of this (batch, bucket). Capture runs the step three times on a side stream
        first (allocator and kernel warm-up), so call it before :meth:`prefill`."""
        need = int(prompt_len) + int(max_new) + 1
        if need > self.shape.context:
            raise ValueError(f"prompt {prompt_len} + {max_new} new tokens exceed the "
                             f"model's context {self.shape.context}")
        bucket = min(_bucket(need), self.shape.context)
        sl = self._slots_for(self.batch, bucket)
        self._bucket = bucket
        if self.graphs and bucket not in sl.graphs:
            self._capture(sl, bucket)

    def _capture(self, sl: _Slots, bucket: int) -> None:
        t0 = time.perf_counter()
        try:
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    sl.pos.zero_()
                    self._decode_body(sl, bucket)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self._pool):
                self._decode_body(sl, bucket)
            torch.cuda.synchronize()
            sl.graphs[bucket] = g
            self.captures.append({"batch": sl.batch, "bucket": bucket,
                                  "s": round(time.perf_counter() - t0, 3)})
        except Exception as e:  # the step stays correct eagerly; the reason is reported
            from engines.protocol import one_line

            self.graphs, self.graphs_error = False, one_line(e)
            try:
                torch.cuda.synchronize()
            except Exception:  # a sticky error shows again at the next step, with its cause
                pass

    # ------------------------------------------------------------------ decoding
    @torch.no_grad()
    def prefill(self, ids: list[int]) -> torch.Tensor:
        """Start every sequence of the batch on the prompt ``ids``: one row is computed and
        its KV copied to the others (same prompt); returns the next-token logits [B, V]."""
        T = len(ids)
        if self._bucket <= T:  # no prepare() for this length: size the cache now
            self._bucket = min(_bucket(T + 1), self.shape.context)
        sl = self._slots_for(self.batch, self._bucket)
        x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        positions = torch.arange(T, device=self.device)
        out = self._forward(x, positions, sl.k[:, :1], sl.v[:, :1], T)
        if sl.batch > 1:
            sl.k[:, 1:, :, :T].copy_(sl.k[:, :1, :, :T].expand(-1, sl.batch - 1, -1, -1, -1))
            sl.v[:, 1:, :, :T].copy_(sl.v[:, :1, :, :T].expand(-1, sl.batch - 1, -1, -1, -1))
        sl.logits.copy_(out.expand(sl.batch, -1))
        self._seek(sl, T)
        return sl.logits

    @staticmethod
    def _seek(sl: _Slots, p: int) -> None:
        sl.p = p
        sl.pos.fill_(p)  # the value travels as a kernel argument: no host buffer to race

    @torch.no_grad()
    def seek(self, p: int) -> None:
        """Move the next write position back to ``p`` (warm-up steps reuse the slots of one
        decode instead of running past its bucket)."""
        self._seek(self._slots[self.batch], int(p))

    def _run_step(self, sl: _Slots) -> torch.Tensor:
        if sl.p + 1 > self._bucket:
            # a host-side check: an index past the cache would be a device-side assert
            raise RuntimeError(f"decode past its bucket ({self._bucket} positions): call "
                               "prepare(prompt_len, max_new) with the real budget")
        g = sl.graphs.get(self._bucket) if self.graphs else None
        if g is not None:
            g.replay()
        else:
            self._decode_body(sl, self._bucket)
        sl.p += 1
        return sl.logits

    @torch.no_grad()
    def step(self, tokens: list[int]) -> torch.Tensor:
        """Feed one token per sequence (host ids); returns the next logits [B, V]. On CUDA
        the step is queued and this returns before it ran (see :meth:`sync`)."""
        sl = self._slots[self.batch]
        for i, t in enumerate(tokens):
            sl.ids_host[i, 0] = t
        sl.ids.copy_(sl.ids_host, non_blocking=True)
        return self._run_step(sl)

    @torch.no_grad()
    def step_device(self, ids: torch.Tensor) -> torch.Tensor:
        """Feed ids already on the device ([B] long, e.g. the sampler's draw): queued behind
        the work that produces them, with no trip through the host."""
        sl = self._slots[self.batch]
        sl.ids.copy_(ids.view(sl.batch, 1))
        return self._run_step(sl)

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def describe(self) -> dict[str, Any]:
        import transformers

        d = {"runtime": "torch", "model": self.shape.describe(), "device": self.device,
             "dtype": self.dtype_name, "threads": self.threads, "batch": self.batch,
             "build_s": round(self.build_s, 3), "torch": torch.__version__,
             "transformers": transformers.__version__, "kv_cache": "static",
             "graphs": self.graphs, "graphs_error": self.graphs_error,
             "bucket_positions": BUCKET, "captures": list(self.captures),
             "weight_bytes": self.weight_bytes(), "warmups": list(self.warmups)}
        if self.device.startswith("cuda"):
            d["gpu"] = torch.cuda.get_device_name()
        if self.copy_bandwidth:
            d["copy_bandwidth"] = self.copy_bandwidth
        return d
