"""The engine protocol: the three objects the runner and the measurement loop see.

``EngineAdapter``   built once per worker process from a :class:`~engines.vocab.Vocabulary`
                    and a configuration (named options); compiles schemas
                    (:meth:`~EngineAdapter.compile`), grammars in the dialects it reads
                    (:meth:`~EngineAdapter.compile_grammar`), tool-call requests
                    (:meth:`~EngineAdapter.compile_tool_calls`) and reasoning-then-answer
                    requests (:meth:`~EngineAdapter.compile_reasoning`).
``CompiledGrammar`` the result of one compile; makes matchers.
``Matcher``         per-sequence state: fill a mask, commit a token, EOS / accepting,
                    rollback; optionally jump-forward and speculative drafts.

Beside them: the two errors an adapter raises (:class:`CompileError`,
:class:`EngineUnavailable`), :class:`CachedCompiler` (an engine's own compile cache) and
the helpers every adapter uses (:func:`one_line`, :func:`check_rollback`). The bitmask
layout is :mod:`engines.bitmask`'s; batch fills are :mod:`engines.batch`; the tool-call
request model is :mod:`engines.tool_calls`; :mod:`engines.matcher` holds the template
matcher the built-in adapters derive from (the dead flag, the stop-id commit, the bitmask
binding), which a third-party adapter may use too.

Every quirk of an engine is absorbed inside its adapter (``docs/engines.md`` lists
them): a rejected token is ``commit() -> False`` with the matcher left unusable for that
sequence, never an exception; a compile failure is :class:`CompileError` with a one-line
message.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Sequence

import numpy as np

from engines.batch import BatchFiller
from engines.reasoning import ReasoningSpec
from engines.tool_calls import ToolSpec
from engines.vocab import Vocabulary

__all__ = ["CachedCompiler", "CompileError", "CompiledGrammar", "EngineAdapter",
           "EngineUnavailable", "Matcher", "check_rollback", "one_line"]


class CompileError(Exception):
    """The engine refused or failed to compile the schema (message: one line)."""


class EngineUnavailable(Exception):
    """The engine's package is not installed or cannot be imported."""


def check_rollback(n: int, committed: int, dead: bool) -> None:
    """Raise ValueError for a rollback the adapters refuse (before touching the engine)."""
    if n < 0:
        raise ValueError(f"rollback({n}): n must be >= 0")
    if dead:
        raise ValueError("rollback on a dead matcher (a token was rejected); reset() it")
    if n > committed:
        raise ValueError(f"rollback({n}): only {committed} committed tokens to undo")


def one_line(exc: BaseException | str, limit: int = 500) -> str:
    """An engine error squeezed to one line (engines print multi-line C++/Rust errors)."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Matcher(abc.ABC):
    """Per-sequence matcher state: the grammar's position after the tokens committed so far.

    A matcher is used from one thread at a time. Once :meth:`commit` has returned False the
    matcher is *dead*: every later :meth:`commit` returns False, :meth:`eos_allowed`
    returns False, and only :meth:`reset` brings it back.

    :class:`engines.matcher.TemplateMatcher` keeps this contract (the dead flag, stop ids,
    rollback counts, the bitmask check) around a few steps on an engine's own matcher.
    """

    @abc.abstractmethod
    def fill_mask(self, bitmask: np.ndarray) -> None:
        """Write the set of allowed next tokens into ``bitmask``, every word of it.

        Parameters
        ----------
        bitmask:
            A caller-owned C-contiguous 1-D ``int32`` array of ``ceil(V / 32)`` words; bit
            ``i % 32`` of word ``i // 32`` set means token ``i`` may come next. Stop tokens
            are set exactly when :meth:`eos_allowed`; other special tokens never.

        Raises
        ------
        ValueError
            When ``bitmask`` has another dtype, shape or layout.
        """

    @abc.abstractmethod
    def commit(self, token_id: int) -> bool:
        """Advance by one token.

        Returns
        -------
        bool
            True when the token was accepted. False exactly when the grammar does not allow
            it here (its bit in :meth:`fill_mask`'s mask would be clear), when it is a stop
            token and the grammar cannot end here, when it is another special token, or when
            the matcher is already dead; the matcher is then dead. Never raises for an
            engine's own rejection.
        """

    @abc.abstractmethod
    def eos_allowed(self) -> bool:
        """True iff a stop token may be emitted now, i.e. the grammar can end here; False
        on a dead matcher."""

    def is_accepting(self) -> bool:
        """True iff the text so far is a complete sentence of the grammar."""
        return self.eos_allowed()

    @abc.abstractmethod
    def rollback(self, n: int) -> None:
        """Undo the last ``n`` committed tokens.

        Raises
        ------
        ValueError
            When ``n`` is negative, larger than the tokens committed, or the matcher is
            dead (see :func:`check_rollback`).
        """

    @abc.abstractmethod
    def reset(self) -> None:
        """Back to the start state (a dead matcher lives again)."""

    def forced_continuation(self) -> tuple[bytes, list[int]] | None:
        """The continuation the engine offers for jump-forward decoding from the current
        state (suite ``jump-forward``); the state is unchanged.

        Returns
        -------
        tuple[bytes, list[int]] | None
            ``(forced bytes, forced token ids)``: the bytes the engine says every output
            must continue with, and the token ids it would append without a forward pass
            (their bytes are the forced bytes or a prefix of them; engines may stop short
            of a partial UTF-8 character or of a token a longer one could extend).
            ``(b"", [])`` when nothing is forced, and always on a dead matcher (a token
            was rejected). None exactly when the engine has no jump-forward API (this
            default): the caller must report "not measured", never "nothing forced".
        """
        return None

    #: The engine API :meth:`validate_draft` uses, in words (suite ``drafts``).
    draft_api: ClassVar[str] = "token by token"

    def draft_stop_ids(self) -> frozenset[int]:
        """The stop ids that end a draft in :meth:`validate_draft`'s default: the
        matcher's ``_stop`` set, where :class:`engines.matcher.TemplateMatcher` keeps
        them; a matcher that keeps them elsewhere overrides this."""
        stops = getattr(self, "_stop", None)
        if stops is None:
            raise NotImplementedError(f"{type(self).__name__}: override draft_stop_ids()")
        return frozenset(stops)

    def validate_draft(self, tokens: Sequence[int]) -> int:
        """How many of ``tokens`` (a speculative draft), from the current state, the
        grammar accepts in a row. A stop token counts when the grammar may end there, and
        nothing after a stop token is ever accepted. The matcher's state is unchanged
        afterwards; a dead matcher accepts nothing (0).

        This default (:attr:`draft_api` ``"token by token"``) fills the mask before each
        token, commits the token only when its bit is set (a refused commit would leave
        the matcher dead, and rollback cannot revive a dead matcher), stops at the first
        clear bit or after a stop token (:meth:`draft_stop_ids`: committing a stop token
        changes no state, so the tokens after it would otherwise be judged as if it had
        not been there), then rolls the committed tokens back. The scratch bitmask has
        the matcher's ``_words`` words (as :class:`engines.matcher.BoundMatcher` keeps
        them). Engines with a draft API override this.

        Raises
        ------
        RuntimeError
            When ``commit`` refuses a token the matcher's own mask allowed (the matcher
            is then dead: the state cannot be restored).
        ValueError
            From :meth:`rollback`, for an engine that cannot roll the draft back.
        """
        if not tokens:
            return 0
        stops = self.draft_stop_ids()
        bm = self.__dict__.get("_draft_bm")
        if bm is None:
            bm = self.__dict__["_draft_bm"] = np.zeros(int(getattr(self, "_words")), np.int32)
        accepted = committed = 0
        for t in tokens:
            t = int(t)
            self.fill_mask(bm)
            if not 0 <= t < bm.size * 32 or not (int(bm[t >> 5]) >> (t & 31)) & 1:
                break
            if not self.commit(t):
                raise RuntimeError(f"commit({t}) refused a token the matcher's own mask "
                                   "allowed (the matcher is now dead)")
            accepted += 1
            if t in stops:
                break
            committed += 1
        if committed:
            self.rollback(committed)
        return accepted


class CachedCompiler:
    """A long-lived compiler with the engine's own cache of compiled schemas on, as a
    server keeps one (suite ``churn``).

    This default has no cache (``has_cache`` False): every :meth:`compile` is a fresh
    :meth:`EngineAdapter.compile`. An engine with a compile cache overrides
    :meth:`EngineAdapter.cached_compiler` with one whose repeated schemas hit it.
    """

    has_cache = False
    #: what the cache is keyed on and where it lives, for the report
    describe = "no compile cache: every request compiles"

    def __init__(self, adapter: "EngineAdapter") -> None:
        self.adapter = adapter

    def compile(self, schema_text: str) -> "CompiledGrammar":
        """Compile (or fetch from the cache); raises :class:`CompileError`."""
        return self.adapter.compile(schema_text)

    def cache_bytes(self) -> int | None:
        """Bytes the cache holds now, or None when the engine does not say."""
        return None

    def compile_tool_calls(self, spec: ToolSpec) -> "CompiledGrammar":
        """A tool-call request (suite ``tools``) through the same cache; default:
        :meth:`EngineAdapter.compile_tool_calls`, every time."""
        return self.adapter.compile_tool_calls(spec)


class CompiledGrammar(abc.ABC):
    """What one compile returns: makes matchers. Optional attributes the harness reads
    where present: ``stats()`` (engine statistics stored in the record) and ``form`` (the
    native form a tool-call request became)."""

    @abc.abstractmethod
    def matcher(self) -> Matcher:
        """A fresh matcher at the start state."""


class EngineAdapter(abc.ABC):
    """One engine (in one named configuration), bound to one vocabulary.

    A plug-in sets :attr:`name` and implements :meth:`compile`; everything else has a
    default. The class attributes, by who reads them:

    - the registry and ``harness engines``: :attr:`name`, :attr:`configs`,
      :attr:`package`, :attr:`requires`, :attr:`install_hint`, :attr:`hidden`,
      :attr:`hidden_reason`, :attr:`environment`;
    - the suites, for what the engine can compile: :attr:`grammar_dialects`,
      :attr:`tool_call_form`;
    - the end-to-end and serve suites: :attr:`serving_engine`, :attr:`grammar_runtime`,
      :attr:`prefer_own_kernel_on_gpu`.
    """

    # ---- registry and ``harness engines``
    #: The row's name (``--engine NAME``).
    name: ClassVar[str]
    #: Configuration name → options (``--engine NAME:CONFIG``); ``"default"`` must exist.
    configs: ClassVar[dict[str, dict[str, Any]]] = {"default": {}}
    #: Python distribution that provides the engine (for version reporting).
    package: ClassVar[str | None] = None
    #: Importable module the engine needs; the row is "not run" where it is missing
    #: (None: nothing to install).
    requires: ClassVar[str | None] = None
    #: How to install the engine where it is missing (``harness engines``, "not run");
    #: None: ``pip install PACKAGE`` (:meth:`how_to_install`).
    install_hint: ClassVar[str | None] = None
    #: Hidden engines are not part of ``--engine all`` (they run when named);
    #: :attr:`hidden_reason` says why, for ``harness engines``.
    hidden: ClassVar[bool] = False
    hidden_reason: ClassVar[str | None] = None
    #: The Python environment the engine runs in (:mod:`harness.registry.environments`, e.g.
    #: ``"vllm"``); None: the harness's own. A row may also name one: ``xgrammar@vllm``.
    environment: ClassVar[str | None] = None

    # ---- end-to-end and serve suites
    #: True: a serving engine that decodes by itself; the e2e suite drives it through its
    #: own offline API instead of the harness's decode loop, and replay refuses it.
    serving_engine: ClassVar[bool] = False
    #: The e2e runtime whose own grammar sampler this engine is (e.g. ``"llamacpp"``): with
    #: that runtime, the e2e suite decodes through it with the adapter's ``gbnf()`` text
    #: instead of a matcher. None for engines that are matchers only.
    grammar_runtime: ClassVar[str | None] = None
    #: True: the engine's own mask kernel (:meth:`mask_kernel`) is the better choice on a
    #: GPU, where ``--apply auto`` then takes it.
    prefer_own_kernel_on_gpu: ClassVar[bool] = False

    def __init__(self, vocab: Vocabulary, config: str = "default", **overrides: Any):
        if config not in self.configs:
            raise KeyError(config)
        self.vocab = vocab
        self.config = config
        self.options: dict[str, Any] = {**self.configs[config], **overrides}

    @property
    def label(self) -> str:
        """``engine`` or ``engine:config`` as written in records."""
        return self.name if self.config == "default" else f"{self.name}:{self.config}"

    @classmethod
    def how_to_install(cls) -> str | None:
        """:attr:`install_hint`, else ``pip install PACKAGE``; None when there is nothing
        to install."""
        if cls.install_hint:
            return cls.install_hint
        return f"pip install '{cls.package}'" if cls.package else None

    @classmethod
    def version(cls) -> str | None:
        if cls.package is None:
            return None
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(cls.package)
        except PackageNotFoundError:
            return None

    @abc.abstractmethod
    def compile(self, schema_text: str) -> CompiledGrammar:
        """Compile a JSON schema given as text.

        Raises
        ------
        CompileError
            When the engine refuses or fails to compile it (one-line message); never another
            exception for an engine's own error."""

    def grammar_key(self, schema_text: str) -> str | None:
        """What :meth:`compile` turns ``schema_text`` into before its costly step, as text,
        where the engine can say so cheaply (outlines-core: the regular expression, built
        in microseconds, before an ``Index`` over the vocabulary that takes up to minutes).
        Two schema texts with the same key compile to the same grammar, so a caller that
        compiles many near-identical schemas (the keyword judge: a node and the node
        without each keyword) compiles each key once. None: the engine does not say (the
        schema text is its own key).

        Raises
        ------
        CompileError
            Where that first step already refuses the schema (:meth:`compile` would too)."""
        return None

    #: Grammar dialects :meth:`compile_grammar` reads, in the order the engine prefers
    #: them (``"regex"``, ``"gbnf"``, ``"lark"``; :mod:`suites.grammars.languages`). A
    #: grammar case is given in the first of these it has a form in; empty: the engine
    #: takes JSON schemas only.
    grammar_dialects: ClassVar[tuple[str, ...]] = ()

    def compile_grammar(self, dialect: str, text: str) -> CompiledGrammar:
        """Compile a grammar written in ``dialect`` (one of :attr:`grammar_dialects`):
        ``regex`` — the whole output must match the pattern; ``gbnf`` — llama.cpp's GBNF
        (start rule ``root``; XGrammar's EBNF reads the same texts); ``lark`` — a Lark
        grammar, start rule ``start``.

        Raises
        ------
        CompileError
            When the engine refuses or fails to compile it, or does not read ``dialect``
            (one-line message); never another exception for an engine's own error."""
        raise CompileError(f"{self.label} reads no {dialect} grammars")

    #: The native form :meth:`compile_tool_calls` builds, in words (None: it has none).
    tool_call_form: ClassVar[str | None] = None

    def compile_tool_calls(self, spec: ToolSpec) -> CompiledGrammar:
        """Compile a tool-call request (:class:`engines.tool_calls.ToolSpec`: the tools,
        the tool choice, single or parallel calls, the output format) into the engine's
        own native form (:attr:`tool_call_form`), whose language is the one
        :mod:`engines.tool_calls` states.

        Raises
        ------
        CompileError
            When the engine refuses or fails to compile it, or has no form for such a
            request (one-line message, naming why)."""
        raise CompileError(f"{self.label} has no tool-call form")

    @classmethod
    def whitespace_bound(cls, n: int) -> dict[str, Any] | None:
        """The configuration overrides that bound each run of JSON whitespace to at most
        ``n`` characters (the engine's own setting: e.g. xgrammar's
        ``max_whitespace_cnt``), or None when the engine has no such setting (this
        default)."""
        return None

    #: The native form :meth:`compile_reasoning` builds, in words (None: it has none).
    reasoning_form: ClassVar[str | None] = None

    def compile_reasoning(self, spec: ReasoningSpec) -> CompiledGrammar:
        """Compile a reasoning-then-answer request (:class:`engines.reasoning.ReasoningSpec`:
        free text up to a stop string, bounded where the form can bound it, then a JSON
        value of the schema) into the engine's own form (:attr:`reasoning_form`).

        Raises
        ------
        CompileError
            When the engine refuses or fails to compile it, or has no such form."""
        raise CompileError(f"{self.label} has no reasoning-then-answer form")

    #: The engine API :meth:`padded_masks` drives, in words (None: no such probe).
    padded_vocab_api: ClassVar[str | None] = None

    def padded_masks(self, schema_text: str, width: int,
                     prefixes: Sequence[Sequence[int]]) -> tuple[int, list[np.ndarray], str | None]:
        """The masks the engine writes when a server builds it for logits ``width`` wide,
        wider than this adapter's vocabulary (a padded LM head), through the engine's own
        way of being told the logits' width (:attr:`padded_vocab_api`).

        For each token prefix of ``prefixes`` (committed from the start of the schema's
        grammar), a ``ceil(width / 32)``-word int32 mask **pre-filled with ones** is handed
        to the engine as a server would hand it; words the engine does not write keep
        their ones, so that a mask narrower than the logits shows.

        Returns
        -------
        tuple
            ``(words the engine writes, the masks in prefix order, a note or None)``; the
            note says what the engine did with the width (e.g. refused a buffer that wide).

        Raises
        ------
        NotImplementedError
            Where the adapter has no such probe (this default).
        CompileError
            When the schema does not compile."""
        raise NotImplementedError(f"{self.label} has no padded-vocabulary probe")

    def compile_case(self, schema_text: str, format_assertion: bool = True,
                     reading: str = "jsonschema") -> CompiledGrammar:
        """Compile for a case whose ground truth asserts ``format`` (True) or reads it as
        an annotation (False: the spec's 2019-09+ default, the JSON-Schema-Test-Suite
        outside ``optional/format``), and reads the keywords where readings differ as
        python-jsonschema does (``reading="jsonschema"``: the corpus's ground truth) or as
        the specification does (``"spec"``: the JSON-Schema-Test-Suite's labels, e.g.
        ``pattern`` as ECMA-262). Neither can be written into the schema itself (the
        draft can: suites write ``$schema``), so they come here. Default:
        :meth:`compile`, i.e. an engine with one fixed behaviour is judged as it is."""
        return self.compile(schema_text)

    @classmethod
    def mask_kernel(cls) -> Any:
        """The engine's own kernel that sets logits to -inf where a bitmask bit is clear,
        ``apply(logits, bitmask)`` on torch tensors (logits ``[B, V]`` float32, bitmask
        ``[B, W]`` int32 on the logits' device), or None when the engine has none (the
        harness's shared kernel is then used). Imports the engine."""
        return None

    def cached_compiler(self) -> CachedCompiler:
        """A new long-lived compiler with the engine's own compile cache on (empty at
        first); the default has none (:class:`CachedCompiler`)."""
        return CachedCompiler(self)

    def batch_filler(self, threads: int) -> BatchFiller:
        """A filler for the masks of a batch of this engine's matchers (default: a thread
        pool over :meth:`Matcher.fill_mask`)."""
        return BatchFiller(threads)

    def describe(self) -> dict[str, Any]:
        """Name, configuration, version and effective options (stored in run.json)."""
        return {
            "engine": self.label,
            "name": self.name,
            "config": self.config,
            "version": self.version(),
            "options": self.options,
        }
