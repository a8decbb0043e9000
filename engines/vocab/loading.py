"""Load a vocabulary by name or ``tokenizer.json`` path (the names are in :mod:`engines.vocab`)."""

from __future__ import annotations

import functools
import os

from engines.vocab.core import Vocabulary, VocabularyError, load_llama3


def load_hf_tokenizer_json(path: str) -> Vocabulary:
    """A Hugging Face ``tokenizer.json`` (byte-level BPE or byte-fallback models)."""
    from engines.vocab.hf import load_tokenizer_json

    return load_tokenizer_json(path)


def load_tekken() -> Vocabulary:
    from engines.vocab.extra import load_tekken as _load

    return _load()


def load_qwen2() -> Vocabulary:
    from engines.vocab.extra import load_qwen2 as _load

    return _load()


_NAMED = {"llama3": load_llama3, "tekken": load_tekken, "qwen2": load_qwen2}


def known_tokenizers() -> list[str]:
    return sorted(_NAMED)


@functools.lru_cache(maxsize=4)
def load_vocabulary(spec: str = "llama3") -> Vocabulary:
    """Load a vocabulary by name, ``tokenizer.json`` path or model folder (one holding
    ``tokenizer.json``: :func:`engines.vocab.hf.load_model_folder`); memoised per process.

    Raises :class:`VocabularyError` with a one-line message on failure.
    """
    if spec in _NAMED:
        return _NAMED[spec]()
    if os.path.isdir(spec):
        from engines.vocab.hf import load_model_folder

        return load_model_folder(spec)
    if os.path.exists(spec):
        try:
            return load_hf_tokenizer_json(spec)
        except VocabularyError:
            raise
        except Exception as e:  # a file that is not a tokenizer
            raise VocabularyError(
                f"tokenizer {spec!r}: cannot load as a Hugging Face tokenizer.json "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
            ) from None
    raise VocabularyError(
        f"tokenizer {spec!r}: not a known name ({', '.join(known_tokenizers())}) "
        "nor an existing tokenizer.json path or model folder"
    )
