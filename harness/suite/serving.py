"""The suite API's serving: OpenAI-compatible servers, the one client that talks to them
(with the one event-stream parser), the launcher that starts them, the servers of a run's
engine rows and the prompts sent, and the model they run (a size's folder written here, or
a local checkpoint given as ``--model PATH``). Imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "ASK": "harness.measure.serving.prompt:ASK",
    "build_prompt": "harness.measure.serving.prompt:build_prompt",
    "CheckpointError": "harness.model.checkpoint:CheckpointError",
    "load_checkpoint": "harness.model.checkpoint:load_checkpoint",
    "looks_like_checkpoint": "harness.model.checkpoint:looks_like_checkpoint",
    "model_folder": "harness.measure.serving.vllm_offline:model_folder",
    "model_prompt": "harness.measure.serving.prompt:model_prompt",
    "Completion": "harness.measure.serving.openai_client:Completion",
    "Constraint": "harness.measure.serving.openai_client:Constraint",
    "HOST": "harness.measure.serving.launcher:HOST",
    "OpenAIClient": "harness.measure.serving.openai_client:OpenAIClient",
    "RowServers": "harness.measure.serving.servers:RowServers",
    "schema_excerpt": "harness.measure.serving.prompt:schema_excerpt",
    "server_for": "harness.measure.serving.openai_client:server_for",
    "server_labels": "harness.measure.serving.openai_client:server_labels",
    "server_log_line": "harness.measure.serving.launcher:server_log_line",
    "ServerNotReady": "harness.measure.serving.launcher:ServerNotReady",
    "ServerProcess": "harness.measure.serving.launcher:ServerProcess",
    "ServerUnavailable": "harness.measure.serving.launcher:ServerUnavailable",
    "split_server": "harness.measure.serving.openai_client:split_server",
    "sse_chunks": "harness.measure.serving.openai_client:sse_chunks",
    "SYSTEM": "harness.measure.serving.prompt:SYSTEM",
    "takes_seeds": "harness.measure.serving.openai_client:takes_seeds",
    "Target": "harness.measure.serving.servers:Target",
    "TRANSPORT_ERRORS": "harness.measure.serving.openai_client:TRANSPORT_ERRORS",
    "verdict": "harness.measure.serving.openai_client:verdict",
    "write_hf_model": "harness.measure.serving.vllm_offline:write_hf_model",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.measure.serving.launcher import (HOST, ServerNotReady, ServerProcess,
        ServerUnavailable, server_log_line)
    from harness.measure.serving.openai_client import (TRANSPORT_ERRORS, Completion, Constraint,
        OpenAIClient, server_for, server_labels, split_server, sse_chunks, takes_seeds, verdict)
    from harness.measure.serving.prompt import (ASK, SYSTEM, build_prompt, model_prompt,
        schema_excerpt)
    from harness.measure.serving.servers import RowServers, Target
    from harness.measure.serving.vllm_offline import model_folder, write_hf_model
    from harness.model.checkpoint import CheckpointError, load_checkpoint, looks_like_checkpoint
