"""The model folder vLLM loads: a Hugging Face folder the harness writes, the torch runtime's
random-weight Llama (``save_pretrained``) with a ``tokenizer.json`` converted from the
Llama-3 tiktoken file (transformers' ``TikTokenConverter``). The driver itself is the
engine row's (:meth:`engines.vllm_engine.VllmEngine.offline`)."""

from __future__ import annotations

from pathlib import Path

from harness.vocab import LLAMA3_PATTERN, Vocabulary


def write_hf_model(size: str, seed: int, vocab: Vocabulary, root: Path) -> Path:
    """A Hugging Face model folder (random weights, Llama-3 tokenizer), cached by size/seed."""
    import importlib.resources

    from harness.measure.e2e.runtime_torch import TorchRuntime

    out = root / f"hf-llama-{size}-seed{seed}-{vocab.fingerprint}"
    if (out / "tokenizer.json").exists():
        return out
    rt = TorchRuntime(size, device="cpu", dtype="bf16", seed=seed)
    rt.model.save_pretrained(out)
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = importlib.resources.files("llama_models") / "llama3" / "tokenizer.model"
    specials = [vocab.tokens[i].decode() for i in sorted(vocab.special_ids) if i >= 128000]
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=LLAMA3_PATTERN,
                            extra_special_tokens=specials).converted()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                   eos_token="<|eot_id|>")
    fast.save_pretrained(out)
    return out
