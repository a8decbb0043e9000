"""The serve suite's report section: per engine row and stream, the figures of the
constrained stream beside its unconstrained twin, their ratios, what the servers refused,
and the engine versions inside each server's environment beside the standalone ones. Data
come from :mod:`suites.serve.summary` (``summary["serve"]``); nothing is recomputed.
"""

from __future__ import annotations

from suites.serve.summary import (ALIGN, HEADER, QUALITY_TITLE, RATIO_ALIGN, RATIO_HEADER, notes,
                                  quality_rows, quality_table, ratio_rows, rows)
from harness.suite.report import Block, Bullets, Para, ReportContext, Section, Table


def _judged(b) -> bool:
    """The run's outputs were judged for validity and accuracy: its model is a checkpoint."""
    return any(d.get("quality") for streams in b["streams"].values() for d in streams.values())


def sec_serve(ctx: ReportContext) -> Section | None:
    blocks: list[Block] = []
    for run, b in ctx.blocks("serve"):
        prefix = ctx.prefix(run)
        blocks.append(Para(f"{prefix}request form {b.get('form')}, model {b.get('model')} "
                           f"({'a checkpoint' if _judged(b) else 'random weights'}), max_tokens {b.get('max_tokens')}. Times in ms; "
                           "mode c = constrained, u = the same stream (prompts, seeds, "
                           "arrivals) unconstrained. Invalid: the output broke the constraint "
                           "(strict JSON, then jsonschema), the server having answered HTTP "
                           "200 — a constraint not enforced. Runaways: the token budget ended "
                           "the output (with the share of whitespace in it)."))
        blocks.append(Table(HEADER, rows(b), align=ALIGN))
        rr, foot = ratio_rows(b)
        if rr:
            blocks.append(Para("Constrained / unconstrained (means: on a small machine streamed "
                               "tokens arrive bunched, and a median gap can read ~0; a ratio "
                               "that is not a figure shows – with its reason below):"))
            blocks.append(Table(RATIO_HEADER, rr, align=RATIO_ALIGN,
                                note="\n".join(foot) or None))
        qt = quality_table(b)
        if qt is not None:
            blocks += [Para(f"{QUALITY_TITLE[0].upper()}{QUALITY_TITLE[1:]}: the served outputs "
                            "of the checkpoint, judged as the quality suite judges its "
                            "standalone rows (the figures that need the model's logits are "
                            "the quality suite's only):"), qt]
            compounding = quality_rows(b)[1]
            if compounding:
                blocks.append(Bullets(compounding))
        lines = notes(b)
        if lines:
            blocks += [Para("Canaries, goodput and refusals:"), Bullets(lines)]
        v = b.get("versions") or {}
        items = [f"{eng} server ({s['environment']}): " + ", ".join(
            f"{k} {x}" for k, x in s["versions"].items()) for eng, s in
            (v.get("servers") or {}).items()]
        if v.get("standalone"):
            items.append("standalone (the harness's environment): " + ", ".join(
                f"{k} {x}" for k, x in v["standalone"].items()))
        if items:
            blocks += [Para("Engine versions:"), Bullets(items)]
        servers = b.get("servers") or []
        if servers:
            blocks.append(Bullets([
                (f"{s['engine']}: started {s.get('starts')}×, ready in {s.get('ready_s')} s, "
                 f"log {s.get('log')}" if s.get("launched", True) else
                 f"{s['engine']}: the server at {s.get('url')} ({s.get('dialect')})")
                + (f"; it says version {s['server_version']}" if s.get("server_version")
                   else "") for s in servers]))
    if not blocks:
        return None
    return Section("Serving benchmark", blocks)
