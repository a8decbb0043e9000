"""Model sizes by name: Llama-architecture shapes with the real Llama-3 vocabulary.

Weights are random (nothing can be downloaded here, and the question is the cost and the
soundness of the constraint, not the quality of the text). The LM head always has the real
Llama-3 size, 128,256 rows, so the logits and the mask have their real size.

``micro`` is for tests only (two small layers; the LM head still has 128,256 rows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

LLAMA3_VOCAB = 128256
BOS_ID = 128000
EOS_ID = 128009  # <|eot_id|>


@dataclass(frozen=True)
class ModelShape:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    tied: bool
    vocab: int = LLAMA3_VOCAB
    rope_theta: float = 500000.0
    rms_eps: float = 1e-5
    context: int = 8192
    #: an explicit head dimension (a checkpoint's ``head_dim``); 0: ``hidden // heads``
    dims: int = 0

    @property
    def head_dim(self) -> int:
        return self.dims or self.hidden // self.heads

    def n_params(self) -> int:
        h, kv, q = self.hidden, self.kv_heads * self.head_dim, self.heads * self.head_dim
        per_layer = 2 * h * q + 2 * h * kv + 3 * h * self.intermediate + 2 * h
        emb = self.vocab * h
        return emb * (1 if self.tied else 2) + self.layers * per_layer + h

    def describe(self) -> dict:
        return {**asdict(self), "params": self.n_params()}


SIZES: dict[str, ModelShape] = {
    # test-only: fast, but the real 128,256-row LM head; head_dim 32, the smallest vLLM's
    # CPU attention kernels take
    "micro": ModelShape("micro", hidden=128, layers=2, heads=4, kv_heads=2, intermediate=256,
                        tied=True, context=4096),
    # ~74M: the size the issue calls tiny (~70M)
    "tiny": ModelShape("tiny", hidden=256, layers=8, heads=8, kv_heads=4, intermediate=1024,
                       tied=False),
    # ~357M
    "small": ModelShape("small", hidden=1024, layers=16, heads=16, kv_heads=8,
                        intermediate=3584, tied=True),
    # Llama-3.2-1B's shapes (~1.24B)
    "1b": ModelShape("1b", hidden=2048, layers=16, heads=32, kv_heads=8, intermediate=8192,
                     tied=True),
    # Llama-3.1-8B's shapes (~8.03B): for GPUs
    "8b": ModelShape("8b", hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336,
                     tied=False),
}


class UnknownModel(ValueError):
    pass


def shape(name: str) -> ModelShape:
    try:
        return SIZES[name]
    except KeyError:
        raise UnknownModel(f"unknown model size {name!r}; known: {', '.join(SIZES)}") from None
