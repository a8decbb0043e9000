"""Models with priors: the corpus split and prompt a model is trained and evaluated on
(:mod:`harness.model.data`), a local Hugging Face checkpoint given by path
(:mod:`harness.model.checkpoint`), and the model the project trains here
(:mod:`harness.model.build`, ``harness model build``)."""

from harness.model.checkpoint import (Checkpoint, CheckpointError, load_checkpoint,
                                     save_checkpoint)
from harness.model.data import (HELD_OUT_SHARE, PromptFormat, answer_text, split_of,
                                training_pairs)

__all__ = ["Checkpoint", "CheckpointError", "HELD_OUT_SHARE", "PromptFormat", "answer_text",
           "load_checkpoint", "save_checkpoint", "split_of", "training_pairs"]
