"""The worker process: runs (case, engine) jobs one at a time, isolated from the runner.

A worker is a spawned process with an address-space limit and single-threaded
engines. It builds the vocabulary and each engine adapter once (tokenizer objects are
per worker, never per schema) and answers each job with one record. It reports the
phase it is in so that the runner can say where a job died.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time
from typing import Any

# Engines must be single-threaded (MaskBench's discipline); set before any import.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
    os.environ.setdefault(_var, "false" if _var == "TOKENIZERS_PARALLELISM" else "1")

from harness.measure import outcomes  # noqa: E402
from harness.measure.groundtruth import GroundTruth, parse_instance_text  # noqa: E402
from harness.measure.replay import ACCEPTED, SERIALIZATIONS, preemptions, replay  # noqa: E402
from harness.measure import adapters, reachability  # noqa: E402
from harness.execution.executor import (BOARD_JOB, BOARD_LIMIT_FROM, BOARD_PHASE,  # noqa: E402
                                        BOARD_TTFM, KEEP, PHASES, RECYCLE, pack_timings)
from harness.records import InstanceRecord, JobPayload, Record, ReplayResult


def run_job(job: JobPayload, phase=lambda p, info=None: None) -> Record:
    """Run one job to its record (outcome, TTFM, per-instance per-serialisation replays;
    each false reject of the primary or exact text with its ``reject_kind``)."""
    from engines.bitmask import allocate_bitmask
    from engines.protocol import CompileError, one_line

    case = job["case"]
    eng = job["engine"]
    record: Record = {
        "engine": eng["label"],
        "case_id": case["case_id"],
        "suite": case["suite"],
        "subset": case["subset"],
    }
    t_busy = time.perf_counter_ns()
    phase("setup")
    adapter = adapters.adapter(eng["name"], eng["config"], job["tokenizer"])
    vocab = adapters.vocabulary()
    record["setup_ns"] = time.perf_counter_ns() - t_busy
    # as imported here: a row run from another environment (xgrammar@vllm) shows its own
    record["engine_version"] = adapters.engine_version(adapter)

    phase("groundtruth")
    truth = GroundTruth.for_case(case)
    trust_label = case.get("expected_from") == "label"
    instances: list[InstanceRecord] = []
    for item in case["instances"]:
        index, data, label, text = item["index"], item["data"], item["label"], item.get("text")
        if text is not None:  # an exact text: ground truth on its strict parse
            data, why = parse_instance_text(text)
            verdict, why = (None, why) if why else truth.verdict(data)
        else:
            verdict, why = truth.verdict(data)
        inst: InstanceRecord = {"index": index, "label": label, "truth": verdict,
                                "expected": label if verdict is None or trust_label else verdict}
        if text is not None:
            inst["text"] = text
        if why:
            inst["truth_error"] = why
        if verdict is not None and verdict != label:
            inst["label_disagrees"] = True
            inst["label_reason"] = truth.disagreement_reason(data, label)
        instances.append(inst)

    phase("compile")
    gc.collect()  # the previous job's garbage is collected here, not inside our timings
    c_ttfm = preemptions()  # the scheduler's share of TTFM, as of the replays' steps
    t0 = time.perf_counter_ns()
    try:
        # a corpus that is the specification (labels as ground truth) is read as the
        # specification reads it; one judged by jsonschema as jsonschema reads it
        grammar = adapter.compile_case(case["schema_text"],
                                       format_assertion=case.get("format_assertion", True),
                                       reading="spec" if trust_label else "jsonschema")
        t1 = time.perf_counter_ns()
        matcher = grammar.matcher()
        bitmask = allocate_bitmask(vocab.size)
        t2 = time.perf_counter_ns()
        matcher.fill_mask(bitmask)
        t3 = time.perf_counter_ns()
    except CompileError as e:
        record.update({"outcome": outcomes.COMPILE_ERROR, "error": one_line(e),
                       "compile_ns": time.perf_counter_ns() - t0, "instances": instances})
        record["busy_ns"] = time.perf_counter_ns() - t_busy
        return record
    record.update({"compile_ns": t1 - t0, "matcher_ns": t2 - t1, "first_mask_ns": t3 - t2,
                   "ttfm_ns": t3 - t0})
    c_now = preemptions() if c_ttfm is not None else None
    if c_ttfm is not None and c_now is not None:  # both or neither (Linux)
        record["ttfm_preempted"] = c_now - c_ttfm

    phase("replay", record["ttfm_ns"])
    primary = job["primary"]
    # the primary first: a later serialisation that spells the same text only points at it
    # ("same_as"), so the primary's replay always carries its timings
    sers = [primary, *[s for s in job["serializations"] if s != primary]]
    n_seg = int(job.get("segmentations") or 0)
    stop_ids = vocab.stop_ids
    budget = reachability.Budget()
    preempted = 0 if preemptions() is not None else None
    for inst, item in zip(instances, case["instances"]):
        data = item["data"]
        exact = item.get("text")
        results: dict[str, ReplayResult] = {}
        seen: dict[str, str] = {}
        for ser in (("text",) if exact is not None else sers):
            try:
                text = exact if exact is not None else SERIALIZATIONS[ser](data)
            except (TypeError, ValueError) as e:
                inst["bad_instance"] = one_line(e)
                break
            if text in seen:  # identical bytes: identical replay, do not measure twice
                results[ser] = {"same_as": seen[text], "status": results[seen[text]]["status"]}
                continue
            seen[text] = ser
            tokens = vocab.encode(text)
            timed = ser == primary or exact is not None  # the steps TBM is made of
            c0 = preemptions() if timed and preempted is not None else None
            r = replay(grammar.matcher(), tokens, bitmask, stop_ids)
            c1 = preemptions() if c0 is not None else None
            if c0 is not None and c1 is not None and preempted is not None:
                preempted += c1 - c0
            results[ser] = r.to_json()
            if timed and inst["expected"] is True and r.status != ACCEPTED:
                # a false reject of the primary (or exact) text: can any tokenisation
                # write it? (after the timed replay; harness.measure.reachability)
                reachability.classify(results[ser], grammar, vocab, text, bitmask, budget)
        if n_seg and inst["expected"] is True and "bad_instance" not in inst:
            of = "text" if exact is not None else primary
            results.update(_segmentation_replays(
                grammar, vocab, bitmask, case["case_id"], inst["index"], of,
                exact if exact is not None else SERIALIZATIONS[primary](data), n_seg))
        inst["results"] = results
    record["instances"] = instances
    # An exact-text instance is judged on its one replay, "text", whatever the primary is.
    record["outcome"] = outcomes.classify(
        ({**i, "results": {primary: i["results"].get("text")}} if "text" in i else i
         for i in instances if "bad_instance" not in i), primary)
    record["tokens"] = sum(len(i["results"].get(primary, i["results"].get("text", {}))
                               .get("mask_ns", ()))
                           for i in instances if "results" in i)
    if preempted is not None:
        record["preempted"] = preempted
    # Optional engine statistics (e.g. the reference engine's mask-cache memory).
    stats = getattr(grammar, "stats", None)
    if callable(stats):
        record["engine_stats"] = stats()
    record["busy_ns"] = time.perf_counter_ns() - t_busy
    return record


def _segmentation_replays(grammar, vocab, bitmask, case_id: str, index: int, of: str,
                          text: str, k: int) -> dict[str, ReplayResult]:
    """``seg0`` … ``seg<k-1>``: ``text`` (serialisation ``of``) replayed with ``k`` seeded
    non-canonical tokenisations (:mod:`harness.measure.segment`). Each keeps only what judges and
    reproduces it: status, token count, where it was rejected, the seed, ``of``."""
    from harness.measure.segment import SegmentationError, seed_for, segmentations

    seeds = [seed_for(case_id, index, j) for j in range(k)]
    try:
        seqs = segmentations(vocab, text, seeds)
    except SegmentationError as e:
        return {f"seg{j}": {"status": "error", "error": str(e)[:300], "seed": s, "of": of}
                for j, s in enumerate(seeds)}
    out: dict[str, ReplayResult] = {}
    for j, (seed, tokens) in enumerate(zip(seeds, seqs)):
        r = replay(grammar.matcher(), tokens, bitmask, vocab.stop_ids)
        res: ReplayResult = {"status": r.status, "n_tokens": r.n_tokens, "seed": seed, "of": of}
        res.update(r.verdict_keys())
        out[f"seg{j}"] = res
    return out


def _job_function(target: str | None):
    """The function a job runs: the suite's ``job`` target ("module:function" taking
    ``(job, phase)`` and returning a record), or the replay (:func:`run_job`) for None."""
    if target is None:
        return run_job
    import importlib

    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _set_memory_limit(gib: float | None) -> None:
    if not gib:
        return
    limit = int(gib * 1024**3)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the runner dies (even by SIGKILL), so a hung
    native call is never left running as an orphan after the run is killed.

    The signal is armed only from here on, and a spawned worker gets here after its
    imports, seconds on a loaded machine: a runner killed in between would leave it
    running for good. So, once armed, the worker checks that its runner is still its
    parent, and exits at once when it is not."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the worker still exits when its pipe closes between jobs
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(1)  # the runner died before the signal was armed


def worker_main(conn, memory_gib: float | None, log_path: str | None, board=None) -> None:
    """Entry point of a spawned worker: serve jobs from ``conn`` until ``None``.

    ``board`` is where the worker
    reports the phase of its current job (a shared array of ``BOARD_SIZE`` doubles, laid
    out in :mod:`harness.execution.executor`),
    read by the runner only when it needs it (a
    deadline, a death): a message per phase would wake the runner several times a job.
    Without a board, phases travel as ``("phase", (name, info))`` messages."""
    _die_with_parent()
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    _set_memory_limit(memory_gib)

    codes = {p: float(i) for i, p in enumerate(PHASES)}

    spoiled = [False]

    def phase(p: str, info: Any = None) -> None:
        if p == KEEP:
            conn.send((KEEP, info))
            return
        if p == RECYCLE:
            spoiled[0] = True
            return
        code = codes.get(p)
        if board is None or code is None:
            conn.send(("phase", (p, info)))
            return
        if p == "groundtruth":
            board[BOARD_LIMIT_FROM] = time.monotonic()
        elif p == "replay" and info is not None:
            board[BOARD_TTFM] = float(info)
        board[BOARD_PHASE] = code

    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        if board is not None:  # a new job: nothing of the last one's shows
            board[BOARD_LIMIT_FROM], board[BOARD_TTFM], board[BOARD_PHASE] = 0.0, -1.0, 0.0
            board[BOARD_JOB] += 1
        try:
            record = _job_function(job.get("job"))(job, phase)
            conn.send(("done", pack_timings(record)))
            if spoiled[0]:  # an abandoned engine call still runs here: a fresh worker next
                conn.send((RECYCLE, None))
                return
        except MemoryError:
            conn.send(("died", {"outcome": outcomes.OOM,
                                "error": f"MemoryError: out of memory at the address-space "
                                         f"limit ({memory_gib} GiB)"}))
            return  # native engine state may be half-freed: start a fresh worker
        except Exception as e:
            from engines.protocol import one_line

            conn.send(("died", {"outcome": outcomes.CRASH,
                                "error": f"worker raised {one_line(e)}"}))
            return
