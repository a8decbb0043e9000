"""The e2e measurement protocol's instruments: warm-up to a stable step, the device's copy
bandwidth (the floor of a step), the GPU's SM clock, the timer's resolution.

Warm-up stop rule (:func:`warm_up`): decode steps in windows of :data:`WINDOW` steps (one
device synchronisation per window, so each window's mean is the step time the device
sustains); **stable** when the means of the last :data:`STABLE_WINDOWS` windows lie within
:data:`STABLE_SPREAD` of their median ((max - min) / median). At most ``max_steps`` steps;
a warm-up cut off by that cap is reported as *not stable after N steps*, never as stable.
The first warm-up of a batch size in a process may take ``max_steps`` (default
:data:`FIRST_MAX_STEPS`); the re-warm before each job's blocks at most
:data:`REWARM_MAX_STEPS`.

The floor of a decode step (:func:`copy_bandwidth`): the bytes a step must read (the weights,
:meth:`~suites.e2e.runtime_torch.TorchRuntime.weight_bytes`) over the device's copy
bandwidth measured in the same run (a large device-to-device copy; bytes read + written over
its time, the method of ``/work/.library/device/METHOD.md``): no step can be faster.
"""

from __future__ import annotations

import statistics
import subprocess
import time

from suites.e2e.records import CopyBandwidth, WarmUp

WINDOW = 8  # steps per warm-up window
STABLE_WINDOWS = 3  # consecutive windows that must agree
STABLE_SPREAD = 0.02  # (max - min) / median of their means
FIRST_MAX_STEPS = 400  # cap of the first warm-up of a batch size in a process
REWARM_MAX_STEPS = 64  # cap of the re-warm before each job's blocks

#: CUDA events time to about half a microsecond (CUDA's documentation of
#: cudaEventElapsedTime); a component whose mean is below this is shown as "< 0.5 µs"
EVENT_RESOLUTION_NS = 500


def timer_resolution_ns(device: str) -> int:
    """Resolution of the clock that times a decode step's components, ns: CUDA events on a
    GPU, ``time.perf_counter_ns`` elsewhere (as the OS reports it, at least 1 ns)."""
    if str(device).startswith("cuda"):
        return EVENT_RESOLUTION_NS
    return max(1, round(time.get_clock_info("perf_counter").resolution * 1e9))


def is_stable(window_means: list[float]) -> bool:
    """The stop rule: the last :data:`STABLE_WINDOWS` window means lie within
    :data:`STABLE_SPREAD` of their median ((max - min) / median)."""
    last = window_means[-STABLE_WINDOWS:]
    if len(last) < STABLE_WINDOWS:
        return False
    med = statistics.median(last)
    return med > 0 and (max(last) - min(last)) / med <= STABLE_SPREAD


def _sync(rt) -> None:
    s = getattr(rt, "sync", None)
    if s:
        s()


def warm_up(rt, prompt: list[int], max_new: int, max_steps: int = FIRST_MAX_STEPS,
            token: int = 4) -> WarmUp:
    """Decode until the step time is stable (the module's stop rule) or ``max_steps``.

    Runs the runtime's own step on ``prompt`` (the torch runtime prepared for
    ``max_new`` tokens goes back to the prompt's end whenever a window would run past that
    budget; other runtimes prefill again). Returns ``steps`` spent, ``s`` (wall seconds),
    ``stable`` (False: the cap cut it off), ``window_ms`` (each window's mean step, ms)."""
    t_start = time.perf_counter()
    batch = int(getattr(rt, "batch", 1))
    feed = [int(token)] * batch
    can_seek = hasattr(rt, "seek")
    means: list[float] = []
    steps, used = 0, max_new  # ``used``: steps decoded since the last prefill / seek
    rt.prefill(list(prompt))
    _sync(rt)
    while True:
        if used + WINDOW > max_new - 1:
            if can_seek:
                rt.seek(len(prompt))
            else:
                rt.prefill(list(prompt))
            used = 0
        _sync(rt)
        t0 = time.perf_counter_ns()
        for _ in range(WINDOW):
            rt.step(feed)
        _sync(rt)
        means.append((time.perf_counter_ns() - t0) / WINDOW / 1e6)
        steps += WINDOW
        used += WINDOW
        if is_stable(means):
            stable = True
            break
        if steps + WINDOW > max_steps:
            stable = False
            break
    return {"steps": steps, "s": round(time.perf_counter() - t_start, 3), "stable": stable,
            "max_steps": max_steps, "window_ms": [round(m, 4) for m in means]}


def copy_bandwidth(device: str, nbytes: int | None = None, reps: int = 5) -> CopyBandwidth:
    """The device's copy bandwidth, GB/s: a ``nbytes`` tensor copied ``reps`` times after
    two warm-up copies, (bytes read + bytes written) / time; the best of the reps (timed
    with CUDA events on a GPU, ``perf_counter`` on CPU). Default sizes: 2 GiB on CUDA (far
    beyond any L2), 128 MiB on CPU."""
    import torch

    cuda = str(device).startswith("cuda")
    n = int(nbytes or ((2 << 30) if cuda else (128 << 20)))
    src = torch.empty(n // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    times = []
    for _ in range(reps):
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            dst.copy_(src)
            times.append(time.perf_counter() - t0)
    del src, dst
    best = min(times)
    return {"gb_per_s": round(2 * n / best / 1e9, 1), "bytes": n, "reps": reps,
            "method": "device-to-device copy, (read + written bytes) / time, best of reps"}


def floor_ms(weight_bytes_per_step: int, bandwidth_gb_s: float) -> float:
    """The step's floor, ms: the weights one step reads over the copy bandwidth."""
    return weight_bytes_per_step / (bandwidth_gb_s * 1e9) * 1e3


class SmClock:
    """The GPU's current SM clock, MHz, through NVML (``pynvml``, from the nvidia-ml-py
    package) or, without it, ``nvidia-smi`` (~50 ms a call); ``source`` says which, or why
    none ("not available": a CPU run, or neither tool present)."""

    def __init__(self, device: str) -> None:
        self.source = "not available"
        self._handle = None
        self._nvml = None
        if not str(device).startswith("cuda"):
            self.source = "not available (CPU run)"
            return
        import torch

        idx = torch.cuda.current_device() if torch.cuda.is_available() else 0
        self._index = idx
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(idx)
            self._nvml = pynvml
            self.source = "nvml"
            return
        except Exception:
            pass
        try:
            subprocess.run(["nvidia-smi", "--version"], capture_output=True, timeout=10,
                           check=True)
            self.source = "nvidia-smi"
        except Exception:
            self.source = "not available (no pynvml, no nvidia-smi)"

    def read(self) -> int | None:
        """The SM clock now, MHz (None when not available)."""
        try:
            if self._nvml is not None:
                return int(self._nvml.nvmlDeviceGetClockInfo(self._handle,
                                                             self._nvml.NVML_CLOCK_SM))
            if self.source == "nvidia-smi":
                out = subprocess.run(
                    ["nvidia-smi", "-i", str(self._index), "--query-gpu=clocks.sm",
                     "--format=csv,noheader,nounits"], capture_output=True, text=True,
                    timeout=10).stdout
                return int(out.strip().splitlines()[0])
        except Exception:
            return None
        return None


_CLOCKS: dict[str, SmClock] = {}


def sm_clock(device: str) -> SmClock:
    """The per-process :class:`SmClock` of a device."""
    c = _CLOCKS.get(str(device))
    if c is None:
        c = _CLOCKS[str(device)] = SmClock(device)
    return c
