"""The three engines of the extra ``more-engines`` (issue 42): lm-format-enforcer, Formatron
(kbnf) and transformers-cfg, on the real Llama-3 vocabulary.

An engine whose package is not installed is skipped with the reason (``bash setup.sh``
installs the extra). Each adapter is built once per module (its tokenizer data takes
2–3 s); the schemas and texts are small so that every mask is quick even for the engines
whose masks are Python walks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError, EngineUnavailable
from engines.vocab import load_vocabulary
from harness import registry

MORE = ["lm-format-enforcer", "formatron", "transformers-cfg"]

#: Every property required and declared in order, no undeclared ones: the language all
#: three engines agree on (their defaults differ elsewhere: see each adapter's docstring).
PERSON = json.dumps({
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
})
VALID = json.dumps({"name": "Al", "age": 30})
INVALID = json.dumps({"name": "Al", "age": "x"})
EOT, END_OF_TEXT, BOS = 128009, 128001, 128000


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


_built: dict[str, object] = {}


def build(vocab, name: str, config: str = "default"):
    if not registry.is_installed(name):
        pytest.skip(f"{name} is not installed (the extra more-engines; install: "
                    f"{registry.adapter_class(name).how_to_install()})")
    key = f"{name}:{config}"
    if key not in _built:
        _built[key] = registry.EngineSpec(name, config).build(vocab)
    return _built[key]


@pytest.fixture(scope="module", params=MORE)
def adapter(request, vocab):
    return build(vocab, request.param)


@pytest.fixture(scope="module")
def person(adapter):
    return adapter.compile(PERSON)


def has(bm: np.ndarray, i: int) -> bool:
    return bool((int(bm[i // 32]) >> (i % 32)) & 1)


def bits(bm: np.ndarray) -> set[int]:
    return set(np.nonzero(np.unpackbits(bm.view(np.uint8), bitorder="little"))[0].tolist())


def test_rows_listed_with_how_to_install():
    """Each row is registered, out of ``--engine all`` with a reason, names its package,
    says how to install it, and its package is pinned in the extra ``more-engines``."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["more-engines"]
    for name in MORE:
        cls = registry.adapter_class(name)
        assert cls.name == name and cls.requires
        assert cls.hidden and cls.hidden_reason and name not in registry.registered()
        assert "more-engines" in cls.how_to_install()
        assert any(pin.startswith(f"{cls.package}==") for pin in extra), cls.package


def test_valid_instance_replays(adapter, person, vocab):
    specials = vocab.special_ids - set(vocab.stop_ids)
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    for k, t in enumerate(vocab.encode(VALID)):
        m.fill_mask(bm)
        allowed = bits(bm)
        assert not allowed & specials, "a special token is allowed"
        assert not m.eos_allowed() and EOT not in allowed, f"EOS allowed after {k} tokens"
        assert t in allowed, f"token {k} {vocab.tokens[t]!r} not in the mask"
        assert m.commit(t)
    m.fill_mask(bm)
    assert m.eos_allowed() and m.is_accepting()
    assert has(bm, EOT) and has(bm, END_OF_TEXT)  # every stop id, not only the engine's one
    assert m.commit(EOT) and m.eos_allowed()      # a stop id changes nothing


def test_invalid_instance_rejected_and_dead(adapter, person, vocab):
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    ids = vocab.encode(INVALID)
    for k, t in enumerate(ids):
        m.fill_mask(bm)
        ok = m.commit(t)
        assert ok == has(bm, t), f"commit and mask disagree on {vocab.tokens[t]!r}"
        if not ok:
            break
    else:
        pytest.fail("the invalid instance was accepted")
    assert vocab.tokens[t].endswith(b'"')  # the quote that opens "x"
    assert not m.commit(EOT) and not m.eos_allowed()
    m.fill_mask(bm)
    assert not bm.any()
    with pytest.raises(ValueError):
        m.rollback(1)
    m.reset()
    for t in vocab.encode(VALID):
        assert m.commit(t)
    assert m.eos_allowed()


def test_special_and_out_of_range_ids_refused(adapter, person):
    for tid in (BOS, 128005, 10 ** 6):
        assert person.matcher().commit(tid) is False


def test_rollback_restores_masks(adapter, person, vocab):
    ids = vocab.encode(VALID)
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    masks = []
    for t in ids:
        m.fill_mask(bm)
        masks.append(bm.copy())
        assert m.commit(t)
    for n in (1, 4, len(ids)):
        m.rollback(n)
        m.fill_mask(bm)
        assert np.array_equal(bm, masks[len(ids) - n]), f"rollback({n})"
        for t in ids[len(ids) - n:]:
            assert m.commit(t)
    with pytest.raises(ValueError):
        m.rollback(len(ids) + 1)


def test_draft_validation_leaves_state(adapter, person, vocab):
    ids = vocab.encode(VALID)
    m = person.matcher()
    bm, before = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    m.fill_mask(before)
    assert m.validate_draft(ids + [EOT, ids[0]]) == len(ids) + 1
    assert m.validate_draft(vocab.encode(INVALID)) < len(vocab.encode(INVALID))
    m.fill_mask(bm)
    assert np.array_equal(bm, before)


#: A schema each engine really refuses at compile time (lm-format-enforcer resolves
#: ``$ref`` only when a mask needs it: an unresolvable one then ends the output there).
REFUSED = {
    "lm-format-enforcer": "[1, 2]",
    "formatron": json.dumps({"type": "string"}),
    "transformers-cfg": json.dumps({"type": "object", "properties": {"a": {"$ref": "#/nope"}}}),
}


def test_compile_errors_are_one_line(adapter):
    for text in ("{not json", REFUSED[adapter.name]):
        with pytest.raises(CompileError) as ei:
            adapter.compile(text)
        assert str(ei.value) and "\n" not in str(ei.value)


# ------------------------------------------------------------------ lm-format-enforcer


def test_lmfe_defaults_match_installed():
    pytest.importorskip("lmformatenforcer")
    from lmformatenforcer import consts

    from engines.lmfe_engine import LMFE_DEFAULTS

    assert LMFE_DEFAULTS == {
        "max_consecutive_whitespaces": consts.DEFAULT_MAX_CONSECUTIVE_WHITESPACES,
        "force_json_field_order": consts.DEFAULT_FORCE_JSON_FIELD_ORDER,
        "max_json_array_length": consts.DEFAULT_MAX_JSON_ARRAY_LENGTH,
    }


def _accepts(adapter, compiled, vocab, text: str) -> bool:
    m = compiled.matcher()
    return all(m.commit(t) for t in vocab.encode(text)) and m.eos_allowed()


def test_lmfe_mask_is_its_token_list(vocab):
    """The bitmask is exactly LMFE's allowed list (stop ids included where it can end)."""
    ad = build(vocab, "lm-format-enforcer")
    c = ad.compile(PERSON)
    m = c.matcher()
    bm = allocate_bitmask(vocab.size)
    for t in vocab.encode(VALID) + [None]:
        m.fill_mask(bm)
        assert bits(bm) == set(m._enf.get_allowed_tokens(m._seq).allowed_tokens)
        if t is not None:
            assert m.commit(t)


def test_lmfe_configs_change_the_language(vocab):
    """Arrays are capped at 20 items by default, keys come in any order; LMFE's own
    bitmask (configuration ``bitmask``) is the same set."""
    schema = json.dumps({"type": "array", "items": {"type": "integer"}})
    long = json.dumps(list(range(21)))
    ad = build(vocab, "lm-format-enforcer")
    assert not _accepts(ad, ad.compile(schema), vocab, long)
    assert _accepts(ad, ad.compile(schema), vocab, json.dumps(list(range(20))))
    assert _accepts(ad, ad.compile(json.dumps({"type": "object"})), vocab, '{"b": 1, "a": 2}')
    # LMFE's own bitmask (a torch tensor it fills token by token: a small language here)
    own = build(vocab, "lm-format-enforcer", "bitmask")
    a = ad.compile_grammar("regex", "[0-9]{2}-[a-z]").matcher()
    b = own.compile_grammar("regex", "[0-9]{2}-[a-z]").matcher()
    bma, bmb = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    for t in vocab.encode("12-a") + [None]:
        a.fill_mask(bma)
        b.fill_mask(bmb)
        assert np.array_equal(bma, bmb) and bma.any()
        if t is not None:
            assert a.commit(t) and b.commit(t)


def test_lmfe_regex(vocab):
    ad = build(vocab, "lm-format-enforcer")
    c = ad.compile_grammar("regex", "[0-9]{3}-[a-z]+")
    assert _accepts(ad, c, vocab, "123-abc") and not _accepts(ad, c, vocab, "12-abc")
    with pytest.raises(CompileError):
        ad.compile_grammar("gbnf", 'root ::= "a"')


# --------------------------------------------------------------------------- formatron


def test_formatron_import_shim_leaves_pydantic_alone(vocab):
    build(vocab, "formatron")
    import pydantic

    assert "typing" not in pydantic.__dict__


def test_formatron_quirks(vocab):
    """Formatron's language as 0.5.0 builds it: an optional property's key is always
    emitted; kbnf finishes as soon as the start rule can end."""
    ad = build(vocab, "formatron")
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"},
                                                           "b": {"type": "integer"}},
                         "required": ["a"]})
    c = ad.compile(schema)
    assert _accepts(ad, c, vocab, '{"a": 1, "b": 2}')
    assert not _accepts(ad, c, vocab, '{"a": 1}')           # the key "b" must come
    assert _accepts(ad, c, vocab, '{"a": 1, "b": }')        # with an empty value
    assert not _accepts(ad, c, vocab, '{"a": 1, "b": 2, "c": 3}')  # additionalProperties
    with pytest.raises(CompileError, match="Root schema type"):
        ad.compile(json.dumps({"type": "string"}))
    digits = ad.compile_grammar("regex", "[0-9]+")
    ids = vocab.encode("1234")
    assert len(ids) == 2  # "123", "4"
    m = digits.matcher()
    assert m.commit(ids[0]) and m.eos_allowed()
    assert not m.commit(ids[1])  # finished after "123": nothing more is allowed


# ---------------------------------------------------------------------- transformers-cfg


def test_transformers_cfg_gbnf_and_parse_errors(vocab):
    ad = build(vocab, "transformers-cfg")
    c = ad.compile_grammar("gbnf", 'root ::= "ab" [0-9]+')
    assert _accepts(ad, c, vocab, "ab12") and not _accepts(ad, c, vocab, "ab")
    with pytest.raises(CompileError):  # parse_ebnf only logs this one
        ad.compile_grammar("gbnf", 'root ::= "ab')
    with pytest.raises(CompileError):
        ad.compile_grammar("regex", "a+")


def test_transformers_cfg_mask_is_its_acceptance(vocab):
    ad = build(vocab, "transformers-cfg")
    c = ad.compile_grammar("gbnf", 'root ::= "x" [a-c]*')
    m = c.matcher()
    bm = allocate_bitmask(vocab.size)
    for t in vocab.encode("xab") + [None]:
        m.fill_mask(bm)
        acc = c._rec.filter_vocab(m._states[-1], c._device).numpy()
        want = set(np.nonzero(acc)[0].tolist())
        if EOT in want:
            want.add(END_OF_TEXT)
        assert bits(bm) == want
        if t is not None:
            assert m.commit(t)


@pytest.mark.parametrize("module,cls,pkg", [
    ("engines.lmfe_engine", "LMFEEngine", "lmformatenforcer"),
    ("engines.formatron_engine", "FormatronEngine", "formatron"),
    ("engines.transformers_cfg_engine", "TransformersCfgEngine", "transformers_cfg"),
])
def test_engine_unavailable(monkeypatch, vocab, module, cls, pkg):
    import importlib

    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, "_modules", {}, raising=False)
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")] or [pkg]:
        monkeypatch.setitem(sys.modules, name, None)  # makes `import pkg(.sub)` fail
    with pytest.raises(EngineUnavailable, match="pip install"):
        getattr(mod, cls)(vocab)


def test_lmfe_hf_cleanup_reads_text_the_output_does_not_hold(vocab):
    """With Hugging Face's clean_up_tokenization_spaces in the decoder (configuration
    ``hf_cleanup``), the token " ." reads as "." to LMFE's parser: ``1 .5`` passes as a
    number, which the output's bytes are not."""
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "number"}},
                         "required": ["n"]})
    text = '{"n": 1 .5}'
    assert " ." in [vocab.tokens[t].decode() for t in vocab.encode(text)]
    plain = build(vocab, "lm-format-enforcer")
    cleaned = build(vocab, "lm-format-enforcer", "hf_cleanup")
    assert not _accepts(plain, plain.compile(schema), vocab, text)
    assert _accepts(cleaned, cleaned.compile(schema), vocab, text)
