"""A local Hugging Face checkpoint given by path (``--model PATH``).

A checkpoint folder holds ``config.json``, weights (``model.safetensors``, sharded
``model-*.safetensors`` with their index, or ``pytorch_model.bin``) and a fast tokenizer
(``tokenizer.json``, with ``tokenizer_config.json`` beside it). Nothing is fetched: every
load is ``local_files_only``. A folder that is not one raises :class:`CheckpointError`
with one line naming the path and what is missing.

A checkpoint built by ``harness model build`` also holds ``harness_model.json``: its prompt
format, its corpus split and how it was built (:mod:`harness.training.build`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.model.data import PromptFormat

__all__ = ["Checkpoint", "CheckpointError", "load_checkpoint", "looks_like_checkpoint",
           "save_checkpoint"]

#: The file a checkpoint built here carries beside the standard ones.
HARNESS_META = "harness_model.json"

_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
            "pytorch_model.bin.index.json")


class CheckpointError(ValueError):
    """A ``--model`` path that is not a usable checkpoint; the message is one line."""


def looks_like_checkpoint(spec: str) -> bool:
    """True when ``spec`` names a path (a folder, or anything with a path separator),
    False for a size name such as ``micro`` or ``8b``."""
    return "/" in spec or "\\" in spec or spec.startswith(".") or Path(spec).exists()


@dataclass(frozen=True)
class Checkpoint:
    """A validated checkpoint folder. ``path`` is as given; ``config_hash`` the sha256 of
    ``config.json``'s bytes; ``tokenizer_size`` the tokenizer's length (ids, added tokens
    included); ``meta`` the ``harness_model.json`` of a model built here, else ``{}``."""

    path: str
    config: dict[str, Any]
    config_hash: str
    tokenizer_size: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return Path(self.path).expanduser()

    @property
    def built_here(self) -> bool:
        """True for a model built by ``harness model build`` (it carries its split)."""
        return bool(self.meta)

    @property
    def prompt_format(self) -> PromptFormat:
        if self.meta.get("prompt"):
            return PromptFormat.from_dict(self.meta["prompt"])
        return PromptFormat.generic()

    @property
    def held_out(self) -> frozenset[str] | None:
        """The held-out schema file names of a model built here; None for any other
        checkpoint (its training data is unknown)."""
        names = self.meta.get("split", {}).get("held_out")
        return frozenset(names) if names is not None else None

    def describe(self) -> dict[str, Any]:
        """What run.json records: the path as given, the config's hash, the tokenizer's
        size, the architecture, and the build's hash for a model built here."""
        return {"path": self.path, "config_sha256": self.config_hash,
                "tokenizer_size": self.tokenizer_size,
                "architecture": (self.config.get("architectures") or [None])[0],
                "model_type": self.config.get("model_type"),
                "vocab_size": self.config.get("vocab_size"),
                "built_here": self.built_here,
                "build_key": self.meta.get("build_key"),
                "prompt": self.prompt_format.describe()}

    def tokenizer(self) -> Any:
        """The checkpoint's tokenizer (``transformers.PreTrainedTokenizerFast``)."""
        return _tokenizer(str(self.folder))

    def model(self, dtype: str = "float32", device: str = "cpu") -> Any:
        """The model, ``AutoModelForCausalLM`` in eval mode with gradients off."""
        import torch
        from transformers import AutoModelForCausalLM

        dt = {"float32": torch.float32, "bf16": torch.bfloat16,
              "bfloat16": torch.bfloat16}.get(dtype, torch.float32)
        m: Any
        try:
            m = AutoModelForCausalLM.from_pretrained(str(self.folder), local_files_only=True,
                                                     dtype=dt)
        except Exception as e:  # noqa: BLE001 - any failure is one line naming the path
            raise CheckpointError(f"--model {self.path}: the weights do not load "
                                  f"({type(e).__name__}: {_first_line(e)})") from None
        m.to(device)
        m.eval()
        m.requires_grad_(False)
        return m

    @property
    def eos_ids(self) -> tuple[int, ...]:
        """The stop ids: the config's ``eos_token_id`` (one or a list), else the
        tokenizer's."""
        e = self.config.get("eos_token_id")
        if isinstance(e, int):
            return (e,)
        if isinstance(e, list) and e:
            return tuple(int(x) for x in e)
        tid = self.tokenizer().eos_token_id
        return (int(tid),) if tid is not None else ()


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:200] if s else ""


@functools.lru_cache(maxsize=4)
def _tokenizer(folder: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


@functools.lru_cache(maxsize=8)
def load_checkpoint(spec: str) -> Checkpoint:
    """Validate the checkpoint folder ``spec``; raises :class:`CheckpointError` (one line
    naming the path) when it is not a folder, has no or a malformed ``config.json``, no
    weights, no ``tokenizer.json``, or a tokenizer without a vocabulary."""
    folder = Path(spec).expanduser()
    where = f"--model {spec}"
    if not folder.exists():
        raise CheckpointError(f"{where}: no such folder")
    if not folder.is_dir():
        raise CheckpointError(f"{where}: not a folder (a checkpoint is a folder with "
                              "config.json, weights and tokenizer.json)")
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise CheckpointError(f"{where}: not a checkpoint: no config.json in the folder")
    raw = cfg_path.read_bytes()
    try:
        config = json.loads(raw)
        if not isinstance(config, dict):
            raise ValueError("top level is not an object")
    except ValueError as e:
        raise CheckpointError(f"{where}: config.json is not a JSON object ({_first_line(e)})") from None
    if not config.get("model_type"):
        raise CheckpointError(f"{where}: config.json has no model_type")
    if not any((folder / w).is_file() for w in _WEIGHTS):
        raise CheckpointError(f"{where}: no weights (expected one of {', '.join(_WEIGHTS)})")
    if not (folder / "tokenizer.json").is_file():
        raise CheckpointError(f"{where}: no tokenizer.json (a fast Hugging Face tokenizer "
                              "is needed to build the engines)")
    try:
        tok = _tokenizer(str(folder))
        size = len(tok)
    except Exception as e:  # noqa: BLE001
        raise CheckpointError(f"{where}: the tokenizer does not load "
                              f"({type(e).__name__}: {_first_line(e)})") from None
    if not tok.get_vocab():
        raise CheckpointError(f"{where}: the tokenizer has no vocabulary")
    meta: dict[str, Any] = {}
    mp = folder / HARNESS_META
    if mp.is_file():
        try:
            meta = json.loads(mp.read_text(encoding="utf-8"))
        except ValueError as e:
            raise CheckpointError(f"{where}: {HARNESS_META} is malformed ({_first_line(e)})") from None
    return Checkpoint(path=spec, config=config,
                      config_hash=hashlib.sha256(raw).hexdigest(), tokenizer_size=size,
                      meta=meta)


def save_checkpoint(folder: Path, model: Any, tokenizer: Any,
                    meta: dict[str, Any] | None = None) -> Path:
    """Write a standard checkpoint: ``config.json``, ``generation_config.json``,
    ``model.safetensors``, the tokenizer files, and ``harness_model.json`` when ``meta``
    is given. Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))
    if meta is not None:
        (folder / HARNESS_META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n",
                                           encoding="utf-8")
    return folder


#: ``--model`` values that name the model ``harness model build`` makes (built on first use,
#: then read from the cache: :func:`harness.training.build.resolve_model`) instead of a folder.
BUILT = {"build:tiny": "tiny", "build:default": "default"}
