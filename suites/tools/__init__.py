"""Suite ``tools``: tool-call requests with 1 to 500 tools from the corpus's BFCL functions.

One case per (format, tool choice, number of tools): the request
(:class:`engines.tool_calls.ToolSpec`: the tools, ``auto`` / ``required`` / ``named``,
single or parallel calls, in the Llama 3.1 JSON format or in ``<tool_call>`` tags), a
second request that shares half its tools (the ``overlap`` compile), and instances made
from the BFCL ground-truth calls (:func:`suites.tools.corpus.instances_for`), labelled by
the ground truth (:class:`suites.tools.truth.ToolTruth`). ``--subset`` picks tool
choices (:data:`MODES`), ``--schemas`` globs case ids (``llama3.1-required-50``),
``--sample N`` takes ``N`` cases spread over the tool counts first, every count taking
the choices in :data:`SAMPLE_ORDER` (``--sample 6``: one ``required`` request per count,
the formats alternating). Each (case, engine) job is
:func:`suites.tools.job.run_tools_job`.
"""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from harness.suite.engines import ToolSpec
from harness.suite.options import merged
from harness.suite import Case, Instance, SuiteBase, SuiteError, VerdictModel, round_robin

NAME = "tools"
#: ``--subset`` values: tool choice and whether calls may come in parallel
MODES: dict[str, tuple[str, bool]] = {
    "required": ("required", False),
    "required-parallel": ("required", True),
    "auto": ("auto", False),
    "auto-parallel": ("auto", True),
    "named": ("named", False),
}

#: the order ``--sample`` takes tool choices in, per number of tools
SAMPLE_ORDER = ("required", "auto-parallel", "required-parallel", "auto", "named")


def case_id(fmt: str, mode: str, n: int) -> str:
    return f"{fmt}-{mode}-{n}"


class ToolsSuite(SuiteBase):
    """Tool-call requests over the BFCL tool pool (see the module docstring)."""

    name = NAME
    job = "suites.tools.job:run_tools_job"
    run_options = "suites.tools.options"
    summary_blocks = ("suites.tools.summary:summary_block",)
    report_sections = ("suites.tools.report:sec_tools",)
    verdict = VerdictModel(unit="tool-call request", units="tool-call requests",
                           truth="the envelope parsed and each call's arguments validated by "
                                 "jsonschema")
    smoke = {"sample": 1,
             "options": {"tool_counts": [1], "tool_walks": 1, "tool_instances": 1}}
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from harness.suite.maskbench import resolve_data_dir
        from suites.tools.options import DEFAULTS

        self.options = merged(DEFAULTS, options)
        model = self.options.get("model")
        if model and not Path(str(model)).is_dir():
            raise SuiteError(f"--model {model}: the tools suite traces the outputs of a model "
                             "with priors: a checkpoint folder or build:tiny / build:default "
                             "(not a size of random weights)")
        self.data_dir = resolve_data_dir(data)
        unknown = [s for s in subsets or () if s not in MODES]
        if unknown:
            raise SuiteError(f"unknown tool choice(s) {', '.join(unknown)}; "
                             f"available: {', '.join(MODES)}")
        modes = [m for m in SAMPLE_ORDER if m in (subsets or MODES)]
        counts = [int(n) for n in self.options["tool_counts"]]
        formats = list(self.options["tool_formats"])
        queues = []
        for i, n in enumerate(counts):
            # every count takes the modes in the same order (a sample of one case per
            # count is one compile-vs-tools curve), the formats alternating by count
            fmts = formats[i % len(formats):] + formats[: i % len(formats)]
            ids = [case_id(fmts[(j + k) % len(fmts)], m, n)
                   for k in range(len(fmts)) for j, m in enumerate(modes)]
            queues.append([c for c in ids if not schemas or fnmatch.fnmatch(c, schemas)])
        total = sum(len(q) for q in queues)
        self.ids = round_robin(queues, sample if sample is not None else total)
        if not self.ids:
            raise SuiteError("no tools case matches the selection")
        self.selection = {"subsets": list(subsets) if subsets else None, "sample": sample,
                          "schemas": schemas}
        self._pool = None

    def __len__(self) -> int:
        return len(self.ids)

    def case_ids(self) -> list[str]:
        return list(self.ids)

    def pool(self):
        if self._pool is None:
            from suites.tools.corpus import load_pool

            self._pool = load_pool(self.data_dir)
            if not any(t.calls for t in self._pool.tools):
                raise SuiteError(f"no BFCL_*.json tools with ground-truth calls in {self.data_dir}")
        return self._pool

    def cases(self) -> Iterator[Case]:
        for cid in self.ids:
            yield self.case(cid)

    def case(self, cid: str) -> Case:
        """The case ``<format>-<mode>-<n>``."""
        from suites.tools.corpus import instances_for
        from suites.tools.truth import ToolTruth

        fmt, rest = cid.split("-", 1)
        mode, count = rest.rsplit("-", 1)
        n = int(count)
        choice, parallel = MODES[mode]
        order = self.pool().shuffled(int(self.options["tool_seed"]))
        if n > len(order):
            return Case(suite=NAME, case_id=cid, subset=mode, source="BFCL",
                        load_error=f"{cid}: {n} tools asked, the pool has {len(order)}")
        tools = order[:n]
        # the overlap request: the first half of these tools, then as many new ones
        half = n // 2
        other = order[:half] + order[n: n + (n - half)]
        named = tools[0].name if choice == "named" else None
        spec = ToolSpec(fmt, tuple((t.name, t.schema) for t in tools), choice, parallel, named)
        overlap = ToolSpec(fmt, tuple((t.name, t.schema) for t in other), choice, parallel,
                           other[0].name if choice == "named" else None) if other else None
        truth = ToolTruth(spec)
        by_name = {t.name: t for t in order}
        outside = order[n + (n - half):] or order[n:]
        insts: list[Instance] = []
        wrong_args = 0
        for kind, text in instances_for(spec, by_name, outside, int(self.options["tool_instances"])):
            v = truth.judge_text(text)
            if kind == "wrong_args":
                if v["valid"] is not False or v.get("kind") != "arguments" or wrong_args >= 2:
                    continue  # a mutation jsonschema still accepts tests nothing
                wrong_args += 1
            if v["valid"] is None:
                continue
            insts.append(Instance(len(insts), None, bool(v["valid"]), kind, text))
        digest = hashlib.sha256(repr(spec.to_json()).encode()).hexdigest()[:12]
        return Case(suite=NAME, case_id=cid, subset=mode, source=f"BFCL ({n} tools)",
                    schema_text="", instances=tuple(insts),
                    request={"spec": spec.to_json(),
                             "overlap": overlap.to_json() if overlap else None,
                             "shared": half, "tools": n, "format": fmt, "mode": mode,
                             "digest": digest,
                             "kinds": [i.description for i in insts]})

    def describe(self) -> dict[str, Any]:
        return {"suite": NAME, "data": str(self.data_dir), "selected": len(self.ids),
                **self.selection, "tool_counts": list(self.options["tool_counts"]),
                "tool_formats": list(self.options["tool_formats"]),
                "tool_seed": self.options["tool_seed"],
                "tpot": tpot(str(self.options.get("tool_tpot") or "auto"))}


#: where ``--tool-tpot auto`` looks for e2e runs
PUBLISHED = Path(__file__).resolve().parents[2] / "results" / "published"


def tpot(source: str) -> dict[str, Any] | None:
    """The time per output token the streaming events' ``lead_ms`` uses, from ``source``
    (``--tool-tpot``): ``{"ms": {engine: ms}, "default_ms", "source"}``. An e2e run
    folder gives each engine's measured constrained TPOT (``tpot_ms``) and, for the
    engines it did not run, the mean unconstrained one (the model's step alone); a number
    is taken as ms for every engine; ``auto`` is the newest e2e run under
    ``results/published`` whose decode loop is the harness's own (``torch``). None when
    there is none (``lead_ms`` is then not given)."""
    import json

    try:
        ms = float(source)
        return {"ms": {}, "default_ms": ms, "source": f"--tool-tpot {ms:g} ms"}
    except ValueError:
        pass
    if source == "auto":
        runs = sorted(PUBLISHED.glob("*-e2e"), reverse=True)
    else:
        runs = [Path(source)]
    for run in runs:
        try:
            summary = json.loads((run / "summary.json").read_text())
        except (OSError, ValueError) as e:
            if source != "auto":
                raise SuiteError(f"--tool-tpot {source}: no e2e summary.json there ({e})")
            continue
        rows = {e: (v.get("e2e") or {}) for e, v in (summary.get("engines") or {}).items()}
        rows = {e: x for e, x in rows.items() if x.get("tpot_ms") is not None
                and (source != "auto" or x.get("runtime") == "torch")}
        if not rows:
            if source != "auto":
                raise SuiteError(f"--tool-tpot {source}: its summary has no TPOT")
            continue
        base = [x["tpot_unconstrained_ms"] for x in rows.values()
                if x.get("tpot_unconstrained_ms") is not None]
        model = sorted({str(x.get("model")) for x in rows.values()})
        return {"ms": {e: x["tpot_ms"] for e, x in rows.items()},
                "default_ms": sum(base) / len(base) if base else None,
                "source": f"e2e run {run.name} (model {', '.join(model)}, "
                          f"{next(iter(rows.values())).get('runtime')})"}
    return None


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = ToolsSuite
