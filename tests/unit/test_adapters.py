"""The three real engine adapters (xgrammar, llguidance, outlines_core) and the test
doubles (null, faulty), on the real Llama-3 vocabulary.

Engines that are not installed are skipped. Adapters are built once per module (their
tokenizer build takes ~0.1–0.5 s each, xgrammar's import ~2 s).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from harness import registry
from engines.bitmask import allocate_bitmask
from engines.protocol import CompileError, EngineAdapter, EngineUnavailable
from engines.vocab import load_vocabulary

REAL_ENGINES = ["xgrammar", "llguidance", "outlines"]

PERSON = json.dumps(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
)
VALID = json.dumps({"name": "Alice", "age": 30})
VALID_UNICODE = json.dumps({"name": "Zoë 😀 «x»", "age": -5}, ensure_ascii=False)
INVALID = json.dumps({"name": "Alice", "age": "x"})

#: A schema each engine really refuses (default configuration).
UNCOMPILABLE = {
    "xgrammar": "{not json",
    "llguidance": json.dumps(
        {"type": "object", "if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]}}
    ),
    "outlines": json.dumps({"type": "string", "pattern": "(("}),
}

EOT, END_OF_TEXT, BOS = 128009, 128001, 128000


@pytest.fixture(scope="module")
def vocab():
    return load_vocabulary("llama3")


@pytest.fixture(scope="module")
def special_mask(vocab):
    """Bitmask of the non-stop special ids (must never be allowed)."""
    bm = allocate_bitmask(vocab.size)
    for i in vocab.special_ids - set(vocab.stop_ids):
        bm[i // 32] |= np.array(1 << (i % 32), dtype=np.uint32).view(np.int32)
    return bm


_adapters: dict[tuple[str, str], EngineAdapter] = {}


def get_adapter(vocab, name: str, config: str = "default") -> EngineAdapter:
    key = (name, config)
    if key not in _adapters:
        if not registry.is_installed(name):
            pytest.skip(f"{name} not installed")
        _adapters[key] = registry.EngineSpec(name, config).build(vocab)
    return _adapters[key]


@pytest.fixture(scope="module", params=REAL_ENGINES)
def adapter(request, vocab):
    return get_adapter(vocab, request.param)


@pytest.fixture(scope="module")
def person(adapter):
    return adapter.compile(PERSON)


def has(bm: np.ndarray, i: int) -> bool:
    return bool((int(bm[i // 32]) >> (i % 32)) & 1)


def check_step(m, bm, special_mask):
    """Fill the mask and check the invariants that hold at every step."""
    m.fill_mask(bm)
    assert not np.any(bm & special_mask), "a special token is allowed"
    eos = m.eos_allowed()
    assert has(bm, EOT) == eos, "stop token 128009 in mask != eos_allowed()"
    assert has(bm, END_OF_TEXT) == eos, "stop token 128001 in mask != eos_allowed()"
    assert m.is_accepting() == eos
    return eos


# --------------------------------------------------------------------------- real engines


@pytest.mark.parametrize("text", [VALID, VALID_UNICODE], ids=["ascii", "unicode"])
def test_valid_instance_replays(adapter, person, vocab, special_mask, text):
    ids = vocab.encode(text)
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    for k, t in enumerate(ids):
        eos = check_step(m, bm, special_mask)
        assert not eos, f"EOS allowed after {k} tokens"
        assert has(bm, t), f"token {k} ({t}, {vocab.tokens[t]!r}) not in mask"
        assert m.commit(t) is True
    assert check_step(m, bm, special_mask)
    assert m.eos_allowed()
    # committing a stop token when allowed: True, state unchanged
    assert m.commit(EOT) is True
    assert m.eos_allowed()


def test_eos_not_allowed_midway(adapter, person, vocab, special_mask):
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    for t in vocab.encode('{"name": "Alice"'):
        assert m.commit(t)
    assert not check_step(m, bm, special_mask)
    assert not m.eos_allowed()
    # a stop token now is a rejection, and it sticks
    assert m.commit(EOT) is False
    assert m.commit(vocab.encode(",")[0]) is False
    assert not m.eos_allowed()


def test_invalid_instance_rejected_and_sticky(adapter, person, vocab, special_mask):
    ids = vocab.encode(INVALID)
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    rejected_at = None
    for k, t in enumerate(ids):
        check_step(m, bm, special_mask)
        in_mask = has(bm, t)
        ok = m.commit(t)
        assert ok == in_mask, f"commit({t}) = {ok} but in mask = {in_mask}"
        if not ok:
            rejected_at = k
            break
    assert rejected_at is not None
    assert vocab.tokens[ids[rejected_at]].endswith(b'"')  # the quote that opens "x"
    # sticky: everything is refused afterwards, including EOS (llguidance quirk)
    assert m.commit(ids[rejected_at]) is False
    assert m.commit(EOT) is False
    assert m.commit(END_OF_TEXT) is False
    assert not m.eos_allowed() and not m.is_accepting()
    m.fill_mask(bm)
    assert not bm.any()
    with pytest.raises(ValueError):
        m.rollback(1)
    # reset() revives the matcher
    m.reset()
    for t in vocab.encode(VALID):
        check_step(m, bm, special_mask)
        assert has(bm, t)
        assert m.commit(t)
    assert m.eos_allowed()


def test_special_token_rejected_quietly(adapter, person, vocab, capfd):
    for tid in (BOS, 128005, 128255):
        m = person.matcher()
        assert m.commit(tid) is False
        assert m.commit(vocab.encode("{")[0]) is False
    assert "special token" not in capfd.readouterr().err  # xgrammar warns if asked


def test_rollback_restores_masks(adapter, person, vocab):
    ids = vocab.encode(VALID)
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    masks, eos = [], []
    for t in ids:
        m.fill_mask(bm)
        masks.append(bm.copy())
        eos.append(m.eos_allowed())
        assert m.commit(t)
    m.fill_mask(bm)
    masks.append(bm.copy())
    eos.append(m.eos_allowed())
    k = len(ids)
    for n in (1, 3, 5):
        m.rollback(n)
        m.fill_mask(bm)
        assert np.array_equal(bm, masks[k - n]), f"rollback({n}) from {k}"
        assert m.eos_allowed() == eos[k - n]
        for t in ids[k - n : k]:
            assert m.commit(t)
        m.fill_mask(bm)
        assert np.array_equal(bm, masks[k])
    m.rollback(0)
    m.rollback(k)  # everything
    m.fill_mask(bm)
    assert np.array_equal(bm, masks[0])


def test_rollback_too_far_raises_and_keeps_state(adapter, person, vocab):
    ids = vocab.encode(VALID)[:4]
    m = person.matcher()
    bm = allocate_bitmask(vocab.size)
    for t in ids:
        assert m.commit(t)
    m.fill_mask(bm)
    before = bm.copy()
    with pytest.raises(ValueError, match="rollback"):
        m.rollback(5)
    with pytest.raises(ValueError):
        m.rollback(-1)
    m.fill_mask(bm)
    assert np.array_equal(bm, before)
    m.rollback(4)  # still works (llguidance would be broken after a too-far rollback)
    # reset() forgets the history: outlines_core's Guide.reset() does not
    for t in ids:
        assert m.commit(t)
    m.reset()
    with pytest.raises(ValueError):
        m.rollback(1)
    # a stop token committed at the end is not counted in the history
    m2 = person.matcher()
    for t in vocab.encode(VALID):
        assert m2.commit(t)
    assert m2.commit(EOT)
    m2.rollback(1)
    m2.fill_mask(bm)
    assert has(bm, vocab.encode(VALID)[-1])  # the closing brace is pending again
    assert not m2.eos_allowed()


def test_matchers_are_independent(adapter, person, vocab):
    a, b = person.matcher(), person.matcher()
    bma, bmb = allocate_bitmask(vocab.size), allocate_bitmask(vocab.size)
    for t in vocab.encode(VALID):
        assert a.commit(t)
    b.fill_mask(bmb)
    a.fill_mask(bma)
    assert not np.array_equal(bma, bmb)
    assert a.eos_allowed() and not b.eos_allowed()
    # the same matcher with two different bitmask arrays
    other = allocate_bitmask(vocab.size)
    b.fill_mask(other)
    assert np.array_equal(other, bmb)


def test_wrong_bitmask_is_refused(adapter, person, vocab):
    m = person.matcher()
    words = allocate_bitmask(vocab.size).size
    for bad in (
        np.zeros(10, dtype=np.int32),
        np.zeros(words, dtype=np.int64),
        np.zeros((1, words), dtype=np.int32),
        np.zeros(2 * words, dtype=np.int32)[::2],  # xgrammar would fill it as if contiguous
    ):
        with pytest.raises(ValueError):
            m.fill_mask(bad)


def test_uncompilable_schema(adapter):
    with pytest.raises(CompileError) as ei:
        adapter.compile(UNCOMPILABLE[adapter.name])
    msg = str(ei.value)
    assert msg and "\n" not in msg
    assert "/project/cpp" not in msg


def test_describe(adapter):
    d = adapter.describe()
    assert d["engine"] == adapter.name
    assert d["version"]
    json.dumps(d)


def test_xgrammar_defaults_match_installed(vocab):
    pytest.importorskip("xgrammar")
    from engines.xgrammar_engine import XGRAMMAR_DEFAULTS, XGrammarEngine
    import xgrammar

    sig = inspect.signature(xgrammar.GrammarCompiler.compile_json_schema)
    real = {k: p.default for k, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert real == XGRAMMAR_DEFAULTS
    assert XGrammarEngine.configs["default"] == XGRAMMAR_DEFAULTS


def test_outlines_defaults_match_installed():
    pytest.importorskip("outlines_core")
    from outlines_core.json_schema import build_regex_from_schema

    from engines.outlines_engine import OUTLINES_DEFAULTS

    sig = build_regex_from_schema.__text_signature__
    for k, v in OUTLINES_DEFAULTS.items():
        assert f"{k}={v!r}" in sig


def _accepts(adapter, schema: str, text: str) -> bool:
    m = adapter.compile(schema).matcher()
    return all(m.commit(t) for t in adapter.vocab.encode(text)) and m.eos_allowed()


def test_xgrammar_configs(vocab):
    default = get_adapter(vocab, "xgrammar")
    compliant = get_adapter(vocab, "xgrammar", "compliant")
    compact = get_adapter(vocab, "xgrammar", "compact")
    open_schema = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})
    extra = '{"a": 1, "b": 2}'
    assert not _accepts(default, open_schema, extra)  # strict_mode=True
    assert _accepts(compliant, open_schema, extra)
    minified = json.dumps(json.loads(VALID), separators=(",", ":"))
    for text in (VALID, minified, '{ "name" : "Alice" , "age" : 30 }'):
        assert _accepts(default, PERSON, text)
    # any_whitespace=False with separators=None is ONE fixed layout, json.dumps' default
    # (", ", ": "), not the minified one.
    assert _accepts(compact, PERSON, VALID)
    assert not _accepts(compact, PERSON, minified)
    assert not _accepts(compact, PERSON, json.dumps(json.loads(VALID), indent=2))
    assert default.describe()["options"]["strict_mode"] is True


def test_xgrammar_warnings_captured(vocab, capfd):
    xg = get_adapter(vocab, "xgrammar")
    cg = xg.compile(json.dumps({"$ref": "http://example.com/x.json"}))
    assert any("http://example.com/x.json" in w for w in cg.warnings)
    assert not any("/project/cpp" in w for w in cg.warnings)
    out, err = capfd.readouterr()
    assert "example.com" not in err
    print("stderr works", file=sys.stderr)
    assert "stderr works" in capfd.readouterr().err


def test_llguidance_configs(vocab):
    default = get_adapter(vocab, "llguidance")
    lenient = get_adapter(vocab, "llguidance", "lenient")
    uni = get_adapter(vocab, "llguidance", "unicode_escapes")
    cg = lenient.compile(UNCOMPILABLE["llguidance"])
    assert any("Unimplemented" in w for w in cg.warnings)
    string = json.dumps({"type": "string"})
    assert not _accepts(default, string, '"\\u00e9"')
    assert _accepts(uni, string, '"\\u00e9"')
    assert _accepts(default, string, '"\\n"')


def test_llguidance_tokenizer_exact_bytes(vocab):
    pytest.importorskip("llguidance")
    from engines.llguidance_engine import _TokenizerSource

    src = _TokenizerSource(vocab)
    for data in [b"hello world", b"\xe9t\xc3\xa9 \xff\xfe{", "Zoë 😀".encode()[:-1]]:
        ids = src(data)
        assert b"".join(vocab.tokens[i] for i in ids) == data
    assert src.tokens[BOS] == b"\xff<|begin_of_text|>"
    tok = get_adapter(vocab, "llguidance").tokenizer
    assert tok.is_special_token(BOS) and not tok.is_special_token(100)
    assert sorted(tok.eos_tokens) == sorted(vocab.stop_ids)


def test_outlines_configs(vocab):
    default = get_adapter(vocab, "outlines")
    flex = get_adapter(vocab, "outlines", "flexible_ws")
    indented = json.dumps(json.loads(VALID), indent=2)
    assert not _accepts(default, PERSON, indented)
    assert _accepts(flex, PERSON, indented)


def test_unknown_option_refused(vocab):
    for name in ("xgrammar", "outlines"):
        if registry.is_installed(name):
            with pytest.raises(ValueError, match="unknown"):
                registry.EngineSpec(name).build(vocab, bogus=1)


@pytest.mark.parametrize(
    "module,cls,pkg",
    [
        ("engines.xgrammar_engine", "XGrammarEngine", "xgrammar"),
        ("engines.llguidance_engine", "LLGuidanceEngine", "llguidance"),
        ("engines.outlines_engine", "OutlinesEngine", "outlines_core"),
    ],
)
def test_engine_unavailable(monkeypatch, vocab, module, cls, pkg):
    import importlib

    adapter_cls = getattr(importlib.import_module(module), cls)
    monkeypatch.setitem(sys.modules, pkg, None)  # makes `import pkg` fail
    with pytest.raises(EngineUnavailable, match="pip install"):
        adapter_cls(vocab)


def test_modules_import_lazily():
    code = (
        "import sys, engines.xgrammar_engine, engines.llguidance_engine, "
        "engines.outlines_engine, engines.testing\n"
        "print(sorted(m for m in ('xgrammar', 'llguidance', 'outlines_core', 'torch') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=_ROOT, check=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- test doubles

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_registry_hides_doubles():
    assert "null" not in registry.registered()
    assert "faulty" in registry.registered(include_hidden=True)
    assert [s.label for s in registry.parse_engines("all")] == REAL_ENGINES


def test_null_engine(vocab, special_mask):
    null = registry.EngineSpec("null").build(vocab)
    m = null.compile("{}").matcher()
    bm = allocate_bitmask(vocab.size)
    check_step(m, bm, special_mask)
    assert int(np.unpackbits(bm.view(np.uint8)).sum()) == 128000 + 2
    for t in vocab.encode(VALID):
        assert has(bm, t) and m.commit(t)
    assert m.commit(EOT) and m.eos_allowed()
    m.rollback(3)
    with pytest.raises(ValueError):
        m.rollback(100)
    assert m.commit(BOS) is False
    assert m.commit(1) is False and not m.eos_allowed()
    m.fill_mask(bm)
    assert not bm.any()
    m.reset()
    assert m.commit(1)


def test_faulty_engine_nonfatal(vocab):
    faulty = registry.EngineSpec("faulty").build(vocab)
    with pytest.raises(CompileError):
        faulty.compile(json.dumps({"x-faulty": "compile_error"}))
    with pytest.raises(CompileError, match="unknown x-faulty"):
        faulty.compile(json.dumps({"x-faulty": "nope"}))
    with pytest.raises(CompileError):
        faulty.compile("{not json")
    bm = allocate_bitmask(vocab.size)
    m = faulty.compile(json.dumps({"x-faulty": "reject_all", "type": "object"})).matcher()
    m.fill_mask(bm)
    assert bm.any()
    assert m.commit(vocab.encode("{")[0]) is False
    assert m.commit(EOT) is False and not m.eos_allowed()
    for schema in ({"x-faulty": "accept_all"}, {"type": "object"}, [1, 2]):
        m = faulty.compile(json.dumps(schema)).matcher()
        assert all(m.commit(t) for t in vocab.encode(VALID)) and m.eos_allowed()


_FATAL_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    from engines.testing import FaultyEngine
    from engines.vocab import Vocabulary
    v = Vocabulary("tiny", [b"a", b"b", b"<eos>"], frozenset({2}), (2,), None, lambda s: [])
    e = FaultyEngine(v)
    mode = sys.argv[1]
    if mode == "oom":
        vm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        lim = vm * 1024 + (512 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    try:
        e.compile(json.dumps({"x-faulty": mode}))
    except MemoryError:
        sys.exit(42)
    sys.exit(0)
    """
)


@pytest.mark.parametrize(
    "mode,expected", [("crash", -11), ("exit", 3), ("oom", 42), ("hang", "timeout")]
)
def test_faulty_engine_fatal(mode, expected):
    try:
        r = subprocess.run([sys.executable, "-c", _FATAL_SCRIPT, mode], cwd=_ROOT,
                           capture_output=True, timeout=3)
    except subprocess.TimeoutExpired:
        assert expected == "timeout"
        return
    assert r.returncode == expected, r.stderr.decode()[-500:]
