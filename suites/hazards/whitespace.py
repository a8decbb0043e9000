"""Hazard 5, endless whitespace: how long a run of whitespace does an engine allow?

A model that likes whitespace can fill its whole budget with it wherever the grammar
allows any amount (vLLM #38696, #26362). :func:`walk` takes a compact JSON text that the
reference engine (the oracle) accepts, and at each position kind (:data:`POSITIONS`:
after ``{``, after ``:``, after ``,``, between a value and what follows) commits the
tokens of the text up to that position, then whitespace one character-token at a time
(a space, else a newline, else a tab: whichever the engine's mask allows) until the
mask allows none or :data:`CAP` characters have gone in. A run that reaches the cap is
**unbounded** (at least the cap: a censored value, never a measurement). The oracle
says where JSON allows whitespace at all: a position where the reference engine allows
none is not probed.

Each engine is walked in its configuration, then with its own setting that bounds
whitespace set to :data:`BOUND` characters (:meth:`engines.protocol.EngineAdapter.
whitespace_bound`: xgrammar's ``max_whitespace_cnt``, llguidance's and outlines'
``whitespace_pattern``), and the bounded run is measured the same way.
"""

from __future__ import annotations

import numpy as np

from suites.hazards.records import WhitespaceRun, WhitespaceWalk

__all__ = ["BOUND", "CAP", "POSITIONS", "SCHEMA", "TEXT", "walk"]

SCHEMA = ('{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", '
          '"items": {"type": "string"}}}, "required": ["a", "b"]}')
TEXT = '{"a":1,"b":["x","y"]}'
#: position kind → offset in :data:`TEXT` where whitespace goes
POSITIONS: dict[str, int] = {"after {": 1, "after :": 5, "between values": 6, "after ,": 7}
#: Longest run tried, characters: a run that reaches it is "unbounded (≥ CAP)".
CAP = 1024
#: The whitespace characters tried, in order, one token each.
CHARS = (" ", "\n", "\t")
#: The bound asked of each engine's own setting (:meth:`engines.protocol.EngineAdapter.
#: whitespace_bound`), characters per whitespace gap.
BOUND = 4


def _bit(bm: np.ndarray, tid: int) -> bool:
    return bool((int(bm[tid >> 5]) >> (tid & 31)) & 1)


def run_at(compiled, vocab, prefix: str, cap: int = CAP) -> WhitespaceRun:
    """The longest whitespace run the engine allows after ``prefix``: ``{"run": n,
    "capped": bool}``; ``{"error": …}`` when the prefix itself is refused."""
    from harness.suite.engines import allocate_bitmask

    ws_ids = []
    for ch in CHARS:
        ids = vocab.encode(ch)
        if len(ids) == 1:
            ws_ids.append(ids[0])
    m = compiled.matcher()
    for t in (vocab.encode(prefix) if prefix else []):
        if not m.commit(t):
            return {"error": f"the engine refuses the text before the position: {prefix!r}"}
    bm = allocate_bitmask(vocab.size)
    n = 0
    while n < cap:
        m.fill_mask(bm)
        tid = next((t for t in ws_ids if _bit(bm, t)), None)
        if tid is None or not m.commit(tid):
            break
        n += 1
    return {"run": n, "capped": n >= cap}


def walk(compiled, vocab, oracle=None) -> WhitespaceWalk:
    """Per position kind, the run the engine allows (:func:`run_at`); with ``oracle`` (the
    reference engine's compile of the same schema) a position it allows no whitespace at
    is ``{"skip": why}``. Also ``"longest"``: the longest run over the positions, and
    ``"unbounded"``: the position kinds where it reached :data:`CAP`."""
    out: WhitespaceWalk = {"positions": {}}
    for kind, at in POSITIONS.items():
        if oracle is not None and run_at(oracle, vocab, TEXT[:at], cap=1).get("run", 0) < 1:
            out["positions"][kind] = {"skip": "the oracle allows no whitespace here"}
            continue
        out["positions"][kind] = run_at(compiled, vocab, TEXT[:at])
    runs = [v for v in out["positions"].values() if "run" in v]
    out["longest"] = max((v["run"] for v in runs), default=None)
    out["unbounded"] = [k for k, v in out["positions"].items() if v.get("capped")]
    return out


def describe(result: WhitespaceWalk) -> str:
    """``after {: ≥1024 (unbounded), after :: 1, …`` for a report cell."""
    parts = []
    for kind, v in result["positions"].items():
        if "run" in v:
            parts.append(f"{kind}: " + (f"≥{v['run']} (unbounded)" if v["capped"] else str(v["run"])))
        elif "error" in v:
            parts.append(f"{kind}: refused the text")
    return ", ".join(parts)
