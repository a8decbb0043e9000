"""Code-point fragments: a DFA over code points read byte by byte through a decoder.

A grammar's ``Automaton`` nodes (JSON string content, patterns, keys, GBNF character
classes) are not expanded into byte-level NFA nodes: the NFA enters a *fragment*, and
an item inside it is ``(fragment, dfa state, decoder state, count)``. A
:class:`FragClass` is what fragments of one automaton, decoder (``utf8`` or ``json``,
see :mod:`reference_engine.encoding`) and length window ``[lo, hi]`` share: the rows
of byte transitions between such items and the memos behind them.

Invariants:

- A row (:meth:`FragClass.row`) gives a successor only to the bytes that keep the
  item alive: a byte that completes a code point no edge reads, starts a partial
  character no edge can complete, or makes a count the window cannot accept, has
  none.
- Rows depend on ``(dfa state, decoder state, count)`` only, never on the fragment
  or the PDA state holding it, so every fragment of a class shares them; partial
  characters are canonicalised (``("*", n, t)``) so that states differing only in
  which code point is half read coincide where the rest cannot tell them apart.
- ``count`` counts code points, not bytes, capped where more make no difference
  (the window's upper bound, else its lower one); it stays 0 in an unwindowed class.
"""

from __future__ import annotations

import bisect

from reference_engine.automata import DFA
from reference_engine.encoding import ESC, START, candidates, moves, step_utf8

_CONT = list(range(0x80, 0xC0))
_ALL_ASCII = (1 << 128) - 1
#: ASCII bytes that are one character of JSON string content by themselves (not a
#: control character, ``"`` or ``\\``)
_JSON_ASCII = _ALL_ASCII & ~((1 << 0x20) - 1) & ~(1 << 0x22) & ~(1 << 0x5C)
#: (lead byte, partial character it starts) for every multi-byte UTF-8 lead byte
_LEADS = tuple((b, step_utf8(START, b)[1]) for b in range(0xC2, 0xF5))
_HEXB = list(b"0123456789abcdefABCDEF")


class FragClass:
    """A code-point DFA read through a decoder, with a length window."""

    __slots__ = ("dfa", "enc", "lo", "hi", "cap", "windowed", "lens", "_reach", "_row_memo",
                 "_partial_memo", "_ascii", "_los", "_high_id", "_high_ids", "_ascii_groups",
                 "_lead_memo", "_live_memo", "_span", "_spans")

    def __init__(self, dfa: DFA, enc: str, lo: int, hi: int | None):
        self.dfa = dfa
        self.enc = enc
        self.lo = lo
        self.hi = hi
        self.windowed = lo > 0 or hi is not None
        self.cap = hi if hi is not None else lo
        self.lens = dfa.lengths() if self.windowed else None
        self._reach: int | None = None
        self._row_memo: dict[tuple, tuple] = {}
        #: (DFA state, or -1 - id of its edges above 0x7F for a partial UTF-8 character;
        #: partial character; counter or 0) -> what the partial becomes: its canonical
        #: form, True (itself) or False (dead); shared by all rows
        self._partial_memo: dict[tuple, tuple | bool] = {}
        self._ascii: dict[int, list] = {}
        self._los: dict[int, list[int]] = {}  # per DFA state, its edges' lower bounds
        #: per DFA state, an id of its edges above 0x7F (equal edges, equal ids)
        self._high_id: dict[int, int] = {}
        self._high_ids: dict[tuple, int] = {}
        #: per DFA state, its ASCII bytes grouped by target (see _row_start)
        self._ascii_groups: dict[int, tuple] = {}
        #: (high-edges id, counter key) -> the lead bytes' verdicts, grouped (see _row_start)
        self._lead_memo: dict[tuple[int, int], tuple] = {}
        #: (code-point set id, candidate intervals) -> does an edge meet them (unwindowed)
        self._live_memo: dict[tuple, bool] = {}
        self._span: dict[int, int] = {}  # per DFA state, its code-point set's id
        self._spans: dict[tuple, int] = {}

    @property
    def any_char_window(self) -> bool:
        """A ``maxLength`` on JSON string content that any character may fill (a
        one-state automaton): the splits inside it are derived from the window's
        minimum (:meth:`~reference_engine.derive.Derivations.window_reference`)."""
        return self.hi is not None and self.enc == "json" and self.dfa.n == 1

    @property
    def reach(self) -> int:
        """The most characters any live state of the automaton needs to reach
        acceptance (its shortest way there; 0 for a one-state automaton): past the
        window's minimum, a count ``cnt`` keeps every state with ``hi - cnt >= reach``
        feasible."""
        if self._reach is None:
            short, _ = self.dfa.lengths()._bounds()
            self._reach = int(max((x for x in short if x != float("inf")), default=0))
        return self._reach

    def feasible(self, d: int, cnt: int) -> bool:
        if not self.windowed:
            return True
        return self.lens.feasible(d, self.lo - cnt, None if self.hi is None else self.hi - cnt)

    def can_exit(self, d: int, cnt: int) -> bool:
        return self.dfa.finals[d] and cnt >= self.lo and (self.hi is None or cnt <= self.hi)

    def lives(self, d: int, dec, cnt: int, data: bytes) -> bool:
        """Does reading ``data`` from the item ``(d, dec, cnt)`` keep it alive, a final
        ``"`` read between characters as the string's closing quote (JSON string
        content: the decoder reads no other raw quote), which lives iff the item may
        exit there? Read off :meth:`row`, as the automaton's own rows are, without
        making an automaton state per position (a ``maxLength`` window makes one per
        count: each costs an interned item set and its closure)."""
        last = len(data) - 1
        for i, b in enumerate(data):
            if b == 0x22 and dec == START and self.enc == "json":
                return i == last and self.can_exit(d, cnt)
            for nxt, m, _ in self.row(d, dec, cnt):
                if m >> b & 1:
                    d, dec, cnt = nxt
                    break
            else:
                return False
        return True

    def _live(self, d: int, cnt: int, cands) -> bool:
        if not self.windowed:
            # every target is feasible: the answer depends on the edges' code points
            # only, which the states of a key or pattern automaton mostly share
            key = (self._span_id(d), cands)
            got = self._live_memo.get(key)
            if got is None:
                got = self._live_memo[key] = any(
                    lo <= b and a <= hi for lo, hi, _ in self.dfa.edges[d] for a, b in cands)
            return got
        for lo, hi, t in self.dfa.edges[d]:
            for a, b in cands:
                if lo <= b and a <= hi and self.feasible(t, cnt + 1):
                    return True
        return False

    def _span_id(self, d: int) -> int:
        """An id of the code points state ``d`` has edges for (equal sets, equal ids)."""
        got = self._span.get(d)
        if got is None:
            key = tuple((lo, hi) for lo, hi, _ in self.dfa.edges[d])
            got = self._span[d] = self._spans.setdefault(key, len(self._spans))
        return got

    def _uniform(self, d: int, lo: int, hi: int) -> int | None:
        """The DFA target of every code point in ``[lo, hi]`` from ``d``, if it is one
        and the same state (else None)."""
        edges = self.dfa.edges[d]
        los = self._los.get(d)
        if los is None:
            los = self._los[d] = tuple(e[0] for e in edges)
        i = bisect.bisect_right(los, lo) - 1
        if i >= 0:
            elo, ehi, t = edges[i]
            if lo <= ehi:
                return t if hi <= ehi else None
        return None

    def _canon(self, d: int, st, cnt: int):
        """Replace a partial character by ``("*", n, t)`` ("n more free continuation
        units, then DFA state t") when every completion is valid and lands in the
        same state ``t``: the code point read no longer matters, so partial
        characters from different lead bytes share one automaton state."""
        kind = st[0] if isinstance(st, tuple) else None
        first = (0x80, 0xBF)
        if kind == "8":
            _, need, v, length = st
            cands = candidates(st)
            if len(cands) != 1:
                return None
            lo, hi = cands[0]
            sh = 6 * (need - 1)
            # the lead byte may restrict the next byte (E0, ED, F0, F4); later ones are free
            first = (0x80 | ((lo >> sh) & 0x3F), 0x80 | ((hi >> sh) & 0x3F))
            if ((((v << 6) | (first[0] & 0x3F)) << sh) != lo
                    or ((((v << 6) | (first[1] & 0x3F)) + 1) << sh) - 1 != hi):
                return None
            unit = "8"
        elif kind == "u":
            _, k, v = st
            sh = 4 * (4 - k)
            lo, hi = v << sh, ((v + 1) << sh) - 1
            if hi >= 0xD800 and lo <= 0xDFFF:
                return None
            need, unit = 4 - k, "x"
        elif kind == "l":
            _, hs, k, v = st
            sh = 4 * (4 - k)
            llo, lhi = v << sh, ((v + 1) << sh) - 1
            if llo < 0xDC00 or lhi > 0xDFFF:
                return None
            base = 0x10000 + ((hs - 0xD800) << 10)
            lo, hi = base + llo - 0xDC00, base + lhi - 0xDC00
            need, unit = 4 - k, "x"
        else:
            return None
        t = self._uniform(d, lo, hi)
        if t is None or not self.feasible(t, cnt + 1):
            return None
        return ("*", need, t, unit, first) if unit == "8" else ("*", need, t, unit)

    def row(self, d: int, dec, cnt: int) -> tuple:
        """``((successor, mask, bytes), ...)``: the bytes that keep the item ``(d, dec,
        cnt)`` alive, grouped by the ``successor = (d2, dec2, cnt2)`` they lead to (a
        handful of groups: most bytes of a DFA edge lead to one and the same state);
        ``mask`` has bit ``b`` set for each byte ``b`` of the group's ``bytes``."""
        key = (d, dec, cnt)
        got = self._row_memo.get(key)
        if got is not None:
            return got
        cnt1 = min(cnt + 1, self.cap) if self.windowed else 0
        if isinstance(dec, tuple) and dec[0] == "*":
            if dec[3] == "8":
                _, need, t, unit, (blo, bhi) = dec
                rng = range(blo, bhi + 1)
                nxt = (t, START, cnt1) if need == 1 else (t, ("*", need - 1, t, unit, (0x80, 0xBF)), cnt)
            else:
                _, need, t, unit = dec
                rng = _HEXB
                nxt = (t, START, cnt1) if need == 1 else (t, ("*", need - 1, t, unit), cnt)
            out = self._row_memo[key] = _grouped([(b, nxt) for b in rng])
            return out
        windowed = self.windowed
        ccnt = cnt if windowed else 0
        if windowed and cnt + 1 >= self.lo and (self.hi is None or self.hi - cnt - 1 >= self.dfa.n):
            # Far from both bounds, a partial character's verdict does not depend on the
            # count: it only asks whether the state after the character can still reach
            # acceptance within the budget, and any reachable acceptance is nearer than
            # the DFA's size. So all such counts share one memo entry.
            ccnt = -1
        if dec == START:
            out = self._row_memo[key] = self._row_start(d, cnt, cnt1, ccnt)
        else:
            out = self._row_memo[key] = self._row_bytes(d, dec, cnt, cnt1, ccnt)
        return out

    def _row_bytes(self, d: int, dec, cnt: int, cnt1: int, ccnt: int) -> tuple:
        """:meth:`row` byte by byte through the decoder (inside a character; and the
        reference the START rows are tested against). ``cnt1``: the counter after a
        character; ``ccnt``: the counter key of partial-character verdicts."""
        out = []
        dstep = self.dfa.step
        windowed = self.windowed
        edges = self.dfa.edges[d]
        ascii_row = self._ascii.get(d)
        if ascii_row is None:
            # the DFA's targets for ASCII code points (most bytes of most rows), read
            # off the sorted edge intervals once per state instead of a bisect per byte
            ascii_row = [None] * 128
            for lo, hi, t in edges:
                if lo >= 128:
                    break
                ascii_row[lo:min(hi, 127) + 1] = [t] * (min(hi, 127) + 1 - lo)
            self._ascii[d] = ascii_row = tuple(ascii_row)  # (no list for the collector)
        feasible: dict[int, bool] = {}  # per target state, within this row
        for b, r in moves(self.enc, dec):
            if r[0] == "c":
                cp = r[1]
                d2 = ascii_row[cp] if cp < 128 else dstep(d, cp)
                if d2 is None:
                    continue
                if windowed:
                    ok = feasible.get(d2)
                    if ok is None:
                        ok = feasible[d2] = self.feasible(d2, cnt + 1)
                    if not ok:
                        continue
                out.append((b, (d2, START, cnt1)))
            else:
                st = r[1]
                if st.__class__ is tuple and st[0] == "8":
                    # a partial UTF-8 character completes to a code point >= 0x80: its
                    # fate depends on the state's edges above 0x7F only, which many
                    # states of a key or enum automaton share
                    hid = self._high_id.get(d)
                    if hid is None:
                        h = tuple(e for e in edges if e[1] >= 0x80)
                        hid = self._high_id[d] = self._high_ids.setdefault(h, len(self._high_ids))
                    pkey = (-1 - hid, st, ccnt)
                else:
                    pkey = (d, st, ccnt)
                v = self._verdict(d, st, cnt, pkey)
                if v is True:
                    out.append((b, (d, st, cnt)))
                elif v:
                    out.append((b, (v[2], v, cnt)))
        return _grouped(out)

    def _verdict(self, d: int, st, cnt: int, pkey: tuple):
        """What the partial character ``st`` read from ``(d, cnt)`` becomes (memoised
        under ``pkey``, see :meth:`row`): its canonical form, True (itself) or False."""
        v = self._partial_memo.get(pkey)
        if v is None:
            edges = self.dfa.edges[d]
            top = edges[-1][1] if edges else -1
            cands = candidates(st)
            if not cands or cands[0][0] > top:
                v = False  # every completion lies above the state's edges
            else:
                c = self._canon(d, st, cnt)
                v = c if c is not None else self._live(d, cnt, cands)
            self._partial_memo[pkey] = v
        return v

    def _row_start(self, d: int, cnt: int, cnt1: int, ccnt: int) -> tuple:
        """:meth:`row` between characters (the decoder at START), without a pass over
        the 256 bytes: ASCII bytes grouped by DFA target once per state (read off the
        edge intervals), lead bytes of multi-byte characters grouped by verdict once per
        set of edges above 0x7F and counter key, and the escape byte."""
        asc = self._ascii_groups.get(d)
        if asc is None:
            allowed = _JSON_ASCII if self.enc == "json" else _ALL_ASCII
            by_t: dict[int, int] = {}
            for lo, hi, t in self.dfa.edges[d]:
                if lo >= 128:
                    break
                m = (((1 << (min(hi, 127) + 1)) - 1) ^ ((1 << lo) - 1)) & allowed
                if m:
                    by_t[t] = by_t.get(t, 0) | m
            asc = self._ascii_groups[d] = tuple(
                (t, m, tuple(b for b in range(128) if m >> b & 1)) for t, m in by_t.items())
        out = []
        if self.windowed:
            for t, m, bs in asc:
                if self.feasible(t, cnt + 1):
                    out.append(((t, START, cnt1), m, bs))
        else:
            out.extend(((t, START, cnt1), m, bs) for t, m, bs in asc)
        hid = self._high_id.get(d)
        if hid is None:
            h = tuple(e for e in self.dfa.edges[d] if e[1] >= 0x80)
            hid = self._high_id[d] = self._high_ids.setdefault(h, len(self._high_ids))
        leads = self._lead_memo.get((hid, ccnt))
        if leads is None:
            # (partial character or None, verdict, mask, bytes): a verdict True keeps the
            # partial character itself (one group per lead byte), a canonical form is
            # shared by many lead bytes
            canon: dict = {}
            own = []
            for b, st in _LEADS:
                v = self._verdict(d, st, cnt, (-1 - hid, st, ccnt))
                if v is True:
                    own.append((st, True, 1 << b, (b,)))
                elif v:
                    g = canon.get(v)
                    if g is None:
                        canon[v] = [1 << b, [b]]
                    else:
                        g[0] |= 1 << b
                        g[1].append(b)
            leads = self._lead_memo[(hid, ccnt)] = tuple(own) + tuple(
                (None, v, m, tuple(bs)) for v, (m, bs) in canon.items())
        for st, v, m, bs in leads:
            out.append(((d, st, cnt) if v is True else (v[2], v, cnt), m, bs))
        if self.enc == "json" and self._verdict(d, ESC, cnt, (d, ESC, ccnt)) is True:
            out.append(((d, ESC, cnt), 1 << 0x5C, (0x5C,)))
        return tuple(out)


def _grouped(pairs: list) -> tuple:
    """``[(byte, successor), ...]`` as ``((successor, mask, bytes), ...)`` (see
    :meth:`FragClass.row`); a tuple of tuples, which the garbage collector leaves alone."""
    groups: dict = {}
    for b, nxt in pairs:
        g = groups.get(nxt)
        if g is None:
            groups[nxt] = [b]
        else:
            g.append(b)
    out = []
    for nxt, bs in groups.items():
        mask = 0
        for b in bs:
            mask |= 1 << b
        out.append((nxt, mask, tuple(bs)))
    return tuple(out)
