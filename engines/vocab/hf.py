"""Hugging Face ``tokenizer.json`` files as a :class:`~engines.vocab.core.Vocabulary`.

Token strings are turned back into the raw bytes the model emits:

- byte-level BPE (GPT-2 style ``ByteLevel`` pre-tokenizer / decoder): each
  character goes through the inverse of GPT-2's ``bytes_to_unicode`` table;
- sentencepiece-style vocabularies (``byte_fallback``, ``Metaspace``, ``ByteFallback``
  decoder): ``<0xNN>`` is the single byte ``NN`` and ``▁`` is a space;
- anything else: the UTF-8 of the token string.

Added tokens keep the UTF-8 of their content (that is how they match raw text);
those marked ``special`` are non-matchable, as are ids no token covers.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any

from engines.vocab.core import Vocabulary, VocabularyError

#: EOS names tried, in this order, when no sibling config names one.
COMMON_EOS_NAMES = ("<|eot_id|>", "<|end_of_text|>", "</s>", "<|endoftext|>", "<|im_end|>", "<eos>")
COMMON_BOS_NAMES = ("<|begin_of_text|>", "<s>", "<bos>")

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by byte-level BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


@functools.lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def _components(node: Any) -> list[dict]:
    """A pre-tokenizer / decoder / normalizer config flattened (``Sequence`` unrolled)."""
    if not isinstance(node, dict):
        return []
    out = [node]
    for key in ("pretokenizers", "decoders", "normalizers"):
        for sub in node.get(key) or []:
            out.extend(_components(sub))
    return out


def _token_style(cfg: dict) -> tuple[str, str]:
    """``("bytelevel" | "sentencepiece" | "utf8", metaspace replacement char)``."""
    parts = [
        *_components(cfg.get("pre_tokenizer")),
        *_components(cfg.get("decoder")),
        *_components(cfg.get("normalizer")),
    ]
    types = {p.get("type") for p in parts}
    if "ByteLevel" in types:
        return "bytelevel", "▁"
    replacement = "▁"
    for p in parts:
        if p.get("type") == "Metaspace" and p.get("replacement"):
            replacement = p["replacement"]
    model = cfg.get("model") or {}
    if (
        model.get("byte_fallback")
        or types & {"Metaspace", "ByteFallback"}
        or any(p.get("type") == "Replace" and p.get("content") == "▁" for p in parts)
    ):
        return "sentencepiece", replacement
    return "utf8", replacement


def _piece_bytes(piece: str, style: str, replacement: str) -> bytes:
    if style == "bytelevel":
        table = _unicode_to_byte()
        # A character outside the table (a hand-added token) keeps its UTF-8.
        return b"".join(
            bytes([table[c]]) if c in table else c.encode("utf-8") for c in piece
        )
    if style == "sentencepiece":
        m = _BYTE_TOKEN.fullmatch(piece)
        if m:
            return bytes([int(m.group(1), 16)])
        return piece.replace(replacement, " ").encode("utf-8")
    return piece.encode("utf-8")


def _read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _token_name(value: Any) -> str | None:
    """``"</s>"`` or ``{"content": "</s>", ...}`` (tokenizer_config.json styles)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _stop_and_bos(path: str, vocab: dict[str, int], size: int) -> tuple[tuple[int, ...], int | None]:
    folder = os.path.dirname(os.path.abspath(path))
    tok_cfg = _read_json(os.path.join(folder, "tokenizer_config.json")) or {}
    gen_cfg = _read_json(os.path.join(folder, "generation_config.json")) or {}

    stops: list[int] = []

    def add(i: Any) -> None:
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < size and i not in stops:
            stops.append(i)

    eos_name = _token_name(tok_cfg.get("eos_token"))
    if eos_name is not None and eos_name in vocab:
        add(vocab[eos_name])
    gen_eos = gen_cfg.get("eos_token_id")
    for i in gen_eos if isinstance(gen_eos, list) else [gen_eos]:
        add(i)
    if not stops:
        for name in COMMON_EOS_NAMES:
            if name in vocab:
                add(vocab[name])

    bos_id = None
    bos_name = _token_name(tok_cfg.get("bos_token"))
    if bos_name is not None and bos_name in vocab:
        bos_id = vocab[bos_name]
    elif isinstance(gen_cfg.get("bos_token_id"), int) and 0 <= gen_cfg["bos_token_id"] < size:
        bos_id = gen_cfg["bos_token_id"]
    else:
        bos_id = next((vocab[n] for n in COMMON_BOS_NAMES if n in vocab), None)
    return tuple(stops), bos_id


def load_tokenizer_json(path: str) -> Vocabulary:
    """Load a Hugging Face ``tokenizer.json``; raises :class:`VocabularyError` on failure."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - a core dependency
        raise VocabularyError(
            f"tokenizer {path!r}: the 'tokenizers' package is not installed (pip install tokenizers)"
        ) from None
    try:
        tok = Tokenizer.from_file(path)
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
        if not isinstance(cfg, dict):
            raise ValueError("top level is not a JSON object")
    except Exception as e:  # noqa: BLE001 - any failure is "does not load"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise VocabularyError(
            f"tokenizer {path!r}: cannot load as a Hugging Face tokenizer.json "
            f"({type(e).__name__}: {first})"
        ) from None

    vocab = tok.get_vocab(with_added_tokens=True)
    if not vocab:
        raise VocabularyError(f"tokenizer {path!r}: the tokenizer.json has an empty vocabulary")
    size = max(vocab.values()) + 1
    added = tok.get_added_tokens_decoder()  # id -> AddedToken

    style, replacement = _token_style(cfg)
    tokens: list[bytes] = [b""] * size
    covered = [False] * size
    for piece, i in vocab.items():
        if i in added:
            continue
        tokens[i] = _piece_bytes(piece, style, replacement)
        covered[i] = True
    special: set[int] = set()
    for i, at in added.items():
        if not 0 <= i < size:
            continue
        tokens[i] = at.content.encode("utf-8")
        covered[i] = True
        if at.special:
            special.add(i)
    special.update(i for i in range(size) if not covered[i])

    stop_ids, bos_id = _stop_and_bos(path, vocab, size)
    if not stop_ids:
        raise VocabularyError(
            f"tokenizer {path!r}: no EOS token found (no eos_token in a sibling "
            "tokenizer_config.json / generation_config.json and none of "
            f"{', '.join(COMMON_EOS_NAMES)} in the vocabulary)"
        )
    # Stop tokens are never matched as text, whatever the file says.
    special.update(stop_ids)

    # Special-token text in the input is ordinary text (as with the tiktoken vocabularies).
    try:
        tok.encode_special_tokens = True
    except AttributeError:  # pragma: no cover - tokenizers < 0.19
        pass

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False).ids

    return Vocabulary(
        name=f"hf:{path}",
        tokens=tuple(tokens),  # a tuple stays out of the garbage collector
        special_ids=frozenset(special),
        stop_ids=stop_ids,
        bos_id=bos_id,
        encoder=encode,
    )


def load_model_folder(folder: str) -> Vocabulary:
    """The vocabulary of a Hugging Face model folder (a checkpoint, ``--model PATH``): the
    bytes of its ``tokenizer.json`` (:func:`load_tokenizer_json`, stop and BOS ids from the
    sibling ``tokenizer_config.json`` / ``generation_config.json``, and ``config.json``'s
    ``eos_token_id`` among the stops), padded with
    non-matchable ids up to ``config.json``'s ``vocab_size`` where the model's logits are
    wider than the tokenizer, and the folder's tokenizer as transformers loads it
    (``AutoTokenizer``, local files only) in ``hf_tokenizer``, for the engines' own
    constructors. Raises :class:`VocabularyError` (one line naming the folder)."""
    import dataclasses

    path = os.path.join(folder, "tokenizer.json")
    if not os.path.isfile(path):
        raise VocabularyError(f"tokenizer {folder!r}: a folder without tokenizer.json")
    vocab = load_tokenizer_json(path)
    config = _read_json(os.path.join(folder, "config.json")) or {}
    width = config.get("vocab_size")
    tokens, special = list(vocab.tokens), set(vocab.special_ids)
    if isinstance(width, int) and width > len(tokens):
        special.update(range(len(tokens), width))
        tokens += [b""] * (width - len(tokens))
    # the model's own stop ids (config.json's eos_token_id, one or a list) stop it too
    stops = list(vocab.stop_ids)
    eos = config.get("eos_token_id")
    for i in eos if isinstance(eos, list) else [eos]:
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(tokens) \
                and i not in stops:
            stops.append(i)
            special.add(i)
    try:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - any failure is "does not load"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise VocabularyError(f"tokenizer {folder!r}: transformers cannot load the folder's "
                              f"tokenizer ({type(e).__name__}: {first[:200]})") from None
    return dataclasses.replace(vocab, name=f"hf:{folder}", tokens=tuple(tokens),
                               special_ids=frozenset(special), stop_ids=tuple(stops),
                               hf_tokenizer=hf)
