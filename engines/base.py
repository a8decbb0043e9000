"""A face of the engine protocol for code written against ``engines.base``.

The protocol lives in modules named by what they hold; import from them:

- :mod:`engines.protocol`: ``EngineAdapter``, ``CompiledGrammar``, ``Matcher``,
  ``CompileError``, ``EngineUnavailable``, ``CachedCompiler``, ``one_line``,
  ``check_rollback``;
- :mod:`engines.matcher`: ``TemplateMatcher`` (the dead flag, the stop-id commit and the
  bitmask binding the built-in adapters share) and ``BoundMatcher``;
- :mod:`engines.batch`: ``BatchFiller``, ``default_fill_threads``;
- :mod:`engines.bitmask`: ``bitmask_words``, ``allocate_bitmask``, ``check_bitmask``;
- :mod:`engines.token_bytes`: ``encode_exact``, ``byte_token_ids``, ``utf8_complete``;
- :mod:`engines.tool_calls`: ``ToolSpec``, ``ToolFormat``, ``FORMATS``, ``CHOICES``.

This module re-exports the names it held before the split (third-party adapters import
them from here) and holds nothing else.
"""

from engines.batch import BatchFiller, default_fill_threads
from engines.bitmask import allocate_bitmask, bitmask_words, check_bitmask
from engines.protocol import (
    CachedCompiler,
    CompiledGrammar,
    CompileError,
    EngineAdapter,
    EngineUnavailable,
    Matcher,
    check_rollback,
    one_line,
)
from engines.token_bytes import byte_token_ids, encode_exact, utf8_complete
from engines.tool_calls import CHOICES, FORMATS, ToolFormat, ToolSpec

__all__ = ["BatchFiller", "CHOICES", "CachedCompiler", "CompileError", "CompiledGrammar",
           "EngineAdapter", "EngineUnavailable", "FORMATS", "ToolFormat", "ToolSpec",
           "Matcher", "allocate_bitmask", "bitmask_words", "check_bitmask", "check_rollback",
           "default_fill_threads", "one_line", "byte_token_ids", "encode_exact", "utf8_complete"]
