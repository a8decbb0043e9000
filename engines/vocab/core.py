"""Tokenizer vocabularies as the engines need them: raw bytes per token id.

A :class:`Vocabulary` is what every engine adapter is built from. It is loaded
once per worker process (:func:`engines.vocab.load_vocabulary` is memoised) and never per
schema.

Specs accepted by :func:`engines.vocab.load_vocabulary`:

- ``llama3`` (default): Meta's Llama-3 tiktoken file shipped in the
  ``llama-models`` package (128,256 ids; 256 specials from 128000).
- a path to a Hugging Face ``tokenizer.json`` (through ``tokenizers``).
- a model folder (``config.json`` + ``tokenizer.json``, ``--model PATH``): its
  ``tokenizer.json``'s bytes, padded to ``config.json``'s ``vocab_size`` (the logits'
  width), with the folder's Hugging Face tokenizer attached (``hf_tokenizer``).
- ``tekken``: Mistral's tekken vocabulary from ``mistral-common`` (optional extra).
- ``qwen2``: Qwen's ``qwen.tiktoken`` from ``dashscope`` (optional extra).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.resources
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

#: The Llama-3 pre-tokenizer regex (tiktoken syntax), as in ``llama_models``.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

LLAMA3_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
]


class VocabularyError(Exception):
    """A tokenizer spec that cannot be loaded; the message says what to do."""


@dataclass(frozen=True)
class Vocabulary:
    """A tokenizer vocabulary reduced to what constrained decoding needs.

    ``tokens[i]`` is the raw byte string of token ``i``. Special tokens hold their
    name (e.g. ``b"<|eot_id|>"``) but are listed in ``special_ids``: engines must
    treat them as non-matchable (never allowed by the grammar), except the stop
    tokens, which the engines allow exactly when the grammar may end.

    ``hf_tokenizer`` is the Hugging Face tokenizer (``PreTrainedTokenizerFast``) of a
    vocabulary loaded from a model folder (``--model PATH``), None otherwise: adapters whose
    engine has a constructor from a Hugging Face tokenizer use it when it is there (as
    vLLM builds them), the raw bytes otherwise. It is not compared and not fingerprinted:
    the vocabulary is its bytes and ids.
    """

    name: str
    tokens: Sequence[bytes]
    special_ids: frozenset[int]
    stop_ids: tuple[int, ...]
    bos_id: int | None
    encoder: Callable[[str], list[int]] = field(repr=False, compare=False)
    hf_tokenizer: Any = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """Number of token ids (the bitmask covers ids ``0 .. size-1``)."""
        return len(self.tokens)

    @property
    def eos_id(self) -> int:
        """The primary stop token (the one given to engines that take only one)."""
        return self.stop_ids[0]

    def encode(self, text: str) -> list[int]:
        """Canonical tokenisation of ``text``, with no special tokens added."""
        return self.encoder(text)

    @functools.cached_property
    def fingerprint(self) -> str:
        """sha256 over all token bytes and the special/stop ids (first 16 hex digits)."""
        h = hashlib.sha256()
        for t in self.tokens:
            h.update(len(t).to_bytes(4, "little"))
            h.update(t)
        h.update(repr(sorted(self.special_ids)).encode())
        h.update(repr(self.stop_ids).encode())
        return h.hexdigest()[:16]

    def describe(self) -> dict:
        """Metadata stored with every run."""
        return {
            "name": self.name,
            "size": self.size,
            "stop_ids": list(self.stop_ids),
            "bos_id": self.bos_id,
            "n_special": len(self.special_ids),
            "fingerprint": self.fingerprint,
            # engines built through their constructors from the Hugging Face tokenizer
            "hf_tokenizer": self.hf_tokenizer is not None,
        }


def _tiktoken_vocab(
    name: str,
    ranks: dict[bytes, int],
    pattern: str,
    specials: list[tuple[str, int]],
    stop_names: Sequence[str],
    bos_name: str | None,
    n_ids: int | None = None,
    rank_offset: int = 0,
) -> Vocabulary:
    """A vocabulary whose ordinary tokens are tiktoken ``ranks`` at ids ``rank + rank_offset``.

    ``specials`` are ``(name, id)`` pairs in id space. Special-token text in the
    input is always encoded as ordinary text.
    """
    import tiktoken

    enc = tiktoken.Encoding(
        name=name,
        pat_str=pattern,
        mergeable_ranks=ranks,
        # With an offset the special ids live below the ranks' id space, where
        # tiktoken cannot hold them; they are never produced by encode() anyway.
        special_tokens=dict(specials) if rank_offset == 0 else {},
    )
    size = (
        n_ids
        if n_ids is not None
        else max([*(r + rank_offset for r in ranks.values()), *(i for _, i in specials)]) + 1
    )
    tokens: list[bytes] = [b""] * size
    for tok, rank in ranks.items():
        tokens[rank + rank_offset] = tok
    special_ids = set()
    by_name = {}
    for sname, sid in specials:
        tokens[sid] = sname.encode()
        special_ids.add(sid)
        by_name[sname] = sid
    # Ids that no rank or special covers (padding) are non-matchable too.
    for i, t in enumerate(tokens):
        if not t and i not in special_ids:
            special_ids.add(i)
    stop_ids = tuple(by_name[s] for s in stop_names)
    encode: Callable[[str], list[int]]
    if rank_offset == 0:
        encode = functools.partial(enc.encode, disallowed_special=())
    else:
        def encode(text: str) -> list[int]:
            return [t + rank_offset for t in enc.encode(text, disallowed_special=())]
    return Vocabulary(
        name=name,
        tokens=tuple(tokens),  # a tuple stays out of the garbage collector
        special_ids=frozenset(special_ids),
        stop_ids=stop_ids,
        bos_id=by_name.get(bos_name) if bos_name else None,
        encoder=encode,
    )


def _read_tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    ranks = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        tok, rank = line.split()
        ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def load_llama3() -> Vocabulary:
    """Meta's Llama-3 vocabulary from the ``llama-models`` package (read in place)."""
    try:
        path = importlib.resources.files("llama_models") / "llama3" / "tokenizer.model"
        data = path.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise VocabularyError(
            f"tokenizer 'llama3': cannot read llama_models/llama3/tokenizer.model ({e}); "
            "install it with: pip install llama-models==0.3.0"
        ) from None
    ranks = _read_tiktoken_ranks(data)
    n = len(ranks)
    names = LLAMA3_SPECIALS + [
        f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(LLAMA3_SPECIALS))
    ]
    specials = [(s, n + i) for i, s in enumerate(names)]
    return _tiktoken_vocab(
        "llama3", ranks, LLAMA3_PATTERN, specials,
        stop_names=("<|eot_id|>", "<|end_of_text|>"), bos_name="<|begin_of_text|>",
    )
