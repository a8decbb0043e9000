"""Build a Hugging Face ``tokenizer.json`` from a tiktoken vocabulary (no network).

The usual "tiktoken -> HF" conversion (as in ``transformers``' TikTokenConverter):
byte-level BPE whose vocab is the GPT-2-mapped token strings and whose merges are
derived from the ranks: for each token, every split into two existing tokens is a
merge, ordered by the token's own rank (ties by the halves' ranks).
"""

from __future__ import annotations

import json

from engines.vocab import Vocabulary
from engines.vocab.hf import bytes_to_unicode


def build_tokenizer_json_from_tiktoken(
    vocab: Vocabulary, ranks: dict[bytes, int], pattern: str, out_path: str
) -> None:
    """Write ``out_path``: ``ranks`` as byte-level BPE, ``vocab``'s specials as added tokens."""
    table = bytes_to_unicode()

    def to_str(b: bytes) -> str:
        return "".join(table[x] for x in b)

    merges: list[tuple[int, int, int, bytes, bytes]] = []
    for token, rank in ranks.items():
        for k in range(1, len(token)):
            left, right = token[:k], token[k:]
            rl, rr = ranks.get(left), ranks.get(right)
            if rl is not None and rr is not None:
                merges.append((rank, rl, rr, left, right))
    merges.sort()

    cfg = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": vocab.tokens[i].decode("utf-8"),
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i in sorted(vocab.special_ids)
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": pattern},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": True,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": {to_str(t): r for t, r in ranks.items()},
            "merges": [f"{to_str(a)} {to_str(b)}" for _, _, _, a, b in merges],
        },
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, ensure_ascii=False)
