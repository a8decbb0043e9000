"""Vocabulary loading: llama3, Hugging Face tokenizer.json, tekken, qwen2, errors."""

from __future__ import annotations

import importlib.resources
import json
import random
import sys

import pytest

from engines.vocab import LLAMA3_PATTERN, VocabularyError, load_vocabulary
from engines.vocab.core import _read_tiktoken_ranks, load_llama3
from engines.vocab.hf import load_tokenizer_json
from helpers_tokenizer import build_tokenizer_json_from_tiktoken

ALICE = '{"name": "Alice", "age": 30}'
ALICE_IDS = [5018, 609, 794, 330, 62786, 498, 330, 425, 794, 220, 966, 92]

TEXTS = [
    ALICE,
    json.dumps({"name": "Zoë 東京"}, ensure_ascii=False),
    json.dumps({"name": "Zoë 東京", "emoji": "🎉🧑‍💻"}, ensure_ascii=False, indent=2),
    '{"id": 12345678901234567890, "x": -0.000123e+45}\n\n',
    '[\n\t"a\\nb", "\\u00e9",\r\n  null, true, false ]',
    "  <|eot_id|> </s> <|im_end|> literal special-token text",
    "CamelCaseHTTPServer's path/to/file.json DON'T 'll",
    "",
]


def _random_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    alphabet = 'ab Z9 0\n\t"{}[]:,\'sé東🎉-_./AbC'
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(n)]


def _non_utf8(vocab) -> int:
    n = 0
    for i, t in enumerate(vocab.tokens):
        if i in vocab.special_ids:
            continue
        try:
            t.decode("utf-8")
        except UnicodeDecodeError:
            n += 1
    return n


@pytest.fixture(scope="module")
def llama3():
    return load_llama3()


# --------------------------------------------------------------------------- llama3


def test_llama3(llama3):
    v = llama3
    assert v.size == 128_256
    assert v.encode(ALICE) == ALICE_IDS
    assert _non_utf8(v) == 1352
    assert v.stop_ids == (128009, 128001)  # <|eot_id|>, <|end_of_text|>
    assert v.eos_id == 128009
    assert v.bos_id == 128000
    assert v.special_ids == frozenset(range(128_000, 128_256))
    assert v.tokens[128009] == b"<|eot_id|>"
    assert load_vocabulary("llama3") is load_vocabulary("llama3")
    assert load_vocabulary("llama3").fingerprint == v.fingerprint


# ------------------------------------------------------------- HF tokenizer.json


@pytest.fixture(scope="module")
def llama3_hf(llama3, tmp_path_factory):
    """llama3's tiktoken ranks converted to a byte-level BPE tokenizer.json (~1 s)."""
    data = (importlib.resources.files("llama_models") / "llama3" / "tokenizer.model").read_bytes()
    ranks = _read_tiktoken_ranks(data)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    build_tokenizer_json_from_tiktoken(llama3, ranks, LLAMA3_PATTERN, str(path))
    return load_tokenizer_json(str(path))


def test_hf_round_trip_tokens(llama3, llama3_hf):
    h = llama3_hf
    assert h.name.startswith("hf:") and h.name.endswith("tokenizer.json")
    assert h.size == llama3.size == 128_256
    assert list(h.tokens) == list(llama3.tokens)
    assert h.special_ids == llama3.special_ids
    assert h.stop_ids == llama3.stop_ids
    assert h.bos_id == llama3.bos_id
    assert h.fingerprint == llama3.fingerprint


def test_hf_round_trip_encode(llama3, llama3_hf):
    assert llama3_hf.encode(ALICE) == ALICE_IDS
    for text in TEXTS + _random_texts(500):
        assert llama3_hf.encode(text) == llama3.encode(text), text


def _tiny_sentencepiece(folder, *, eos: bool = True) -> str:
    """A Llama-2-style byte-fallback BPE: <0xNN> byte tokens and '▁' for space."""
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += ["▁", "a", "b", "▁a", "ab", "▁ab", "é"]
    if not eos:
        pieces[2] = "<eot>"
    vocab = {p: i for i, p in enumerate(pieces)}
    cfg = {
        "version": "1.0",
        "added_tokens": [
            {"id": i, "content": pieces[i], "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": True}
            for i in range(3)
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        ]},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": "<unk>",
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": vocab,
            "merges": ["▁ a", "a b", "▁a b"],
        },
    }
    path = folder / "tokenizer.json"
    path.write_text(json.dumps(cfg, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_hf_sentencepiece_byte_fallback(tmp_path):
    v = load_tokenizer_json(_tiny_sentencepiece(tmp_path))
    assert v.size == 3 + 256 + 7
    assert v.tokens[3 + 0x0A] == b"\n"
    assert v.tokens[3 + 0xFF] == b"\xff"
    assert v.tokens[259] == b" "
    assert v.tokens[262] == b" a"
    assert v.tokens[264] == b" ab"
    assert v.tokens[265] == "é".encode()
    assert v.special_ids == frozenset({0, 1, 2})
    assert v.stop_ids == (2,) and v.bos_id == 1
    # Prepend '▁', then '\n' through byte fallback.
    assert v.encode("ab\n") == [264, 3 + 0x0A]


def test_hf_stop_ids_from_sibling_configs(tmp_path):
    path = _tiny_sentencepiece(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"content": "<s>"}, "bos_token": "<unk>"})
    )
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 1]}))
    v = load_tokenizer_json(path)
    assert v.stop_ids == (1, 2)
    assert v.bos_id == 0


def test_hf_no_eos(tmp_path):
    path = _tiny_sentencepiece(tmp_path, eos=False)
    with pytest.raises(VocabularyError) as e:
        load_tokenizer_json(path)
    msg = str(e.value)
    assert "\n" not in msg and path in msg and "EOS" in msg


# ------------------------------------------------------------------- tekken


def test_tekken():
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    v = load_vocabulary("tekken")
    assert v.size == 131_072
    assert v.special_ids == frozenset(range(1000))
    assert v.stop_ids == (2,) and v.bos_id == 1
    assert v.tokens[:3] == (b"<unk>", b"<s>", b"</s>")
    assert v.tokens[1000 + 65] == b"A"

    path = importlib.resources.files("mistral_common") / "data" / "tekken_240911.json"
    up = tekken.Tekkenizer.from_file(str(path))
    assert up.n_words == v.size and up.num_special_tokens == 1000
    assert up.eos_id == v.eos_id and up.bos_id == v.bos_id
    assert all(up.id_to_byte_piece(i) == v.tokens[i] for i in range(1000, v.size))
    for text in TEXTS[:5] + TEXTS[6:] + _random_texts(300, seed=1):
        assert v.encode(text) == up.encode(text, bos=False, eos=False), text


# -------------------------------------------------------------------- qwen2


def test_qwen2():
    qt = pytest.importorskip("dashscope.tokenizers.qwen_tokenizer")
    v = load_vocabulary("qwen2")
    assert v.size == 151_643 + 208 == 151_851
    assert v.special_ids == frozenset(range(151_643, 151_851))
    assert v.stop_ids == (151_645, 151_643)  # <|im_end|>, <|endoftext|>
    assert v.bos_id is None
    assert v.tokens[151_644] == b"<|im_start|>"
    assert v.tokens[151_850] == b"<|extra_204|>"

    path = importlib.resources.files("dashscope") / "resources" / "qwen.tiktoken"
    up = qt.QwenTokenizer(str(path))
    assert up.eod_id == 151_643 and up.im_end_id == 151_645
    assert all(up._tokenizer.decode_single_token_bytes(i) == v.tokens[i] for i in range(151_643))
    # dashscope NFC-normalises and turns special-token text into specials; ours
    # does neither, so compare on NFC text without special-token names.
    for text in TEXTS[:5] + TEXTS[6:] + _random_texts(300, seed=2):
        assert v.encode(text) == up.encode(text), text


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize("name,module", [("tekken", "mistral_common"), ("qwen2", "dashscope")])
def test_optional_package_missing(monkeypatch, name, module):
    from engines.vocab import extra as vocab_extra

    monkeypatch.setitem(sys.modules, module, None)  # import now fails
    loader = {"tekken": vocab_extra.load_tekken, "qwen2": vocab_extra.load_qwen2}[name]
    with pytest.raises(VocabularyError) as e:
        loader()
    msg = str(e.value)
    assert "\n" not in msg
    assert f"pip install 'grammar-harness[{name}]'" in msg


@pytest.mark.parametrize("content", ["not json at all {", '{"model": {"type": "Nope"}}', "[]"])
def test_tokenizer_file_that_does_not_load(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    for load in (load_vocabulary, load_tokenizer_json):
        with pytest.raises(VocabularyError) as e:
            load(str(path))
        msg = str(e.value)
        assert "\n" not in msg and str(path) in msg


def test_unknown_name():
    with pytest.raises(VocabularyError) as e:
        load_vocabulary("no-such-tokenizer")
    msg = str(e.value)
    assert "\n" not in msg and "no-such-tokenizer" in msg and "llama3" in msg
