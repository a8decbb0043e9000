"""Ground truth: is an instance valid under its schema, per ``jsonschema``?

The validator class comes from ``$schema`` (the caller's ``default_draft`` when absent or
unknown, else Draft 2020-12), with format checking on unless the caller turns it off. Schemas are untrusted: references are resolved only inside the
schema itself (and any resources the caller registers); a remote ``$ref`` is never
fetched, it makes the verdict unknown (``None``) with the reason.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from harness.measure.jsontext import parse_instance_text  # noqa: F401  (re-exported: the strict parse)
from harness.records import CasePayload

if TYPE_CHECKING:  # judge() imports validate when called
    from harness.measure.validate import Judgement


#: ``default_draft`` names (as in the JSON-Schema-Test-Suite's folders) → validator class.
DRAFTS: dict[str, type[Validator]] = {
    "draft2020-12": jsonschema.Draft202012Validator,
    "draft2019-09": jsonschema.Draft201909Validator,
    "draft7": jsonschema.Draft7Validator,
    "draft6": jsonschema.Draft6Validator,
    "draft4": jsonschema.Draft4Validator,
}


def _refuse(uri: str):
    # referencing's classes are attrs classes made by its own ``frozen`` wrapper, which mypy
    # does not know as attrs: their generated __init__ is invisible to it
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


def offline_registry(resources: Iterable[tuple[str, Any]] = (),
                     default_draft: str | None = None) -> referencing.Registry:
    """A registry that never touches the network (``retrieve`` always refuses).

    Resources without ``$schema`` are read as ``default_draft`` (Draft 2020-12 if None)."""
    spec = referencing.jsonschema.DRAFT202012
    if default_draft in DRAFTS:
        spec = referencing.jsonschema.specification_with(DRAFTS[default_draft].META_SCHEMA["$schema"])
    # as above: attrs' generated __init__ is invisible to mypy
    reg: referencing.Registry = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]
    for uri, contents in resources:
        reg = reg.with_resource(uri, referencing.Resource.from_contents(
            contents, default_specification=spec))
    return reg


class GroundTruth:
    """A compiled validator for one schema."""

    #: Reasons :meth:`disagreement_reason` gives.
    FORMAT_NOT_IN_DRAFT = "format not defined by the declared draft"
    REGEX_DIALECT = "regex dialect (Python's re decided a pattern)"
    UNKNOWN = "no known reason (a wrong label?)"

    def __init__(self, schema: Any, registry: referencing.Registry | None = None,
                 default_draft: str | None = None, format_assertion: bool = True) -> None:
        cls = validator_for(schema, default=DRAFTS.get(default_draft or "",
                                                       jsonschema.Draft202012Validator))
        self.draft = cls.__name__
        self.format_assertion = format_assertion
        self.registry = registry if registry is not None else offline_registry()
        self.error: str | None = None
        try:
            self.validator = cls(
                schema,
                registry=self.registry,
                format_checker=cls.FORMAT_CHECKER if format_assertion else None,
            )
        except Exception as e:  # a schema jsonschema cannot even load
            self.validator = None
            self.error = f"{type(e).__name__}: {e}"

    @classmethod
    def for_case(cls, case: CasePayload) -> "GroundTruth":
        """The validator a job payload's case calls for: its ``schema_text``, its bundled
        resources (offline), its draft (``default_draft``, for a schema without
        ``$schema``) and whether ``format`` asserts (``format_assertion``, default True)."""
        draft = case.get("default_draft")
        return cls(json.loads(case["schema_text"]),
                   offline_registry(case.get("resources", ()), draft),
                   default_draft=draft, format_assertion=case.get("format_assertion", True))

    def disagreement_reason(self, instance: Any, label: bool) -> str:
        """Why the corpus ``label`` differs from jsonschema's verdict on ``instance``, when it
        is known: a ``format`` the declared draft does not define (draft 4 has no
        ``date``: validated with every format, the instance gets the label's verdict), a
        ``pattern`` (the only failing keyword, decided by Python's ``re``, not ECMA-262);
        else :data:`UNKNOWN`."""
        if self.validator is None:
            return self.UNKNOWN
        try:
            if self.format_assertion:
                every_format = type(self.validator)(
                    self.validator.schema, registry=self.registry,
                    format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
                if bool(every_format.is_valid(instance)) == label:
                    return self.FORMAT_NOT_IN_DRAFT
            errors = list(self.validator.iter_errors(instance))
            if errors and all(e.validator in ("pattern", "patternProperties") for e in errors):
                return self.REGEX_DIALECT
        except Exception:  # a reason is a courtesy: never a failure of the job
            pass
        return self.UNKNOWN

    def judge(self, raw: bytes) -> Judgement:
        """A finished output's verdict: ``{"valid": True|False|None, "why": …}`` after UTF-8,
        strict JSON and this schema (the judge interface of
        :class:`harness.measure.target.Target`)."""
        from harness.measure.validate import check_output

        return check_output(raw, self)

    def verdict(self, instance: Any) -> tuple[bool | None, str | None]:
        """(valid?, reason jsonschema could not decide). ``None`` = undecidable here."""
        if self.validator is None:
            return None, self.error
        try:
            return bool(self.validator.is_valid(instance)), None
        except RecursionError:
            return None, "RecursionError: schema recursion too deep for jsonschema"
        except Exception as e:  # unresolvable $ref, bad regex, ...
            msg = " ".join(f"{type(e).__name__}: {e}".split())
            return None, msg[:300]
