"""``harness lint``'s library: every node × keyword × engine verdict of schema files
(:mod:`harness.measure.keywords`, docs/lint.md).

Schemas are untrusted: read as JSON (never evaluated), checked against their metaschema by
jsonschema, no ``$ref`` ever fetched. Each engine judges in its own forked process under a
wall-clock limit: an engine that hangs or dies on a node leaves that node's rows and the
ones after it ``undecided`` with why, and the lint goes on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.measure.keywords import VERDICTS, Node, Plan, nodes, plan

__all__ = ["FLAGGED", "LintError", "LintResult", "load_schema", "lint_files"]

#: The verdicts that make ``harness lint`` exit 1.
FLAGGED = ("ignored", "misread")
#: Seconds one file may take: its instances made, then the engines' compiles and replays
#: (with the process's start and the vocabulary's load, a file takes under 30 s here).
FILE_SECONDS = 26.0
#: Of them, the most that making instances may take (hypothesis-jsonschema: up to 4 s on
#: a large node); the nodes left get none and are undecided, with why.
PLAN_SECONDS = 8.0
#: Seconds the judge may spend on one node before the rest of its keywords are undecided
#: (and, two seconds later, the engine's process is ended and restarted after the node).
NODE_SECONDS = 3.0
#: Seconds an engine's process may take to build the engine before its first node.
BUILD_SECONDS = 15.0


class LintError(ValueError):
    """Bad input: one line naming the file."""


@dataclass
class LintResult:
    """The rows of one lint: ``{"file", "engine", "path", "keyword", "verdict", "witness",
    "why"}`` each, and what it cost."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    engines: list[str] = field(default_factory=list)
    nodes: dict[str, int] = field(default_factory=dict)  # file → nodes judged
    seconds: float = 0.0

    def flagged(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["verdict"] in FLAGGED]


def load_schema(path: str | Path) -> Any:
    """The schema in ``path``; raises :class:`LintError` (one line naming the file) when it
    cannot be read, is not JSON, or is not a schema."""
    import jsonschema
    from jsonschema.validators import validator_for

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LintError(f"{path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise LintError(f"{path}: not JSON: {' '.join(str(e).split())[:160]}") from None
    if isinstance(schema, dict) and isinstance(schema.get("tests"), list) \
            and isinstance(schema.get("schema"), (dict, bool)):
        schema = schema["schema"]  # a MaskBench corpus file: its schema
    if not isinstance(schema, (dict, bool)):
        raise LintError(f"{path}: not a schema (a JSON {type(schema).__name__}, not an object "
                        "or a boolean)")
    try:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise LintError(f"{path}: not a schema: at {where}: "
                        f"{' '.join(e.message.split())[:160]}") from None
    except Exception as e:  # an unknown $schema, a hostile depth
        raise LintError(f"{path}: not a schema: {type(e).__name__}: "
                        f"{' '.join(str(e).split())[:160]}") from None
    return schema


def _judge(spec: Any, vocab: Any, todo: list[tuple[Node, Plan]], conn: Any,
           first: int = 0) -> None:
    """In the engine's process: one message per node, then ``("done", None)``."""
    from engines.protocol import one_line
    from harness.measure.keywords import AdapterEngine, Memo, judge_node

    memo = Memo()  # the nodes of every file share their compiles (Engine.grammar_key)
    try:
        engine = AdapterEngine(spec.build(vocab), vocab)
    except Exception as e:
        conn.send(("error", f"the engine could not be built: {one_line(e, 200)}"))
        return
    for i, (node, made) in enumerate(todo):
        if i < first:
            continue
        conn.send(("start", i))
        sent: set[str] = set()

        def emit(row: dict[str, Any]) -> None:
            sent.add(row["keyword"])
            conn.send(("row", row))

        try:
            judge_node(engine, node, made, time.monotonic() + NODE_SECONDS, emit, memo)
        except Exception as e:  # an engine raising outside its CompileError: the rest
            for kw in node.keywords:
                if kw not in sent:
                    emit({"path": node.path, "keyword": kw, "verdict": "undecided",
                          "witness": None, "why": f"the engine raised: {one_line(e, 200)}"})
        conn.send(("node", None))
    conn.send(("done", None))
    conn.close()


@dataclass
class _Job:
    spec: Any
    proc: Any = None
    conn: Any = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    current: int = 0  # the node being judged
    since: float = 0.0  # when it started
    done: set[int] = field(default_factory=set)
    why: dict[int, str] = field(default_factory=dict)  # node → why it has no verdict
    finished: bool = False


def _start(ctx: Any, job: _Job, vocab: Any, todo: list[tuple[Node, Plan]], first: int) -> None:
    here, there = ctx.Pipe(duplex=False)
    job.proc = ctx.Process(target=_judge, args=(job.spec, vocab, todo, there, first),
                           daemon=True)
    job.proc.start()
    there.close()
    # the engine's build (its tokenizer tables) is not the node's time
    job.conn, job.current, job.since = here, first, time.monotonic() + BUILD_SECONDS


def _stop(job: _Job) -> None:
    if job.proc is not None:
        if job.proc.is_alive():
            job.proc.kill()
        job.proc.join(5)
        job.conn.close()
        job.proc = None


def _run_engines(specs: list[Any], vocab: Any, todo: list[tuple[Node, Plan]],
                 seconds: float, node_seconds: float = NODE_SECONDS
                 ) -> list[list[dict[str, Any]]]:
    """The rows of ``todo`` per engine, each judged in its own forked process (started from
    this thread; they run side by side) within ``seconds``. A node that takes an engine more
    than ``node_seconds`` (a compile that hangs) ends that process: the node is undecided
    with why, and a new process goes on from the next node."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("fork")
    deadline = time.monotonic() + seconds
    jobs = [_Job(spec) for spec in specs]
    for j in jobs:
        _start(ctx, j, vocab, todo, 0)
    try:
        while any(not j.finished for j in jobs):
            now = time.monotonic()
            for j in jobs:
                if j.finished:
                    continue
                if now > deadline:
                    j.why[j.current] = (f"the engine ran past the lint's {seconds:g} s limit "
                                        "on this schema")
                    j.finished = True
                elif now - j.since > node_seconds + 2.0:
                    j.why[j.current] = (f"the engine spent over {node_seconds:g} s on this "
                                        "node (a compile or a replay that does not end)")
                    _stop(j)
                    if j.current + 1 < len(todo):
                        _start(ctx, j, vocab, todo, j.current + 1)
                    else:
                        j.finished = True
            live = [j for j in jobs if not j.finished]
            if not live:
                break
            ready = wait([j.conn for j in live], timeout=0.5)
            for j in live:
                if j.conn not in ready:
                    continue
                try:
                    kind, value = j.conn.recv()
                except (EOFError, OSError):
                    j.proc.join(1)
                    j.why[j.current] = f"the engine's process died (exit code {j.proc.exitcode})"
                    _stop(j)
                    if j.current + 1 < len(todo):
                        _start(ctx, j, vocab, todo, j.current + 1)
                    else:
                        j.finished = True
                    continue
                if kind == "start":
                    j.current, j.since = value, time.monotonic()
                elif kind == "row":
                    j.rows.append(value)
                elif kind == "node":
                    j.done.add(j.current)
                elif kind == "error":
                    j.why[j.current] = value
                    j.why[-1] = value
                    j.finished = True
                else:
                    j.finished = True
    finally:
        for j in jobs:
            _stop(j)
    out = []
    for j in jobs:
        rows = list(j.rows)
        have = {(r["path"], r["keyword"]) for r in rows}
        for i, (node, _) in enumerate(todo):
            if i not in j.done:
                why = j.why.get(i) or j.why.get(-1) or \
                    "not judged: the lint's time limit was spent on earlier nodes"
                rows += [{"path": node.path, "keyword": kw, "verdict": "undecided",
                          "witness": None, "why": why} for kw in node.keywords
                         if (node.path, kw) not in have]
        out.append(rows)
    return out


def _plans(schema: Any, seconds: float) -> list[tuple[Node, Plan]]:
    """Every node of ``schema`` (in document order) with its instances, a node met again
    (the same text) sharing them. They are made smallest node first (the cheapest); past
    ``seconds`` the nodes left get none and are skipped, with why."""
    import dataclasses

    t0 = time.monotonic()
    found = [(json.dumps(n.schema, sort_keys=True), n) for n in nodes(schema)]
    made: dict[str, Plan] = {}
    late = (f"not judged: the file's {seconds:g} s for making instances were spent on "
            "smaller nodes")
    for key, node in sorted(found, key=lambda kn: len(kn[0])):
        if key not in made and node.skip is None and time.monotonic() - t0 <= seconds:
            made[key] = plan(node)
    out = []
    for key, node in found:
        if key in made:
            out.append((node, made[key]))
        elif node.skip is not None:  # judged as undecided with its own why
            out.append((node, Plan()))
        else:
            out.append((dataclasses.replace(node, skip=late), Plan()))
    return out


def lint_files(files: list[str | Path], engines: str | None = None, *,
               tokenizer: str = "llama3", seconds: float = FILE_SECONDS) -> LintResult:
    """Lint ``files`` for the engine rows ``engines`` (``NAME[:CONFIG],...``; default
    :data:`engines.LINT_ENGINES`), each file within ``seconds`` (its instances within
    :data:`PLAN_SECONDS` of them, the engines side by side in the rest). Raises
    :class:`LintError` on bad input (the first bad file) or an unknown / not installed
    engine."""
    import engines as engines_pkg
    from engines.vocab import load_vocabulary
    from harness.registry import RegistryError, parse_engines

    t0 = time.monotonic()
    try:
        specs = [s for s in parse_engines(engines or engines_pkg.LINT_ENGINES)]
    except RegistryError as e:
        raise LintError(str(e)) from None
    missing = [s.label for s in specs if s.env is not None or not s.installed()]
    if missing:
        raise LintError(f"not installed here (or in another environment): {', '.join(missing)}")
    schemas = {str(f): load_schema(f) for f in files}
    vocab = load_vocabulary(tokenizer)
    out = LintResult(engines=[s.label for s in specs])
    for name, schema in schemas.items():
        # the instances are the same for every engine: made once, before the engines fork
        t1 = time.monotonic()
        todo = _plans(schema, min(PLAN_SECONDS, seconds / 3))
        left = seconds - (time.monotonic() - t1)
        out.nodes[name] = len(todo)
        for spec, rows in zip(specs, _run_engines(specs, vocab, todo, left)):
            out.rows += [{"file": name, "engine": spec.label, **r} for r in rows]
    order = {v: i for i, v in enumerate(VERDICTS)}
    out.rows.sort(key=lambda r: (list(schemas).index(r["file"]), r["path"], r["keyword"],
                                 out.engines.index(r["engine"]), order.get(r["verdict"], 9)))
    out.seconds = time.monotonic() - t0
    return out
