"""Random-weight GGUF models the harness writes itself (for the llama.cpp runtime).

Llama architecture, sizes by name (:mod:`engines.vocab.models`), weights Q8_0 / F16 / F32
(norms always F32), seeded. The tokenizer fields come from the Llama-3 vocabulary of
:mod:`engines.vocab.core`: tokens in GPT-2's byte-to-unicode form, token types (specials are
CONTROL), BPE merges derived from the ranks (as the Hugging Face conversion of tiktoken files
derives them),
``tokenizer.ggml.pre = llama-bpe``, BOS 128000, EOS 128009 and Llama 3's chat template.

Files are cached under ``~/.cache/grammar-harness/models`` (``$GRAMMAR_HARNESS_CACHE``),
named by size, quantisation, seed and vocabulary fingerprint, written to a temporary name
and renamed, so parallel workers never read a half-written model.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from engines.vocab.models import BOS_ID, EOS_ID, ModelShape, shape
from engines.vocab.core import Vocabulary
from engines.vocab.hf import bytes_to_unicode

FORMAT_VERSION = 2
QUANTS = ("Q8_0", "F16", "F32")

LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
    "message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}"
)


def cache_root() -> Path:
    root = os.environ.get("GRAMMAR_HARNESS_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "grammar-harness"


def token_text(tok: bytes) -> str:
    enc = bytes_to_unicode()
    return "".join(enc[b] for b in tok)


def derive_merges(vocab: Vocabulary) -> list[str]:
    """BPE merges (``"left right"`` in byte-to-unicode form) from the token ranks, as the
    Hugging Face conversion of tiktoken files derives them: for each ordinary token (id =
    rank in the Llama-3 file), every split into two tokens of the vocabulary, ordered by the
    rank of the merged token, then by the ranks of the two parts."""
    ranks: dict[bytes, int] = {}
    for i, t in enumerate(vocab.tokens):
        if i not in vocab.special_ids and t:
            ranks[t] = i
    merges: list[str] = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        local = []
        for i in range(1, len(tok)):
            left, right = tok[:i], tok[i:]
            rl, rr = ranks.get(left), ranks.get(right)
            if rl is not None and rr is not None:
                local.append((rl, rr, left, right))
        local.sort()
        merges.extend(f"{token_text(lt)} {token_text(rt)}" for _, _, lt, rt in local)
    return merges


def cached_merges(vocab: Vocabulary) -> list[str]:
    path = cache_root() / "models" / f"merges-v{FORMAT_VERSION}-{vocab.name}-{vocab.fingerprint}.txt"
    if path.exists():
        return path.read_text(encoding="utf-8").split("\n")
    merges = derive_merges(vocab)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text("\n".join(merges), encoding="utf-8")
    os.replace(tmp, path)
    return merges


def model_path(size: str, quant: str, seed: int, vocab: Vocabulary) -> Path:
    return cache_root() / "models" / (
        f"llama-{size}-{quant}-seed{seed}-{vocab.name}-{vocab.fingerprint}-v{FORMAT_VERSION}.gguf")


def write_gguf(path: Path, s: ModelShape, quant: str, seed: int, vocab: Vocabulary) -> Path:
    import gguf

    if quant not in QUANTS:
        raise ValueError(f"unknown quantisation {quant!r}; known: {', '.join(QUANTS)}")
    if vocab.size != s.vocab:
        raise ValueError(f"vocabulary has {vocab.size} ids, the model's LM head {s.vocab}")
    qtype = getattr(gguf.GGMLQuantizationType, quant)
    ftype = {"Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "F16": gguf.LlamaFileType.MOSTLY_F16,
             "F32": gguf.LlamaFileType.ALL_F32}[quant]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(f"harness random llama {s.name}")
    w.add_context_length(s.context)
    w.add_embedding_length(s.hidden)
    w.add_block_count(s.layers)
    w.add_feed_forward_length(s.intermediate)
    w.add_rope_dimension_count(s.head_dim)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_layer_norm_rms_eps(s.rms_eps)
    w.add_rope_freq_base(s.rope_theta)
    w.add_vocab_size(s.vocab)
    w.add_file_type(ftype)
    # tokenizer
    specials = vocab.special_ids
    tokens = [t.decode("utf-8") if i in specials else token_text(t)
              for i, t in enumerate(vocab.tokens)]
    types = [gguf.TokenType.CONTROL if i in specials else gguf.TokenType.NORMAL
             for i in range(vocab.size)]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(cached_merges(vocab))
    w.add_bos_token_id(BOS_ID)
    w.add_eos_token_id(EOS_ID)
    w.add_add_bos_token(True)
    w.add_chat_template(LLAMA3_CHAT_TEMPLATE)
    # weights: normal(0, 0.02), norms 1
    rng = np.random.default_rng(seed)

    def weight(name: str, rows: int, cols: int) -> None:
        a = rng.standard_normal((rows, cols), dtype=np.float32)
        a *= 0.02
        if quant == "F32":
            w.add_tensor(name, a)
        elif quant == "F16":
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(a, qtype), raw_dtype=qtype)

    def norm(name: str) -> None:
        w.add_tensor(name, np.ones(s.hidden, dtype=np.float32))

    kv = s.kv_heads * s.head_dim
    weight("token_embd.weight", s.vocab, s.hidden)
    for i in range(s.layers):
        norm(f"blk.{i}.attn_norm.weight")
        weight(f"blk.{i}.attn_q.weight", s.hidden, s.hidden)
        weight(f"blk.{i}.attn_k.weight", kv, s.hidden)
        weight(f"blk.{i}.attn_v.weight", kv, s.hidden)
        weight(f"blk.{i}.attn_output.weight", s.hidden, s.hidden)
        norm(f"blk.{i}.ffn_norm.weight")
        weight(f"blk.{i}.ffn_gate.weight", s.intermediate, s.hidden)
        weight(f"blk.{i}.ffn_up.weight", s.intermediate, s.hidden)
        weight(f"blk.{i}.ffn_down.weight", s.hidden, s.intermediate)
    norm("output_norm.weight")
    if not s.tied:
        weight("output.weight", s.vocab, s.hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path


def ensure_gguf(size: str, quant: str = "Q8_0", seed: int = 0,
                vocab: Vocabulary | None = None) -> Path:
    """The cached GGUF for (size, quant, seed), written on first use."""
    if vocab is None:
        from engines.vocab.loading import load_vocabulary

        vocab = load_vocabulary("llama3")
    path = model_path(size, quant, seed, vocab)
    if not path.exists():
        write_gguf(path, shape(size), quant, seed, vocab)
    return path


if __name__ == "__main__":  # python -m engines.vocab.gguf SIZE [QUANT [SEED]]: print the path
    import sys

    args = sys.argv[1:] or ["tiny"]
    print(ensure_gguf(args[0], args[1] if len(args) > 1 else "Q8_0",
                      int(args[2]) if len(args) > 2 else 0))
