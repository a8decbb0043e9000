"""The model folder vLLM and SGLang load: a Hugging Face folder the harness writes.

It holds ``config.json`` only (a Llama of the named size, :mod:`engines.vocab.models`; the
servers start with ``load_format="dummy"``: random weights, nothing read from disk), the
Llama-3 ``tokenizer.json`` converted from the tiktoken file of ``llama-models``
(transformers' ``TikTokenConverter``), and a ``tokenizer_config.json`` with Llama-3's chat
template (``/v1/chat/completions`` needs one). Written once per (size, vocabulary) under the
harness's cache; nothing is downloaded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from engines.vocab import LLAMA3_PATTERN, Vocabulary
from engines.vocab.models import BOS_ID, EOS_ID, shape

__all__ = ["LLAMA3_CHAT_TEMPLATE", "model_folder", "write_hf_model"]

#: Llama-3's chat template (the instruct models' ``tokenizer_config.json``), without tools.
LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' "
    "+ message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}"
)


def _config(size: str) -> dict:
    s = shape(size)
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": s.vocab, "hidden_size": s.hidden, "num_hidden_layers": s.layers,
        "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads,
        "head_dim": s.head_dim, "intermediate_size": s.intermediate,
        "tie_word_embeddings": s.tied, "max_position_embeddings": s.context,
        "rope_theta": s.rope_theta, "rms_norm_eps": s.rms_eps, "hidden_act": "silu",
        "attention_bias": False, "mlp_bias": False,
        "bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "torch_dtype": "bfloat16",
    }


def write_hf_model(size: str, vocab: Vocabulary, root: Path) -> Path:
    """The model folder for ``size`` (``micro``, ``tiny``, ``small``, ``1b``, ``8b``), written
    under ``root`` unless it is there already; returns its path. The folder is complete
    only when ``tokenizer_config.json`` (written last, by rename) exists."""
    import importlib.resources

    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    import hashlib

    config = json.dumps(_config(size), indent=1, sort_keys=True)
    digest = hashlib.sha256(config.encode()).hexdigest()[:8]
    out = Path(root) / f"hf-llama-{size}-{digest}-{vocab.fingerprint}"
    if (out / "tokenizer_config.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(config)
    ranks = importlib.resources.files("llama_models") / "llama3" / "tokenizer.model"
    specials = [vocab.tokens[i].decode() for i in sorted(vocab.special_ids) if i >= 128000]
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=LLAMA3_PATTERN,
                            extra_special_tokens=specials).converted()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                   eos_token="<|eot_id|>")
    fast.chat_template = LLAMA3_CHAT_TEMPLATE
    tmp = out / ".partial"
    fast.save_pretrained(tmp)
    cfg_path = tmp / "tokenizer_config.json"
    tok_cfg = json.loads(cfg_path.read_text())
    # the class name every transformers release reads (5.x writes "TokenizersBackend",
    # which vLLM's bundled transformers may not know)
    tok_cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    tok_cfg["chat_template"] = LLAMA3_CHAT_TEMPLATE
    cfg_path.write_text(json.dumps(tok_cfg, indent=1))
    for f in tmp.iterdir():
        if f.name != "tokenizer_config.json":
            os.replace(f, out / f.name)
    os.replace(tmp / "tokenizer_config.json", out / "tokenizer_config.json")
    tmp.rmdir()
    return out


def model_folder(model: str, vocab: Vocabulary, root: Path) -> Path:
    """The folder a server or vLLM's offline engine loads for ``--model``: a checkpoint
    folder (a path) as it is, absolute (its own weights and tokenizer), else the folder of
    the random-weight size written by :func:`write_hf_model` under ``root``."""
    from harness.model.checkpoint import load_checkpoint, looks_like_checkpoint

    if looks_like_checkpoint(model):
        return load_checkpoint(model).folder.resolve()
    return write_hf_model(model, vocab, root)
