"""Object bodies of the reference engine: no dead ends after a separator, and key
tracking on decoded keys.

The mask is a liveness check, so every state an allowed token leads to must still be
able to reach acceptance. These tests pin the places where an object body could break
that: a ``,`` after the last member that can still be added (all declared keys seen
under ``additionalProperties: false``, ``maxProperties`` reached, declaration order
exhausted) used to lead into a whitespace-only trap.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import reference_helpers as H
from engines.bitmask import allocate_bitmask
from reference_engine.json_schema import compile_schema
from reference_engine.pda import PDA

CLOSED = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
          "additionalProperties": False}


def _pda(schema, **opts) -> PDA:
    return PDA(compile_schema(schema, **opts))


def _alive(pda: PDA, text: bytes) -> bool:
    configs, _ = pda.initial()
    return pda.advance(configs, text) is not None


@pytest.mark.parametrize("schema,opts,full,more", [
    # every declared key seen, nothing else allowed
    (CLOSED, {}, b'{"a": 1, "b": 2', b'{"a": 1'),
    # maxProperties reached while additional keys are allowed
    ({"type": "object", "maxProperties": 2}, {}, b'{"x": 1, "y": 2', b'{"x": 1'),
    # declaration order: after the last declared member nothing may follow
    (CLOSED, {"property_order": "declared"}, b'{"a": 1, "b": 2', b'{"a": 1'),
    (CLOSED, {"property_order": "declared"}, b'{"b": 2', b'{"a": 1'),
])
def test_no_separator_after_the_last_possible_member(schema, opts, full, more):
    """``,`` (with any whitespace around it) is dead once no member can be added, and
    stays alive while one can: the guard is exact in both directions."""
    pda = _pda(schema, **opts)
    for sep in (b",", b" ,", b", ", b"\n,\n"):
        assert not _alive(pda, full + sep), full + sep
        assert _alive(pda, more + sep), more + sep
    assert pda.accepts(full + b"}")


def test_mask_after_the_last_member_has_no_separator_token():
    """At the real Llama-3 vocabulary: after ``{"a": 1, "b": true`` under
    ``additionalProperties: false`` (a value with no continuation of its own) no allowed
    token contains a comma, ``}`` is allowed, and every allowed token (whitespace,
    ``}``, ``}`` with whitespace) keeps a completion: followed by ``}`` if it did not
    close the object, the document is accepted."""
    v = H.vocab()
    schema = {**CLOSED, "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}
    g = H.adapter().compile(json.dumps(schema))
    m = g.matcher()
    for t in v.encode('{"a": 1, "b": true'):
        assert m.commit(t)
    bm = allocate_bitmask(v.size)
    m.fill_mask(bm)
    ids = np.nonzero(np.unpackbits(bm.view(np.uint8), bitorder="little")[: v.size])[0].tolist()
    allowed = [t for t in ids if t not in v.special_ids]
    assert v.encode("}")[0] in allowed
    assert not [t for t in allowed if b"," in v.tokens[t]]
    pda = g.compiled.pda
    for t in allowed:
        text = b'{"a": 1, "b": true' + v.tokens[t]
        if not text.rstrip().endswith(b"}"):
            text += b"}"
        assert pda.accepts(text), text


def test_escaped_spelling_of_a_declared_key_is_the_same_key():
    """Declared keys are tracked on their decoded value: ``"\\u0069d"`` is ``"id"``, so
    the two spellings cannot both appear, in either order, and each alone is accepted."""
    pda = _pda({"type": "object", "properties": {"id": {"type": "integer"}}})
    assert pda.accepts(b'{"\\u0069d": 1}')
    assert pda.accepts(b'{"id": 1, "x": 2}')
    assert not _alive(pda, b'{"id": 1, "\\u0069d"')
    assert not _alive(pda, b'{"\\u0069\\u0064": 1, "id"')
    # an additional key that merely starts like the declared one is still fine
    assert pda.accepts(b'{"\\u0069d": 1, "idx": 2}')
