"""Vocabularies read from optional packages, in place (nothing is copied or downloaded).

- ``tekken``: Mistral's ``tekken_240911.json`` from ``mistral-common``
  (131,072 ids: 1,000 specials, then ranks at ``id = rank + 1000``), built the way
  ``mistral_common``'s ``Tekkenizer.from_file`` builds it.
- ``qwen2``: Qwen's ``qwen.tiktoken`` from ``dashscope`` (151,643 ranks, then
  208 specials from 151643), as in ``dashscope.tokenizers.qwen_tokenizer``.

Both encoders are plain tiktoken over the ranks: special-token text in the input
is ordinary text, and (unlike dashscope's ``QwenTokenizer.encode``) the text is
not NFC-normalised, so the ids always spell exactly the input bytes.
"""

from __future__ import annotations

import base64
import importlib.resources
import json

from engines.vocab.core import Vocabulary, VocabularyError, _read_tiktoken_ranks, _tiktoken_vocab

TEKKEN_FILE = "tekken_240911.json"

#: Tekken files of version <= v7 carry no ``special_tokens`` list; these are the
#: names ``mistral_common`` (``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``) gives ids 0..19.
TEKKEN_DEFAULT_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)

#: Qwen's pre-tokenizer regex (single digits, unlike Llama-3's ``\p{N}{1,3}``).
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>") + tuple(
    f"<|extra_{i}|>" for i in range(205)
)
QWEN_SPECIAL_START = 151643


def _missing(name: str, extra: str, package: str, detail: str = "") -> VocabularyError:
    msg = (
        f"tokenizer {name!r} needs the optional extra: "
        f"pip install 'grammar-harness[{extra}]' ({package})"
    )
    return VocabularyError(msg + (f"; {detail}" if detail else ""))


def _read_resource(package: str, *parts: str) -> bytes:
    return importlib.resources.files(package).joinpath(*parts).read_bytes()


def load_tekken() -> Vocabulary:
    """Mistral's tekken vocabulary (``mistral_common/data/tekken_240911.json``)."""
    try:
        data = _read_resource("mistral_common", "data", TEKKEN_FILE)
    except ModuleNotFoundError:
        raise _missing("tekken", "tekken", "mistral-common") from None
    except (FileNotFoundError, OSError) as e:
        raise _missing(
            "tekken", "tekken", "mistral-common",
            f"mistral_common/data/{TEKKEN_FILE} is not readable ({type(e).__name__})",
        ) from None
    try:
        model = json.loads(data)
        config = model["config"]
        pattern = config["pattern"]
        vocab_size = int(config["default_vocab_size"])
        n_special = int(config["default_num_special_tokens"])
        entries = model["vocab"]
        # Only the first (vocab_size - n_special) ranks are used (as Tekkenizer does).
        n_ranks = vocab_size - n_special
        if len(entries) < n_ranks:
            raise ValueError(f"{len(entries)} vocab entries < {n_ranks} needed")
        ranks: dict[bytes, int] = {}
        for i, entry in enumerate(entries[:n_ranks]):
            if entry["rank"] != i:
                raise ValueError(f"vocab entry {i} has rank {entry['rank']}")
            ranks[base64.b64decode(entry["token_bytes"])] = i
        if len(ranks) != n_ranks:
            raise ValueError("duplicate token bytes")
        listed = model.get("special_tokens")
        if listed is not None:
            names = {int(t["rank"]): t["token_str"] for t in listed}
        else:
            names = dict(enumerate(TEKKEN_DEFAULT_SPECIALS))
    except (ValueError, KeyError, TypeError) as e:
        raise VocabularyError(
            f"tokenizer 'tekken': mistral_common/data/{TEKKEN_FILE} is not a tekken file "
            f"this harness understands ({type(e).__name__}: {e})"
        ) from None
    specials = [(names.get(i, f"<SPECIAL_{i}>"), i) for i in range(n_special)]
    return _tiktoken_vocab(
        "tekken", ranks, pattern, specials,
        stop_names=("</s>",), bos_name="<s>", n_ids=vocab_size, rank_offset=n_special,
    )


def load_qwen2() -> Vocabulary:
    """Qwen's vocabulary (``dashscope/resources/qwen.tiktoken``)."""
    try:
        data = _read_resource("dashscope", "resources", "qwen.tiktoken")
    except ModuleNotFoundError:
        raise _missing("qwen2", "qwen2", "dashscope") from None
    except (FileNotFoundError, OSError) as e:
        raise _missing(
            "qwen2", "qwen2", "dashscope",
            f"dashscope/resources/qwen.tiktoken is not readable ({type(e).__name__})",
        ) from None
    try:
        ranks = _read_tiktoken_ranks(data)
    except ValueError as e:
        raise VocabularyError(
            f"tokenizer 'qwen2': dashscope/resources/qwen.tiktoken is not a tiktoken file ({e})"
        ) from None
    if max(ranks.values(), default=-1) >= QWEN_SPECIAL_START:
        raise VocabularyError(
            f"tokenizer 'qwen2': dashscope/resources/qwen.tiktoken has ranks at or above "
            f"{QWEN_SPECIAL_START}, where Qwen's special tokens start"
        )
    specials = [(s, QWEN_SPECIAL_START + i) for i, s in enumerate(QWEN_SPECIALS)]
    return _tiktoken_vocab(
        "qwen2", ranks, QWEN_PATTERN, specials,
        stop_names=("<|im_end|>", "<|endoftext|>"), bos_name=None,
    )
