"""The suite API: everything a suite may use of the framework, and the contract it keeps.

A suite (one folder under ``suites/``, or a third-party package) imports from this package
and from :mod:`engines.protocol`, and from nothing else of the project: not another suite,
not a stage of the data path. ``docs/writing-a-suite.md`` is the guide. The package:

- :mod:`harness.suite` (this module): cases and their selection (:class:`Case`,
  :class:`Instance`, :func:`round_robin`, :func:`find_corpus`, :func:`pick_instances`), the
  shared corpora as suite bases (:class:`MaskBenchCorpus` and :class:`JsonSchemaBenchView`,
  :class:`TokenSuite`, :class:`GrammarCorpus`), the suite class and its
  verdict (:class:`SuiteBase`, :class:`VerdictModel`), the typed records and payloads
  (:class:`Record`, :class:`JobPayload`, :class:`Summary` ...), outcomes and figures (the
  one number formatter, :mod:`harness.measure.figures`);
- :mod:`harness.suite.maskbench`, :mod:`harness.suite.grammar_corpus`,
  :mod:`harness.suite.hostile`: the corpora more than one suite reads (JSONSchemaBench's
  MaskBench files, the grammar cases, the generated hostile schemas);
- :mod:`harness.suite.options`: the value parsers of a suite's ``harness run`` options;
- :mod:`harness.suite.report`: the table model and report sections;
- :mod:`harness.suite.measure`: what a job measures with (replay, ground truth, targets,
  token-level oracles);
- :mod:`harness.suite.serving`: OpenAI-compatible servers (client, launcher, prompts);
- :mod:`harness.suite.engines`: engine-side helpers (bitmasks, vocabularies, tool calls).

Names are imported on first use, so that importing the API imports no stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite._exports import lazy_exports

#: Each name → where it is defined (``module:attribute``, or ``module`` for a module).
_EXPORTS = {
    "adapter_class": "harness.registry:adapter_class",
    "build_suite": "harness.registry:build_suite",
    "Case": "harness.suite.cases:Case",
    "CasePayload": "harness.records:CasePayload",
    "corpus_candidates": "harness.suite.cases:corpus_candidates",
    "environment": "harness.registry.environments:environment",
    "ExecutorError": "harness.execution.executor:ExecutorError",
    "figures": "harness.measure.figures",
    "find_corpus": "harness.suite.cases:find_corpus",
    "GrammarCorpus": "harness.suite.grammar_corpus:GrammarCorpus",
    "Instance": "harness.suite.cases:Instance",
    "InstanceRecord": "harness.records:InstanceRecord",
    "Job": "harness.execution.executor:Job",
    "JobPayload": "harness.records:JobPayload",
    "KEEP": "harness.execution.executor:KEEP",
    "RECYCLE": "harness.execution.executor:RECYCLE",
    "JsonSchemaBenchView": "harness.suite.maskbench:JsonSchemaBenchView",
    "make_executor": "harness.execution.session:make_executor",
    "MaskBenchCorpus": "harness.suite.maskbench:MaskBenchCorpus",
    "outcomes": "harness.measure.outcomes",
    "pick_instances": "harness.measure.instances:pick_instances",
    "Record": "harness.records:Record",
    "RegistryError": "harness.registry:RegistryError",
    "rejects": "harness.analysis.rejects",
    "REPORTED": "harness.registry.environments:REPORTED",
    "round_robin": "harness.suite.cases:round_robin",
    "RunConfig": "harness.config:RunConfig",
    "RunMeta": "harness.records:RunMeta",
    "RunStore": "harness.store.run_store:RunStore",
    "SuiteBase": "harness.suite.cases:SuiteBase",
    "SuiteError": "harness.suite.cases:SuiteError",
    "Summary": "harness.records:Summary",
    "TokenSuite": "harness.suite.maskbench:TokenSuite",
    "unique_schema": "harness.suite.cases:unique_schema",
    "VerdictModel": "harness.suite.cases:VerdictModel",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from harness.config import RunConfig
    from harness.execution.executor import KEEP, RECYCLE, ExecutorError, Job
    from harness.execution.session import make_executor
    from harness.records import CasePayload, InstanceRecord, JobPayload, Record, RunMeta, Summary
    from harness.registry import RegistryError, adapter_class, build_suite
    from harness.registry.environments import REPORTED, environment
    from harness.store.run_store import RunStore
    from harness.suite.cases import (Case, Instance, SuiteBase, SuiteError, VerdictModel,
        corpus_candidates, find_corpus, round_robin, unique_schema)
    from harness.suite.grammar_corpus import GrammarCorpus
    from harness.suite.maskbench import JsonSchemaBenchView, MaskBenchCorpus, TokenSuite
    from harness.analysis import rejects
    from harness.measure import figures
    from harness.measure.instances import pick_instances
    from harness.measure import outcomes
