"""The corpus as a model sees it: a deterministic split by schema, the prompt, the answer.

**Split.** A schema (a corpus file) is *held out* when the first 8 hex digits of the
sha256 of its file name, read as a fraction of 2^32, fall below :data:`HELD_OUT_SHARE`; every
other schema is *train*. The rule needs nothing but the name, so a new file lands on the
same side on every machine, and no held-out schema's instances are ever trained on.

**Prompt.** ``<bos>`` + the schema minified (``json.dumps(schema, separators=(",", ":"),
ensure_ascii=False)``), cut to ``schema_budget`` tokens, + the answer marker. The answer is
the instance as MaskBench serialises it (``json.dumps(data, ensure_ascii=False)``:
separators ``", "`` and ``": "``), then ``<eos>``. A checkpoint built here stores its
:class:`PromptFormat` in ``harness_model.json``; any other checkpoint gets
:meth:`PromptFormat.generic` (a plain-text instruction), which the run records.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

__all__ = ["HELD_OUT_SHARE", "PromptFormat", "answer_text", "split_of", "training_pairs"]

#: The share of schemas held out (by the hash of the file name): never trained on.
HELD_OUT_SHARE = 0.1

#: The split rule, as recorded in a checkpoint's ``harness_model.json`` and a run's run.json.
SPLIT_RULE = ("held out when int(sha256(file name)[:8], 16) / 2**32 < "
              f"{HELD_OUT_SHARE}; train otherwise")


def split_of(file_name: str) -> str:
    """``"held_out"`` or ``"train"`` for a corpus file name (with ``.json``)."""
    h = int(hashlib.sha256(file_name.encode()).hexdigest()[:8], 16)
    return "held_out" if h / 2 ** 32 < HELD_OUT_SHARE else "train"


def minified(schema: Any) -> str:
    """The schema as the prompt shows it: compact separators, non-ASCII kept."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def answer_text(data: Any) -> str:
    """An instance as the model is trained to write it (MaskBench's serialisation)."""
    return json.dumps(data, ensure_ascii=False)


@dataclass(frozen=True)
class PromptFormat:
    """How a prompt is made from a schema.

    ``kind`` ``"harness"``: ``bos`` + schema tokens (at most ``schema_budget``) + the
    ``answer`` marker token(s), the format a model built here is trained on. ``kind``
    ``"generic"``: the text ``instruction`` + the schema (cut to ``schema_budget``
    tokens) + ``"\\n"``, for a checkpoint that has no ``harness_model.json``.
    """

    kind: str = "harness"
    schema_budget: int = 256
    bos: str = "<|bos|>"
    answer: str = "<|answer|>"
    eos: str = "<|eos|>"
    instruction: str = "Reply with one JSON value valid under this JSON Schema:\n"

    @classmethod
    def generic(cls, schema_budget: int = 512) -> "PromptFormat":
        return cls(kind="generic", schema_budget=schema_budget)

    def describe(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PromptFormat":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)

    def prompt_ids(self, tokenizer: Any, schema: Any) -> list[int]:
        """The prompt's token ids for ``schema`` under a Hugging Face ``tokenizer``
        (``tokenizers.Tokenizer`` or ``PreTrainedTokenizerFast``)."""
        encode = _encoder(tokenizer)
        schema_ids = encode(minified(schema))[: self.schema_budget]
        if self.kind == "harness":
            return (encode(self.bos) + schema_ids + encode(self.answer))
        return encode(self.instruction) + schema_ids + encode("\n")


def _encoder(tokenizer: Any):
    """``text -> ids`` without special tokens added, for either tokenizer type."""
    if hasattr(tokenizer, "encode_batch"):  # tokenizers.Tokenizer
        return lambda s: tokenizer.encode(s, add_special_tokens=False).ids
    return lambda s: tokenizer.encode(s, add_special_tokens=False)


def training_pairs(data_dir: Path, split: str = "train") -> Iterator[tuple[str, Any, Any]]:
    """``(file name, schema, instance)`` for every valid instance of every schema on the
    ``split`` side, in file-name order. Files that do not parse are skipped (the corpus
    suites report them; a model is trained on what reads)."""
    for path in sorted(Path(data_dir).glob("*.json")):
        if split_of(path.name) != split:
            continue
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("schema"), (dict, bool)):
            continue
        for t in doc.get("tests") or ():
            if isinstance(t, dict) and t.get("valid") is True and "data" in t:
                yield path.name, doc["schema"], t["data"]
