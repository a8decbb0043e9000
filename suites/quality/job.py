"""Worker job of the ``quality`` suite: one held-out schema, one engine row, two streams.

The model (a checkpoint, ``--model``) writes ``samples`` outputs at temperature 1 and one
greedy output for the schema's prompt, twice with the same seeds: **unconstrained**, and
**constrained** by the row's engine. At every step of either stream the model's own
distribution ``p = softmax(logits)`` (temperature 1, nothing removed) is what the figures
are read against:

- ``mass`` the probability outside the mask (``1 - p(allowed)``; 0 unconstrained);
- ``top_masked`` whether ``argmax p`` is outside the mask;
- ``logprob`` ``log p(token)`` of the token written.

Then the token is drawn: the mask first (every token outside it at ``-inf``), then the
temperature, top-k and top-p, then a draw from the sample's own seeded generator (greedy:
the arg max). The mask goes first because a filter applied before it can leave nothing
the grammar allows (top-k keeps k tokens the grammar may all forbid) and because the
temperature must rescale the distribution the grammar leaves.

An output ends at a stop token (``eos``), at the budget (``budget``: a runaway), when the
mask allows nothing (``stuck``) or when the engine refuses a token its own mask allowed
(``refused``). Each is judged by jsonschema. A constrained output the engine ended that
jsonschema rejects is a **false accept**: its canonical tokenisation is replayed through a
fresh matcher of the same engine, and the record says whether the replay agrees.

The unconstrained stream does not depend on the engine: every job of a schema writes the
same one (same seeds; a worker decodes it once per schema and reuses it for the schema's
other rows), and the summary checks the jobs' copies are equal.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any


from harness.suite import JobPayload, outcomes
from harness.suite.model import decode, load_model
from suites.quality.records import FalseAccept, Output, QualityBlock, QualityRecord

__all__ = ["run_quality_job", "sample_seed"]


def sample_seed(case_id: str, sample: int, seed: int) -> int:
    """The seed of one sample: the same in every stream and every job of the schema."""
    h = hashlib.sha256(f"{case_id}\0{sample}\0{seed}".encode()).hexdigest()
    return int(h[:12], 16)


#: A worker's unconstrained outputs: (checkpoint, case, options, temperature, sample) → decode
_UNCONSTRAINED: dict[tuple, dict[str, Any]] = {}


def _replay(grammar, tokens: list[int], vocab) -> str:
    """``accepted`` when a fresh matcher takes every token and then allows a stop."""
    m = grammar.matcher()
    for t in tokens:
        if not m.commit(t):
            return "rejected"
    return "accepted" if m.eos_allowed() else "rejected"


def run_quality_job(job: JobPayload, phase=lambda p, info=None: None) -> QualityRecord:
    from engines.protocol import CompileError, one_line
    from harness.suite.measure import (adapters, bfcl_match, bfcl_reference,
                                       parse_instance_text, target_for)
    from harness.suite.model import load_checkpoint
    from harness.suite.engines import allocate_bitmask
    from suites.quality.options import resolve

    o = resolve(job.get("options"))
    case = job["case"]
    ckpt = load_checkpoint(str(o["model"]))
    tok = ckpt.tokenizer()
    # the run's vocabulary is the checkpoint's (RunConfig makes it so): engines are built
    # on its tokenizer through their own Hugging Face constructors
    record, adapter, vocab, t_busy = adapters.start_job(job, phase)
    phase("groundtruth")  # setup done: the job's own time limit runs from here
    qrec: QualityRecord = dict(record)  # type: ignore[assignment]
    target = target_for(case)
    prompt = ckpt.prompt_format.prompt_ids(tok, json.loads(case["schema_text"]))
    block: QualityBlock = {"model": ckpt.describe(), "prompt_tokens": len(prompt),
                           "outputs": [], "false_accepts": []}
    qrec["quality"] = block

    phase("compile")
    grammar = None
    try:
        grammar = target.compile(adapter)
    except CompileError as e:
        block["compile_error"] = one_line(e)
    model = load_model(str(ckpt.folder))
    reference = bfcl_reference(case.get("subset"), case.get("instances", []))

    phase("generate")
    bm = allocate_bitmask(vocab.size)
    runs = [(float(o["temperature"]), k) for k in range(int(o["samples"]))] + [(0.0, 0)]
    for stream in ("unconstrained", "constrained"):
        if stream == "constrained" and grammar is None:
            continue
        for temp, k in runs:
            seed = sample_seed(case["case_id"], k, int(o["seed"]))
            m = grammar.matcher() if stream == "constrained" else None
            key = (str(ckpt.folder), ckpt.config_hash, case["case_id"], case["schema_text"],
                   int(o["max_tokens"]), int(o["top_k"]), float(o["top_p"]), temp, seed)
            r = _UNCONSTRAINED.get(key) if m is None else None
            if r is None:
                r = decode(model, prompt, stop_ids=ckpt.eos_ids,
                           max_tokens=int(o["max_tokens"]), temperature=temp,
                           top_k=int(o["top_k"]), top_p=float(o["top_p"]), seed=seed,
                           matcher=m, bitmask=bm, vocab_size=vocab.size)
                if m is None:
                    if len(_UNCONSTRAINED) > 4096:
                        _UNCONSTRAINED.clear()
                    _UNCONSTRAINED[key] = r
            raw = b"".join(vocab.tokens[t] if t < vocab.size else b"" for t in r["tokens"])
            text = raw.decode("utf-8", errors="replace")
            judged = target.judge(raw)
            value, why = parse_instance_text(text)
            out: Output = {
                "stream": stream, "temperature": temp, "sample": k, "seed": seed,
                "tokens": r["tokens"], "text": text, "end": r["end"],
                "parse_valid": why is None, "schema_valid": judged.get("valid") is True,
                "steps": r["steps"], "mass": [round(x, 6) for x in r["mass"]],
                "top_masked": r["top_masked"], "logprob": r["logprob"],
                "whitespace_tokens": sum(1 for t in r["tokens"] if t < vocab.size
                                         and vocab.tokens[t].strip() == b""
                                         and vocab.tokens[t] != b""),
                "noncanonical": vocab.encode(text) != r["tokens"],
            }
            if judged.get("valid") is not True:
                out["error"] = str(judged.get("why", ""))[:300]
            if reference is not None:
                nm, am, at = bfcl_match(reference, value if why is None else None)
                out.update(name_match=nm, args_matched=am, args_total=at)
            block["outputs"].append(out)
            if (stream == "constrained" and r["end"] == "eos"
                    and judged.get("valid") is False):
                rep = _replay(grammar, vocab.encode(text), vocab)
                fa: FalseAccept = {"case_id": case["case_id"], "temperature": temp,
                                   "sample": k, "witness": text,
                                   "error": out.get("error", ""), "replay": rep,
                                   "agrees": rep == "accepted"}
                block["false_accepts"].append(fa)
    if grammar is None:
        qrec["outcome"] = outcomes.COMPILE_ERROR
        qrec["error"] = block["compile_error"]
    elif block["false_accepts"]:
        qrec["outcome"] = outcomes.INVALIDATION_ERROR
    else:
        qrec["outcome"] = outcomes.PASSING
    qrec["busy_ns"] = time.perf_counter_ns() - t_busy
    return qrec
