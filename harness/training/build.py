"""``harness model build``: a small Llama trained here, on the corpus's valid instances.

The pipeline (one :class:`Recipe` per ``--size``):

1. **Data.** Every corpus file is read once (its name and bytes feed the build key); the
   train side of :func:`~harness.model.data.split_of` gives the (schema, instance) pairs,
   the held-out side is only evaluated on. A pair whose answer is longer than
   ``answer_cap`` tokens is left out (the model learns to close what it opens).
2. **Tokenizer.** A byte-level BPE of ``vocab_size`` ids trained on the train schemas
   (minified, cut) and answers (:func:`~harness.model.tokenizer.train_tokenizer`).
3. **Model.** ``LlamaForCausalLM`` (head_dim 32, tied embeddings, float32), trained for a
   fixed number of AdamW steps (never a time budget: the same inputs and seed give the same
   weights) with a warmup + cosine schedule, on length-bucketed batches of about
   ``batch_tokens`` tokens, the loss on the answer tokens only, ``threads`` torch threads.
4. **Evaluation** on held-out schemas: perplexity per answer token (``<eos>`` included), and
   unconstrained sampling at temperature 1 (no top-k/top-p) on a fixed stratified sample of
   held-out schemas: the share of outputs that parse (``json.loads``) and that are valid
   under their schema (jsonschema, the draft from ``$schema``, default 2020-12).

The checkpoint lands in ``<cache>/grammar-harness/models/<size>-<key>`` (``XDG_CACHE_HOME`` or
``~/.cache``), or in ``--out``, where ``key`` hashes the recipe, the seed, the recipe code's
version and every corpus file's name and bytes: a second build with the same inputs returns
the folder at once. It is written to a temporary folder beside and renamed into place, so a
killed build leaves no half checkpoint.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from harness.model.checkpoint import HARNESS_META, save_checkpoint
from harness.model.data import SPLIT_RULE, PromptFormat, answer_text, minified, split_of

__all__ = ["BuildError", "RECIPES", "RECIPE_VERSION", "Recipe", "build_key", "build_model",
           "cache_root", "resolve_model"]

#: Bump when the code below changes what a recipe produces (it is part of the build key).
RECIPE_VERSION = 1


class BuildError(ValueError):
    """Bad input to a build (no corpus, an ``--out`` that holds something else): one line."""


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the weights, besides the corpus and the seed."""

    size: str
    vocab_size: int
    schema_budget: int        # prompt: schema tokens kept
    answer_cap: int           # a train pair with a longer answer (tokens, no <eos>) is dropped
    prompt_loss: float        # loss weight of a prompt (schema) token; an answer token's is 1
    hidden: int
    layers: int
    heads: int                # head_dim = hidden / heads = 32
    kv_heads: int
    intermediate: int
    batch_tokens: int         # padded tokens per optimizer step (about)
    steps: int                # optimizer steps, fixed
    lr: float                 # peak
    warmup: int
    min_lr_ratio: float       # cosine floor, as a share of the peak
    weight_decay: float
    threads: int              # torch.set_num_threads
    max_train_schemas: int    # 0: all; else the first N train schemas (by name), for tiny
    tokenizer_schema_chars: int
    eval_schemas: int         # held-out schemas sampled (stratified)
    eval_samples: int         # samples per schema at temperature 1
    eval_new_tokens: int      # token budget per sample
    eval_ppl_pairs: int       # held-out pairs the perplexity is measured on
    max_positions: int = 1024

    def describe(self) -> dict[str, Any]:
        return asdict(self)


RECIPES: dict[str, Recipe] = {
    "default": Recipe(
        size="default", vocab_size=2048, schema_budget=128, answer_cap=96, prompt_loss=0.0,
        hidden=128, layers=4, heads=4, kv_heads=2, intermediate=384,
        batch_tokens=2048, steps=1700, lr=3e-3, warmup=30, min_lr_ratio=0.1,
        weight_decay=0.1, threads=1, max_train_schemas=0, tokenizer_schema_chars=1500,
        eval_schemas=96, eval_samples=2, eval_new_tokens=256, eval_ppl_pairs=200),
    "tiny": Recipe(
        size="tiny", vocab_size=512, schema_budget=64, answer_cap=64, prompt_loss=0.0,
        hidden=64, layers=2, heads=2, kv_heads=1, intermediate=128,
        batch_tokens=1024, steps=150, lr=3e-3, warmup=10, min_lr_ratio=0.1,
        weight_decay=0.0, threads=1, max_train_schemas=400, tokenizer_schema_chars=600,
        eval_schemas=8, eval_samples=1, eval_new_tokens=48, eval_ppl_pairs=32),
    # a draft model for speculative decoding: the tiny shape on a target's own tokenizer and
    # prompt format (``--target``; its vocabulary_size and schema_budget are the target's)
    "draft": Recipe(
        size="draft", vocab_size=0, schema_budget=0, answer_cap=96, prompt_loss=0.0,
        hidden=64, layers=2, heads=2, kv_heads=1, intermediate=128,
        batch_tokens=1024, steps=400, lr=3e-3, warmup=10, min_lr_ratio=0.1,
        weight_decay=0.0, threads=1, max_train_schemas=0, tokenizer_schema_chars=0,
        eval_schemas=8, eval_samples=1, eval_new_tokens=48, eval_ppl_pairs=32),
}


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/grammar-harness/models`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "grammar-harness" / "models"


# -- data ------------------------------------------------------------------------------------

@dataclass
class _Corpus:
    digest: str                                 # sha256 over every file's name and bytes
    train: list[tuple[str, Any, Any]]           # (file name, schema, instance)
    held_out: list[tuple[str, Any, Any]]
    held_out_names: list[str]                   # every held-out file, parsed or not


def _read_corpus(data_dir: Path) -> _Corpus:
    """One pass over the corpus, with the filter of
    :func:`harness.model.data.training_pairs`."""
    h = hashlib.sha256()
    train: list[tuple[str, Any, Any]] = []
    held: list[tuple[str, Any, Any]] = []
    held_names: list[str] = []
    for path in sorted(data_dir.glob("*.json")):
        raw = path.read_bytes()
        h.update(path.name.encode() + b"\0" + str(len(raw)).encode() + b"\0" + raw)
        side = split_of(path.name)
        if side == "held_out":
            held_names.append(path.name)
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("schema"), (dict, bool)):
            continue
        for t in doc.get("tests") or ():
            if isinstance(t, dict) and t.get("valid") is True and "data" in t:
                (held if side == "held_out" else train).append((path.name, doc["schema"],
                                                                 t["data"]))
    return _Corpus(h.hexdigest(), train, held, held_names)


def build_key(recipe: Recipe, seed: int, corpus_digest: str) -> str:
    """The cache key: the recipe, the seed, :data:`RECIPE_VERSION` and the corpus digest."""
    blob = json.dumps({"recipe": recipe.describe(), "seed": seed, "version": RECIPE_VERSION,
                       "corpus": corpus_digest}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _encode_schemas(tok: Any, schemas: list[Any], budget: int) -> list[list[int]]:
    """The first ``budget`` tokens of each minified schema, as
    :meth:`PromptFormat.prompt_ids` makes them, encoding a generous prefix only (a cut
    mid-word changes at most the last pre-token, which the margin keeps out of reach)."""
    backend = tok.backend_tokenizer
    texts = [minified(s) for s in schemas]
    cut = budget * 12
    out = [e.ids for e in backend.encode_batch([t[:cut] for t in texts],
                                               add_special_tokens=False)]
    for i, (t, ids) in enumerate(zip(texts, out)):
        if len(t) > cut and len(ids) < budget + 16:  # too few tokens in the prefix: full text
            ids = backend.encode(t, add_special_tokens=False).ids
        out[i] = ids[:budget]
    return out


def _examples(tok: Any, fmt: PromptFormat, pairs: list[tuple[str, Any, Any]],
              answer_cap: int | None) -> list[tuple[list[int], int]]:
    """``(prompt + answer + eos ids, prompt length)`` per pair; a pair whose answer exceeds
    ``answer_cap`` tokens is dropped (``None``: kept, cut at 256 tokens)."""
    backend = tok.backend_tokenizer
    bos = backend.token_to_id(fmt.bos)
    ans = backend.token_to_id(fmt.answer)
    eos = backend.token_to_id(fmt.eos)
    uniq: dict[str, int] = {}
    schema_of: list[int] = []
    schemas: list[Any] = []
    for name, schema, _ in pairs:
        if name not in uniq:
            uniq[name] = len(schemas)
            schemas.append(schema)
        schema_of.append(uniq[name])
    schema_ids = _encode_schemas(tok, schemas, fmt.schema_budget)
    answers = backend.encode_batch([answer_text(d) for _, _, d in pairs],
                                   add_special_tokens=False)
    out = []
    for si, a in zip(schema_of, answers):
        a_ids = a.ids
        if answer_cap is not None and len(a_ids) > answer_cap:
            continue
        prompt = [bos] + schema_ids[si] + [ans]
        out.append((prompt + a_ids[:256] + [eos], len(prompt)))
    return out


def _batches(examples: list[tuple[list[int], int]], batch_tokens: int,
             rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches (indices) of about ``batch_tokens`` padded tokens, in a
    shuffled order; the sort key is jittered so that buckets differ from epoch to epoch."""
    order = sorted(range(len(examples)),
                   key=lambda i: (len(examples[i][0]) * (1 + 0.1 * rng.random()), i))
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        n = len(examples[i][0])
        if cur and max(longest, n) * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def _tensors(examples: list[tuple[list[int], int]], idx: list[int], pad: int,
             prompt_weight: float = 0.0):
    """Right-padded ``input_ids`` and each position's loss weight as a target: 1 on the
    answer (``<eos>`` included), ``prompt_weight`` on the prompt, 0 on the padding. No
    attention mask is needed: under a causal mask no real token sees a right pad."""
    import torch

    width = max(len(examples[i][0]) for i in idx)
    ids = torch.full((len(idx), width), pad, dtype=torch.long)
    weights = torch.zeros((len(idx), width), dtype=torch.float32)
    for r, i in enumerate(idx):
        seq, plen = examples[i]
        ids[r, :len(seq)] = torch.tensor(seq)
        weights[r, 1:plen] = prompt_weight
        weights[r, plen:len(seq)] = 1.0
    return ids, weights


def _token_nll(model: Any, ids: Any) -> Any:
    """Each position's negative log-likelihood as a target (position 0: none, set 0)."""
    import torch

    logits = model(input_ids=ids).logits[:, :-1].float()
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                            ids[:, 1:].reshape(-1), reduction="none")
    return torch.nn.functional.pad(nll.view(ids.shape[0], -1), (1, 0))


# -- training --------------------------------------------------------------------------------

def _lr_at(step: int, r: Recipe) -> float:
    if step < r.warmup:
        return r.lr * (step + 1) / r.warmup
    t = (step - r.warmup) / max(1, r.steps - r.warmup)
    return r.lr * (r.min_lr_ratio + (1 - r.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


def _train(r: Recipe, seed: int, tok: Any, examples: list[tuple[list[int], int]],
           progress: bool) -> tuple[Any, dict[str, Any]]:
    import torch
    from tqdm import tqdm
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=r.hidden, intermediate_size=r.intermediate,
        num_hidden_layers=r.layers, num_attention_heads=r.heads,
        num_key_value_heads=r.kv_heads, head_dim=r.hidden // r.heads,
        max_position_embeddings=r.max_positions, rms_norm_eps=1e-5,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        initializer_range=0.02)
    model = LlamaForCausalLM(cfg)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=r.lr, betas=(0.9, 0.95), eps=1e-8)
    rng = random.Random(seed)
    queue: list[list[int]] = []
    epochs = 0
    tokens = answer_tokens = 0
    losses: list[float] = []
    t0 = time.monotonic()
    bar = tqdm(total=r.steps, desc=f"model build ({r.size})", unit="step", file=sys.stderr,
               disable=not progress, dynamic_ncols=True)
    for step in range(r.steps):
        if not queue:
            queue = _batches(examples, r.batch_tokens, rng)
            epochs += 1
        ids, weights = _tensors(examples, queue.pop(), tok.pad_token_id, r.prompt_loss)
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, r)
        loss = (_token_nll(model, ids) * weights).sum() / weights.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += ids.numel()
        answer_tokens += int((weights == 1).sum())
        losses.append(float(loss.detach()))
        if progress:
            bar.update(1)
            if step % 10 == 0 or step == r.steps - 1:
                el = time.monotonic() - t0
                bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}",
                                tok_s=f"{tokens / el:.0f}")
    bar.close()
    secs = time.monotonic() - t0
    model.eval()
    stats = {"train_seconds": round(secs, 1), "steps": r.steps,
             "epochs_started": epochs, "tokens_seen": tokens,
             "answer_tokens_seen": answer_tokens,
             "tokens_per_second": round(tokens / secs, 1) if secs else None,
             "steps_per_second": round(r.steps / secs, 3) if secs else None,
             "final_loss": round(sum(losses[-50:]) / len(losses[-50:]), 4),
             "parameters": sum(p.numel() for p in model.parameters())}
    return model, stats


# -- evaluation ------------------------------------------------------------------------------

def _perplexity(model: Any, tok: Any, fmt: PromptFormat,
                pairs: list[tuple[str, Any, Any]], n: int) -> dict[str, Any]:
    """exp(mean negative log-likelihood per answer token, ``<eos>`` included) on ``n``
    held-out pairs spread evenly over them (answers cut at 256 tokens)."""
    import torch

    if not pairs or n <= 0:
        return {"perplexity": None, "pairs": 0, "answer_tokens": 0}
    step = max(1, len(pairs) // n)
    chosen = pairs[::step][:n]
    ex = _examples(tok, fmt, chosen, None)
    nll = 0.0
    count = 0
    order = sorted(range(len(ex)), key=lambda i: len(ex[i][0]))
    with torch.no_grad():
        for k in range(0, len(order), 8):
            idx = order[k:k + 8]
            ids, weights = _tensors(ex, idx, tok.pad_token_id)
            nll += float((_token_nll(model, ids) * weights).sum())
            count += int((weights == 1).sum())
    return {"perplexity": round(math.exp(nll / count), 4), "pairs": len(ex),
            "answer_tokens": count}


def _eval_schemas(pairs: list[tuple[str, Any, Any]], n: int) -> list[tuple[str, Any, Any]]:
    """A stratified sample of ``n`` held-out schemas whose validator decides (accepts one
    of their own valid instances): ``(name, schema, validator)``."""
    from harness.measure.groundtruth import GroundTruth
    from harness.suite.maskbench import stratified_sample

    first: dict[str, tuple[Any, Any]] = {}
    for name, schema, data in pairs:
        first.setdefault(name, (schema, data))
    names = stratified_sample(sorted(first), len(first))
    out = []
    for name in names:
        schema, data = first[name]
        gt = GroundTruth(schema)
        if gt.verdict(data)[0] is True:
            out.append((name, schema, gt))
        if len(out) == n:
            break
    return out


def _sample_eval(model: Any, tok: Any, fmt: PromptFormat, pairs: list[tuple[str, Any, Any]],
                 r: Recipe, seed: int) -> dict[str, Any]:
    """Unconstrained sampling at temperature 1 on held-out schemas: parse- and
    schema-valid shares."""
    import torch

    chosen = _eval_schemas(pairs, r.eval_schemas)
    prompts = [(name, gt, fmt.prompt_ids(tok, schema)) for name, schema, gt in chosen
               for _ in range(r.eval_samples)]
    eos = tok.eos_token_id
    pad = tok.pad_token_id
    parse = valid = runaway = undecided = 0
    gen_tokens = 0
    examples: list[dict[str, Any]] = []
    bs = 32
    with torch.no_grad():
        for k in range(0, len(prompts), bs):
            chunk = prompts[k:k + bs]
            width = max(len(p) for _, _, p in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (_, _, p) in enumerate(chunk):
                ids[row, width - len(p):] = torch.tensor(p)
                mask[row, width - len(p):] = 1
            torch.manual_seed(seed * 1_000_003 + k)
            out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True,
                                 temperature=1.0, top_k=0, top_p=1.0,
                                 max_new_tokens=r.eval_new_tokens, eos_token_id=eos,
                                 pad_token_id=pad)
            for row, (name, gt, _) in enumerate(chunk):
                new = out[row, width:].tolist()
                if eos in new:
                    new = new[:new.index(eos)]
                else:
                    runaway += 1
                gen_tokens += len(new)
                text = tok.decode(new, skip_special_tokens=True)
                ok_parse = ok_valid = False
                try:
                    inst = json.loads(text)
                    ok_parse = True
                except ValueError:
                    pass
                if ok_parse:
                    v, _ = gt.verdict(inst)
                    ok_valid = v is True
                    undecided += v is None
                parse += ok_parse
                valid += ok_valid
                if len(examples) < 6:
                    examples.append({"schema": name, "output": text[:300],
                                     "parse_valid": ok_parse, "schema_valid": ok_valid})
    n = len(prompts)
    return {"schemas": len(chosen), "samples_per_schema": r.eval_samples, "samples": n,
            "temperature": 1.0, "max_new_tokens": r.eval_new_tokens,
            "parse_valid": round(parse / n, 4) if n else None,
            "schema_valid": round(valid / n, 4) if n else None,
            "runaway": round(runaway / n, 4) if n else None,
            "undecided": undecided,
            "mean_new_tokens": round(gen_tokens / n, 1) if n else None,
            "schema_names": [c[0] for c in chosen], "examples": examples}


# -- the build -------------------------------------------------------------------------------

def _resolve_data(data: str | Path | None) -> Path:
    from harness.suite.maskbench import resolve_data_dir

    try:
        return resolve_data_dir(str(data) if data is not None else None)
    except Exception as e:  # SuiteError: the corpus is missing, with how to get it
        raise BuildError(" ".join(str(e).split())) from None


def _is_build(folder: Path, key: str) -> bool:
    try:
        meta = json.loads((folder / HARNESS_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return meta.get("build_key") == key and (folder / "model.safetensors").is_file()


def build_model(size: str = "default", out: str | Path | None = None,
                data: str | Path | None = None, seed: int = 0, progress: bool = True,
                echo: Callable[[str], None] | None = None, *, steps: int | None = None,
                target: str | Path | None = None) -> Path:
    """Build (or find in the cache) the model of recipe ``size``; returns its folder.

    ``out``: the checkpoint folder (default ``cache_root() / key``); ``data``: the corpus
    (default as the suites find it); ``progress``: a tqdm bar on stderr while it trains;
    ``echo``: where the stage lines and the evaluation go (default stderr). ``steps``
    overrides the recipe's step count (a short build for tests; it is part of the key).
    ``target`` (size ``draft`` only; default ``build:default``): the checkpoint whose
    tokenizer and prompt format the draft model shares (part of the key).
    Raises :class:`BuildError` on bad input."""
    if size not in RECIPES:
        raise BuildError(f"unknown size {size!r} (known: {', '.join(RECIPES)})")
    say = echo or (lambda s: print(s, file=sys.stderr, flush=True))
    recipe = RECIPES[size]
    tok_from: Path | None = None
    if size == "draft":
        from harness.model.checkpoint import CheckpointError, load_checkpoint

        tok_from = Path(resolve_model(str(target or "build:default"), data and str(data)))
        try:
            ck = load_checkpoint(str(tok_from))
        except CheckpointError as e:
            raise BuildError(f"--target {target}: {e}") from None
        recipe = replace(recipe, vocab_size=len(ck.tokenizer()),
                         schema_budget=ck.prompt_format.schema_budget)
    elif target is not None:
        raise BuildError("--target is for --size draft only")
    if steps is not None:
        if steps < 1:
            raise BuildError(f"steps must be at least 1, not {steps}")
        recipe = replace(recipe, steps=steps, warmup=min(recipe.warmup, max(1, steps // 10)))
    data_dir = _resolve_data(data)
    t_start = time.monotonic()
    corpus = _read_corpus(data_dir)
    if not corpus.train:
        raise BuildError(f"no valid instances on the train side of the corpus at {data_dir}")
    digest = corpus.digest
    if tok_from is not None:  # the target's tokenizer is part of what is built
        digest += _sha256(tok_from / "tokenizer.json")
    key = build_key(recipe, seed, digest)
    folder = Path(out).expanduser() if out is not None else cache_root() / f"{size}-{key}"
    if _is_build(folder, key):
        say(f"model build: cached ({key})")
        return folder
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BuildError(f"--out {folder}: exists and is not this build "
                         "(remove it or choose another folder)")
    return _build(recipe, seed, corpus, key, folder, data_dir, progress, say, t_start, tok_from)


def _build(r: Recipe, seed: int, corpus: _Corpus, key: str, folder: Path, data_dir: Path,
           progress: bool, say: Callable[[str], None], t_start: float,
           tok_from: Path | None = None) -> Path:
    import torch

    from harness.model.tokenizer import train_tokenizer

    threads_before = torch.get_num_threads()
    torch.set_num_threads(r.threads)
    try:
        fmt = PromptFormat(schema_budget=r.schema_budget)
        train = corpus.train
        if r.max_train_schemas:
            keep = set(sorted({n for n, _, _ in train})[:r.max_train_schemas])
            train = [p for p in train if p[0] in keep]
        schemas: dict[str, Any] = {}
        for name, schema, _ in train:
            schemas.setdefault(name, schema)
        texts = ([minified(s)[:r.tokenizer_schema_chars] for s in schemas.values()]
                 + [answer_text(d) for _, _, d in train])
        if tok_from is not None:  # a draft model: the target's tokenizer, as it is
            from harness.model.checkpoint import load_checkpoint

            target_ck = load_checkpoint(str(tok_from))
            tok, fmt = target_ck.tokenizer(), target_ck.prompt_format
        else:
            tok = train_tokenizer(texts, r.vocab_size, fmt)
        examples = _examples(tok, fmt, train, r.answer_cap)
        say(f"model build ({r.size}): {len(schemas)} train schemas, {len(train)} instances, "
            f"{len(examples)} with an answer of at most {r.answer_cap} tokens; "
            f"{len(corpus.held_out_names)} schemas held out; tokenizer {len(tok)} ids "
            f"({time.monotonic() - t_start:.0f}s)")
        model, stats = _train(r, seed, tok, examples, progress)
        t_eval = time.monotonic()
        ev: dict[str, Any] = _perplexity(model, tok, fmt, corpus.held_out, r.eval_ppl_pairs)
        ev["sampling"] = _sample_eval(model, tok, fmt, corpus.held_out, r, seed)
        ev["seconds"] = round(time.monotonic() - t_eval, 1)
        s = ev["sampling"]
        say(f"model build ({r.size}): held-out perplexity {ev['perplexity']} per answer token "
            f"({ev['pairs']} instances); at temperature 1 on {s['schemas']} held-out schemas "
            f"x {s['samples_per_schema']}: parse-valid {_pct(s['parse_valid'])}, "
            f"schema-valid {_pct(s['schema_valid'])}, runaway {_pct(s['runaway'])}")
        meta: dict[str, Any] = {
            "prompt": fmt.describe(), "build_key": key, "recipe": r.describe(),
            "recipe_version": RECIPE_VERSION, "seed": seed,
            "torch_threads": r.threads, "torch": torch.__version__,
            "transformers": importlib.metadata.version("transformers"),
            "corpus": {"path": str(data_dir), "sha256": corpus.digest},
            "target": str(tok_from) if tok_from is not None else None,
            "split": {"rule": SPLIT_RULE, "held_out": corpus.held_out_names,
                      "train_schemas": len(schemas), "train_instances": len(train),
                      "trained_instances": len(examples)},
            "train": stats, "eval": ev,
        }
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            _quietly(save_checkpoint, tmp, model, tok, None)
            meta["weights_sha256"] = _sha256(tmp / "model.safetensors")
            meta["build_seconds"] = round(time.monotonic() - t_start, 1)
            save_checkpoint_meta(tmp, meta)
            if folder.exists():  # an empty folder given as --out
                folder.rmdir()
            os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        say(f"model build ({r.size}): {meta['build_seconds']:.0f}s, weights sha256 "
            f"{meta['weights_sha256'][:16]}…")
        return folder
    finally:
        torch.set_num_threads(threads_before)


def _quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with transformers' own progress bars off ("Writing model shards")."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return fn(*args)
    finally:
        if was:
            hf_logging.enable_progress_bar()


def save_checkpoint_meta(folder: Path, meta: dict[str, Any]) -> None:
    (folder / HARNESS_META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n",
                                       encoding="utf-8")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


@functools.lru_cache(maxsize=8)
def resolve_model(spec: str, data: str | None = None) -> str:
    """The checkpoint folder ``spec`` names: ``build:tiny`` / ``build:default``
    (:data:`harness.model.checkpoint.BUILT`) → the folder of ``harness model build --size
    tiny|default`` (built now when not cached); anything else is a path, returned as
    given. Raises :class:`BuildError` on a corpus it cannot build from."""
    from harness.model.checkpoint import BUILT

    if spec in BUILT:
        return str(build_model(size=BUILT[spec], data=data, progress=False))
    return spec
