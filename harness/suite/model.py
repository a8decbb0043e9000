"""The suite API's models with priors: a checkpoint given by path, the corpus split and the
prompt a model built here was trained on. Imported on first use. (``--model build:…`` is
resolved to its folder by the run's configuration before a suite sees it.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "answer_text": "harness.model.data:answer_text",
    "Checkpoint": "harness.model.checkpoint:Checkpoint",
    "CheckpointError": "harness.model.checkpoint:CheckpointError",
    "decode": "harness.model.decode:decode",
    "load_model": "harness.model.decode:load_model",
    "load_checkpoint": "harness.model.checkpoint:load_checkpoint",
    "PromptFormat": "harness.model.data:PromptFormat",
    "split_of": "harness.model.data:split_of",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.model.checkpoint import Checkpoint, CheckpointError, load_checkpoint
    from harness.model.data import PromptFormat, answer_text, split_of
    from harness.model.decode import decode, load_model
