"""The mask-apply microbenchmark of the e2e suite: what applying a packed bitmask to the
logits costs, per batch size, outside the decode loop.

Per batch size (default 1, 8, 32, 128 on a GPU; the run's ``--batch`` sizes on a CPU) over
the vocabulary's ids (128,256 for Llama 3), float32 logits, random bits (about half the ids
allowed; no kernel here reads fewer words for a sparser mask):

``engine:NAME``  the engine's own kernel (:meth:`engines.protocol.EngineAdapter.mask_kernel`)
``shared``       the harness's shared kernel (:func:`suites.e2e.sampling.apply_shared`)
``masked_fill``  ``logits.masked_fill_(~allowed, -inf)`` from a bool mask already unpacked
                 on the device: the floor of any apply
``h2d_packed``   the packed int32 ``[B, W]`` mask, pinned host → device (``non_blocking``)
``h2d_bool``     the same mask as bool ``[B, V]``: what an unpacked mask would cost to move

Figures per (kernel, batch), µs per call:

``first_ms``     the first call, ms (``torch.compile`` kernels compile here)
``eager_us``     mean of ``n`` back-to-back calls between two timestamps (CUDA events on a
                 GPU): the throughput a loop that launches it sees; for a small kernel this
                 is the CPU's launch time, not the device's work
``graph_us``     (CUDA) mean per call of ``graph_calls`` calls captured in one CUDA graph
                 and replayed: the device's own time, launch cost removed; "not capturable"
                 with the reason when capture fails
``correct``      the apply kernels' result equals the reference (bits unpacked with numpy)

A value under the timer's resolution is shown as such (``below_resolution``), and a row
not reached within ``budget_s`` is marked ``cut_off`` rather than measured.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch

from harness.suite.report import Table
from harness.suite.report import text_table as render
from suites.e2e.protocol import timer_resolution_ns
from suites.e2e.records import MaskBench

GPU_BATCHES = (1, 8, 32, 128)


def _time_eager(fn: Callable[[], Any], device: str, n: int) -> float:
    """Mean µs per call of ``n`` back-to-back calls."""
    if device.startswith("cuda"):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        for _ in range(n):
            fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3 / n
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / 1e3 / n


def _time_graph(fn: Callable[[], Any], calls: int, replays: int) -> float:
    """Mean device µs per call of ``calls`` calls captured in one CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(replays):
        g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / (replays * calls)


def _unpack(packed: np.ndarray, vocab: int) -> np.ndarray:
    return np.unpackbits(packed.view(np.uint8), axis=-1, count=vocab,
                         bitorder="little").astype(bool)


def run(device: str, batches: tuple[int, ...] | list[int], vocab: int,
        engines: tuple[str, ...] | list[str] = (), n: int = 200, warmup: int = 20,
        graph_calls: int = 20, graph_replays: int = 10, budget_s: float = 60.0,
        shared_rows: bool = True, seed: int = 0) -> MaskBench:
    """Time every kernel at every batch size (the module's figures). ``engines``: engine
    names whose own kernel is timed beside the shared rows (``shared_rows``)."""
    from suites.e2e.sampling import Bitmask, apply_shared, engine_kernel

    cuda = device.startswith("cuda")
    res_ns = timer_resolution_ns(device)
    t_end = time.monotonic() + budget_s
    rng = np.random.default_rng(seed)
    kernels: list[tuple[str, Callable | None]] = []
    if shared_rows:
        kernels.append(("shared", apply_shared))
    for e in engines:
        kernels.append((f"engine:{e}", engine_kernel(e)))
    rows: list[dict[str, Any]] = []
    for B in batches:
        bm = Bitmask(B, vocab, device)
        bm.np[:] = rng.integers(-2**31, 2**31 - 1, size=bm.np.shape, dtype=np.int64
                                ).astype(np.int32)
        allowed = torch.from_numpy(_unpack(bm.np, vocab))
        base = torch.randn((B, vocab), dtype=torch.float32,
                           generator=torch.Generator().manual_seed(seed + B))
        ref = base.masked_fill(~allowed, float("-inf"))
        logits = base.to(device)
        cases: list[tuple[str, Callable[[], Any] | None, Callable | None]] = []
        for label, k in kernels:
            cases.append((label, (lambda k=k: k(logits, bm)) if k is not None else None, k))
        if shared_rows:
            notallowed = (~allowed).to(device)
            cases.append(("masked_fill", lambda: logits.masked_fill_(notallowed, float("-inf")),
                          None))
            if cuda:
                dst_b = torch.empty((B, vocab), dtype=torch.bool, device=device)
                host_b = allowed.pin_memory()
                cases.append(("h2d_packed", bm.to_device, None))
                cases.append(("h2d_bool", lambda: dst_b.copy_(host_b, non_blocking=True), None))
        for label, fn, kernel in cases:
            row: dict[str, Any] = {"batch": B, "kernel": label}
            rows.append(row)
            if fn is None:
                row["error"] = "the engine has no kernel of its own"
                continue
            if time.monotonic() > t_end:
                row["cut_off"] = f"not reached within the {budget_s:g} s budget"
                continue
            try:
                t0 = time.perf_counter()
                fn()
                if cuda:
                    torch.cuda.synchronize()
                row["first_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
                if kernel is not None:  # correctness on fresh logits
                    x = base.to(device)
                    kernel(x, bm)
                    row["correct"] = bool(torch.equal(x.cpu(), ref))
                for _ in range(warmup):
                    fn()
                us = _time_eager(fn, device, n)
                row["eager_us"] = round(us, 3)
                if us * 1e3 < res_ns:
                    row["below_resolution"] = True
                if cuda:
                    try:
                        row["graph_us"] = round(_time_graph(fn, graph_calls, graph_replays), 3)
                    except Exception as e:
                        from engines.protocol import one_line

                        row["graph_us"] = None
                        row["graph_error"] = f"not capturable: {one_line(e, 200)}"
                        torch.cuda.synchronize()
            except Exception as e:
                from engines.protocol import one_line

                row["error"] = one_line(e, 300)
        del logits, base, ref, allowed
    info = {"device": device, "vocab": vocab, "batches": list(batches), "n": n,
            "warmup": warmup, "graph_calls": graph_calls, "graph_replays": graph_replays,
            "timer_resolution_ns": res_ns, "budget_s": budget_s}
    if cuda:
        info["gpu"] = torch.cuda.get_device_name()
    return {"info": info, "rows": rows}


def device_us(row: dict[str, Any]) -> float | None:
    """The figure that ranks kernels inside a loop that queues work ahead of the device:
    the captured per-call time where there is one, else the eager mean."""
    if row.get("error") or row.get("cut_off") or row.get("correct") is False:
        return None
    g = row.get("graph_us")
    return g if g is not None else row.get("eager_us")


_DONE: dict[tuple, dict[str, Any]] = {}


def once(device: str, batches: tuple[int, ...], vocab: int, engine: str | None,
         **kw: Any) -> tuple[dict[str, Any], bool]:
    """The microbenchmark of ``engine``'s kernel (None: no engine's) and, the first time in
    this process, the shared rows, at ``batches``: (result, fresh) where ``fresh`` is False
    when this process already ran it for that engine (the result is then the cached one)."""
    key = (device, tuple(batches), vocab, engine)
    if key in _DONE:
        return _DONE[key], False
    shared = not any(k[:3] == key[:3] for k in _DONE)
    if not shared and engine is None:
        first = next(v for k, v in _DONE.items() if k[:3] == key[:3])
        _DONE[key] = first
        return first, False
    out = run(device, batches, vocab, engines=(engine,) if engine else (),
              shared_rows=shared, **kw)
    if not shared:  # the shared rows measured for another engine, same process
        first = next(v for k, v in _DONE.items() if k[:3] == key[:3])
        out["rows"] = [r for r in first["rows"] if not r["kernel"].startswith("engine:")] \
            + out["rows"]
    _DONE[key] = out
    return out, True


def table_cells(result: dict[str, Any]) -> tuple[str, list[int], list[list[str]]]:
    """(title, batch sizes, rows of [kernel, cell per batch]) of a result: each cell is
    "eager µs / graph µs" ("<res" under the timer's resolution, "n.c." not capturable,
    "cut off" past the budget, "error", "WRONG" appended to a wrong result)."""
    rows = result.get("rows") or []
    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    batches = sorted({r["batch"] for r in rows})
    by = {(r["kernel"], r["batch"]): r for r in rows}

    def cell(r: dict[str, Any] | None) -> str:
        if r is None:
            return "–"
        if r.get("error"):
            return "error"
        if r.get("cut_off"):
            return "cut off"
        e = r.get("eager_us")
        if e is None:
            return "–"
        txt = f"{e:.1f}" if not r.get("below_resolution") else "<res"
        g = r.get("graph_us")
        if "graph_us" in r:
            txt += f" / {g:.1f}" if g is not None else " / n.c."
        if r.get("correct") is False:
            txt += " WRONG"
        return txt

    info = result.get("info") or {}
    title = (f"mask apply, {info.get('vocab')} ids, {info.get('device')}"
             f"{' (' + info['gpu'] + ')' if info.get('gpu') else ''}: µs per call, eager mean"
             + (" / in a CUDA graph (device time)"
                if str(info.get("device", "")).startswith("cuda") else ""))
    return title, batches, [[k] + [cell(by.get((k, b))) for b in batches] for k in kernels]


def text_table(result: dict[str, Any]) -> str:
    """The rows as a small table: eager µs / graph µs per kernel and batch."""
    title, batches, body = table_cells(result)
    return title + "\n" + render(Table(["kernel"] + [f"batch {b}" for b in batches], body))
