"""The grammar suite's report section: the family × engine table, compile time against
grammar size (the injected-alternation series), the two kinds of false reject (texts the
engine cannot write, tokenisations refused with an accepted one as witness), confirmed
false accepts with their witnesses, translation defects and dialect differences. Data
come from :mod:`suites.grammars.summary` (``summary["grammars"]``); nothing is
recomputed.
"""

from __future__ import annotations

import json

from harness.suite import rejects
from suites.grammars.summary import (KINDS_NOTE, TABLE_HEADER, construct_alone,
                                      table_rows)
from harness.suite.report import Block, Bullets, Para, ReportContext, Section, Table


def _q(text: str, n: int = 80) -> str:
    s = json.dumps(text, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 1] + "…"


def sec_grammars(ctx: ReportContext) -> Section | None:
    blocks: list[Block] = []
    for run, b in ctx.blocks("grammars"):
        prefix = ctx.prefix(run)
        blocks.append(Para(
            f"{prefix}Each engine is given the first form, in its own order of dialects, "
            "that the case has (forms: how many cases each dialect served). False rejects / "
            "accepts count instances (exact texts) against the ground-truth parser (Python's "
            "re for regexes, lark Earley for CFGs, membership for choices), the EOS check "
            "included. Dialect: verdicts that differ on a case marked dialect-sensitive and "
            "that the flagged construct, tested alone through the same engine, explains, "
            "reported apart (a difference it does not explain is an ordinary false reject or "
            "accept); translation defects (ours) are never counted against an engine. "
            "Mask/commit: replays where the engine's commit and its own mask disagreed. "
            "TBM: mask + commit per token, µs; TTFM: compile + first mask, ms."))
        blocks.append(Table(TABLE_HEADER, table_rows(b["table"]),
                            align=["l", "l"] + ["r"] * (len(TABLE_HEADER) - 2)))
        blocks.append(Para(KINDS_NOTE + "."))
        kinds = {e: v for e, v in (b.get("false_reject_kinds") or {}).items() if sum(v.values())}
        if kinds:
            blocks.append(Para("False rejects by kind: " + "; ".join(
                f"{e}: {rejects.describe(v)}" for e, v in kinds.items()) + "."))
        tok = [x for x in b.get("false_rejects") or () if x.get("reject_kind") == "tokenization"]
        if tok:
            blocks.append(Para(f"Tokenisation refused, the text still reachable ({len(tok)}): "
                               "the canonical tokenisation was refused, the token ids shown "
                               "were accepted (every token in the mask, EOS at the end)."))
            blocks.append(Bullets([f"{x['engine']} on {x['case']}: {_q(x['text'])} → "
                                   f"{x.get('reachable_tokens')}" for x in tok[:50]]))
        for base, engines in (b.get("sizes") or {}).items():
            sizes = sorted({s for v in engines.values() for s in v}, key=int)
            blocks.append(Para(f"Compile time against grammar size, {base} "
                               "(TTFM ms at each size of the injected alternation):"))
            blocks.append(Table(["engine", *sizes],
                                [[e, *("–" if v.get(s) is None else f"{v[s]:.2f}" for s in sizes)]
                                 for e, v in sorted(engines.items())],
                                align=["l"] + ["r"] * len(sizes)))
        fa = b.get("false_accepts") or []
        blocks.append(Para(f"Confirmed false accepts: {len(fa)}."))
        if fa:
            blocks.append(Bullets([f"{x['engine']} on {x['case']} ({x['form']}): {_q(x['text'])}"
                                   for x in fa[:50]]))
        tr = b.get("translation") or []
        blocks.append(Para(f"Translation defects (ours, to fix): {len(tr)}."))
        if tr:
            blocks.append(Bullets([f"{x['case']}, {x['dialect']} form says {x['translation_says']} "
                                   f"on {_q(x['text'])}, ground truth {x['truth']} ({x['where']})"
                                   for x in tr[:50]]))
        dl = b.get("dialect") or []
        if dl:
            blocks.append(Para(f"Dialect differences of the engines (the construct alone "
                               f"explains the verdict): {len(dl)}."))
            blocks.append(Bullets([f"{x['engine']} on {x['case']} [{x['construct']}] via "
                                   f"{x['form']}: {_q(x['text'])} — ground truth {x['truth']}, "
                                   f"engine {x['status']}{construct_alone(x.get('chars'))}"
                                   for x in dl[:50]]))
        ne = b.get("dialect_not_explained") or []
        if ne:
            blocks.append(Para(f"On dialect-sensitive cases but not explained by the construct "
                               f"tested alone, so counted as ordinary errors: {len(ne)}."))
            blocks.append(Bullets([f"{x['engine']} on {x['case']} [{x['construct']}]: "
                                   f"{_q(x['text'])} — ground truth {x['truth']}, engine "
                                   f"{x['status']}: {x.get('why')}" for x in ne[:50]]))
    if not blocks:
        return None
    return Section("Grammars: regex, choice and CFG", blocks)
