"""Figures that are figures: distributions with censored values and ratios that say when
they cannot be computed.

Two rules hold for every number the harness shows:

- **A value cut off by a limit is not a measurement.** A job that hit ``--timeout`` before
  its first mask has a time to first mask of *at least* the limit, not the limit. Such
  values are *censored*: :func:`censored_distribution` counts them apart, never averages
  them, and ranks them above every measured value (they are longer than any job that
  finished), so a percentile that falls among them is reported as ``None`` with
  ``censored`` saying why; :func:`show` prints it as ``≥ 60,000 ms (timeout)``.
- **A ratio needs two measured sides.** :func:`ratio` returns a value only when both sides
  have enough samples and lie above the resolution of the clock that measured them;
  otherwise ``None`` and the reason, which reports print as ``–`` with a footnote.
- **A tail the scheduler made is not the engine's.** A step during which the worker thread
  was preempted (an involuntary context switch: another process took the CPU) lasts a
  scheduler slice longer, milliseconds against microseconds. The worker counts those
  switches over its timed steps (``preempted``). Each stretched step can only move up, so
  with ``k`` of ``n`` steps stretched percentile ``p`` reads an undisturbed step at most
  ``100·k/n`` points higher, until the stretched steps fill the tail above it. Once they
  reach half (:data:`PREEMPTED_TAIL_SHARE`) of the steps above ``p``, that percentile may
  be the machine's: :func:`preemption` says why, :func:`show` marks it ``(preempted)`` and
  ``harness gate`` does not compare it.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["censored_distribution", "fixed", "fraction", "number", "percent", "preemption",
           "significant",
           "interval", "ratio", "show", "MIN_RATIO_SAMPLES", "PREEMPTED_TAIL_SHARE"]

#: Fewest samples on each side of a ratio (fewer: no ratio, and the reason says so).
MIN_RATIO_SAMPLES = 3
#: A step-time percentile ``p`` may be the scheduler's once the preempted steps reach this
#: share of the steps above it (``(1 - p/100) * steps``); below it, ``p`` still reads an
#: undisturbed step, at most ``p + 50·(1 - p/100)`` (the p99.5 for the p99).
PREEMPTED_TAIL_SHARE = 0.5


def _key(p: float) -> str:
    return f"p{p:g}"


def censored_distribution(measured: Iterable[float], censored: int = 0,
                          limit: float | None = None, percentiles: Sequence[float] = (),
                          why: str = "timeout") -> dict[str, Any]:
    """avg, the percentiles and max of ``measured`` values, with ``censored`` more values
    known only to be at least ``limit`` (same unit).

    Censored values rank above every measured one, so percentile ``p`` is exact while
    ``p`` lies within the measured share of the population, and ``None`` beyond it; ``avg``
    and ``max`` are ``None`` as soon as anything is censored. The dict then carries
    ``censored`` (count), ``limit`` and ``censored_why``. Empty input → ``{}``.
    """
    vals = np.sort(np.asarray([float(v) for v in measured], dtype=np.float64))
    n = vals.size + censored
    if n == 0:
        return {}
    out: dict[str, Any] = {}
    out["avg"] = float(vals.mean()) if censored == 0 and vals.size else None
    for p in percentiles:
        rank = p / 100.0 * (n - 1)  # numpy's "linear" position over all n values
        hi = int(np.ceil(rank))
        if hi >= vals.size:  # interpolates into the censored tail: unknown
            out[_key(p)] = None
            continue
        lo = int(np.floor(rank))
        out[_key(p)] = float(vals[lo] + (rank - lo) * (vals[hi] - vals[lo]))
    out["max"] = float(vals[-1]) if censored == 0 and vals.size else None
    if censored:
        out.update(censored=int(censored), limit=limit, censored_why=why)
    return out


def preemption(dist: dict[str, Any] | None, p: float, what: str | None = None) -> str | None:
    """Why percentile ``p`` (0–100) of a timed distribution may be the scheduler's and not
    the engine's, or None when it is not (or nothing was counted). ``dist`` carries
    ``steps`` and ``preempted``: for step times, the involuntary context switches over
    those steps; for a time per schema (``what``, e.g. ``"TTFM"``), the schemas timed and
    how many of them saw a switch (see :data:`PREEMPTED_TAIL_SHARE`)."""
    if not dist or dist.get("preempted") is None or not dist.get("steps"):
        return None
    k, n = int(dist["preempted"]), int(dist["steps"])
    tail = round((100.0 - p) * n / 100.0, 9)  # steps above p (rounded: 1 - 0.99 is not 0.01)
    if k == 0 or k < PREEMPTED_TAIL_SHARE * tail:
        return None
    if what:
        return (f"the worker was preempted during the {what} of {k:,} of {n:,} schemas "
                f"({100 * k / n:.2g}%), against {tail:,.1f} schema(s) above p{p:g}: that "
                "percentile may be the scheduler's, not the engine's")
    return (f"the worker was preempted {k:,} time(s) over {n:,} timed steps ({100 * k / n:.2g}%), "
            f"against {tail:,.1f} step(s) above p{p:g}: that percentile may be the "
            "scheduler's, not the engine's")


def show(dist: dict[str, Any] | None, key: str, unit: str = "", digits: int = 1) -> str:
    """One figure of a distribution as text: the number; ``≥ LIMIT UNIT (why)`` when it
    falls among censored values; ``NUMBER (preempted)`` when :func:`preemption` says the
    scheduler may have made it; ``–`` when there is none."""
    if not dist:
        return "–"
    v = dist.get(key)
    if v is None:
        if dist.get("censored") and dist.get("limit") is not None:
            return f"≥ {number(dist['limit'], digits)}{(' ' + unit) if unit else ''} " \
                   f"({dist.get('censored_why') or 'limit'})"
        return "–"
    if key.startswith("p") and key[1:].replace(".", "", 1).isdigit() \
            and preemption(dist, float(key[1:])):
        return f"{number(v, digits)} (preempted)"
    return number(v, digits)


def number(v: Any, digits: int = 1) -> str:
    """A figure as every output prints it: ``–`` for None or a non-finite value; integers
    with thousands separators; floats from 100 up without decimals, below with ``digits``."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not np.isfinite(v):
            return "–"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.{digits}f}"
    return str(v)


def fixed(v: Any, digits: int = 2, *, grouped: bool = False) -> str:
    """A float with exactly ``digits`` decimals (``grouped``: with thousands separators),
    whatever its size, for columns that line up decimals; ``–`` for None; any other value
    (a count, a word) as it is."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}" if grouped else f"{v:.{digits}f}"
    return str(v)


def significant(v: Any, digits: int = 3) -> str:
    """A number to ``digits`` significant digits (``0.0123`` → ``0.0123``, ``1234.5`` →
    ``1.23e+03``), for figures of very different sizes in one column; ``–`` for None; any
    other value (a word) as it is."""
    if v is None:
        return "–"
    if isinstance(v, (int, float)):
        return f"{v:.{digits}g}"
    return str(v)


def percent(share: Any, digits: int = 1) -> str:
    """A share (0–1) as a percentage, ``0.1234`` → ``12.3%``; ``–`` when it is not a
    number (None: nothing to divide)."""
    if isinstance(share, (int, float)):
        return f"{100 * share:.{digits}f}%"
    return "–"


def fraction(n: int, of: int) -> str:
    """``n`` of ``of`` and its percentage, ``1,234/2,000 (61.7%)``; ``–`` when ``of`` is 0."""
    return f"{n:,}/{of:,} ({100 * n / of:.1f}%)" if of else "–"


def interval(value: float | None, ci: Sequence[float] | None, resolved: bool | None,
             note: str | None = None, digits: int = 3) -> str:
    """A ratio with its confidence interval as the rules allow it: ``1.012 [1.004–1.020]``;
    ``not resolved (0.950–1.100)`` when the interval does not tell it from 1 (``resolved``
    false); ``– (reason)`` when there is no ratio (``note`` says why)."""
    if value is None:
        return f"– ({note})" if note else "–"
    if not resolved:
        return (f"not resolved ({ci[0]:.{digits}f}–{ci[1]:.{digits}f})" if ci
                else "not resolved")
    return (f"{value:.{digits}f} [{ci[0]:.{digits}f}–{ci[1]:.{digits}f}]" if ci
            else f"{value:.{digits}f}")


def ratio(num: float | None, den: float | None, *, n_num: int | None = None,
          n_den: int | None = None, resolution: float = 0.0,
          min_samples: int = MIN_RATIO_SAMPLES, what: str = "") -> tuple[float | None, str | None]:
    """``(num / den, None)``, or ``(None, why)`` when the ratio is not a figure: a side is
    missing, has fewer than ``min_samples`` samples (``n_num`` / ``n_den`` when known), or
    lies at or below ``resolution`` (the clock's, same unit as the sides)."""
    label = f"{what} " if what else ""
    for side, v, n in (("numerator", num, n_num), ("denominator", den, n_den)):
        if v is None:
            return None, f"{label}{side} not measured"
        if n is not None and n < min_samples:
            return None, f"{label}{side} has {n} sample(s), fewer than {min_samples}"
        if v <= resolution:
            return None, (f"{label}{side} {v:g} is at or below the clock's resolution "
                          f"({resolution:g})")
    assert num is not None and den is not None  # the loop returned on a missing side
    return round(float(num) / float(den), 4), None
