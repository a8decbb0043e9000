"""``harness run`` options of the e2e suite (its ``SuiteBase.options``)."""

from __future__ import annotations

from typing import TypedDict

from harness.suite.options import add_flag, batch_sizes, model_spec
from suites.e2e.job import E2E_DEFAULTS

__all__ = ["DEFAULTS", "KEYS", "add_run_arguments", "batch_sizes", "config_from_args",
           "mask_bench_value"]

#: Configuration keys of the e2e suite, handed to its jobs as ``payload["options"]``.
KEYS = ("runtime", "model", "quant", "max_tokens", "batch", "overlap", "device", "seed",
        "temperature", "server", "apply", "graphs", "blocks", "mask_bench")


class E2EOptions(TypedDict, total=False):
    """The run options of the e2e suite (what each means: :data:`DEFAULTS` and the flags'
    help)."""

    runtime: str
    model: str
    quant: str
    max_tokens: int
    batch: int | list[int]
    overlap: bool
    device: str
    seed: int
    temperature: float
    server: str | None
    apply: str
    graphs: bool | None
    blocks: int
    mask_bench: str


DEFAULTS: E2EOptions = {k: E2E_DEFAULTS[k] for k in KEYS}

#: flag attribute → configuration key
FLAG_KEYS = ("model", "runtime", "max_tokens", "batch", "overlap", "device", "quant", "server",
             "apply", "graphs", "blocks", "mask_bench")


def mask_bench_value(text: str) -> str:
    """``--mask-bench`` value: ``auto``, ``off`` or ``N,M,...`` (each >= 1)."""
    import argparse

    if text in ("auto", "off"):
        return text
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected auto, off or N,M,..., got {text!r}")
    return ",".join(str(x) for x in sizes)


def add_run_arguments(p) -> None:
    shared = p.add_argument_group("e2e and serve suites (the model: random weights of a real "
                                  "shape)")
    shared.add_argument("--model", type=model_spec, metavar="SIZE|PATH",
                        help="random weights of a size: micro (tests), tiny (~70M), small "
                             "(~360M), 1b, 8b (GPU); or PATH, a local Hugging Face checkpoint "
                             "folder (config.json, weights, tokenizer.json): its weights, its "
                             "tokenizer for every engine, its prompt format; the decode loop's "
                             "(e2e) or the launched server's (serve); default tiny in both")
    shared.add_argument("--max-tokens", dest="max_tokens", type=int,
                        help="token budget per output; one without EOS by then is a runaway "
                             "(default 128 in both suites)")
    shared.add_argument("--server", help="an OpenAI-compatible server URL to drive instead of "
                                         "starting one, optionally dialect+URL: vllm+, "
                                         "sglang+, llamacpp+ (e2e: the serving route; serve: "
                                         "instead of --launch); or one per engine row, "
                                         "LABEL=URL,... (e.g. vllm:xgrammar=vllm+http://"
                                         "127.0.0.1:8001)")
    g = p.add_argument_group("e2e suite (decode loop with the mask)")
    g.add_argument("--runtime", choices=("auto", "torch", "llamacpp", "llamacpp:eval"), help="llamacpp (logits_processor), llamacpp:eval (the harness's "
                                     "loop over llama.cpp), torch; default: llamacpp where "
                                     "installed, else torch")
    # shared with the batch suite (harness.suite.options.add_flag: one flag, one value)
    add_flag(g, "--batch", type=batch_sizes,
             help="sequences decoded together (torch runtime; default 1); a list such as "
                  "1,4,8 decodes every schema at each size and the report plots TPOT "
                  "against batch")
    g.add_argument("--overlap", action="store_const", const=True, default=None,
                   help="compute the next mask on a CPU thread while the forward pass runs")
    g.add_argument("--device", help="cpu (default) or cuda (torch runtime)")
    g.add_argument("--quant", choices=("Q8_0", "F16", "F32"), help="GGUF weights: Q8_0 (default), F16, F32 (llamacpp runtime)")
    g.add_argument("--apply", choices=("auto", "engine", "shared"),
                   help="mask kernel: auto (xgrammar's own for xgrammar, the harness's shared "
                        "kernel otherwise; default), engine (each engine's own torch kernel), "
                        "shared")
    g.add_argument("--no-graphs", dest="graphs", action="store_const", const=False,
                   default=None,
                   help="torch runtime on CUDA: run the decode step eagerly instead of "
                        "replaying its captured CUDA graph (to compare)")
    g.add_argument("--blocks", type=int,
                   help="rounds of interleaved constrained / unconstrained blocks per schema "
                        "and batch size (default 2: ABAB)")
    g.add_argument("--mask-bench", dest="mask_bench", type=mask_bench_value,
                   help="batch sizes of the mask-apply microbenchmark: auto (1,8,32,128 on "
                        "a GPU, the --batch sizes on a CPU; default), off, or N,M,...")


def config_from_args(args) -> E2EOptions:
    return {k: getattr(args, k) for k in FLAG_KEYS if getattr(args, k, None) is not None}
