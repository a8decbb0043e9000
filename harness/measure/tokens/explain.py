"""One token-level finding, replayed from its record alone (``harness explain``).

The record of a ``mask-diff`` or ``fuzz`` job holds the schema text, the instance text, the
exact token ids and the step; with the run's tokenizer (run.json) that is all a replay
needs. :func:`explain` returns the text: the schema, the instance (or walk seed), the token
sequence with each token's bytes around the step, the step where it went wrong, then the
sequence replayed through every engine of the run and the reference engine (the oracle):
what each allowed at that step, and whether the replay reproduces the record's claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from harness.measure.tokens.findings import Finding
from harness.measure.tokens.rollback import RollbackCheck
from harness.records import Record, RunMeta

__all__ = ["ExplainError", "explain"]


class ExplainError(ValueError):
    """Bad input to :func:`explain` (no run folder, no such case, no finding): one line."""


def explain(run: str | Path, case: str, *, engine: str | None = None, kind: str | None = None,
            n: int = 0, instance: int | None = None, step: int | None = None,
            list_only: bool = False, replay: bool = True, full: bool = False) -> str:
    """The text of one finding of case ``case`` in the run folder ``run``: the ``n``-th of
    those of ``engine`` and ``kind`` (both optional; most severe first), or with
    ``instance`` and ``step`` any step of a mask-diff instance; ``list_only`` lists the
    selected findings instead; ``replay`` False prints the record only; ``full`` prints the
    whole schema and token sequence. Raises :class:`ExplainError` (one line)."""
    from harness.measure.tokens.findings import KINDS, run_findings
    from harness.store.run_store import RunStore, StoreError

    try:
        store = RunStore.open_readonly(Path(run))
        meta = store.read_meta()
        records = list(store.records())
    except StoreError as e:
        raise ExplainError(str(e)) from None
    mine = [r for r in records if r["case_id"] == case]
    if not mine:
        ids = sorted({r["case_id"] for r in records})
        raise ExplainError(f"{run}: no record of case {case!r} "
                           f"({len(ids)} cases, e.g. {', '.join(ids[:3]) or 'none'})")
    if kind and kind not in KINDS:
        raise ExplainError(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    if (instance is None) != (step is None):
        raise ExplainError("--instance and --step go together")
    if step is not None:
        assert instance is not None  # checked above: they go together
        found = _hand_picked(mine, engine, instance, step)
        if isinstance(found, str):
            raise ExplainError(f"{run}: {found}")
    else:
        found = [f for f in run_findings(mine, engine=engine) if kind is None or f["kind"] == kind]
    if not found:
        suites = sorted({str(r.get("suite")) for r in mine})
        raise ExplainError(f"{run}: no token-level finding for {case!r}"
                           f"{' of ' + engine if engine else ''}"
                           f"{' of kind ' + kind if kind else ''} (suite {', '.join(suites)}; "
                           "findings come from the mask-diff and fuzz suites)")
    out: list[str] = []
    if list_only:
        for i, f in enumerate(found):
            where = f"instance {f['instance']}" if "instance" in f else f"walk {f.get('walk')}"
            out.append(f"{i:3d}  {f['kind']:<13} {f['engine']:<20} {where:<12} step {f['step']:<5} "
                       f"{(f.get('why') or '')[:90]}")
        return "\n".join(out)
    if not 0 <= n < len(found):
        raise ExplainError(f"--n {n}: the selection holds {len(found)} findings (0..{len(found) - 1})")
    f = found[n]
    rec = next(r for r in mine if r["engine"] == f["engine"])
    from engines.vocab import VocabularyError, load_vocabulary

    tok_spec = (meta.get("config") or {}).get("tokenizer", "llama3")
    try:
        vocab = load_vocabulary(tok_spec)
    except VocabularyError as e:
        raise ExplainError(f"{run}: tokenizer {tok_spec!r} of the run cannot be loaded: {e}") from None
    _print_record(out, f, rec, len(found), n, full, vocab)
    if replay:
        _replay(out, f, rec, meta, vocab)
    return "\n".join(out)


WINDOW = 8  # tokens shown before the step (all with --full)
EXAMPLES = 6  # example tokens per side of a mask difference


def _clip(text: str, n: int, full: bool) -> str:
    return text if full or len(text) <= n else text[:n] + f"… ({len(text)} characters; --full)"


def _hand_picked(records, engine: str | None, index: int, step: int) -> list[Finding] | str:
    """A pseudo-finding at any step of a mask-diff instance (e.g. where engines without an
    oracle disagree); a string says why there is none."""
    for r in records:
        if engine is not None and r["engine"] != engine:
            continue
        for inst in r.get("instances") or ():
            md = inst.get("mask_diff")
            if md is None or inst["index"] != index:
                continue
            if not 0 <= step <= len(md["tokens"]):
                return f"--step {step}: instance {index} has steps 0..{len(md['tokens'])}"
            return [{"engine": r["engine"], "case": r["case_id"], "suite": r.get("suite"),
                     "kind": "step", "instance": index, "text": inst.get("text"),
                     "serialization": md.get("serialization"), "step": step, "token": None,
                     "tokens": md["tokens"], "why": None}]
    return f"no mask-diff instance {index} in the records of this case" + (
        f" for {engine}" if engine else "")


def _bytes(vocab, tid: int) -> str:
    return repr(vocab.tokens[tid])


def _fuzz_budget(rec: Record) -> object:
    """The token budget of a fuzz record's walks (None: not a fuzz record)."""
    fuzz = rec.get("fuzz")  # suites/fuzz/records.py: FuzzBlock
    return fuzz.get("budget") if isinstance(fuzz, dict) else None


def _print_record(out: list[str], f: Finding, rec: Record, total: int, n: int,
                  full: bool, vocab) -> None:
    from harness.measure.tokens.findings import DESCRIPTIONS

    out.append(f"finding {n} of {total}: {f['kind']} — engine {f['engine']}, case {f['case']} "
          f"(suite {f.get('suite')}, job outcome {rec['outcome']})")
    out.append(f"  {DESCRIPTIONS[f['kind']]}")
    out.append("\nschema:\n  " + _clip(rec.get("schema_text", "(not in the record)"), 1500, full))
    if "instance" in f:
        out.append(f"\ninstance #{f['instance']} (serialisation {f.get('serialization')}):\n  "
              + _clip(f.get("text") or "", 800, full))
    else:
        out.append(f"\nwalk {f.get('walk')} (seed {f.get('seed')}, length-aware policy, budget "
              f"{_fuzz_budget(rec)} tokens)")
    toks = f["tokens"]
    step = f["step"]
    out.append(f"\ntoken sequence: {len(toks)} tokens (tokenizer {vocab.name}); the step is {step}")
    lo = 0 if full else max(0, step - WINDOW)
    hi = len(toks) if full else min(len(toks), step + 3)
    if lo:
        out.append(f"  … {lo} tokens before")
    for i in range(lo, hi):
        mark = ">>" if i == step else "  "
        out.append(f"  {mark} {i:5d}  {toks[i]:6d}  {_bytes(vocab, toks[i])}")
    if hi < len(toks):
        out.append(f"  … {len(toks) - hi} tokens after")
    if step >= len(toks):
        out.append(f"  >> {step:5d}  (end: EOS)")
    at_issue = f.get("token")
    if at_issue is not None:
        out.append(f"\nthe token at issue: {at_issue} {_bytes(vocab, at_issue)}")
    if f.get("why"):
        out.append(f"recorded: {f['why']}")
    if f["kind"] in ("false_accept", "under", "fuzz_invalid") or (
            f["kind"] in ("over", "oracle_error") and len(toks) > step + 1):
        raw = b"".join(vocab.tokens[t] for t in toks)
        out.append("output: " + _clip(raw.decode("utf-8", "replace"), 600, full))


def _mask_info(tc, bm) -> tuple[np.ndarray, bool]:
    return tc.allowed(bm), tc.eos(bm)


def _examples(vocab, ids: np.ndarray) -> str:
    return ", ".join(f"{int(i)} {vocab.tokens[int(i)]!r}" for i in ids[:EXAMPLES])


def _mask_at(g, toks: list[int], at: int, tc, bm) -> tuple[np.ndarray, bool] | None:
    """The allowed set after committing ``toks[:at]`` on a fresh matcher (None: refused)."""
    m = g.matcher()
    if not all(m.commit(t) for t in toks[:at]):
        return None
    m.fill_mask(bm)
    return _mask_info(tc, bm)


def _first_refused(g, toks: list[int], bm) -> int | None:
    from harness.measure.tokens.maskops import has_bit

    m = g.matcher()
    for i, t in enumerate(toks):
        m.fill_mask(bm)
        if not has_bit(bm, t) or not m.commit(t):
            return i
    return None


def _replay(out: list[str], f: Finding, rec: Record, meta: RunMeta,
            vocab) -> None:
    """Replay the sequence through every engine of the run and the oracle; print what each
    allowed at the step where it went wrong and whether the record's claim is reproduced."""
    from engines.bitmask import allocate_bitmask
    from engines.protocol import CompileError
    from harness.registry import EngineSpec
    from harness.measure.validate import check_output
    from harness.measure.groundtruth import GroundTruth
    from harness.measure.tokens.maskops import token_classes
    from harness.measure.tokens.oracle import ORACLE_LABEL, oracle_adapter

    tc = token_classes(vocab)
    schema_text = rec["schema_text"]
    toks, step = f["tokens"], f["step"]
    oracle_label = ORACLE_LABEL + " (oracle)"
    labels = [e["engine"] for e in meta.get("engines", []) if e.get("status") == "run"]
    if f["engine"] not in labels:
        labels.insert(0, f["engine"])
    bm = allocate_bitmask(vocab.size)
    grammars: dict[str, Any] = {}
    for label in [*labels, oracle_label]:
        try:
            if label == oracle_label:
                adapter = oracle_adapter(vocab)
            else:
                name, _, config = label.partition(":")
                adapter = EngineSpec(name, config or "default").build(vocab)
            grammars[label] = adapter.compile(schema_text)
        except CompileError as e:
            grammars[label] = f"refuses the schema: {e}"
        except Exception as e:  # not installed, or the engine raised
            grammars[label] = f"not replayed: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    refused = {label: _first_refused(g, toks, bm) for label, g in grammars.items()
               if not isinstance(g, str)}
    # where it went wrong: for a generated sequence, the first token the exact oracle refuses
    at = step
    oref = refused.get(oracle_label)
    if f["kind"] in ("fuzz_invalid", "false_accept", "under") and oref is not None:
        at = oref
        out.append(f"\nwhere it went wrong: step {at}, token {toks[at]} {_bytes(vocab, toks[at])}: the "
              f"oracle refuses it, so no valid document starts with these {at + 1} tokens")
        if at != step:
            for i in range(max(0, at - 3), min(len(toks), at + 2)):
                out.append(f"  {'>>' if i == at else '  '} {i:5d}  {toks[i]:6d}  {_bytes(vocab, toks[i])}")
    out.append(f"\nreplayed now (prefix of {at} tokens, then the mask at step {at}):")
    masks: dict[str, tuple[np.ndarray, bool] | str] = {}
    for label, g in grammars.items():
        if isinstance(g, str):
            masks[label] = g
            continue
        r = refused.get(label)
        got = _mask_at(g, toks, at, tc, bm) if r is None or r >= at else None
        if got is None:
            assert r is not None  # _first_refused found no refusal: nor does _mask_at
            masks[label] = (f"refuses step {r} (token {toks[r]} {_bytes(vocab, toks[r])}) "
                            f"before step {at}")
        else:
            masks[label] = got
    token = toks[at] if at < len(toks) else None
    oracle = masks.get(oracle_label)
    for label, info in masks.items():
        if isinstance(info, str):
            out.append(f"  {label:<24} {info}")
            continue
        a, eos = info
        parts = [f"{int(a.sum()):,} tokens", f"EOS {'allowed' if eos else 'refused'}"]
        if token is not None:
            parts.append(f"token {token} {'allowed' if a[token] else 'forbidden'}")
        elif f.get("token") is not None:
            parts.append(f"token {f['token']} {'allowed' if a[f['token']] else 'forbidden'}")
        out.append(f"  {label:<24} " + ", ".join(parts))
        if not isinstance(oracle, tuple) or label == oracle_label:
            continue
        oa, oe = oracle
        extra, missing = np.flatnonzero(a & ~oa), np.flatnonzero(oa & ~a)
        if extra.size:
            out.append(f"  {'':<24}   allows {extra.size} the spec forbids: {_examples(vocab, extra)}")
        if missing.size:
            out.append(f"  {'':<24}   forbids {missing.size} the spec allows: {_examples(vocab, missing)}")
        if eos != oe:
            out.append(f"  {'':<24}   EOS {'allowed' if eos else 'refused'}, the spec says "
                  f"{'allowed' if oe else 'refused'}")
    if not isinstance(oracle, tuple):
        out.append("  (no oracle mask here: the engines are compared with each other only)")
    # does the replay reproduce the record's claim? (judged at the record's own step)
    g = grammars.get(f["engine"])
    own = masks.get(f["engine"]) if at == step else (
        _mask_at(g, toks, step, tc, bm) if not isinstance(g, str) and g is not None else g)
    ostep = oracle if at == step else (
        _mask_at(grammars[oracle_label], toks, step, tc, bm)
        if not isinstance(grammars.get(oracle_label), str) else None)
    verdict = _reproduced(f, own if own is not None else "refused before the step", ostep,
                          toks, step, refused.get(f["engine"]))
    if f["kind"] == "rollback" and not isinstance(g, str) and refused.get(f["engine"]) is None:
        rb = _rollback_again(g, toks, bm, f["k"])
        out.append(f"\nrollback({f['k']}) and replay, now: {rb}")
        verdict = (rb.get("status") == "differs", f"rollback({f['k']}) then replay: {rb.get('status')}")
    if f["kind"] in ("false_accept", "under", "fuzz_invalid", "eos_early") or (
            f["kind"] in ("over", "oracle_error") and len(toks) > step + 1):
        raw = b"".join(vocab.tokens[t] for t in (toks if f["kind"] != "eos_early" else toks[:step]))
        chk = check_output(raw, GroundTruth(json.loads(schema_text)))
        out.append(f"\njsonschema on the {'output' if f['kind'] != 'eos_early' else 'prefix'}: "
              f"{'valid' if chk['valid'] else 'undecided' if chk['valid'] is None else 'INVALID'}"
              f"{' — ' + chk['why'] if chk.get('why') else ''}")
        if f["kind"] in ("false_accept", "fuzz_invalid", "eos_early") and chk["valid"] is not False:
            verdict = (False, "the output is not invalid now")
        if f["kind"] == "over" and f.get("verdict") == "valid" and chk["valid"] is not True:
            verdict = (False, "the oracle's completion is not valid now")
        elif f["kind"] == "over" and chk["valid"] is True and verdict[0]:
            verdict = (True, verdict[1] + "; the oracle completes it to a valid document")
    out.append(f"\nreproduced: {'yes' if verdict[0] else 'NO'} — {verdict[1]}")


def _reproduced(f, info, oracle, toks, step, refused) -> tuple[bool, str]:
    kind = f["kind"]
    if kind in ("fuzz_invalid", "runaway", "dead_end", "fuzz_error"):
        if kind == "fuzz_error":
            return True, "the record holds the engine's error; replay shows the masks above"
        if refused is not None:
            return False, f"the engine now refuses token {refused} of the walk"
        if not isinstance(info, tuple):
            return False, str(info)
        a, e = info
        if kind == "fuzz_invalid":
            return (e, "every token allowed and EOS allowed at the end" if e
                    else "EOS is not allowed at the end now")
        if kind == "dead_end":
            return (not a.any() and not e, "the mask at the end is empty" if not a.any() and not e
                    else "the mask at the end is not empty now")
        return True, f"every one of the {len(toks)} tokens allowed, no EOS chosen within the budget"
    if not isinstance(info, tuple):
        return False, str(info)
    a, e = info
    o = oracle if isinstance(oracle, tuple) else None
    if kind in ("false_accept", "under"):
        ok = bool(a[f["token"]]) and (o is None or not o[0][f["token"]])
        return ok, ("the engine allows the token, the oracle forbids it" if ok
                    else "the engine / oracle masks at the step differ from the record")
    if kind == "over":
        ok = not a[f["token"]] and (o is None or bool(o[0][f["token"]]))
        return ok, ("the engine forbids the token, the oracle allows it" if ok
                    else "the masks at the step differ from the record")
    if kind == "false_reject":
        ok = not a[f["token"]]
        return ok, "the engine forbids the instance's token" if ok else "the token is allowed now"
    if kind == "eos_early":
        return e, "EOS allowed on the prefix" if e else "EOS refused now"
    if kind == "eos_refused":
        return not e, "EOS refused on the complete document" if not e else "EOS allowed now"
    if kind == "rollback":
        return False, "the engine refused a token of the instance before the rollback"
    if kind == "step":
        return True, "a step picked by hand: the masks above are the replay"
    if kind == "oracle_error":
        return True, "see the oracle's mask above and jsonschema's verdict on the output"
    return False, f"unknown kind {kind}"


def _rollback_again(grammar, toks: list[int], bm, k: int) -> RollbackCheck:
    """The mask-diff job's rollback check for one ``k``, on a fresh matcher."""
    from harness.measure.tokens.rollback import rollback_checks
    from harness.measure.tokens.maskops import raw_digest

    m = grammar.matcher()
    raw = []
    for t in toks:
        m.fill_mask(bm)
        raw.append(raw_digest(bm))
        m.commit(t)
    m.fill_mask(bm)
    raw.append(raw_digest(bm))
    for r in rollback_checks(grammar.matcher(), toks, bm, raw):
        if r["k"] == k:
            return r
    return {"status": "not checked", "k": k}
