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
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["censored_distribution", "number", "ratio", "show", "MIN_RATIO_SAMPLES"]

#: Fewest samples on each side of a ratio (fewer: no ratio, and the reason says so).
MIN_RATIO_SAMPLES = 3


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


def show(dist: dict[str, Any] | None, key: str, unit: str = "", digits: int = 1) -> str:
    """One figure of a distribution as text: the number; ``≥ LIMIT UNIT (why)`` when it
    falls among censored values; ``–`` when there is none."""
    if not dist:
        return "–"
    v = dist.get(key)
    if v is None:
        if dist.get("censored") and dist.get("limit") is not None:
            return f"≥ {number(dist['limit'], digits)}{(' ' + unit) if unit else ''} " \
                   f"({dist.get('censored_why') or 'limit'})"
        return "–"
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
    return round(float(num) / float(den), 4), None
