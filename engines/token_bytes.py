"""Bytes and the tokens that spell them exactly.

Tokens are raw bytes, and a token boundary may split a UTF-8 character, so some texts an
engine forces (jump-forward) or asks its tokenizer for (llguidance) are not valid UTF-8.
These helpers tokenise such bytes exactly and trim a trailing partial character.
"""

from __future__ import annotations

from typing import Callable

from engines.vocab import Vocabulary

__all__ = ["byte_token_ids", "encode_exact", "utf8_complete"]


def encode_exact(vocab: Vocabulary, data: bytes,
                 missing_byte: Callable[[int], list[int]] | None = None) -> list[int]:
    """Token ids whose bytes are exactly ``data``: UTF-8 runs by ``vocab.encode`` (the
    canonical tokenisation), bytes that are not valid UTF-8 (a character split by a token
    boundary) as their single-byte tokens (:func:`byte_token_ids`).

    A byte without a single-byte token raises KeyError, unless ``missing_byte`` says which
    ids stand for it (llguidance's tokenizer then encodes U+FFFD)."""
    encode = vocab.encode
    try:
        return encode(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    byte_ids = byte_token_ids(vocab)
    out: list[int] = []
    pos = 0
    while pos < len(data):
        try:
            out += encode(data[pos:].decode("utf-8"))
            break
        except UnicodeDecodeError as e:
            if e.start:
                out += encode(data[pos:pos + e.start].decode("utf-8"))
            for b in data[pos + e.start:pos + e.end]:
                if missing_byte is None or b in byte_ids:
                    out.append(byte_ids[b])
                else:
                    out += missing_byte(b)
            pos += e.end
    return out


_BYTE_TOKEN_IDS: dict[str, dict[int, int]] = {}


def byte_token_ids(vocab: Vocabulary) -> dict[int, int]:
    """Byte value → id of its single-byte (non-special) token (Llama 3 has one for every
    byte value; the lowest id where several spell the same byte), computed once per
    vocabulary."""
    ids = _BYTE_TOKEN_IDS.get(vocab.fingerprint)
    if ids is None:
        ids = {}
        for i, t in enumerate(vocab.tokens):
            if len(t) == 1 and i not in vocab.special_ids:
                ids.setdefault(t[0], i)
        _BYTE_TOKEN_IDS[vocab.fingerprint] = ids
    return ids


def utf8_complete(data: bytes) -> bytes:
    """``data`` less a trailing partial UTF-8 character (a lead byte and fewer
    continuation bytes than it announces)."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4 if b & 0xF8 == 0xF0 else 1
        return data[:-back] if need > back else data
    return data
