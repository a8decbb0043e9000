"""Request streams: the client side that sends a stream's requests on their schedule
(the arrival times come with the requests: :func:`suites.serve.arrival_times`), with at most
``concurrency`` in flight (a fixed-concurrency benchmark is ``rate = inf`` with a cap)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Stream", "StreamResult"]


@dataclass
class StreamResult:
    """What one stream did: the results of the requests it sent, in completion order, and
    the ones it never sent (the server died first)."""

    results: list[tuple[Any, Any]] = field(default_factory=list)
    unsent: list[Any] = field(default_factory=list)
    start_ns: int = 0
    end_ns: int = 0


class Stream:
    """Sends ``items`` at ``offsets`` (seconds) with at most ``concurrency`` in flight, each
    through ``send(item) -> result`` on a thread of its own; ``on_result(item, result)`` runs
    on the caller's thread as results come. ``broken(result) -> bool`` (asked after
    ``on_result``) says a result means the server is gone: the stream then sends nothing more, waits for what is in flight,
    and returns the rest as unsent."""

    def __init__(self, send: Callable[[Any], Any], concurrency: int | None = None,
                 broken: Callable[[Any], bool] = lambda r: False) -> None:
        self.send = send
        self.concurrency = concurrency
        self.broken = broken

    def run(self, items: list[Any], offsets: list[float],
            on_result: Callable[[Any, Any], None]) -> StreamResult:
        import queue

        done: "queue.Queue[tuple[Any, Any]]" = queue.Queue()
        slots = threading.Semaphore(self.concurrency) if self.concurrency else None
        out = StreamResult(start_ns=time.perf_counter_ns())
        t0 = time.monotonic()
        in_flight = 0
        stop = False

        def work(item):
            try:
                res = self.send(item)
            except BaseException as e:  # never lose a request to a client bug
                res = e
            done.put((item, res))

        def collect(block: bool, timeout: float | None = None) -> None:
            nonlocal in_flight, stop
            try:
                item, res = done.get(block=block, timeout=timeout)
            except queue.Empty:
                return
            in_flight -= 1
            if slots is not None:
                slots.release()
            if isinstance(res, BaseException):
                raise res
            out.results.append((item, res))
            on_result(item, res)
            if self.broken(res):
                stop = True

        i = 0
        while i < len(items) and not stop:
            wait = t0 + offsets[i] - time.monotonic()
            if wait > 0:
                collect(block=True, timeout=wait)
                continue
            if slots is not None and not slots.acquire(blocking=False):
                collect(block=True, timeout=0.05)
                continue
            threading.Thread(target=work, args=(items[i],), daemon=True).start()
            in_flight += 1
            i += 1
            while not done.empty():
                collect(block=False)
        while in_flight:
            collect(block=True, timeout=1.0)
        out.unsent = list(items[i:])
        out.end_ns = time.perf_counter_ns()
        return out
