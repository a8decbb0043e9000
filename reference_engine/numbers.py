"""Exact languages of JSON number spellings with value constraints.

JSON numbers are written ``-? int frac? exp?``. Python's ``json`` (hence the
``jsonschema`` oracle) turns a spelling without fraction and exponent into an
``int`` (exact) and any other spelling into a ``float`` (rounded). This module builds
byte-level automata for

- *integer spellings* ``-?(0|[1-9][0-9]*)`` within an exact integer interval;
- *float spellings* compared, exactly as Python does, by the value of ``float(d)``.

With numeric bounds, the float spellings produced are: ``int.digits``, a normalised
mantissa with an exponent ``[1-9](.digits)?[eE][+-]?digits`` (what ``json.dumps``
writes), and a zero mantissa with an exponent. Other exponent spellings (``12e3``,
``0.5e1``) would need to compare a count of digits with the value of the exponent,
which no finite automaton can do: they are rejected when bounds apply (a listed
departure). Without bounds the full JSON number grammar is used.

Float semantics, exactly: a float spelling ``d`` is read by Python as ``float(d)``
(round-half-even, underflow to 0, overflow to infinity) and then compared with the
bound. ``float(d) >= v`` holds iff ``d`` is above the midpoint between the smallest
float ``G >= v`` and its predecessor (the midpoint itself rounds to whichever of the two
has an even significand), so each bound becomes an exact decimal threshold on ``d``
(up to ~1,100 digits for bounds near zero; the comparison automata are linear in it).
"""

from __future__ import annotations

import functools
import math
import struct
from fractions import Fraction

from reference_engine import ir
from reference_engine.automata import DFA
from reference_engine.ir import EMPTY, NOTHING, alt, lit, opt, plus, rep, seq, star

D = ir.byterange(0x30, 0x39)
D19 = ir.byterange(0x31, 0x39)
CANON = alt(lit("0"), seq(D19, star(D)))
EXP_MARK = ir.byteclass(b"eE")
SIGN = ir.byteclass(b"+-")
FRAC_ANY = seq(lit("."), plus(D))
ZEROS = star(lit("0"))

#: Unbounded JSON number (RFC 8259).
JSON_NUMBER = seq(opt(lit("-")), CANON, opt(FRAC_ANY), opt(seq(EXP_MARK, opt(SIGN), plus(D))))
JSON_INTEGER = seq(opt(lit("-")), CANON)


class NumberError(Exception):
    pass


def _drange(lo: int, hi: int) -> ir.Expr:
    if lo > hi or lo > 9 or hi < 0:
        return NOTHING
    return ir.byterange(0x30 + max(lo, 0), 0x30 + min(hi, 9))


def _and(*exprs: ir.Expr, label: str = "") -> ir.Expr:
    exprs = [e for e in exprs if e is not None]
    if any(isinstance(e, ir.Nothing) for e in exprs):
        return NOTHING
    if len(exprs) == 1 and not label:
        return exprs[0]
    dfa = ir.to_dfa(exprs[0])
    for e in exprs[1:]:
        dfa = dfa.intersect(ir.to_dfa(e))
    return NOTHING if dfa.is_empty() else ir.Automaton(dfa, "byte", label)



# --------------------------------------------------------------------------- digit automata

_DIG = [(0x30 + i) for i in range(10)]


def _row(targets: dict[int, int]) -> list[tuple[int, int, int]]:
    """Edge row from a digit -> target map (merging runs)."""
    out: list[tuple[int, int, int]] = []
    for d in range(10):
        t = targets.get(d)
        if t is None:
            continue
        b = 0x30 + d
        if out and out[-1][2] == t and out[-1][1] == b - 1:
            out[-1] = (out[-1][0], b, t)
        else:
            out.append((b, b, t))
    return out


def uint_cmp_dfa(op: str, k: int) -> DFA:
    """Canonical unsigned integers (``0|[1-9][0-9]*``) with value ``op k`` (k >= 0):
    a linear automaton (length first, then digit by digit)."""
    s = str(k)
    n = len(s)
    # states: 0 start, 1 "0", then (i, x) for i in 1..n, x in EQ/GT/LT, then LONG
    idx = {}
    states = ["S", "Z"] + [(i, x) for i in range(1, n + 1) for x in ("EQ", "GT", "LT")] + ["LONG"]
    for j, st in enumerate(states):
        idx[st] = j
    edges: list[list] = [[] for _ in states]
    edges[idx["S"]] = _row({0: idx["Z"], **{d: idx[(1, "GT" if d > int(s[0]) else "EQ" if d == int(s[0])
                                                     else "LT")] for d in range(1, 10)}})
    for i in range(1, n + 1):
        for x in ("EQ", "GT", "LT"):
            if i == n:
                edges[idx[(i, x)]] = _row({d: idx["LONG"] for d in range(10)})
            elif x == "EQ":
                c = int(s[i])
                edges[idx[(i, x)]] = _row({d: idx[(i + 1, "GT" if d > c else "EQ" if d == c else "LT")]
                                           for d in range(10)})
            else:
                edges[idx[(i, x)]] = _row({d: idx[(i + 1, x)] for d in range(10)})
    edges[idx["LONG"]] = _row({d: idx["LONG"] for d in range(10)})

    def value_cmp(st) -> str:
        if st == "Z":
            return "EQ" if k == 0 else "LT"
        if st == "LONG":
            return "GT"
        i, x = st
        return x if i == n else "LT"

    want = {"ge": ("GT", "EQ"), "gt": ("GT",), "le": ("LT", "EQ"), "lt": ("LT",), "eq": ("EQ",)}[op]
    finals = [st != "S" and value_cmp(st) in want for st in states]
    return DFA(edges, finals).trim().minimize()


def frac_cmp_dfa(op: str, f: str) -> DFA:
    """Non-empty digit strings F with ``0.F op 0.f`` (f without trailing zeros): a
    linear automaton (E_i: equal on i digits; G/L: already greater/less)."""
    n = len(f)
    # states: S (nothing read), E_1..E_n, EN (f matched, zeros since), G, L
    S, G, L = 0, n + 1, n + 2
    E = list(range(1, n + 1))  # E[i-1] = E_i
    EN = n + 3
    N = n + 4
    edges: list[list] = [[] for _ in range(N)]

    def step_from(i: int) -> dict[int, int]:  # from "equal on i digits" (i < n)
        c = int(f[i])
        nxt = E[i] if i + 1 < n else EN
        return {d: (G if d > c else nxt if d == c else L) for d in range(10)}

    if n == 0:
        edges[S] = _row({d: (EN if d == 0 else G) for d in range(10)})
    else:
        edges[S] = _row(step_from(0))
    for i in range(1, n):
        edges[E[i - 1]] = _row(step_from(i))
    if n >= 1:
        edges[E[n - 1]] = []  # unused (EN used instead)
    edges[EN] = _row({d: (EN if d == 0 else G) for d in range(10)})
    edges[G] = _row({d: G for d in range(10)})
    edges[L] = _row({d: L for d in range(10)})
    finals = [False] * N
    if op in ("ge", "gt"):
        finals[G] = True
        finals[EN] = op == "ge"
    else:
        finals[L] = True
        finals[EN] = op == "le"
        for i in range(1, n):  # F = f[:i]: smaller than f
            finals[E[i - 1]] = True
    return DFA(edges, finals).trim().minimize()


def _auto(dfa: DFA, label: str = "") -> ir.Expr:
    return NOTHING if dfa.is_empty() else ir.Automaton(dfa, "byte", label)


def int_ge(k: int) -> ir.Expr:
    return _auto(uint_cmp_dfa("ge", max(k, 0)))


def int_le(k: int) -> ir.Expr:
    return NOTHING if k < 0 else _auto(uint_cmp_dfa("le", k))


def uint_range(lo: int, hi: int | None, max_digits: int | None = None) -> ir.Expr:
    lo = max(lo, 0)
    if hi is not None and hi < lo:
        return NOTHING
    dfa = uint_cmp_dfa("ge", lo) if lo > 0 else ir.to_dfa(CANON)
    if hi is not None:
        dfa = dfa.intersect(uint_cmp_dfa("le", hi))
    if max_digits is not None:
        dfa = dfa.intersect(ir.to_dfa(alt(lit("0"), seq(D19, rep(D, 0, max_digits - 1)))))
    label = f"digits {lo}..{'' if hi is None else hi}" + (
        f" (at most {max_digits} digits)" if max_digits is not None else "")
    return _auto(dfa, label)


def int_interval(a: int | None, b: int | None, max_digits: int | None = None) -> ir.Expr:
    """Signed integer spellings ``-?(0|[1-9][0-9]*)`` with value in ``[a, b]``."""
    if a is not None and b is not None and a > b:
        return NOTHING
    parts = []
    if b is None or b >= 0:
        parts.append(uint_range(max(a, 0) if a is not None else 0, b, max_digits))
    if a is None or a <= 0:
        mlo = max(-b, 0) if b is not None else 0
        mhi = -a if a is not None else None
        if mhi is None or mlo <= mhi:
            parts.append(seq(lit("-"), uint_range(mlo, mhi, max_digits)))
    return alt(*parts)


# --------------------------------------------------------------------------- decimals

def _digits(q: Fraction) -> tuple[str, str]:
    """Integer part and fraction digits (no trailing zeros) of ``q >= 0``, exactly
    (``q`` must have a terminating decimal expansion, as every float does)."""
    ip, rem = divmod(q.numerator, q.denominator)
    out = []
    while rem:
        rem *= 10
        d, rem = divmod(rem, q.denominator)
        out.append(chr(48 + d))
        if len(out) > 2000:
            raise NumberError("threshold has no short decimal expansion")
    return str(ip), "".join(out)


def _signed_exp(op: str, k: int) -> ir.Expr:
    """Exponent digits ``[+-]?[0-9]+`` (leading zeros allowed) with value op k."""
    if op == "eq":
        if k > 0:
            return seq(opt(lit("+")), ZEROS, lit(str(k)))
        if k == 0:
            return seq(opt(SIGN), plus(lit("0")))
        return seq(lit("-"), ZEROS, lit(str(-k)))
    if op == "gt":
        if k >= 0:
            return seq(opt(lit("+")), ZEROS, int_ge(k + 1))
        neg = seq(lit("-"), ZEROS, uint_range(1, -k - 1)) if -k - 1 >= 1 else NOTHING
        return alt(seq(opt(lit("+")), plus(D)), seq(lit("-"), plus(lit("0"))), neg)
    if op == "lt":
        if k > 0:
            return alt(seq(opt(lit("+")), ZEROS, int_le(k - 1)), seq(lit("-"), plus(D)))
        return seq(lit("-"), ZEROS, int_ge(-k + 1))
    raise ValueError(op)


def _mantissa(op: str, t0: int, tf: str) -> ir.Expr:
    """``d`` or ``d.F`` (d in 1..9) compared with ``t0.tf``."""
    any_frac = opt(FRAC_ANY)
    frac = _auto(frac_cmp_dfa(op, tf))
    bare_ok = {"ge": not tf, "gt": False, "le": True, "lt": bool(tf)}[op]
    same = seq(lit(str(t0)), alt(seq(lit("."), frac), EMPTY if bare_ok else NOTHING))
    if op in ("ge", "gt"):
        return alt(seq(_drange(t0 + 1, 9), any_frac), same)
    return alt(seq(_drange(1, t0 - 1), any_frac), same)


F1 = seq(CANON, FRAC_ANY)
F2 = seq(D19, opt(FRAC_ANY), EXP_MARK, opt(SIGN), plus(D))
F3 = seq(lit("0"), opt(seq(lit("."), plus(lit("0")))), EXP_MARK, opt(SIGN), plus(D))
FLOAT_FORMS = alt(F1, F2, F3)


def mag_cmp(op: str, t: Fraction) -> ir.Expr:
    """Float spellings (F1 | F2 | F3, unsigned) with exact value ``op t`` (t >= 0)."""
    ip, fd = _digits(t)
    k = int(ip)
    frac = _auto(frac_cmp_dfa(op, fd))
    if op in ("ge", "gt"):
        f1 = alt(seq(int_ge(k + 1), FRAC_ANY), seq(lit(ip), lit("."), frac))
    else:
        f1 = alt(seq(int_le(k - 1) if k >= 1 else NOTHING, FRAC_ANY), seq(lit(ip), lit("."), frac))
    if t == 0:
        f2 = F2 if op in ("ge", "gt") else NOTHING
    else:
        if ip != "0":
            t0, rest, te = int(ip[0]), (ip[1:] + fd), len(ip) - 1
        else:
            z = len(fd) - len(fd.lstrip("0"))
            t0, rest, te = int(fd[z]), fd[z + 1:], -(z + 1)
        tfm = rest.rstrip("0")
        cmp_e = "gt" if op in ("ge", "gt") else "lt"
        f2 = alt(seq(D19, opt(FRAC_ANY), EXP_MARK, _signed_exp(cmp_e, te)),
                 seq(_mantissa(op, t0, tfm), EXP_MARK, _signed_exp("eq", te)))
    zero_ok = {"ge": t == 0, "gt": False, "le": True, "lt": t > 0}[op]
    return alt(f1, f2, F3 if zero_ok else NOTHING)


Bound = tuple  # (Fraction, strict: bool)


def _fmt(t) -> str:
    return repr(float(t)) if isinstance(t, Fraction) and t.denominator != 1 else str(t)


def float_interval(lo: Bound | None, hi: Bound | None) -> ir.Expr:
    """Signed float spellings with exact decimal value within ``(lo, hi)``; each bound
    is ``(Fraction, strict)`` or None."""
    parts = []
    pos_ok = True
    pos_c = [FLOAT_FORMS]
    if lo is not None and (lo[0] > 0 or (lo[0] == 0 and lo[1])):
        pos_c.append(mag_cmp("gt" if lo[1] else "ge", lo[0]))
    if hi is not None:
        if hi[0] < 0 or (hi[0] == 0 and hi[1]):
            pos_ok = False
        else:
            pos_c.append(mag_cmp("lt" if hi[1] else "le", hi[0]))
    neg_ok = True
    neg_c = [FLOAT_FORMS]
    if lo is not None:
        if lo[0] > 0 or (lo[0] == 0 and lo[1]):
            neg_ok = False
        else:
            neg_c.append(mag_cmp("lt" if lo[1] else "le", -lo[0]))
    if hi is not None and (hi[0] < 0 or (hi[0] == 0 and hi[1])):
        neg_c.append(mag_cmp("gt" if hi[1] else "ge", -hi[0]))

    def label(lo_, hi_) -> str:
        a = "(" if lo_ is None or lo_[1] else "["
        b = ")" if hi_ is None or hi_[1] else "]"
        return (f"value as a float in {a}{'' if lo_ is None else _fmt(lo_[0])}, "
                f"{'' if hi_ is None else _fmt(hi_[0])}{b}")

    if pos_ok:
        parts.append(_and(*pos_c, label="unsigned " + label(lo, hi)))
    if neg_ok:
        parts.append(seq(lit("-"), _and(*neg_c, label="magnitude of negative " + label(lo, hi))))
    return alt(*parts)


# --------------------------------------------------------------------------- bounds

def _check_finite(v) -> None:
    if isinstance(v, float) and not math.isfinite(v):
        raise NumberError(f"non-finite numeric bound {v!r}")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise NumberError(f"numeric bound {v!r} is not a number")


def int_bounds(lower: list[Bound], upper: list[Bound]) -> tuple[int | None, int | None]:
    """Exact integer interval from ``(value, strict)`` bounds."""
    a = b = None
    for v, strict in lower:
        _check_finite(v)
        q = Fraction(v)
        x = math.floor(q) + 1 if strict else math.ceil(q)
        a = x if a is None else max(a, x)
    for v, strict in upper:
        _check_finite(v)
        q = Fraction(v)
        x = math.ceil(q) - 1 if strict else math.floor(q)
        b = x if b is None else min(b, x)
    return a, b


_TOP = Fraction(2) ** 1024  # where the float after the largest one would be


def _even(g: float) -> bool:
    return struct.unpack("<Q", struct.pack("<d", g))[0] & 1 == 0


def _fr(g: float) -> Fraction:
    if g == math.inf:
        return _TOP
    if g == -math.inf:
        return -_TOP
    return Fraction(g)


def _float_threshold(v, side: str, strict: bool) -> Bound:
    """The decimal threshold on a spelling ``d`` equivalent to ``float(d) op v`` under
    round-half-even: ``d`` vs the midpoint between the extreme float that satisfies the
    bound and its neighbour outside; the midpoint itself rounds to the even one."""
    _check_finite(v)
    q = Fraction(v)
    try:
        f = float(v)
    except OverflowError:
        raise NumberError(f"numeric bound {v} is beyond the float range") from None
    if side == "lower":  # G = smallest float >= v (> v if strict)
        if Fraction(f) < q or (strict and Fraction(f) <= q):
            f = math.nextafter(f, math.inf)
        if not math.isfinite(f):
            raise NumberError(f"numeric bound {v} is beyond the float range")
        m = (_fr(math.nextafter(f, -math.inf)) + Fraction(f)) / 2
    else:  # G = largest float <= v (< v if strict)
        if Fraction(f) > q or (strict and Fraction(f) >= q):
            f = math.nextafter(f, -math.inf)
        if not math.isfinite(f):
            raise NumberError(f"numeric bound {v} is beyond the float range")
        m = (Fraction(f) + _fr(math.nextafter(f, math.inf))) / 2
    return m, not _even(f)


def float_bounds(lower: list[Bound], upper: list[Bound]) -> tuple[Bound | None, Bound | None]:
    lo = hi = None
    for v, strict in lower:
        t = _float_threshold(v, "lower", strict)
        if lo is None or t[0] > lo[0] or (t[0] == lo[0] and t[1]):
            lo = t
    for v, strict in upper:
        t = _float_threshold(v, "upper", strict)
        if hi is None or t[0] < hi[0] or (t[0] == hi[0] and t[1]):
            hi = t
    return lo, hi


# --------------------------------------------------------------------------- public

def _key(bounds) -> tuple:
    return tuple((type(v).__name__, v, bool(st)) for v, st in bounds)


def integer_type(lower: list[Bound], upper: list[Bound], dot_zero: bool) -> ir.Expr:
    """``"type": "integer"``: integer spellings in range; with ``dot_zero`` (draft 6+,
    where ``1.0`` is an integer) also ``n.0+`` spellings of up to 15 digits.
    ``lower``/``upper``: ``(bound, strict)`` pairs (cached per bounds)."""
    return _integer_type(_key(lower), _key(upper), dot_zero)


def number_type(lower: list[Bound], upper: list[Bound]) -> ir.Expr:
    """``"type": "number"``: every JSON number, or with bounds the integer spellings in
    the exact interval plus the float spellings whose float value is in range."""
    return _number_type(_key(lower), _key(upper))


def number_equal(value, allow_int: bool, allow_float: bool) -> ir.Expr:
    """Spellings of numbers equal to ``value`` (``enum``/``const``): integer spellings
    if ``allow_int`` and the value is integral, float spellings (those whose float is
    ``value``) if ``allow_float``."""
    return _number_equal(type(value).__name__, value, allow_int, allow_float)


@functools.lru_cache(maxsize=512)
def _integer_type(lower_k: tuple, upper_k: tuple, dot_zero: bool) -> ir.Expr:
    lower = [(v, st) for _, v, st in lower_k]
    upper = [(v, st) for _, v, st in upper_k]
    a, b = int_bounds(lower, upper)
    e = int_interval(a, b) if (lower or upper) else JSON_INTEGER
    if dot_zero:
        e = alt(e, seq(int_interval(a, b, max_digits=15), lit("."), plus(lit("0"))))
    return e


@functools.lru_cache(maxsize=512)
def _number_type(lower_k: tuple, upper_k: tuple) -> ir.Expr:
    lower = [(v, st) for _, v, st in lower_k]
    upper = [(v, st) for _, v, st in upper_k]
    if not lower and not upper:
        return JSON_NUMBER
    a, b = int_bounds(lower, upper)
    lo, hi = float_bounds(lower, upper)
    return alt(int_interval(a, b), float_interval(lo, hi))


@functools.lru_cache(maxsize=2048)
def _number_equal(_type: str, value, allow_int: bool, allow_float: bool) -> ir.Expr:
    parts = []
    if allow_int and Fraction(value).denominator == 1:
        n = int(Fraction(value))
        parts.append(int_interval(n, n))
    if allow_float:
        try:
            f = float(value)
        except OverflowError:
            f = math.inf
        if math.isfinite(f) and Fraction(f) == Fraction(value):
            parts.append(float_interval(_float_threshold(f, "lower", False),
                                        _float_threshold(f, "upper", False)))
    return alt(*parts)
