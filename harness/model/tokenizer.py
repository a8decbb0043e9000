"""A byte-level BPE tokenizer trained on the corpus text, saved the Hugging Face way.

The model built here has its own tokenizer (the issue allows it, and a 128k-row LM head
would dwarf a model that trains in minutes on two cores). It is a ``tokenizers`` byte-level
BPE with three special tokens (the :class:`~harness.model.data.PromptFormat` markers) and a
pad token, wrapped as a ``PreTrainedTokenizerFast`` so that ``AutoTokenizer``, vLLM and each
engine's own Hugging Face constructor load it as they load any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from harness.model.data import PromptFormat

__all__ = ["SPECIALS", "train_tokenizer"]

PAD = "<|pad|>"


def SPECIALS(fmt: PromptFormat) -> list[str]:  # noqa: N802 - a constant of the format
    """The special tokens, in id order from 0: pad, bos, eos, answer."""
    return [PAD, fmt.bos, fmt.eos, fmt.answer]


def train_tokenizer(texts: Iterable[str], vocab_size: int, fmt: PromptFormat,
                    min_frequency: int = 2) -> Any:
    """Train a byte-level BPE of ``vocab_size`` ids (specials included) on ``texts``;
    returns a ``transformers.PreTrainedTokenizerFast``. Deterministic for the same texts
    in the same order."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS(fmt),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=fmt.bos, eos_token=fmt.eos, pad_token=PAD,
        additional_special_tokens=[fmt.answer], clean_up_tokenization_spaces=False)


def save_tokenizer(tokenizer: Any, folder: Path) -> None:
    """``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    tokenizer.save_pretrained(str(folder))
