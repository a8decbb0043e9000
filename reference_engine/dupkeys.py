"""The duplicate-key rule on masks and commits (JSON objects never repeat a key).

The automaton tracks an object's *declared* members in its frames, but not the text of
extra keys (``additionalProperties``, ``patternProperties``): those are the business of
a separate tracker (:mod:`reference_engine.keys`), whose state runs beside each
matcher's configurations. :class:`DuplicateKeyFilter` applies its rule to a mask the
automaton already computed, clearing the tokens that would repeat a key of an open
object or leave it with only repeats to complete (see :meth:`DuplicateKeyFilter.allows`),
and answers the same question for a commit.

Invariants:

- It only ever *clears* bits: a token the automaton refuses stays refused, and a token
  it allows is cleared iff :meth:`DuplicateKeyFilter.allows` says no (the candidates it
  reads are a superset of the tokens that can be refused, narrowed by the tracker state).
- Its caches are keyed by ``(configurations, tracker state)`` or by tracker frames
  only, never by a mask: the answer for a token does not depend on the other tokens.
- The automaton node cache it reads (``nodes``: state -> NodeMask) is the split cache's
  own dict, read only to know whether a single node's entry *is* the whole mask
  (no context-dependent tokens), which makes some verdicts fixed per node.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from reference_engine import keys as jkeys
from reference_engine.maskcache import NodeMask, clear_ids
from reference_engine.frames import frame_param
from reference_engine.pda import PDA
from reference_engine.stack import EMPTY
from reference_engine.trie import TokenTrie

#: Key-tracker states whose per-token duplicate-key verdicts are kept.
KEY_CACHE_SIZE = 256


class DuplicateKeyFilter:
    """The duplicate-key rule for one compiled grammar and vocabulary (shared by its
    matchers, under the mask computer's lock)."""

    def __init__(self, pda: PDA, trie: TokenTrie, nodes: dict[int, NodeMask],
                 key_floor: int | None = None):
        self.pda = pda
        self.trie = trie
        #: the split cache's entries (read only; see the module's invariants)
        self._nodes = nodes
        self._quote, commas, self._maxq = jkeys.candidates(trie)
        self._near = np.union1d(self._quote[(True, True)], commas)
        self._risky = jkeys.risky_tokens(trie)
        #: only closing a key can repeat one, and no dead end can arise
        #: (:func:`~reference_engine.keys.repeats_only_close`): a commit needs no check
        #: past the tracker's own step
        self.close_only = jkeys.repeats_only_close(pda.grammar)
        self._cindex = jkeys.close_index(trie)
        self._risky_w = self._risky >> 5
        self._risky_b = (np.ones_like(self._risky) << (self._risky & 31)).astype(np.uint32)
        #: objects holding this many keys may have run out of fresh ones (see
        #: :func:`~reference_engine.keys.fewest_extra_keys`); None: never
        self.key_floor = key_floor
        self._kcache: OrderedDict = OrderedDict()
        self._frames: dict[int, tuple[int, ...]] = {}
        self._risky_at: dict[int, bool] = {}
        self._last_nek: tuple = (None, None, False)
        self._writers_of: OrderedDict = OrderedDict()
        #: (automaton node, tracker frames) -> no token of the node's mask writes a
        #: seen key (where that node's own entry is the whole mask)
        self._no_writer: OrderedDict = OrderedDict()
        self.key_checks = 0  # tokens run through the key tracker for masks (stats)
        self.key_cleared = 0  # of them, cleared as duplicate keys

    def states_cached(self) -> int:
        """Tracker states whose verdicts are kept (stats)."""
        return len(self._kcache)

    def frames(self, stack: int) -> tuple[int, ...]:
        """The object frames' parameters on ``stack``, innermost first (cached)."""
        got = self._frames.get(stack)
        if got is None:
            pool = self.pda.stacks
            out = []
            st = stack
            while st != EMPTY:
                r = pool.ret[st]
                if r < -1:
                    out.append(frame_param(r))
                st = pool.parent[st]
            got = self._frames[stack] = tuple(out)
        return got

    def no_extra_keys(self, configs: tuple, kstate: tuple) -> bool:
        """Does the innermost open container hold no key outside its object's declared
        members, in every configuration (or is it an array)? Then only a token that
        leaves the container (a ``}`` or ``]`` with a ``"``) or writes a key and then
        repeats it or begins it again (three quotes or more, :func:`risky`) can repeat
        a key: declared members are tracked exactly by the object frames (a frame's
        parameter is its set of members seen, compared here with the tracker's keys of
        the same object), and an extra key never equals a declared name of its object."""
        if not self.pda.frames_count_members:
            return False
        frames = kstate[0]
        if not frames or frames[-1] is None:
            return True
        last = self._last_nek
        if last[0] is configs and last[1] is frames:
            return last[2]  # the mask and the commit of one step ask alike
        objs = sum(1 for f in frames if f is not None)
        n = len(frames[-1])
        ok = True
        for _, st in configs:
            fr = self.frames(st)
            if len(fr) != objs or n != bin(fr[0]).count("1"):
                ok = False  # (a length mismatch: an object spelled literally, enum/const)
                break
        self._last_nek = (configs, frames, ok)
        return ok

    def allows(self, configs: tuple, kstate: tuple, data: bytes, after=None) -> bool:
        """The duplicate-key rule for ``data`` read from ``(configs, kstate)`` (the
        automaton is assumed to accept it; ``after``: its configurations after, if
        known): it closes no key already in its object, and leaves no key that every
        completion would make a repeat (:mod:`reference_engine.keys`)."""
        if (self.key_floor is None and not jkeys.risky(data)
                and self.no_extra_keys(configs, kstate)):
            return True
        ks = jkeys.step(kstate, data)
        if ks is None:
            return False
        if self.close_only:
            return True  # no dead ends to look for (repeats_only_close)
        fresh = jkeys.has_fresh_completion
        if not jkeys.suspect(ks):
            floor = self.key_floor
            if (floor is None or ks[2] != jkeys.OUT or not jkeys.key_reachable(ks)
                    or len(ks[0][-1]) < floor):
                return True
            fresh = jkeys.has_fresh_key
        if after is None:
            res = self.pda.advance(configs, data)
            if res is None:
                return True  # the automaton refuses it anyway
            after = res[0]
        return fresh(self.pda, after, ks)

    def _writers(self, kstate: tuple) -> np.ndarray:
        """Tokens that may write (open and close) a key some open object already holds:
        such a token holds it between two of its quotes
        (:func:`~reference_engine.keys.inner_keys`; the tokens it cannot read too)."""
        frames = kstate[0]
        got = self._writers_of.get(frames)
        if got is not None:
            return got
        by_inner, unsafe = self._cindex[3]
        parts = [unsafe]
        for f in frames:
            if f:
                for k in f:
                    ids = by_inner.get(k)
                    if ids is not None:
                        parts.append(ids)
        got = np.concatenate(parts) if len(parts) > 1 else unsafe
        self._writers_of[frames] = got
        if len(self._writers_of) > 1024:
            self._writers_of.popitem(last=False)
        return got

    def _closing(self, kstate: tuple) -> tuple[np.ndarray | None, np.ndarray]:
        """``(refused, to check)``: token ids that repeat a key whatever else they hold,
        and a superset of the others that may, when only closing a key can
        (:func:`~reference_engine.keys.repeats_only_close`). Inside an unescaped key
        prefix, a token whose part before its first ``"`` (unescaped, so its bytes are
        the key's) completes the prefix to a seen key closes that key again: refused
        (None when there are none); so does one with an escape there whose decoded
        text completes it so (those whose text does not decode alone are checked);
        anywhere, the :meth:`_writers`."""
        index, escaped = self._cindex[0], self._cindex[1]
        if kstate[3]:  # the token starts inside an escape: read it whole
            return None, self._quote[(True, True)]
        writers = self._writers(kstate)
        if kstate[2] != jkeys.KEY:
            return None, writers
        raw = kstate[4]
        if b"\\" in raw:
            return None, self._quote[(True, True)]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # the prefix ends inside a character
            text = None
        closes, odd = self._cindex[4]
        ids: list[int] = []
        for k in kstate[0][-1]:
            kb = k.encode("utf-8", "surrogatepass")
            if kb.startswith(raw):
                ids.extend(index.get(kb[len(raw):], ()))
            # a token with an escape before its closing quote adds the text it decodes
            # to (the prefix has no escape, so the key is the prefix's text plus that)
            if text is not None and len(k) > len(text) and k.startswith(text):
                ids.extend(closes.get(k[len(text):], ()))
        refused = np.array(ids, dtype=np.int64) if ids else None
        return refused, (np.concatenate([odd, writers]) if text is not None
                         else np.concatenate([escaped, writers]))

    def filter_mask(self, configs: tuple, kstate: tuple, out: np.ndarray) -> None:
        """Clear from the mask ``out`` (computed from ``configs``) the tokens the
        duplicate-key rule refuses (:meth:`allows`). Only three kinds of tokens can
        be refused: those with a ``"`` (:func:`~reference_engine.keys.quote_counts`
        narrows them by the tracker state); inside a key whose decoded prefix begins a
        seen key, those that keep it so
        (:func:`~reference_engine.keys.continuation_tokens`); and, once an object may
        hold ``key_floor`` keys after the token, those with a ``,`` (they may end where a
        key must start). Where the innermost container holds no extra key
        (:meth:`no_extra_keys`), only the :func:`~reference_engine.keys.risky` tokens
        are checked. Verdicts are cached per ``(configs, tracker state)``."""
        floor = self.key_floor
        if self.close_only and not kstate[3] and self.no_extra_keys(configs, kstate):
            # no dead ends to fear and no extra key here: only a token writing a whole
            # key some open object holds can repeat one
            fixed = None
            if len(configs) == 1:
                nm = self._nodes.get(configs[0][0])
                if nm is not None and not nm.pops and not nm.guards:
                    fixed = (configs[0][0], kstate[0])
                    if fixed in self._no_writer:
                        return
            cands = self._writers(kstate)
            if cands.size <= 16:  # usually a handful: cheaper one by one than in numpy
                hit = [t for t in cands.tolist() if (int(out[t >> 5]) >> (t & 31)) & 1]
                if not hit:
                    if fixed is not None:
                        self._no_writer[fixed] = True
                        if len(self._no_writer) > 4096:
                            self._no_writer.popitem(last=False)
                    return
                cands = np.array(hit, dtype=np.int64)
        elif floor is None and self.no_extra_keys(configs, kstate):
            # whether the mask holds a risky token at all is fixed per automaton node
            # when one node's own entry is the mask (see MaskComputer.fill)
            one = configs[0][0] if len(configs) == 1 else -1
            has = self._risky_at.get(one)
            if has is None:
                has = bool((out.view(np.uint32)[self._risky_w] & self._risky_b).any())
                nm = self._nodes.get(one)
                if nm is not None and not nm.pops and not nm.guards:
                    self._risky_at[one] = has
            if not has:
                return
            cands = self._risky
        elif self.close_only:
            refused, cands = self._closing(kstate)
            if refused is not None:
                self.key_cleared += clear_ids(out, refused)
        else:
            near = floor is not None and max(
                (len(f) for f in kstate[0] if f is not None), default=0) + self._maxq >= floor
            if near:  # every token with a quote or a comma (a token closes < _maxq keys)
                cands = self._near
            else:
                cands = self._quote[(jkeys.has_keys(kstate), jkeys.key_reachable(kstate))]
            if jkeys.suspect(kstate):
                more = np.array(jkeys.continuation_tokens(self.trie, kstate), dtype=np.int64)
                if more.size:
                    cands = np.unique(np.concatenate([cands, more]))
        if not cands.size:
            return
        on = (out[cands >> 5] >> (cands & 31)) & 1
        ids = cands[on.astype(bool)]
        if not ids.size:
            return
        kc = self._kcache
        ck = (configs, kstate)
        verdict = kc.get(ck)
        if verdict is None:
            verdict = kc[ck] = {}
            if len(kc) > KEY_CACHE_SIZE:
                kc.popitem(last=False)
        tokens = self.trie.token_bytes
        ov = None
        for t in ids.tolist():
            ok = verdict.get(t)
            if ok is None:
                self.key_checks += 1
                ok = verdict[t] = self.allows(configs, kstate, tokens[t])
            if not ok:
                if ov is None:
                    ov = out.view(np.uint32)
                ov[t >> 5] &= np.uint32(~(1 << (t & 31)) & 0xFFFFFFFF)
                self.key_cleared += 1

