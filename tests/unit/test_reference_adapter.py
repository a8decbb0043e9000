"""The reference engine through the adapter protocol (engines/reference.py), on the real
Llama-3 vocabulary, plus its independence from the harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference_helpers as H
from harness import registry
from engines.bitmask import allocate_bitmask

ROOT = Path(__file__).resolve().parents[2]
PERSON = json.dumps({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                     "required": ["name", "age"], "additionalProperties": False})
EOT, END_OF_TEXT, BOS = 128009, 128001, 128000


@pytest.fixture(scope="module")
def person():
    return H.adapter().compile(PERSON)


def _bit(bm, t) -> bool:
    return bool((int(bm[t >> 5]) >> (t & 31)) & 1)


def test_registered_and_versioned():
    assert registry.is_installed("reference")
    assert "reference" in registry.registered(include_hidden=True)
    spec = registry.parse_engines("reference:compact,reference:canonical-order")
    assert [s.label for s in spec] == ["reference:compact", "reference:canonical-order"]
    cls = registry.adapter_class("reference")
    assert cls.version().startswith("0.1+")
    d = H.adapter().describe()
    assert d["engine"] == "reference" and d["options"]["property_order"] == "any"


def test_valid_replay_eos_and_specials(person):
    v = H.vocab()
    m = person.matcher()
    bm = allocate_bitmask(v.size)
    ids = v.encode(json.dumps({"name": "Zoë", "age": -5}, ensure_ascii=False))
    for i, t in enumerate(ids):
        m.fill_mask(bm)
        assert _bit(bm, t)
        assert not _bit(bm, BOS) and not _bit(bm, EOT)
        assert not m.eos_allowed()
        assert m.commit(t)
    m.fill_mask(bm)
    assert m.eos_allowed() and _bit(bm, EOT) and _bit(bm, END_OF_TEXT) and not _bit(bm, BOS)
    assert m.commit(EOT)  # allowed, records nothing
    m.rollback(1)
    assert not m.eos_allowed()


def test_rejection_is_sticky_and_rollback_guarded(person):
    v = H.vocab()
    m = person.matcher()
    bm = allocate_bitmask(v.size)
    ids = v.encode('{"name": "A", "age": "x"}')
    ok = [m.commit(t) for t in ids]
    assert not all(ok)
    assert not m.commit(ids[0]) and not m.eos_allowed()
    m.fill_mask(bm)
    assert not bm.any()
    with pytest.raises(ValueError):
        m.rollback(1)
    m.reset()
    assert m.commit(ids[0])
    m2 = person.matcher()
    with pytest.raises(ValueError):
        m2.rollback(1)
    assert m2.commit(ids[0])
    assert not m2.commit(BOS)  # a special token is a rejection, not an exception


def test_matchers_independent_and_bitmask_checked(person):
    v = H.vocab()
    a, b = person.matcher(), person.matcher()
    ids = v.encode('{"name": "A", "age": 1}')
    for t in ids:
        assert a.commit(t)
    assert a.eos_allowed() and not b.eos_allowed()
    with pytest.raises(ValueError):
        b.fill_mask(np.zeros(10, dtype=np.int32))
    with pytest.raises(ValueError):
        b.fill_mask(np.zeros(allocate_bitmask(v.size).size, dtype=np.int64))


def test_first_mask_only_valid_starts(person):
    v = H.vocab()
    bm = allocate_bitmask(v.size)
    person.matcher().fill_mask(bm)
    allowed = H.mask_ids(bm, v.size)
    assert allowed
    for t in allowed:
        s = v.tokens[t].lstrip(b" \t\n\r")
        assert s == b"" or s.startswith(b"{"), v.tokens[t]


def test_importable_without_the_harness(tmp_path):
    """reference_engine works with plain token bytes, harness and engines unavailable."""
    code = """
import sys, json
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('harness', 'engines', 'suites'):
            raise ImportError('blocked ' + name)
sys.meta_path.insert(0, Block())
import numpy as np
from reference_engine import Compiled, TokenTrie, compile_json_schema, compile_regex, compile_gbnf
tokens = [bytes([i]) for i in range(256)] + [b'{"', b'":', b'true', b'<eos>']
trie = TokenTrie(tokens, excluded=[259])
c = Compiled(compile_json_schema({"type": "object", "properties": {"a": {"type": "boolean"}}}),
             trie, stop_ids=[259], special_ids=[259])
m = c.matcher()
for t in [256, ord('a'), 257, 258, ord('}')]:
    assert m.accept_token(t), t
bm = np.zeros(9, dtype=np.int32); m.fill_mask(bm)
assert (bm[259 >> 5] >> (259 & 31)) & 1
r = Compiled(compile_regex(r"[0-9]{2}-x"), trie, [259], [259]).matcher()
assert all(r.accept_token(b) for b in b"42-x") and r.is_accepting()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_mask_cache_stats_land_in_the_job_record():
    """The worker stores the adapter's ``stats()`` as ``engine_stats``: the adaptive
    cache's bytes against one dense 16 KiB bitmask per cached node, and the split."""
    from harness.execution.worker import run_job
    from harness.suite import Case, Instance

    schema = json.loads(PERSON)
    case = Case("test", "stats-case", "s", "-", schema, PERSON, (
        Instance(0, {"name": "Ann", "age": 3}, True), Instance(1, {"name": 3}, False)))
    job = {"engine": {"name": "reference", "config": "default", "label": "reference"},
           "case": case.to_job(), "tokenizer": "llama3", "serializations": ["ascii"],
           "primary": "ascii", "segmentations": 0}
    rec = run_job(job)
    assert rec["outcome"] == "passing"
    s = rec["engine_stats"]
    words = (H.vocab().size + 31) // 32
    assert s["nodes"] > 3 and s["dense_equiv_bytes"] == s["nodes"] * words * 4
    assert 0 < s["node_cache_bytes"] < s["dense_equiv_bytes"]
    assert sum(s["node_formats"].values()) == s["nodes"]
    # the walk memos are reported beside the cache (the person's string walks are kept)
    assert s["walk_memo_bytes"] > 0
    json.dumps(rec)  # the record stays JSON
    # the worker froze what it built (vocabulary, adapters) out of the cyclic GC's passes
    import gc

    assert gc.get_freeze_count() > 0
    gc.unfreeze()  # (this test ran the job in the test process)
