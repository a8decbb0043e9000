"""Small checkpoints for tests, made in a second or two: a byte-level BPE trained on a few
corpus files and a Llama of random weights, or one whose next-token distribution is set by
hand (:func:`unigram_checkpoint`: the same distribution at every step, so every quality
figure of an output is known exactly)."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Sequence

from harness.model.checkpoint import save_checkpoint
from harness.model.data import (SPLIT_RULE, PromptFormat, answer_text, minified,
                                split_of, training_pairs)
from harness.model.tokenizer import train_tokenizer
from harness.suite.maskbench import resolve_data_dir

DATA = resolve_data_dir(None)

FORMAT = PromptFormat(schema_budget=64)


@functools.lru_cache(maxsize=2)
def small_tokenizer(vocab_size: int = 512):
    pairs = itertools.islice(training_pairs(DATA), 600)
    return train_tokenizer([minified(s) + answer_text(d) for _, s, d in pairs], vocab_size,
                           FORMAT)


def _meta(names: Sequence[str] = ()) -> dict:
    held = sorted(p.name for p in Path(DATA).glob("*.json") if split_of(p.name) == "held_out")
    return {"prompt": FORMAT.describe(), "build_key": "test-fixture",
            "split": {"rule": SPLIT_RULE, "held_out": held}}


def _config(vocab: int, tok, **kw):
    from transformers import LlamaConfig

    base = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, intermediate_size=128, max_position_embeddings=1024,
                tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    base.update(kw)
    return LlamaConfig(**base)


def random_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A Llama of random, seeded weights (head_dim 32) on :func:`small_tokenizer`."""
    import torch
    from transformers import LlamaForCausalLM

    tok = small_tokenizer()
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_config(len(tok), tok))
    return save_checkpoint(folder, model, tok, _meta())


def unigram_checkpoint(folder: Path, logits: Sequence[float]) -> Path:
    """A Llama whose next-token logits are ``logits`` at every step, whatever came before.

    Every layer's output projections are zero, so the residual stream is the token's
    embedding; every embedding is ``sqrt(hidden) * e_0``, whose RMS is 1, so the final
    norm (``rms_norm_eps`` 0, weight 1) leaves it as it is; the LM head's column 0 is
    ``logits / sqrt(hidden)`` and the rest zero. So ``softmax(logits)`` is the model's
    distribution at every position."""
    import torch
    from transformers import LlamaForCausalLM

    tok = small_tokenizer()
    v = len(tok)
    assert len(logits) == v, (len(logits), v)
    cfg = _config(v, tok, rms_norm_eps=0.0)
    model = LlamaForCausalLM(cfg)
    h = cfg.hidden_size
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = h ** 0.5
        model.model.norm.weight.fill_(1.0)
        model.lm_head.weight.zero_()
        model.lm_head.weight[:, 0] = torch.tensor(list(logits), dtype=torch.float32) / h ** 0.5
    return save_checkpoint(folder, model, tok, _meta())
