"""The row ``external``: an OpenAI-compatible server the user runs (``--server URL``).

The harness neither starts nor stops it and cannot tell which engine it wraps; the request
dialect comes from ``dialect+URL`` or from ``/v1/models``. Always "installed": the row is a
declaration only and speaks no HTTP itself. The suites send its requests through the
harness's one OpenAI-compatible client (``harness.measure.serving.openai_client``, standard
library only), which reads this row's ``dialect`` and ``serving_engine``; so the adapter
imports nothing of ``harness/`` and the data path stays one-way.
"""

from __future__ import annotations

from engines.protocol import CompiledGrammar, CompileError, EngineAdapter


class ExternalServer(EngineAdapter):
    """A server given by URL (serve and e2e suites)."""

    name = "external"
    serving_engine = True
    dialect = None
    hidden = True
    hidden_reason = "a server you run: --server URL (serve and e2e suites)"

    def compile(self, schema_text: str) -> CompiledGrammar:
        raise CompileError("a server given by URL has no standalone matcher")
