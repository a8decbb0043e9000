"""Worker job of the ``churn`` suite: one Zipf stream through one long-lived compiler.

The engine's :meth:`~engines.protocol.EngineAdapter.cached_compiler` (its own compile cache
on, empty at the start of the job) takes the stream's requests in order. Per request the
record keeps ``rank`` (the pool entry), ``repeat`` (the rank came earlier in the stream:
a cache *could* hit), ``ttft_ns`` (compile or cache fetch + matcher + first mask: the
grammar's share of a request's time to first token), ``compile_ns`` (the compile call
alone) and, where the engine reports its cache size, ``hit`` (the cache did not grow:
served from it). A request the engine refuses is ``error`` (one line) and the stream goes
on.
"""

from __future__ import annotations

import gc
import time

from harness.suite.measure import adapters
from harness.suite import outcomes
from harness.suite import JobPayload
from suites.churn.records import ChurnRecord, ChurnRequest

__all__ = ["run_churn_job"]


def run_churn_job(job: JobPayload, phase=lambda p, info=None: None) -> ChurnRecord:
    from harness.suite.engines import allocate_bitmask
    from engines.protocol import CompileError, one_line

    case = job["case"]
    req = case["request"]
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    cc = adapter.cached_compiler()
    bitmask = allocate_bitmask(vocab.size)
    clock = time.perf_counter_ns
    seen: set[int] = set()
    rows: list[ChurnRequest] = []
    phase("groundtruth")  # setup done: the job's own time limit starts here
    phase("compile")
    gc.collect()
    for i, rank in enumerate(req["ranks"]):
        text = req["pool"][str(rank)]
        before = cc.cache_bytes()
        row: ChurnRequest = {"i": i, "rank": rank, "repeat": rank in seen}
        t0 = clock()
        try:
            g = cc.compile(text)
            t1 = clock()
            g.matcher().fill_mask(bitmask)
            t2 = clock()
            row.update(compile_ns=t1 - t0, ttft_ns=t2 - t0)
        except CompileError as e:
            row.update(error=one_line(e, 200), ttft_ns=clock() - t0)
        after = cc.cache_bytes()
        if before is not None and after is not None and "error" not in row:
            row["hit"] = after == before
        seen.add(rank)
        rows.append(row)
        if i % 20 == 0:
            phase("replay", rows[0]["ttft_ns"])
    record["churn"] = {"exponent": req["exponent"], "has_cache": cc.has_cache,
                       "cache": cc.describe, "requests": rows,
                       "cache_bytes": cc.cache_bytes()}
    ok = [r for r in rows if "error" not in r]
    record["ttfm_ns"] = ok[0]["ttft_ns"] if ok else None
    record["outcome"] = outcomes.PASSING if ok else outcomes.COMPILE_ERROR
    if not ok:
        record["error"] = rows[0].get("error", "no request compiled") if rows else "empty stream"
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record
