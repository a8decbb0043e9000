"""Ground truth: is an instance valid under its schema, per ``jsonschema``?

The validator class comes from ``$schema`` (Draft 2020-12 when absent or unknown), with
format checking on. Schemas are untrusted: references are resolved only inside the
schema itself (and any resources the caller registers); a remote ``$ref`` is never
fetched, it makes the verdict unknown (``None``) with the reason.
"""

from __future__ import annotations

from typing import Any, Iterable

import jsonschema
import referencing
import referencing.exceptions
from jsonschema.validators import validator_for


def _refuse(uri: str):
    raise referencing.exceptions.NoSuchResource(ref=uri)


def offline_registry(resources: Iterable[tuple[str, Any]] = ()) -> referencing.Registry:
    """A registry that never touches the network (``retrieve`` always refuses)."""
    reg = referencing.Registry(retrieve=_refuse)
    for uri, contents in resources:
        reg = reg.with_resource(uri, referencing.Resource.from_contents(
            contents, default_specification=referencing.jsonschema.DRAFT202012))
    return reg


class GroundTruth:
    """A compiled validator for one schema."""

    def __init__(self, schema: Any, registry: referencing.Registry | None = None) -> None:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        self.draft = cls.__name__
        self.error: str | None = None
        try:
            self.validator = cls(
                schema,
                registry=registry if registry is not None else offline_registry(),
                format_checker=cls.FORMAT_CHECKER,
            )
        except Exception as e:  # a schema jsonschema cannot even load
            self.validator = None
            self.error = f"{type(e).__name__}: {e}"

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
