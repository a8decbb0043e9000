"""Cases: what a suite hands the runner. Suites never time anything.

A :class:`Case` is one schema with its test instances. A case whose source file could
not be read carries ``load_error`` (one line) instead of a schema: the runner records it
as a ``bad_input`` outcome and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol


@dataclass(frozen=True)
class Instance:
    """One test instance: the JSON value and the corpus's claim about its validity."""

    index: int
    data: Any
    label_valid: bool
    description: str = ""


@dataclass(frozen=True)
class Case:
    """One schema and its instances.

    ``case_id`` is unique within the suite (for the corpus suites: the file name);
    ``schema_text`` is the exact text handed to engines (``json.dumps`` of the schema).
    """

    suite: str
    case_id: str
    subset: str
    source: str
    schema: Any = None
    schema_text: str = ""
    instances: tuple[Instance, ...] = ()
    load_error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: (uri, schema) pairs that ground truth may resolve ``$ref`` against, offline
    #: (e.g. the JSON-Schema-Test-Suite's ``remotes/``). Engines never see them.
    resources: tuple[tuple[str, Any], ...] = ()

    def to_job(self) -> dict[str, Any]:
        """The picklable payload a worker needs (no file access in the worker)."""
        return {
            "suite": self.suite,
            "case_id": self.case_id,
            "subset": self.subset,
            "source": self.source,
            "schema_text": self.schema_text,
            "instances": [(i.index, i.data, i.label_valid) for i in self.instances],
            "resources": list(self.resources),
        }


class SuiteError(Exception):
    """The suite cannot produce cases at all (missing corpus, bad option)."""


class Suite(Protocol):
    name: str

    def cases(self) -> Iterator[Case]: ...

    def describe(self) -> dict[str, Any]: ...
