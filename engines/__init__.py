"""Engine adapters: one module per engine behind one protocol (:mod:`engines.base`).

Every quirk of an engine lives in its adapter; nothing outside this package knows which
engine it holds. Adapters depend only on their protocol and on :mod:`harness.vocab`.
:data:`ADAPTERS` declares the built-in rows; :mod:`harness.registry` loads them (lazily:
listing them imports no engine) beside third-party adapters registered through the entry
point group ``grammar_harness.engines``.
"""

#: ``--engine`` name → ``"module:Class"`` of its adapter, in the order ``harness engines``
#: lists them. Hidden rows (``EngineAdapter.hidden``) are left out of ``--engine all``.
ADAPTERS: dict[str, str] = {
    "xgrammar": "engines.xgrammar_engine:XGrammarEngine",
    "llguidance": "engines.llguidance_engine:LLGuidanceEngine",
    "outlines": "engines.outlines_engine:OutlinesEngine",
    "llamacpp-gbnf": "engines.llamacpp_gbnf_engine:LlamaCppGbnfEngine",
    "vllm": "engines.vllm_engine:VllmEngine",
    "reference": "engines.reference:ReferenceEngine",
    "null": "engines.testing:NullEngine",
    "faulty": "engines.testing:FaultyEngine",
}

#: The row whose masks are exact by construction: the oracle of the token-level suites,
#: built with :data:`ORACLE_OPTIONS` (unbounded whitespace: its default caps a whitespace
#: gap at 32 characters, which would make every longer whitespace token look like an
#: engine's error).
ORACLE = "reference"
ORACLE_OPTIONS: dict = {"max_ws": None}
