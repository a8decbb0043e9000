"""Suite ``drafts``: speculative-decoding drafts validated by each engine's own API.

Cases are the ``jsonschemabench`` corpus's stratified sample (``--sample``, default 12;
``--subset``, ``--schemas``), instances kept. Each (schema, engine) job
(:mod:`suites.drafts.job`) cuts drafts of ``--draft-k`` tokens (default 1, 4, 8)
from up to ``--draft-instances`` valid instances, canonically tokenised:

- *corrupt*: ``--draft-positions`` per length, the instance's tokens ``t[p:p+k]`` with the
  token at a seeded position ``c`` replaced by one the engine's own mask forbids there;
  the engine must accept exactly ``c`` tokens;
- *clean*: one per length, ``t[p:p+k]`` unchanged; exactly ``k``;
- *past the end*: one per length, the last ``j = k // 2`` tokens, a stop token, then more
  tokens (whitespace, another stop token, the first token); exactly ``j + 1``, and any
  token accepted after the stop is counted as *accepted after termination*.

Each engine validates a draft through :meth:`engines.protocol.Matcher.validate_draft` (its own
draft API where it has one, else token by token); the job then checks that the state is
unchanged, that committing the accepted prefix gives the masks a fresh replay gives, and
that rolling it back restores the mask bit for bit, and times the draft against ``k``
single steps. Start and corrupt positions are seeded (``--draft-seed``) and the same for
every engine; the corrupt token depends on each engine's own mask (seeded too).
"""

from __future__ import annotations

from pathlib import Path

from typing import Any, Mapping, Sequence

from harness.suite.options import merged
from harness.suite import JsonSchemaBenchView, SuiteError, VerdictModel

NAME = "drafts"
DEFAULT_SAMPLE = 12


class DraftsSuite(JsonSchemaBenchView):
    """Corpus schemas with their instances; drafts are cut in the worker."""

    name = NAME
    job = "suites.drafts.job:run_drafts_job"
    run_options = "suites.drafts.options"
    summary_blocks = ("suites.drafts.summary:summary_block",)
    report_sections = ("suites.drafts.report:sec_drafts",)
    verdict = VerdictModel(truth="a fresh replay of the same tokens, mask by mask")
    smoke = {"sample": 1,
             "options": {"draft_k": [1, 4], "draft_positions": 1, "draft_instances": 1}}
    keep_instances = True
    default_sample = DEFAULT_SAMPLE
    uses_options = True
    replay_table = False

    def __init__(self, data: str | None = None, subsets: Sequence[str] | None = None,
                 sample: int | None = None, schemas: str | None = None,
                 options: Mapping[str, Any] | None = None) -> None:
        from suites.drafts.options import DEFAULTS

        super().__init__(data=data, subsets=subsets, sample=sample, schemas=schemas)
        self.options = merged(DEFAULTS, options)
        model = self.options.get("model")
        if model and not Path(str(model)).is_dir():
            raise SuiteError(f"--model {model}: grammar-aware drafting needs a target with "
                             "priors: a checkpoint folder or build:tiny / build:default (not "
                             "a size of random weights)")
        drafter = self.options.get("draft_model")
        if drafter:
            if not model:
                raise SuiteError("--draft-model needs --model (the target it drafts for)")
            mine, theirs = (Path(str(f)) / "tokenizer.json" for f in (drafter, model))
            try:
                same = mine.read_bytes() == theirs.read_bytes()
            except OSError as e:
                raise SuiteError(f"--draft-model {drafter}: no tokenizer.json there "
                                 f"({e.strerror})") from None
            if not same:
                raise SuiteError(f"--draft-model {drafter}: its tokenizer is not the target's "
                                 "(build one with harness model build --size draft --target "
                                 "TARGET)")
        if not self.options["draft_k"] or min(int(k) for k in self.options["draft_k"]) < 1:
            raise SuiteError("--draft-k: draft lengths must be >= 1")
        for key in ("draft_positions", "draft_instances"):
            if int(self.options[key]) < 1:
                raise SuiteError(f"--{key.replace('_', '-')} must be at least 1")

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {**super().describe(), "draft_k": list(o["draft_k"]),
                "draft_positions": o["draft_positions"], "draft_instances": o["draft_instances"],
                "draft_seed": o["draft_seed"]}


#: The suite this folder is (:func:`harness.registry.builtin_suites`).
SUITE = DraftsSuite
