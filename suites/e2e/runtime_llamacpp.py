"""``llamacpp`` runtime: llama-cpp-python on a random-weight GGUF the harness writes.

Optional extra: ``bash scripts/build_llamacpp.sh`` (builds llama-cpp-python once, CPU only,
and caches the wheel). One thread by default (two were slower and erratic on the 2-core
machine). Two ways to decode:

``llamacpp``       users' way: ``Llama.generate`` with the engine's mask applied through a
                   ``logits_processor`` (:func:`processor_decode`). llama-cpp-python swallows
                   exceptions raised inside a processor and goes on unconstrained, so the
                   processor's calls are counted and a job whose count differs from the
                   tokens sampled fails.
``llamacpp:eval``  the harness's own loop (:mod:`suites.e2e.loop`) over ``Llama.eval`` and
                   llama.cpp's logits buffer (zero copy): same sampler as the torch runtime,
                   and the overlapped schedule.

The vocabulary of the loaded model is checked against the harness's Llama-3 vocabulary with
``llama_cpp.llama_token_to_piece`` and its returned length (the padded buffer of
``Llama.token_to_piece`` would break every token).
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from typing import Any, Sequence

import numpy as np
import torch

from harness.suite.engines import ensure_gguf
from suites.e2e.loop import LoopResult, Sequence_
from harness.suite.engines import shape
from suites.e2e.records import VocabCheck
from suites.e2e.runtime import RuntimeUnavailable

_now = time.perf_counter_ns


def import_llama_cpp():
    try:
        import llama_cpp
    except Exception as e:  # ImportError, or the shared library failing to load
        raise RuntimeUnavailable(
            f"llama_cpp cannot be imported ({type(e).__name__}: {e}); install the optional "
            "runtime with: bash scripts/build_llamacpp.sh") from None
    return llama_cpp


def token_pieces(llm, n_vocab: int, special: bool = False) -> list[bytes]:
    """Every token's bytes through ``llama_token_to_piece`` with its returned length."""
    import llama_cpp

    vocab = llm._model.vocab
    buf = ctypes.create_string_buffer(256)
    out = []
    for i in range(n_vocab):
        n = llama_cpp.llama_token_to_piece(vocab, i, buf, 256, 0, special)
        if n < 0:  # buffer too small: -n is the size needed
            big = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(vocab, i, big, -n, 0, special)
            out.append(big.raw[:n])
        else:
            out.append(buf.raw[:n])
    return out


@contextlib.contextmanager
def no_extra_buffers():
    """Load models without ggml's CPU "extra" buffer types (AMX repacking): on this CPU
    (AMX in a VM) ``ggml_backend_amx_mul_mat`` segfaults on the first decode of Q8_0 models.
    ``Llama()`` has no parameter for ``use_extra_bufts``, so its default is patched while a
    model loads."""
    from llama_cpp import llama_cpp as C

    orig = C.llama_model_default_params

    def patched():
        params = orig()
        params.use_extra_bufts = False
        return params

    C.llama_model_default_params = patched
    try:
        yield
    finally:
        C.llama_model_default_params = orig


class LlamaCppRuntime:
    name = "llamacpp"
    batch = 1
    device = "cpu"

    def __init__(self, model: str, quant: str = "Q8_0", seed: int = 0, threads: int = 1,
                 n_ctx: int = 4096, vocab=None) -> None:
        llama_cpp = import_llama_cpp()
        self.shape = shape(model)
        self.quant, self.seed, self.threads = quant, seed, int(threads or 1)
        # the loop's apply and sampling run on torch CPU ops: same thread count (more
        # OpenMP threads than free cores make a masked_fill_ wait on the busy ones)
        torch.set_num_threads(self.threads)
        t0 = time.perf_counter()
        self.path = ensure_gguf(model, quant, seed, vocab)
        t1 = time.perf_counter()
        with no_extra_buffers():
            self.llm = llama_cpp.Llama(
                model_path=str(self.path), n_ctx=n_ctx, n_batch=512, n_threads=self.threads,
                n_threads_batch=self.threads, seed=seed, verbose=False, logits_all=False,
                chat_format="llama-3")
        self.load_s, self.write_s = time.perf_counter() - t1, t1 - t0
        self.vocab_size = self.llm.n_vocab()
        self.n_ctx = n_ctx
        self.vocab_checked: VocabCheck | None = None
        self.version = llama_cpp.__version__
        self._ctx = self.llm._ctx.ctx
        self._get_logits = llama_cpp.llama_get_logits_ith

    # -- the harness's vocabulary must be the model's, id for id -----------------------------
    def check_vocabulary(self, vocab) -> VocabCheck:
        pieces = token_pieces(self.llm, self.vocab_size)
        ordinary = [i for i in range(min(len(pieces), vocab.size)) if i not in vocab.special_ids]
        bad = [i for i in ordinary if pieces[i] != vocab.tokens[i]]
        self.vocab_checked = {"n_vocab": self.vocab_size, "checked": len(ordinary),
                              "mismatches": len(bad), "first": bad[:5]}
        if self.vocab_size != vocab.size or bad:
            raise RuntimeError(f"llama.cpp's vocabulary differs from the harness's "
                               f"({self.vocab_size} vs {vocab.size} ids, {len(bad)} ordinary "
                               f"tokens differ, e.g. {bad[:5]})")
        return self.vocab_checked

    # -- prefill / step over Llama.eval (the harness's loop) ------------------------------
    def _logits(self) -> torch.Tensor:
        ptr = self._get_logits(self._ctx, -1)
        arr = np.ctypeslib.as_array(ptr, shape=(self.vocab_size,))
        return torch.from_numpy(arr).view(1, -1)

    def prefill(self, ids: list[int]) -> torch.Tensor:
        self.llm.reset()
        self.llm.eval(ids)
        return self._logits()

    def step(self, tokens: list[int]) -> torch.Tensor:
        self.llm.eval(tokens)
        return self._logits()

    def describe(self) -> dict[str, Any]:
        return {"runtime": "llamacpp", "model": self.shape.describe(), "quant": self.quant,
                "gguf": str(self.path), "threads": self.threads, "n_ctx": self.n_ctx,
                "llama_cpp_python": self.version, "load_s": round(self.load_s, 3),
                "vocab_check": self.vocab_checked}


class _Counter:
    __slots__ = ("calls", "error")

    def __init__(self) -> None:
        self.calls = 0
        self.error: str | None = None


def processor_decode(runtime: LlamaCppRuntime, prompt: Sequence[int], *, stop_ids, max_tokens,
                     sampler, matchers=None, bitmask=None, apply=None, overlap=False,
                     grammar=None) -> LoopResult:
    """Decode through ``Llama.generate`` (llama.cpp's own sampler chain: temperature and a
    seeded draw, top-k / min-p off, top-p as asked), the mask applied by a
    ``logits_processor``: commit the tokens since the last call, fill the mask, set
    disallowed logits to -inf. ``grammar`` (a ``LlamaGrammar``) is llama.cpp's own GBNF path.

    Per step: ``step`` is the wall time between two tokens; ``mask`` / ``commit`` /
    ``apply`` are timed inside the processor; ``processor`` is the processor's whole call.
    The result carries ``extra`` with the call count; a count that differs from the tokens
    sampled (an exception swallowed by llama-cpp-python) is an ``error``.
    """
    llm = runtime.llm
    constrained = matchers is not None
    stops = frozenset(stop_ids)
    seq = Sequence_()
    steps: dict[str, list[int]] = {k: [] for k in ("mask", "apply", "commit", "processor",
                                                   "step")}
    counter = _Counter()
    n_prompt = len(prompt)
    processors = None
    if constrained:
        m = matchers[0]
        row = bitmask.rows[0]
        V = runtime.vocab_size
        state = {"committed": 0}
        inv = np.empty_like(row)

        def processor(input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
            t0 = _now()
            counter.calls += 1
            try:
                gen = input_ids[n_prompt:]
                done = state["committed"]
                if len(gen) > done:
                    tc = _now()
                    for t in gen[done:]:
                        if not m.commit(int(t)):
                            raise RuntimeError(f"matcher refused token {int(t)} its mask allowed")
                    state["committed"] = len(gen)
                    steps["commit"].append(_now() - tc)
                tm = _now()
                m.fill_mask(row)
                ta = _now()
                np.invert(row, out=inv)  # disallowed bits, on 4,008 words
                off = np.unpackbits(inv.view(np.uint8), count=V, bitorder="little")
                scores[off.view(bool)] = -np.inf  # scores: a strided view (id, logit, p)
                t1 = _now()
                steps["mask"].append(ta - tm)
                steps["apply"].append(t1 - ta)
                steps["processor"].append(t1 - t0)
                return scores
            except Exception as e:  # llama-cpp-python would swallow it: keep it
                counter.error = f"{type(e).__name__}: {e}"
                raise

        import llama_cpp

        processors = llama_cpp.LogitsProcessorList([processor])
    llm.set_seed(int(getattr(sampler, "seed", runtime.seed)))
    kw = dict(top_k=0, top_p=float(getattr(sampler, "top_p", 1.0)), min_p=0.0, typical_p=1.0,
              temp=float(getattr(sampler, "temperature", 1.0)), repeat_penalty=1.0,
              reset=True)
    # Forget the previous decode: generate() would otherwise reuse the KV cache of a matching
    # prompt prefix, and the second of two decodes of one prompt (the unconstrained baseline)
    # would skip its prefill, making TTFTs incomparable.
    llm.reset()
    t_start = _now()
    t_prev = None
    ttft = None
    gen = llm.generate(list(prompt), logits_processor=processors, grammar=grammar, **kw)
    try:
        for tok in gen:
            now = _now()
            if ttft is None:
                ttft = now - t_start
                seq.first_ns = ttft
            else:
                steps["step"].append(now - t_prev)
            t_prev = now
            seq.last_ns = now - t_start
            seq.n_emitted += 1
            if constrained and not bitmask.allowed(0, int(tok)):
                seq.stop, seq.stop_token = ("dead_end" if bitmask.empty(0) else "mask_leak"), tok
                seq.n_emitted -= 1
                break
            if tok in stops:
                if constrained and not matchers[0].eos_allowed():
                    seq.stop = "eos_refused"
                else:
                    seq.stop = "eos"
                seq.stop_token = tok
                break
            seq.tokens.append(int(tok))
            if seq.n_emitted >= max_tokens:
                seq.stop = "runaway"
                break
    finally:
        gen.close()
    total = _now() - t_start
    # mask fill of the first token happened inside the prefill step: keep per-step lists
    # aligned with the loop's (first entry = first token)
    res = LoopResult("serial", constrained, len(prompt), ttft or 0, ttft or 0, [seq],
                     {k: v for k, v in steps.items()}, total)
    extra: dict[str, Any] = {"api": "logits_processor" if grammar is None else "gbnf"}
    if constrained:
        extra["processor_calls"] = counter.calls
        extra["tokens_sampled"] = seq.n_emitted + (1 if seq.stop in ("dead_end", "mask_leak")
                                                   else 0)
        if counter.error:
            extra["error"] = f"logits_processor raised (llama-cpp-python swallowed it): {counter.error}"
        elif counter.calls != extra["tokens_sampled"]:
            extra["error"] = (f"logits_processor called {counter.calls} times for "
                              f"{extra['tokens_sampled']} tokens sampled: the mask was not "
                              "applied to every token")
    res.extra = extra  # type: ignore[attr-defined]
    return res
