#!/usr/bin/env python3
"""Where the constrained TPOT goes beyond the unconstrained one, in one process.

The e2e suite's ratio compares two loops timed one after the other, which a busy machine
blurs. Here every variant decodes the same prompt for ``--tokens`` tokens, the variants are
interleaved round after round, and the median step time of each is compared to the
unconstrained loop's. Variants peel the cost apart:

``unconstrained``    the loop alone
``allow-all/<k>``    an always-full mask applied with kernel ``k`` (apply cost, no engine)
``<engine>``         the engine's real mask (the suite's default kernel)
``noop-processor``   (llamacpp) a logits_processor that returns the scores unchanged:
                     llama-cpp-python's own per-call cost
``<engine>-processor`` (llamacpp) the harness's processor with the engine's mask

    python benchmarks/e2e_overhead.py --runtime torch --model tiny
    python benchmarks/e2e_overhead.py --runtime llamacpp --model small --engines xgrammar
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402


class AllowAll:
    """A matcher whose mask allows every token and whose commits cost nothing."""

    def fill_mask(self, bm):
        bm.fill(-1)

    def commit(self, t):
        return True

    def eos_allowed(self):
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", default="torch", choices=("torch", "llamacpp"))
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--engines", default="xgrammar,llguidance,outlines")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--apply", default="auto", choices=("auto", "engine", "shared"),
                    help="kernel of the engine variants (as harness run --apply)")
    args = ap.parse_args()

    from harness.registry import EngineSpec, is_installed
    from suites.e2e.loop import decode
    from harness.measure.serving.prompt import build_prompt
    from suites.e2e.runtime_cache import get_runtime
    from suites.e2e.sampling import Bitmask, Sampler, apply_kernel, apply_shared
    from engines.vocab import load_vocabulary

    vocab = load_vocabulary("llama3")
    rt = get_runtime({"runtime": "llamacpp:eval" if args.runtime == "llamacpp" else "torch",
                      "model": args.model, "seed": 0})
    # a schema whose strings are long: the mask stays non-trivial for many tokens
    schema = json.dumps({"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]})
    prompt = build_prompt(vocab, schema)
    engines = [e for e in args.engines.split(",") if e and is_installed(e)]
    grammars = {e: EngineSpec(e).build(vocab).compile(schema) for e in engines}
    variants = {"unconstrained": None}
    for kname in ("shared", "xgrammar"):
        if kname == "shared" or is_installed("xgrammar"):
            variants[f"allow-all/{kname}"] = ("allow", kname)
    for e in engines:
        variants[e] = ("engine", e)
    steps: dict[str, list[float]] = {v: [] for v in variants}
    comps: dict[str, dict[str, list[float]]] = {v: {} for v in variants}

    def run_loop(name, spec):
        kw = {}
        if spec is not None:
            kind, what = spec
            if kind == "allow":
                apply = apply_shared if what == "shared" else apply_kernel("xgrammar", "engine")[1]
                m = AllowAll()
            else:
                apply = apply_kernel(what, args.apply, rt.device)[1]
                m = grammars[what].matcher()
            kw = dict(matchers=[m], bitmask=Bitmask(1, vocab.size), apply=apply,
                      overlap=args.overlap)
        res = decode(rt, prompt, stop_ids=(-1,), max_tokens=args.tokens, sampler=Sampler(seed=1),
                     **kw)
        steps[name] += res.steps["step"]
        for k, v in res.steps.items():
            if k != "step" and v:
                comps[name].setdefault(k, []).extend(v[1:] if k in ("forward", "mask", "apply",
                                                                    "sample") else v)

    if args.runtime == "llamacpp":
        variants["generate (no processor)"] = "gen"
        variants["noop-processor"] = "noop"
        for e in engines:
            variants[f"{e}-processor"] = ("proc", e)
        for v in list(variants)[-(2 + len(engines)):]:
            steps[v], comps[v] = [], {}

    def run_proc(name, spec):
        from suites.e2e.runtime_llamacpp import processor_decode

        if spec == "gen":
            res = processor_decode(rt, prompt, stop_ids=(-1,), max_tokens=args.tokens,
                                   sampler=Sampler(seed=1))
        elif spec == "noop":
            import llama_cpp

            llm = rt.llm
            llm.set_seed(1)
            import time as _t

            gen = llm.generate(prompt, logits_processor=llama_cpp.LogitsProcessorList(
                [lambda ids, s: s]), top_k=0, top_p=1.0, min_p=0.0, temp=1.0)
            last, out = None, []
            for i, _tok in enumerate(gen):
                now = _t.perf_counter_ns()
                if last is not None:
                    out.append(now - last)
                last = now
                if i + 1 >= args.tokens:
                    break
            gen.close()
            steps[name] += out
            return
        else:
            res = processor_decode(rt, prompt, stop_ids=(-1,), max_tokens=args.tokens,
                                   sampler=Sampler(seed=1), matchers=[grammars[spec[1]].matcher()],
                                   bitmask=Bitmask(1, vocab.size), apply=None)
        steps[name] += res.steps["step"]
        for k, v in res.steps.items():
            if k != "step" and v:
                comps[name].setdefault(k, []).extend(v)

    for _ in range(args.rounds):
        for name, spec in variants.items():
            if spec in ("gen", "noop") or (isinstance(spec, tuple) and spec[0] == "proc"):
                run_proc(name, spec)
            else:
                run_loop(name, spec)

    base = np.median(steps["unconstrained"])
    gbase = np.median(steps["generate (no processor)"]) if "generate (no processor)" in steps else None
    print(f"runtime {args.runtime} model {args.model} overlap {args.overlap} "
          f"tokens {args.tokens} rounds {args.rounds}")
    print(f"{'variant':<26} {'step p50 ms':>11} {'ratio':>7}  components p50 µs")
    for name in variants:
        s = np.asarray(steps[name], dtype=float)
        if not s.size:
            continue
        ref = gbase if ("processor" in name or name.startswith("generate")) and gbase else base
        c = " ".join(f"{k}={np.median(v) / 1e3:.0f}" for k, v in comps[name].items() if v)
        print(f"{name:<26} {np.median(s) / 1e6:11.3f} {np.median(s) / ref:7.3f}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
