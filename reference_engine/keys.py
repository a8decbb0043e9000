"""Duplicate object keys: the matcher-level check beside the pushdown automaton.

The automaton tracks *declared* keys in each object's frame, so a declared key
cannot repeat. Keys matched only by ``additionalProperties`` / ``patternProperties``
come from an infinite language, and "all keys distinct" over such a language is not a
context-free property: the automaton cannot forbid a repeated extra key. The matcher
does, with a tiny JSON key tracker run over the committed text (a grammar compiled from
a JSON schema only ever produces JSON text, whose object structure the text decides):

- the tracker's state is a persistent value per committed step (rollback drops
  steps, as for the configurations): the stack of open containers (an object frame is
  the frozenset of its decoded keys so far, an array frame ``None``), whether the next
  string of the top object is a key, and the string being read (a key's raw bytes);
- :func:`step` feeds bytes and returns ``None`` when a byte closes a key (its ``"``)
  whose decoded value (escapes resolved, so ``"\\u0061"`` is ``a``) is already a key of
  the same object: the mask clears such tokens and the commit refuses them;
- only tokens that contain a ``"`` can close a key (:func:`quote_counts`).

Dead ends: forbidding a repeated key must not leave a live prefix without a valid
completion (the mask promises "some valid document continues the text"):

- inside a key, a prefix can have finitely many completions even where the key
  language is infinite (``abc`` after ``a`` under ``^(abc|x.*)$``; ``a\\n`` under
  ``^[ab]+$``, Python's ``$`` allowing a final newline). Only where the decoded prefix
  begins a seen key (:func:`suspect`) can every completion be a repeat; there
  :func:`has_fresh_completion` searches the automaton byte by byte for one that is not,
  and a token without one is refused like a repeat. The tokens that can lead there
  contain a ``"`` or, inside such a key, keep its prefix on a seen key
  (:func:`continuation_tokens`, a pruned trie walk);
- after a ``,`` a fresh key must exist. Where every object's extra-key language is
  infinite it always does (and the language of a declared key is offered only while
  that key is unseen; enum/const objects spell distinct keys). An object whose extra
  keys are finitely many (e.g. ``patternProperties`` ``^(a|b)$`` with
  ``additionalProperties: false``) could run out of them, and the automaton would
  still allow the ``,``: once an object holds as many keys as the smallest such
  language (:func:`fewest_extra_keys`, counted at compile time), a token that ends
  where a key must start is checked by :func:`has_fresh_key` (whitespace, ``"``, then
  the same search) and refused if none can. ``minProperties`` above such a count is
  refused at compile time (the automaton counts extra keys as unlimited towards it).

Cost: the matcher skips what cannot matter. Where the innermost container is an array
or an object whose keys are all declared members (its frame says how many), only a
:func:`risky` token can repeat a key. Where every extra-key language is infinite from
every prefix (:func:`repeats_only_close`: the usual ``additionalProperties``), no key
prefix can run out of fresh completions, so the dead-end searches are skipped and only
tokens that close a seen key are checked (:func:`close_index`).
"""

from __future__ import annotations

import bisect
import json
import re

import numpy as np

from reference_engine import ir
from reference_engine.automata import DFA, TooLarge, state_budget

#: states the union of one object's extra-key automata may take in
#: :func:`repeats_only_close` before it answers no (the slower, exact path)
UNION_BUDGET = 20_000

_QUOTE, _BSLASH = 0x22, 0x5C
_LBRACE, _RBRACE, _LBRACK, _RBRACK, _COMMA, _COLON = 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A

#: mode of the tracker: outside strings, in a value string, in a key string
OUT, VAL, KEY = 0, 1, 2

#: (frames, expect_key, mode, escaped, raw key bytes)
START = ((), False, OUT, False, b"")


def decode_key(raw: bytes) -> str:
    """The decoded value of a key's content (the bytes between its quotes)."""
    if b"\\" not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    try:
        return json.loads(b'"' + raw + b'"')
    except ValueError:  # not reachable for text the grammar accepted
        return raw.decode("utf-8", "surrogateescape")


_STRUCT = re.compile(rb'["\\{}\[\],:]')
_STRING = re.compile(rb'["\\]')


def step(state: tuple, data: bytes) -> tuple | None:
    """Feed ``data``; ``None`` if it closes a key already present in its object."""
    frames, expect, mode, esc, raw = state
    # most tokens change nothing the tracker reads: text inside a string without a
    # quote or backslash, or outside strings without structure
    if not esc and not (_STRUCT if mode == OUT else _STRING).search(data):
        if mode == KEY:
            return frames, expect, mode, esc, raw + data
        return state
    start = 0
    for i, b in enumerate(data):
        if mode == OUT:
            if b == _QUOTE:
                if expect and frames and frames[-1] is not None:
                    mode, esc, start, raw = KEY, False, i + 1, b""
                else:
                    mode, esc = VAL, False
            elif b == _LBRACE:
                frames = frames + (frozenset(),)
                expect = True
            elif b == _LBRACK:
                frames = frames + (None,)
                expect = False
            elif b == _RBRACE or b == _RBRACK:
                frames = frames[:-1]
                expect = False
            elif b == _COMMA:
                expect = bool(frames) and frames[-1] is not None
            elif b == _COLON:
                expect = False
        elif esc:
            esc = False
        elif b == _BSLASH:
            esc = True
        elif b == _QUOTE:
            if mode == KEY:
                key = decode_key(raw + data[start:i])
                top = frames[-1]
                if key in top:
                    return None
                frames = frames[:-1] + (top | {key},)
                raw = b""
            mode = OUT
            expect = False
    if mode == KEY:
        raw = raw + data[start:]
    return frames, expect, mode, esc, raw


def has_keys(state: tuple) -> bool:
    """Does some open object already hold a key (or is a key being read)?"""
    if state[2] == KEY:
        return True
    return any(f for f in state[0])


def quote_counts(tokens) -> dict[tuple[bool, bool], np.ndarray]:
    """Candidate token ids for the key check, by (some open object holds a key or a key
    is being read, a key position is reachable without a ``,`` or ``{``):

    - a token can only matter if it closes a key or ends inside one, so it contains a
      ``"``; while no object holds a key and none is being read, it must close two
      keys of one object, so it contains at least three;
    - from a value position (inside a value string, or outside strings where no key is
      expected) a key starts only after a ``,`` or ``{``, so the token contains one."""
    q = np.array([d.count(b'"') if d else 0 for d in tokens], dtype=np.int64)
    sep = np.array([bool(d) and (b"," in d or b"{" in d) for d in tokens], dtype=bool)
    out = {}
    for h in (False, True):
        for r in (False, True):
            keep = (q >= 1) if h else (q >= 3)
            if not r:
                keep = keep & sep
            out[(h, r)] = np.flatnonzero(keep).astype(np.int64)
    return out


def candidates(trie) -> tuple[dict, np.ndarray, int]:
    """:func:`quote_counts` of the trie's vocabulary, the ids of tokens with a ``,``
    and the most ``"`` in one token; computed once per trie (kept on it)."""
    got = getattr(trie, "_key_candidates", None)
    if got is None:
        tokens = trie.token_bytes
        commas = np.array([t for t, d in enumerate(tokens) if d and b"," in d], dtype=np.int64)
        maxq = max((d.count(b'"') for d in tokens if d), default=0)
        got = trie._key_candidates = (quote_counts(tokens), commas, maxq)
    return got


_RISKY: dict[bytes, bool] = {}


def risky(data: bytes) -> bool:
    """Can ``data`` touch a key outside the innermost container it starts in, or write
    a key and then repeat or begin it again? (three ``"``, or a ``"`` after a ``}`` or
    ``]``; see :meth:`~reference_engine.dupkeys.DuplicateKeyFilter.no_extra_keys`)"""
    got = _RISKY.get(data)
    if got is None:
        got = _RISKY[data] = _risky(data)
    return got


def _risky(data: bytes) -> bool:
    q = data.count(b'"')
    if q >= 3:
        return True
    if not q:
        return False
    last = data.rfind(b'"')
    return b"}" in data[:last] or b"]" in data[:last]


def risky_tokens(trie) -> np.ndarray:
    """Ids of the :func:`risky` tokens of the trie's vocabulary (kept on it)."""
    got = getattr(trie, "_risky", None)
    if got is None:
        got = trie._risky = np.array([t for t, d in enumerate(trie.token_bytes)
                                      if d and risky(d)], dtype=np.int64)
    return got


def key_reachable(state: tuple) -> bool:
    """Is a key being read, or expected next, without a ``,`` or ``{`` first?"""
    mode = state[2]
    return mode == KEY or (mode == OUT and state[1] and bool(state[0])
                           and state[0][-1] is not None)


# --------------------------------------------------------------------------- dead ends

_SHORT = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x62: "\b", 0x66: "\f", 0x6E: "\n", 0x72: "\r",
          0x74: "\t"}
_HEX = frozenset(b"0123456789abcdefABCDEF")
#: printable ASCII characters that are themselves (no quote, no backslash), common first
_ASCII_ORDER = tuple(b for b in b"aeionrstlcdumphgbfywkvxzjqAEIONRSTLCDUMPHGBFYWKVXZJQ"
                     b"0123456789_-. $@#%&'()*+,/:;<=>?[]^`{|}~!")


def split_decode(raw: bytes) -> tuple[str, int]:
    """Decode the complete characters of a key's raw content: (text, bytes of a
    trailing partial character or escape, not decoded)."""
    out = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == _BSLASH:
            if i + 1 >= n:
                return "".join(out), n - i
            c = raw[i + 1]
            if c != 0x75:  # u
                out.append(_SHORT.get(c, chr(c)))
                i += 2
                continue
            h = raw[i + 2:i + 6]
            if len(h) < 4 or not all(x in _HEX for x in h):
                if len(h) < 4 and all(x in _HEX for x in h):
                    return "".join(out), n - i
                out.append(raw[i:i + 6].decode("latin-1"))  # not reachable in grammar text
                i += 6
                continue
            cp = int(h, 16)
            if 0xD800 <= cp < 0xDC00:  # a high surrogate: its pair follows
                lo = raw[i + 6:i + 12]
                if len(lo) < 6 and (lo == b"\\u"[:len(lo)] or (lo[:2] == b"\\u"
                                                              and all(x in _HEX for x in lo[2:]))):
                    return "".join(out), n - i
                if len(lo) == 6 and lo[:2] == b"\\u" and all(x in _HEX for x in lo[2:]):
                    lc = int(lo[2:], 16)
                    if 0xDC00 <= lc < 0xE000:
                        out.append(chr(0x10000 + ((cp - 0xD800) << 10) + (lc - 0xDC00)))
                        i += 12
                        continue
            out.append(chr(cp))
            i += 6
            continue
        if b < 0x80:
            out.append(chr(b))
            i += 1
            continue
        ln = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        if i + ln > n:
            return "".join(out), n - i
        out.append(raw[i:i + ln].decode("utf-8", "surrogateescape"))
        i += ln
    return "".join(out), 0


def suspect(state: tuple) -> bool:
    """Inside a key whose decoded prefix (complete characters) begins some key already
    in its object: only then can every completion be a repeat (a dead end)."""
    if state[2] != KEY:
        return False
    top = state[0][-1]
    if not top:
        return False
    full, _ = split_decode(state[4])
    return any(k.startswith(full) for k in top)


def has_fresh_completion(pda, configs: tuple, state: tuple) -> bool:
    """Can the key being read (``state`` in ``KEY`` mode, ``configs`` the automaton's
    configurations at this point) still be completed into a key not yet in its object?

    Exact: a byte-level search through the automaton, cut short as soon as the decoded
    prefix leaves every seen key (the automaton is alive, so some completion exists,
    and none of them can be a repeat); spellings of the same prefix meet in a memo."""
    top = state[0][-1]
    memo: set = set()
    rows = pda.rows
    live: dict[int, frozenset] = {}

    def byte_set(confs: tuple) -> frozenset:
        # the bytes some configuration's row reads: advance refuses every other
        # (the configurations are closed, so a byte is read from a row or not at all)
        out: frozenset = frozenset()
        for s, _ in confs:
            got = live.get(s)
            if got is None:
                row = rows[s]
                if row is None:
                    row = pda.materialise(s)
                got = live[s] = frozenset(b for b in range(256) if row[b] >= 0)
            out = out | got if out else got
        return out

    def rec(confs: tuple, raw: bytes) -> bool:
        full, partial = split_decode(raw)
        on = [k for k in top if k.startswith(full)]
        if not on:
            return True
        key = (confs, full, raw[len(raw) - partial:])
        if key in memo:
            return False
        memo.add(key)
        if not partial and full not in top and pda.advance(confs, b'"') is not None:
            return True
        read = byte_set(confs)
        if not partial:
            # first the cheap way out: one ASCII character that leaves every seen key
            n = len(full)
            nxt = {k[n] for k in on if len(k) > n}
            for b in _ASCII_ORDER:
                if b in read and chr(b) not in nxt and pda.advance(confs, bytes((b,))) is not None:
                    return True
        for b in sorted(read):
            if b == _QUOTE and not partial:
                continue
            r = pda.advance(confs, bytes((b,)))
            if r is not None and r[0] and rec(r[0], raw + bytes((b,))):
                return True
        return False

    return rec(configs, state[4])


def continuation_tokens(trie, state: tuple) -> list[int]:
    """Token ids without a ``"`` that, read inside the current key (``state`` in
    ``KEY`` mode), keep its decoded prefix a prefix of some key already in its object
    (the only tokens without a ``"`` that can lead into a dead end): a trie walk
    pruned as soon as the decoded prefix leaves every seen key."""
    top = state[0][-1]
    start, count, byte = trie._py_start, trie._py_count, trie._py_byte
    end_ids, end_start = trie.end_ids, trie.end_start
    out: list[int] = []
    work = [(0, state[4])]
    while work:
        node, raw = work.pop()
        s, e = start[node], start[node] + count[node]
        full, partial = split_decode(raw)
        if partial:
            kids = range(s, e)
        else:  # the first byte of each next character of a seen key, or an escape
            n = len(full)
            firsts = {k[n].encode("utf-8", "surrogatepass")[0] for k in top
                      if len(k) > n and k.startswith(full)}
            firsts.add(_BSLASH)
            kids = []
            for b in sorted(firsts):
                i = bisect.bisect_left(byte, b, s, e)
                if i < e and byte[i] == b:
                    kids.append(i)
        for c in kids:
            b = byte[c]
            if b == _QUOTE:
                continue
            r2 = raw + bytes((b,))
            full, _ = split_decode(r2)
            if not any(k.startswith(full) for k in top):
                continue
            e0, e1 = int(end_start[c]), int(end_start[c + 1])
            if e1 > e0:
                out.extend(end_ids[e0:e1].tolist())
            work.append((c, r2))
    return out


# --------------------------------------------------------------------------- compile time

def _collect(e: ir.Expr, kind: type, out: list) -> None:
    """Append to ``out`` the nodes of type ``kind`` in ``e``, not looking inside them."""
    if isinstance(e, kind):
        out.append(e)
    elif isinstance(e, (ir.Seq, ir.Alt)):
        for x in e.items:
            _collect(x, kind, out)
    elif isinstance(e, ir.Repeat):
        _collect(e.item, kind, out)


def finite_language(dfa: DFA) -> bool:
    """Does ``dfa`` accept only finitely many (possibly no) words?"""
    d = dfa.trim()
    if d.is_empty():
        return True
    n = d.n
    succ = [{t for _, _, t in d.edges[s]} for s in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        for t in succ[s]:
            pred[t].append(s)
    left = [len(succ[s]) for s in range(n)]
    work = [s for s in range(n) if not left[s]]
    peeled = 0
    while work:  # peel states all of whose paths end; a cycle is never peeled
        s = work.pop()
        peeled += 1
        for p in pred[s]:
            left[p] -= 1
            if not left[p]:
                work.append(p)
    return peeled == n


def infinite_everywhere(dfa: DFA) -> bool:
    """Does every live state of ``dfa`` accept infinitely many words? (then no
    prefix of its language can run out of completions that avoid finitely many keys)"""
    d = dfa.trim()
    if d.is_empty():
        return True
    # trimmed, every state reaches acceptance; if none is a dead end every path
    # continues forever, so through a cycle: infinitely many words from every state
    return all(d.edges[s] for s in range(d.n))


def repeats_only_close(grammar: ir.Grammar) -> bool:
    """Can a key prefix never be left with only repeats to complete it? True when each
    object's extra keys (``additionalProperties`` / ``patternProperties``, the union of
    its extra-key languages, as a key position offers them all) form a language
    infinite from every prefix, without a length window: a prefix then has infinitely
    many extra completions, finitely many of them seen (declared members are exact in
    the object frames). Only a token that closes a key can then repeat one, and the
    dead-end searches are not needed.

    The union matters: ``patternProperties`` ``^[0-9]+$`` with the default
    ``additionalProperties`` splits the keys into two regions, and the pattern's (with
    Python's ``$``, ``1\n`` has one completion) is not infinite everywhere while the
    union of both is."""
    for _, autos in _extra_key_automata(grammar):
        if any(a.lo or a.hi is not None for a in autos):
            return False
        if all(infinite_everywhere(a.dfa) for a in autos):
            continue
        try:
            with state_budget(UNION_BUDGET):
                union = _union(autos)
        except TooLarge:
            return False
        if not infinite_everywhere(union):
            return False
    return True


def _extra_key_automata(grammar: ir.Grammar):
    """``(object body, the automata of its extra-key languages)`` per body with extra
    keys (a key position offers their union)."""
    for e in grammar.rules.values():
        bodies: list = []
        _collect(e, ir.ObjectBody, bodies)
        for ob in bodies:
            autos: list = []
            for x in ob.extras:
                _collect(x.key, ir.Automaton, autos)
            if autos:
                yield ob, autos


def _union(autos: list) -> DFA:
    union = autos[0].dfa
    for a in autos[1:]:
        union = union.union(a.dfa)
    return union


def inner_keys(data: bytes) -> frozenset | None:
    """The decoded strings between consecutive unescaped quotes of ``data``, read from
    outside any escape: every key the token opens and closes is one of them (a token
    starting right after a backslash is handled by the caller). None where that
    reading fails (not JSON string content, or a string twice in a token with four
    quotes or more: the token could repeat its own key)."""
    parts: list[bytes] = []
    esc = False
    start = -1
    for i, b in enumerate(data):
        if esc:
            esc = False
        elif b == _BSLASH:
            esc = True
        elif b == _QUOTE:
            if start >= 0:
                parts.append(data[start:i])
            start = i + 1
    texts = []
    for p in parts:
        try:
            texts.append(json.loads(b'"' + p + b'"'))
        except ValueError:
            if b"\\" in p:
                return None
            texts.append(p.decode("utf-8", "surrogateescape"))
    out = frozenset(texts)
    # writing one key twice takes four quotes (open and close, twice)
    return out if len(out) == len(texts) or len(parts) < 3 else None


def close_index(trie) -> tuple:
    """Per vocabulary (kept on the trie): tokens with a ``"`` indexed by the bytes
    before it (the rest of a key they close, read from inside the key), the ids of
    those whose part before it holds a backslash (escapes), the ids of tokens with two
    quotes or more (they may write a whole key), and those again by each of their
    :func:`inner_keys` (plus the ones it cannot read); last, the escaped ones that
    close a key, by the decoded text they add to it (:func:`closed_content`), and
    those whose text does not decode alone (a partial character: checked one by
    one)."""
    got = getattr(trie, "_close_index", None)
    if got is None:
        index: dict[bytes, list[int]] = {}
        escaped: list[int] = []
        multi: list[int] = []
        for t, d in enumerate(trie.token_bytes):
            if not d or b'"' not in d:
                continue
            part = d[:d.index(b'"')]
            if b"\\" in part:
                escaped.append(t)
            else:
                index.setdefault(part, []).append(t)
            if d.count(b'"') >= 2:
                multi.append(t)
        by_inner: dict[str, list[int]] = {}
        unsafe: list[int] = []
        for t in multi:
            ks = inner_keys(trie.token_bytes[t])
            if ks is None:
                unsafe.append(t)
            else:
                for k in ks:
                    by_inner.setdefault(k, []).append(t)
        closes: dict[str, list[int]] = {}
        odd: list[int] = []
        for t in escaped:
            c = closed_content(trie.token_bytes[t])
            if c is None:
                continue  # closes no key from where it starts: repeats none by closing
            try:
                closes.setdefault(json.loads(b'"' + c + b'"'), []).append(t)
            except ValueError:
                odd.append(t)  # not a string alone (a partial character): checked
        got = trie._close_index = (index, np.array(escaped, dtype=np.int64),
                                   np.array(multi, dtype=np.int64),
                                   ({k: np.array(v, dtype=np.int64) for k, v in by_inner.items()},
                                    np.array(unsafe, dtype=np.int64)),
                                   (closes, np.array(odd, dtype=np.int64)))
    return got


def closed_content(data: bytes) -> bytes | None:
    """The bytes of ``data`` before the first quote that is not escaped, read from
    inside a string (not inside an escape); None if it has no such quote."""
    i = 0
    while i < len(data):
        b = data[i]
        if b == _BSLASH:
            i += 2
        elif b == _QUOTE:
            return data[:i]
        else:
            i += 1
    return None


def count_words(dfa: DFA) -> int | None:
    """How many words ``dfa`` accepts (surrogate code points not counted: no key can
    hold one), or ``None`` if infinitely many."""
    if not finite_language(dfa):
        return None
    d = dfa.trim()
    if d.is_empty():
        return 0
    memo: dict[int, int] = {}

    def width(lo: int, hi: int) -> int:
        w = hi - lo + 1
        a, b = max(lo, 0xD800), min(hi, 0xDFFF)
        return w - (b - a + 1) if a <= b else w

    order: list[int] = []
    seen = {0}
    stack = [(0, iter(d.edges[0]))]
    while stack:  # post-order over the acyclic trimmed automaton
        s, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(s)
            stack.pop()
        elif nxt[2] not in seen:
            seen.add(nxt[2])
            stack.append((nxt[2], iter(d.edges[nxt[2]])))
    for s in order:
        memo[s] = int(d.finals[s]) + sum(width(lo, hi) * memo[t] for lo, hi, t in d.edges[s])
    return memo[0]


def fewest_extra_keys(grammar: ir.Grammar) -> int | None:
    """The smallest number of extra keys (``additionalProperties`` /
    ``patternProperties``, beside the declared ones) of an object body whose extra keys
    are finitely many, or ``None`` if there is none. While an object holds fewer keys
    than this, a fresh key can always start it; from there on the matcher checks it
    (:func:`has_fresh_key`)."""
    best = None
    for ob, autos in _extra_key_automata(grammar):
        n = count_words(_union(autos))
        if any(a.hi is not None for a in autos):  # (no key has a length window today) be safe
            n = 0
        if n is not None and ob.min_props > n:
            from reference_engine.pda import GrammarError

            # the automaton counts extra keys as unlimited towards minProperties
            raise GrammarError(
                f"minProperties {ob.min_props} with finitely many (at most {n}) keys "
                "allowed by patternProperties/additionalProperties beside the declared "
                "ones: duplicate keys are rejected, so the object could run out of "
                "keys (not supported)")
        if n is not None and (best is None or n < best):
            best = n
    return best


_WS = (0x20, 0x09, 0x0A, 0x0D)


def has_fresh_key(pda, configs: tuple, state: tuple) -> bool:
    """Outside strings where the top object expects a key (after ``,``): can a key
    not yet in the object still start here (after optional whitespace)?"""
    seen = {configs}
    work = [configs]
    kstate = (state[0], False, KEY, False, b"")
    while work:
        confs = work.pop()
        r = pda.advance(confs, b'"')
        if r is not None and r[0] and has_fresh_completion(pda, r[0], kstate):
            return True
        for b in _WS:
            r = pda.advance(confs, bytes((b,)))
            if r is not None and r[0] and r[0] not in seen:
                seen.add(r[0])
                work.append(r[0])
    return False
