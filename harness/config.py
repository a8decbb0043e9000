"""The configuration of a run: a frozen, validated :class:`RunConfig`.

The same object backs ``harness run`` and :func:`harness.run`; it is stored as the ``config``
of ``run.json`` (:meth:`RunConfig.to_dict`) so that ``--resume`` continues exactly the same
run (:meth:`RunConfig.from_dict`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

__all__ = ["ConfigError", "RunConfig", "SERIALIZATION_NAMES"]

#: The serialisations of an instance a replay can use (see :mod:`harness.measure.replay`):
#: ``unicode`` (raw UTF-8, ``json.dumps(d, ensure_ascii=False)``: MaskBench's and the
#: engines' own CI choice, the default primary), ``ascii`` (``\uXXXX`` escapes),
#: ``compact`` (no spaces, escapes) and ``compact_unicode`` (no spaces, raw UTF-8).
SERIALIZATION_NAMES = ("unicode", "ascii", "compact", "compact_unicode")


class ConfigError(ValueError):
    """A configuration that cannot run (one-line message naming the option)."""


def _names(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``"a,b"`` or ``["a", "b"]`` → ``("a", "b")``; None stays None."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(s.strip() for s in items if str(s).strip())


@dataclass(frozen=True)
class RunConfig:
    """What to run: a suite's cases against engines, under limits.

    Parameters
    ----------
    suite:
        A registered suite name (``harness.registry.SUITES``).
    engines:
        ``"all"`` (each visible engine's default configuration) or ``NAME[:CONFIG]`` names,
        as a list or a comma-separated string.
    tokenizer:
        ``llama3``, ``tekken``, ``qwen2`` or a path to a Hugging Face ``tokenizer.json``
        or model folder. With a suite option ``model`` naming a checkpoint folder
        (``--model PATH``) it becomes that folder (absolute): the checkpoint's tokenizer.
    data:
        The corpus folder (None: ``$HARNESS_DATA`` or ``../shared/corpora/<suite>``).
    subsets, sample, schemas:
        Case selection: subsets by name, a deterministic stratified sample of N cases (or
        ``"all"``: every selected case, where a suite would take a smaller default), a
        glob on case ids.
    timeout_s:
        Wall-clock limit per job, seconds (> 0).
    memory_gib:
        Address-space limit per worker process, GiB (0 = none).
    jobs:
        Worker processes (≥ 1).
    serializations, primary:
        The serialisations replayed, and the one that decides outcomes and TBM.
    segmentations:
        Extra seeded non-canonical tokenisations replayed per valid instance (≥ 0).
    options:
        The suite's own options (its ``run_options`` module's keys; unset keys take its
        defaults).

    Raises
    ------
    ConfigError
        On construction, for any value that cannot run (unknown suite, engine,
        configuration, serialisation or option; a limit out of range).
    """

    suite: str = "jsonschemabench"
    engines: str | Sequence[str] = "all"
    tokenizer: str = "llama3"
    data: str | None = None
    subsets: Sequence[str] | None = None
    sample: int | Literal["all"] | None = None
    schemas: str | None = None
    timeout_s: float = 60.0
    memory_gib: float = 8.0
    jobs: int = 1
    serializations: Sequence[str] = SERIALIZATION_NAMES
    primary: str = "unicode"
    segmentations: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from harness.registry import RegistryError, parse_engines, suite_class

        engines = ",".join(_names(self.engines) or ())
        object.__setattr__(self, "engines", engines)
        object.__setattr__(self, "subsets", _names(self.subsets) or None)
        object.__setattr__(self, "serializations", _names(self.serializations) or ())
        if self.data is not None:
            object.__setattr__(self, "data", str(self.data))
        cls = suite_class(self.suite)
        if cls is None:
            from harness.registry import SUITES

            raise ConfigError(f"unknown suite {self.suite!r}; known: {', '.join(SUITES.names())}")
        # resolved here, once: every stage of the run takes the class from the config
        object.__setattr__(self, "_suite_class", cls)
        try:
            parse_engines(engines)
        except RegistryError as e:
            raise ConfigError(str(e)) from None
        bad = [s for s in self.serializations if s not in SERIALIZATION_NAMES]
        if bad or self.primary not in self.serializations:
            raise ConfigError(f"serialisations must be among {', '.join(SERIALIZATION_NAMES)} "
                              f"and include the primary ({self.primary}); got "
                              f"{list(self.serializations)}")
        if self.jobs < 1 or self.timeout_s <= 0:
            raise ConfigError("--jobs must be ≥ 1 and --timeout > 0")
        if self.memory_gib < 0 or self.segmentations < 0:
            raise ConfigError("--memory and --segmentations must be ≥ 0")
        if self.sample is not None and self.sample != "all" and (
                isinstance(self.sample, bool) or not isinstance(self.sample, int)
                or self.sample < 1):
            raise ConfigError(f"--sample must be ≥ 1 or 'all', got {self.sample!r}")
        defaults = suite_defaults(cls)
        unknown = sorted(set(self.options) - set(defaults))
        if unknown:
            raise ConfigError(f"suite {self.suite!r} has no option {', '.join(unknown)}"
                              + (f"; its options: {', '.join(defaults)}" if defaults else ""))
        object.__setattr__(self, "options", {**defaults, **{k: v for k, v in self.options.items()
                                                             if v is not None}})
        self._check_model()

    def _check_model(self) -> None:
        """A suite option ``model`` that names a path (``--model PATH``) is a checkpoint
        folder (``build:default`` / ``build:tiny`` name the folder ``harness model build``
        makes, which the options then hold instead; ``--draft-model build:draft`` the
        draft model built on that target's tokenizer): validated here, once (:func:`harness.model.load_checkpoint`; a bad one is
        a :class:`ConfigError` with its one line naming the path), and the run's
        vocabulary becomes the folder's tokenizer (every engine is built on it). A
        ``--tokenizer`` other than the default or that folder is refused."""
        model = self.options.get("model")
        ckpt = None
        if isinstance(model, str) and model:
            from harness.model.checkpoint import (BUILT, CheckpointError, load_checkpoint,
                                                  looks_like_checkpoint)
            from harness.training.build import resolve_model

            if model in BUILT:  # the model built here: its cached folder (built now if not)
                model = resolve_model(model, self.data)
                object.__setattr__(self, "options", {**self.options, "model": model})
            if self.options.get("draft_model") == "build:draft":
                # the draft model built here on this target's tokenizer (built now if not)
                from harness.training.build import BuildError, build_model

                try:
                    draft = build_model("draft", data=self.data, progress=False,
                                        target=model)
                except BuildError as e:
                    raise ConfigError(f"--draft-model build:draft: {e}") from None
                object.__setattr__(self, "options", {**self.options, "draft_model": str(draft)})

            if looks_like_checkpoint(model):
                try:
                    ckpt = load_checkpoint(model)
                except CheckpointError as e:
                    raise ConfigError(str(e)) from None
        object.__setattr__(self, "_checkpoint", ckpt)
        if ckpt is None:
            return
        import os

        folder = os.path.abspath(os.path.expanduser(str(model)))
        mine = {folder, os.path.join(folder, "tokenizer.json")}
        tok = self.tokenizer
        if tok != "llama3" and os.path.abspath(os.path.expanduser(tok)) not in mine:
            raise ConfigError(f"--tokenizer {tok} and --model {model}: a checkpoint brings "
                              "its own tokenizer (leave --tokenizer out)")
        object.__setattr__(self, "tokenizer", folder)

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        """What run.json records of a checkpoint given as ``--model PATH``
        (:meth:`harness.model.Checkpoint.describe`); None for a size name or no model."""
        ckpt = self.__dict__.get("_checkpoint")
        return ckpt.describe() if ckpt is not None else None

    @property
    def suite_class(self) -> type:
        """The class registered as :attr:`suite`, resolved once when the configuration was
        validated (the stages of a run take it from here, not from the registry)."""
        cls: type = self.__dict__["_suite_class"]
        return cls

    def to_dict(self) -> dict[str, Any]:
        """The ``config`` of ``run.json``: the keys above with the suite's options inline."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "options"}
        out["subsets"] = list(self.subsets) if self.subsets else None
        out["serializations"] = list(self.serializations)
        return {**out, **self.options}

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], strict: bool = False) -> "RunConfig":
        """The configuration in :meth:`to_dict`'s form (``run.json``, or the options given on
        the command line); keys that are not fields are the suite's options. Keys the suite
        does not know are dropped (an older run.json held every suite's), or with
        ``strict`` refused with :class:`ConfigError`."""
        names = {f.name for f in dataclasses.fields(cls)} - {"options"}
        core = {k: v for k, v in config.items() if k in names}
        from harness.registry import suite_class

        suite = suite_class(core.get("suite", cls.suite))
        if suite is None:
            return cls(**core)  # raises ConfigError naming the suite
        known = suite_defaults(suite)
        foreign = sorted(k for k in config if k not in names and k not in known)
        if strict and foreign:
            raise ConfigError(f"--{foreign[0].replace('_', '-')} is not an option of suite "
                              f"{core.get('suite', cls.suite)!r}")
        options = {k: v for k, v in config.items() if k not in names and k in known}
        return cls(**core, options=options)

    def replace(self, **changes: Any) -> "RunConfig":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)


def suite_defaults(suite_cls: Any) -> dict[str, Any]:
    """The defaults of a suite's own options (its ``run_options`` module's ``DEFAULTS``)."""
    target = getattr(suite_cls, "run_options", None)
    if not target:
        return {}
    from harness.registry import load_target

    return dict(load_target(target, "suite options").DEFAULTS)
