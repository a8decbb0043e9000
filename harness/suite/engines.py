"""The suite API's engine-side helpers: bitmasks, vocabularies, tool-call formats, reasoning requests, exact token bytes, batch filling. Imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "allocate_bitmask": "engines.bitmask:allocate_bitmask",
    "BatchFiller": "engines.batch:BatchFiller",
    "bitmask_words": "engines.bitmask:bitmask_words",
    "BOS_ID": "engines.vocab.models:BOS_ID",
    "byte_token_ids": "engines.token_bytes:byte_token_ids",
    "cache_root": "engines.vocab.gguf:cache_root",
    "default_fill_threads": "engines.batch:default_fill_threads",
    "encode_exact": "engines.token_bytes:encode_exact",
    "ensure_gguf": "engines.vocab.gguf:ensure_gguf",
    "EOS_ID": "engines.vocab.models:EOS_ID",
    "EXTERNAL_SERVER": "engines:EXTERNAL_SERVER",
    "FORMATS": "engines.tool_calls:FORMATS",
    "load_vocabulary": "engines.vocab:load_vocabulary",
    "ModelShape": "engines.vocab.models:ModelShape",
    "ORACLE": "engines:ORACLE",
    "ReasoningSpec": "engines.reasoning:ReasoningSpec",
    "shape": "engines.vocab.models:shape",
    "ToolSpec": "engines.tool_calls:ToolSpec",
    "xgrammar_structural_tag": "engines.reasoning:xgrammar_structural_tag",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from engines import EXTERNAL_SERVER, ORACLE
    from engines.batch import BatchFiller, default_fill_threads
    from engines.bitmask import allocate_bitmask, bitmask_words
    from engines.reasoning import ReasoningSpec, xgrammar_structural_tag
    from engines.token_bytes import byte_token_ids, encode_exact
    from engines.tool_calls import FORMATS, ToolSpec
    from engines.vocab import load_vocabulary
    from engines.vocab.gguf import cache_root, ensure_gguf
    from engines.vocab.models import BOS_ID, EOS_ID, ModelShape, shape
