"""The prompt of every e2e job: Llama 3's chat format asking for an instance of the schema.

With random weights the words do not steer the output; the prompt gives the prefill a
realistic length (the schema itself, capped at ``max_schema_tokens``). With a checkpoint
(``--model PATH``) the prompt is the checkpoint's own format (:func:`model_prompt`:
``harness_model.json``'s for a model built here, a generic instruction otherwise).
"""

from __future__ import annotations

import json

from engines.vocab import Vocabulary

SYSTEM = "You answer with one JSON value and nothing else."
ASK = "Give a JSON instance that satisfies this JSON Schema:\n"


def _special(vocab: Vocabulary, name: str) -> int:
    b = name.encode()
    for i in vocab.special_ids:
        if vocab.tokens[i] == b:
            return i
    raise KeyError(name)


def schema_excerpt(vocab: Vocabulary, schema_text: str, max_schema_tokens: int = 2048) -> str:
    """The schema text as a prompt carries it: at most ``max_schema_tokens`` tokens of it (the
    prompt of a 4,096-token model must leave room for the answer; a schema is cut, never
    the request refused for its length)."""
    ids = vocab.encode(schema_text)
    if len(ids) <= max_schema_tokens:
        return schema_text
    return b"".join(vocab.tokens[i] for i in ids[:max_schema_tokens]).decode("utf-8", "ignore")


def build_prompt(vocab: Vocabulary, schema_text: str, max_schema_tokens: int = 2048) -> list[int]:
    start, end, eot = (_special(vocab, "<|start_header_id|>"),
                       _special(vocab, "<|end_header_id|>"), _special(vocab, "<|eot_id|>"))
    schema_ids = vocab.encode(schema_text)[:max_schema_tokens]
    ids = [vocab.bos_id] if vocab.bos_id is not None else []
    for role, body in (("system", vocab.encode(SYSTEM)),
                       ("user", vocab.encode(ASK) + schema_ids)):
        ids += [start, *vocab.encode(role), end, *vocab.encode("\n\n"), *body, eot]
    ids += [start, *vocab.encode("assistant"), end, *vocab.encode("\n\n")]
    return ids


def model_prompt(model: str | None, vocab: Vocabulary, schema_text: str,
                 max_schema_tokens: int = 2048) -> list[int]:
    """The prompt's token ids for a schema under the run's ``--model``: a checkpoint folder's
    own prompt format (:attr:`harness.model.Checkpoint.prompt_format`, on its tokenizer),
    else :func:`build_prompt` (Llama 3's chat format, random-weight sizes)."""
    from harness.model.checkpoint import load_checkpoint, looks_like_checkpoint

    if model and looks_like_checkpoint(model):
        ckpt = load_checkpoint(model)
        return ckpt.prompt_format.prompt_ids(ckpt.tokenizer(), json.loads(schema_text))
    return build_prompt(vocab, schema_text, max_schema_tokens)
