#!/usr/bin/env python3
"""How much does the harness itself cost, and does it report the engines' TBM faithfully?

1. Per-token overhead of the measurement loop (``harness.measure.replay.replay``), measured with
   the ``null`` engine whose mask is a precomputed array: (time of the whole replay −
   time of a bare loop making the same engine calls) / tokens. Goal ≤ 1 µs.
2. Each installed engine's TBM (mask + commit per token) in a bare tight loop with one
   clock read around the whole loop, beside the harness's per-token figure on the same
   schemas and tokens. Goal: within 10 %. Both are measured in this process, alternating,
   best of ``--repeat`` runs.
3. With ``--sample N``: a real ``harness run`` of an N-schema stratified sample with
   ``--jobs J``; prints wall time per engine and the parallel efficiency.

The last line is ``overhead_ns_per_token=<n>``.

    python benchmarks/overhead.py                      # 1 and 2, about a minute
    python benchmarks/overhead.py --sample 240 --jobs 2 --engine all   # plus 3 (long)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines.bitmask import allocate_bitmask  # noqa: E402
from engines.protocol import CompileError  # noqa: E402
from harness.registry import EngineSpec, is_installed  # noqa: E402
from harness.measure.replay import replay  # noqa: E402
from engines.vocab import load_vocabulary# noqa: E402
from harness.suite.maskbench import parse_case, resolve_data_dir  # noqa: E402

#: Schemas that all three engines compile within seconds, from different subsets.
SCHEMAS = (
    "BFCL_parallel_multiple_142.json",
    "Github_easy---o43998.json",
    "Github_hard---o58443.json",
    "Glaiveai2K---calculate_area_5c088303.json",
    "Kubernetes---kb_345_Normalized.json",
)


def bare_loop(matcher, tokens, bitmask) -> tuple[int, int]:
    """(ns for the whole loop, tokens taken): fill + commit, no per-token clock."""
    fill, commit = matcher.fill_mask, matcher.commit
    n = 0
    t0 = time.perf_counter_ns()
    for tid in tokens:
        fill(bitmask)
        if not commit(tid):
            n += 1
            break
        n += 1
    return time.perf_counter_ns() - t0, n


def workload(vocab, data_dir: Path):
    """Token lists of every valid instance of SCHEMAS (ascii serialisation)."""
    out = []
    for name in SCHEMAS:
        case = parse_case(data_dir / name)
        toks = [vocab.encode(json.dumps(i.data)) for i in case.instances if i.label_valid]
        out.append((case, toks))
    return out


def overhead(vocab, cases, repeat: int) -> float:
    adapter = EngineSpec("null").build(vocab)
    bm = allocate_bitmask(vocab.size)
    seqs = [t for _, toks in cases for t in toks] * 20
    n_tok = sum(len(t) for t in seqs)
    best_h = best_b = None
    for _ in range(repeat):
        g = adapter.compile("{}")
        t0 = time.perf_counter_ns()
        for toks in seqs:
            replay(g.matcher(), toks, bm, vocab.stop_ids)
        h = time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        for toks in seqs:
            m = g.matcher()
            bare_loop(m, toks, bm)
            m.eos_allowed()
            m.fill_mask(bm)
        b = time.perf_counter_ns() - t0
        best_h = h if best_h is None else min(best_h, h)
        best_b = b if best_b is None else min(best_b, b)
    per_tok = (best_h - best_b) / n_tok
    print(f"null engine: {n_tok:,} tokens; harness replay {best_h / n_tok:,.0f} ns/token, "
          f"bare loop {best_b / n_tok:,.0f} ns/token")
    return per_tok


def engine_tbm(vocab, cases, engines: list[str], repeat: int) -> None:
    print(f"\n{'engine':<22} {'bare µs/token':>14} {'harness µs/token':>17} {'ratio':>7}  tokens")
    for label in engines:
        name, _, cfg = label.partition(":")
        if not is_installed(name):
            print(f"{label:<22} not installed: not run")
            continue
        adapter = EngineSpec(name, cfg or "default").build(vocab)
        bm = allocate_bitmask(vocab.size)
        grammars = []
        for case, toks in cases:
            try:
                grammars.append((adapter.compile(case.schema_text), toks))
            except CompileError:
                continue
        bare_best = harness_best = None
        n_tok = 0
        for _ in range(repeat):
            bare_ns = harness_ns = 0
            n_tok = 0
            for g, toks in grammars:
                for t in toks:
                    ns, n = bare_loop(g.matcher(), t, bm)
                    bare_ns += ns
                    r = replay(g.matcher(), t, bm, vocab.stop_ids)
                    harness_ns += sum(r.mask_ns) + sum(r.commit_ns)
                    n_tok += n
            bare_best = bare_ns if bare_best is None else min(bare_best, bare_ns)
            harness_best = harness_ns if harness_best is None else min(harness_best, harness_ns)
        if not n_tok:
            print(f"{label:<22} compiled none of the schemas")
            continue
        b, h = bare_best / n_tok / 1000, harness_best / n_tok / 1000
        print(f"{label:<22} {b:>14.2f} {h:>17.2f} {h / b:>7.3f}  {n_tok:,}")


def sample_run(n: int, jobs: int, engines: str, timeout: float) -> None:
    results = ROOT / "results"
    cmd = [sys.executable, "-m", "harness.cli", "run", "--suite", "jsonschemabench",
           "--engine", engines, "--sample", str(n), "--jobs", str(jobs),
           "--timeout", str(timeout), "--subset", "core12", "--results", str(results),
           "--no-progress"]
    print("\n$ " + " ".join(cmd), flush=True)
    t0 = time.time()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(out.stdout[-6000:])
    if out.returncode:
        print(out.stderr[-3000:])
        return
    run_dir = Path(out.stdout.split("run folder:")[1].split()[0])
    summary = json.loads((run_dir / "summary.json").read_text())
    print(f"total wall {time.time() - t0:,.0f} s")
    for label, e in summary["engines"].items():
        if e.get("status") == "run":
            print(f"wall time {label}: {e['wall_s']:,.1f} s (busy {e['busy_s']:,.1f} s)")
    print(f"parallel_efficiency={summary['parallel_efficiency']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default="xgrammar,llguidance,outlines")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", default=None)
    ap.add_argument("--sample", type=int, default=0, help="also run an N-schema sample")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    vocab = load_vocabulary("llama3")
    cases = workload(vocab, resolve_data_dir(args.data))
    ns = overhead(vocab, cases, args.repeat)
    engines = ["xgrammar", "llguidance", "outlines"] if args.engine == "all" else args.engine.split(",")
    engine_tbm(vocab, cases, engines, args.repeat)
    if args.sample:
        sample_run(args.sample, args.jobs, args.engine, args.timeout)
    print(f"overhead_ns_per_token={ns:.0f}")


if __name__ == "__main__":
    main()
