"""Every token-level finding of a run's records, as one flat list (report and explain).

A finding names the engine, the case, what kind it is, the token sequence that shows it
(the exact ids, replayable with the run's tokenizer), the step where it went wrong, and the
token concerned. Kinds, most severe first:

``false_accept``    an under-constrained step whose extra token, completed under the
                    engine's own mask, gave an invalid document (mask-diff witness)
``eos_early``       EOS allowed on a prefix that is not a valid document (mask-diff)
``fuzz_invalid``    a random walk the engine let end on an invalid document (fuzz)
``false_reject``    a token of a valid instance's canonical tokenisation refused (mask-diff)
``eos_refused``     EOS refused where the text is a complete valid document (mask-diff)
``rollback``        masks after rollback(k) and replay not bit-identical (mask-diff)
``fuzz_error``      a walk on which the engine raised, or refused a token its mask allowed
``dead_end``        a walk whose mask became empty before the document could end (fuzz)
``runaway``         a walk that reached its token budget without EOS (fuzz)
``under``           an under-constrained step whose witness was not confirmed (mask-diff)
``over``            an over-constrained step, whitespace-only differences left out (mask-diff)
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, TypedDict
from harness.records import Record

#: unconfirmed under- and over-constrained steps listed per instance (all are counted in
#: the summary; these are examples)
PER_INSTANCE = 5

#: kind → one line, most severe first
DESCRIPTIONS: dict[str, str] = {
    "false_accept": "confirmed false accept: the engine allows a token the spec forbids, and "
                    "completing it under the engine's own mask gives an invalid document",
    "eos_early": "EOS allowed on a prefix that is not a valid document",
    "fuzz_invalid": "a random walk the engine let end on an invalid document",
    "false_reject": "a token of a valid instance's canonical tokenisation refused",
    "eos_refused": "EOS refused where the text is a complete valid document",
    "rollback": "masks after rollback(k) and replay not bit-identical",
    "fuzz_error": "the engine raised, or refused a token its own mask allowed, during a walk",
    "dead_end": "the mask became empty before the document could end",
    "runaway": "no EOS within the token budget",
    "under": "under-constrained step (tokens the spec forbids allowed), witness not confirmed",
    "over": "over-constrained step (tokens the spec allows forbidden), not whitespace only",
    "oracle_error": "the oracle (reference engine) was wrong: it refused a valid instance, "
                    "or a completion under its own mask was invalid, or a token it forbids "
                    "completed to a valid document",
    # never produced from a record: a step picked by hand (``harness explain --step``)
    "step": "a step picked by hand: what each engine allows there",
}
KINDS = tuple(DESCRIPTIONS)


class Finding(TypedDict, total=False):
    """One finding: where an engine went wrong (or an oracle error), with its evidence."""

    engine: str
    case: str            # the case id
    suite: str | None
    kind: str            # one of KINDS
    instance: int        # a mask-diff instance's index
    serialization: str | None
    text: str | None     # the instance's text
    walk: int            # a fuzz walk's index
    step: int            # the token step where it went wrong (a rollback finding whose
                         # replay was refused before any rollback carries None here)
    token: int | None    # the token taken there (None: EOS)
    tokens: list[int]    # the token sequence up to (and with) that step
    verdict: str | None  # a witness's verdict
    seed: int | None
    k: int               # a rollback check's k
    why: str | None


def record_findings(r: Mapping[str, Any]) -> list[Finding]:
    """The findings of one record (mask-diff or fuzz job), most severe first; it reads the
    suites' blocks (an instance's ``mask_diff``, the record's ``fuzz``: their types are in
    ``suites/mask_diff/records.py`` and ``suites/fuzz/records.py``)."""
    out: list[Finding] = []
    base: Finding = {"engine": r["engine"], "case": r["case_id"], "suite": r.get("suite")}
    for inst in r.get("instances") or ():
        md = inst.get("mask_diff")
        if md is None:
            continue
        toks = md["tokens"]
        ib: Finding = {**base, "instance": inst["index"], "serialization": md.get("serialization"),
              "text": inst.get("text")}
        res: Mapping[str, Any] = next(iter(inst.get("results", {}).values()), {})
        for w in md.get("witnesses", ()):
            if w["verdict"] == "valid":
                continue  # listed as an oracle error below
            kind = "false_accept" if w["verdict"] == "false_accept" else "under"
            out.append({**ib, "kind": kind, "step": w["step"], "token": w.get("token"),
                        "tokens": w.get("tokens", toks[:w["step"]]), "verdict": w["verdict"],
                        "why": w.get("why"), "seed": w.get("seed")})
        for e in md.get("eos", {}).get("early", ()):
            out.append({**ib, "kind": "eos_early", "step": e["step"], "token": None,
                        "tokens": toks[:e["step"]], "why": e.get("why")})
        if res.get("status") == "rejected":
            s = res["reject_at"]
            why = "a token of a valid instance refused"
            reject_kind = res.get("reject_kind")  # harness.measure.reachability
            if reject_kind == "unwritable":
                why += "; no tokenisation of the text is accepted: the engine cannot write it"
            elif reject_kind == "tokenization":
                why += ("; the text is still reachable: another tokenisation is accepted, "
                        f"{res.get('reachable_tokens')}")
            elif reject_kind == "undecided":
                why += ("; whether another tokenisation is accepted is undecided "
                        f"({res.get('reach_why')})")
            out.append({**ib, "kind": "false_reject", "step": s, "token": toks[s],
                        "tokens": toks[:s + 1], "why": why})
        for s in md.get("eos", {}).get("refused", ()):
            out.append({**ib, "kind": "eos_refused", "step": s, "token": None,
                        "tokens": toks[:s], "why": "EOS refused on a complete valid document"})
        for rb in md.get("rollback") or ():
            if rb["status"] == "differs":
                out.append({**ib, "kind": "rollback", "step": rb.get("at"), "token": None,
                            "tokens": toks, "k": rb["k"],
                            "why": rb.get("why") or f"mask after rollback({rb['k']}) and "
                                                    f"replay differs at step {rb.get('at')}"})
        witnessed = {w["step"] for w in md.get("witnesses", ())}
        unders = [d for d in md.get("diffs", ()) if d.get("under") and d["step"] not in witnessed
                  and d["under"] > d.get("under_ws", 0)]
        overs = [d for d in md.get("diffs", ()) if d.get("over") and d["over"] > d.get("over_ws", 0)]
        for d in unders[:PER_INSTANCE]:
                out.append({**ib, "kind": "under", "step": d["step"], "token": d["under_ids"][0],
                            "tokens": toks[:d["step"]], "why": f"{d['under']} tokens beyond "
                                                               "the oracle (no witness drawn)"})
        for w in md.get("over_witnesses", ()):
            if w["verdict"] == "invalid":
                out.append({**ib, "kind": "oracle_error", "step": w["step"], "token": w["token"],
                            "tokens": w["tokens"], "verdict": w["verdict"], "seed": w.get("seed"),
                            "why": f"completed under the oracle's mask: {w.get('why')}"})
        for w in md.get("witnesses", ()):
            if w["verdict"] == "valid":
                out.append({**ib, "kind": "oracle_error", "step": w["step"], "token": w["token"],
                            "tokens": w["tokens"], "verdict": w["verdict"], "seed": w.get("seed"),
                            "why": "a token the oracle forbids completed to a valid document"})
        if md.get("oracle_rejected_at") is not None:
            s = md["oracle_rejected_at"]
            out.append({**ib, "kind": "oracle_error", "step": s, "token": toks[s],
                        "tokens": toks[:s + 1], "why": "the oracle refused a valid instance"})
        ow = {w["step"]: w for w in md.get("over_witnesses", ()) if w.get("tokens")}
        overs.sort(key=lambda d: d["step"] not in ow)  # witnessed ones first
        for d in overs[:PER_INSTANCE]:
            w = ow.get(d["step"])
            f: Finding = {**ib, "kind": "over", "step": d["step"], "token": d["over_ids"][0],
                          "tokens": toks[:d["step"]],
                          "why": f"{d['over']} tokens the oracle allows are forbidden"}
            if w is not None:
                f.update({"token": w["token"], "tokens": w["tokens"], "verdict": w["verdict"],
                          "seed": w.get("seed"),
                          "why": f"{d['over']} tokens the oracle allows are forbidden; "
                                 + ("completed under the oracle's mask to a valid document"
                                    if w["verdict"] == "valid" else
                                    f"the oracle's completion: {w['verdict']} ({w.get('why')})")})
            out.append(f)
    for w in (r.get("fuzz") or {}).get("walks", ()):
        walk_kind = {"invalid": "fuzz_invalid", "dead_end": "dead_end", "runaway": "runaway",
                     "commit_refused": "fuzz_error", "error": "fuzz_error"}.get(w["status"])
        if walk_kind is None:
            continue
        out.append({**base, "kind": walk_kind, "walk": w["walk"], "seed": w["seed"],
                    "step": len(w["tokens"]), "token": None, "tokens": w["tokens"],
                    "why": w.get("why")})
    out.sort(key=lambda f: KINDS.index(f["kind"]))
    return out


def run_findings(records: Iterable[Record], case: str | None = None,
                 engine: str | None = None) -> list[Finding]:
    """Findings of every record (or of one case / engine), most severe first."""
    out: list[Finding] = []
    for r in records:
        if case is not None and r["case_id"] != case:
            continue
        if engine is not None and r["engine"] != engine:
            continue
        out.extend(record_findings(r))
    out.sort(key=lambda f: KINDS.index(f["kind"]))
    return out
