"""The suite API's serving: OpenAI-compatible servers, the client that talks to them, the launcher that starts them and the prompts sent. Imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "ASK": "harness.measure.serving.prompt:ASK",
    "build_prompt": "harness.measure.serving.prompt:build_prompt",
    "Constraint": "harness.measure.serving.openai_client:Constraint",
    "HOST": "harness.measure.serving.launcher:HOST",
    "OpenAIClient": "harness.measure.serving.openai_client:OpenAIClient",
    "schema_excerpt": "harness.measure.serving.prompt:schema_excerpt",
    "server_for": "harness.measure.serving.openai_client:server_for",
    "server_labels": "harness.measure.serving.openai_client:server_labels",
    "ServerNotReady": "harness.measure.serving.launcher:ServerNotReady",
    "ServerProcess": "harness.measure.serving.launcher:ServerProcess",
    "split_server": "harness.measure.serving.openai_client:split_server",
    "SYSTEM": "harness.measure.serving.prompt:SYSTEM",
    "takes_seeds": "harness.measure.serving.openai_client:takes_seeds",
    "verdict": "harness.measure.serving.openai_client:verdict",
    "write_hf_model": "harness.measure.serving.vllm_offline:write_hf_model",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.measure.serving.launcher import HOST, ServerNotReady, ServerProcess
    from harness.measure.serving.openai_client import (Constraint, OpenAIClient, server_for,
        server_labels, split_server, takes_seeds, verdict)
    from harness.measure.serving.prompt import ASK, SYSTEM, build_prompt, schema_excerpt
    from harness.measure.serving.vllm_offline import write_hf_model
