"""The tokenizer vocabulary: raw bytes per token id, and the files made from it.

This package imports nothing else of the project: engine adapters depend on it and on
their protocol (:mod:`engines.protocol`) only.

``core``     :class:`Vocabulary` (bytes per id, specials, stop ids, encode)
``loading``  :func:`load_vocabulary` by name (``llama3``, ``tekken``, ``qwen2``) or path
``hf``       Hugging Face ``tokenizer.json`` reader
``extra``    tekken and qwen2 (optional extras)
``models``   model shapes by name (``micro`` … ``8b``) for random-weight models
``gguf``     a GGUF file of the vocabulary (and a random-weight model) for llama.cpp
"""

from engines.vocab.core import LLAMA3_PATTERN, Vocabulary, VocabularyError
from engines.vocab.loading import known_tokenizers, load_vocabulary

__all__ = ["LLAMA3_PATTERN", "Vocabulary", "VocabularyError", "known_tokenizers",
           "load_vocabulary"]
