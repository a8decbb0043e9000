"""``harness run --suite quality`` flags: ``--samples``, and the e2e suite's ``--model`` and
``--max-tokens`` (one flag, one value: read here too)."""

from __future__ import annotations

from harness.suite.options import add_flag, positive_int
from suites.quality.records import QualityOptions

DEFAULTS: QualityOptions = {
    "model": None,        # a checkpoint folder, or build:tiny / build:default
    "samples": 8,         # samples per schema, stream and temperature 1 (greedy: one)
    "max_tokens": 192,    # token budget per output: one without EOS by then is a runaway
    "temperature": 1.0,   # the sampled pass; the greedy pass always runs beside it
    "top_k": 0,           # 0: off (applied after the mask and the temperature)
    "top_p": 1.0,         # 1.0: off (applied after top-k)
    "seed": 0,            # mixed into every sample's seed
}

FLAG_KEYS = ("model", "samples", "max_tokens", "top_k", "top_p")


def add_run_arguments(p) -> None:
    g = p.add_argument_group("quality suite (what the mask does to what a model writes)")
    add_flag(g, "--samples", type=positive_int,
             help="quality: samples per held-out schema at temperature 1, the same seeds in "
                  "every stream (default 8); greedy decodes once")
    add_flag(g, "--top-k", dest="top_k", type=int,
             help="quality: top-k after the mask and the temperature (default 0: off)")
    add_flag(g, "--top-p", dest="top_p", type=float,
             help="quality: top-p after top-k (default 1.0: off)")


def config_from_args(args) -> QualityOptions:
    out: QualityOptions = {}
    for k in FLAG_KEYS:
        v = getattr(args, k, None)
        if v is not None:
            out[k] = v  # type: ignore[literal-required]
    return out


def resolve(opts) -> QualityOptions:
    from harness.suite.options import merged

    return merged(DEFAULTS, opts)
