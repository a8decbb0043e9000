"""Bounded runs of one byte class kept as one rule (``pda.RUN_RULE_MIN``): JSON's
whitespace (at most ``max_ws`` characters per gap) is a rule of its own whose states
and rows serve every gap, instead of a chain of ``max_ws`` states inlined at each gap
(which copied every state a gap met once per count). The language does not change:
documents with whitespace in every gap, up to the bound, are accepted, one more
character is not, on the real Llama-3 vocabulary."""

from __future__ import annotations

import json

import pytest

import reference_helpers as H
from reference_engine import Compiled, compile_gbnf, compile_json_schema
from reference_engine.pda import PDA, RUN_RULE_MIN

SCHEMA = {"type": "object",
          "properties": {"a": {"type": "integer"}, "b": {"type": "array",
                                                         "items": {"type": "string"}},
                         "c": {"type": "object", "properties": {"d": {"type": "boolean"}}}}}
DOC = {"a": 1, "b": ["x", "y"], "c": {"d": True}}


def _accepts(compiled: Compiled, text: str) -> bool:
    m = compiled.matcher()
    return m.accept_bytes(text.encode()) and m.is_accepting()


def test_whitespace_is_one_rule_whose_states_serve_every_gap():
    g = compile_json_schema(SCHEMA, max_ws=6)
    c = Compiled(g, H.adapter().trie)
    pda = c.pda
    assert "ws" in pda.rule_names
    # every gap of an indented document, with runs up to the bound
    for indent in (None, 1, 2):  # (a gap holds its newline and the indentation)
        assert _accepts(c, json.dumps(DOC, indent=indent))
    flat = json.dumps(DOC, separators=(",", ":"))
    for sep in (",", ":", "[", "{"):
        assert _accepts(c, flat.replace(sep, sep + " \n\t \r ", 1))  # 6 in one gap
        assert not _accepts(c, flat.replace(sep, sep + " \n\t \r  ", 1))  # 7
    assert _accepts(c, " " * 6 + json.dumps(DOC) + "\t" * 6)
    assert not _accepts(c, " " * 7 + json.dumps(DOC))
    # one chain of states for all gaps: the whitespace rule's states, each count once
    ws = pda.rule_index["ws"]
    ws_states = [s for s in range(pda.n_states) if pda.state_rule[s] == ws]
    assert 0 < len(ws_states) <= 6 + 1
    # masks inside a gap still equal the brute force (what follows the gap is
    # settled against the live stack)
    m = c.matcher()
    from engines.bitmask import allocate_bitmask
    bm = allocate_bitmask(H.vocab().size)
    assert m.accept_bytes(b'{"a": 1,  ')
    m.fill_mask(bm)
    assert (bm == H.full_brute_force(c, m)).all()


@pytest.mark.parametrize("hi, uses, separate", [(8, 2, True), (8, 1, False),
                                                (RUN_RULE_MIN - 1, 2, False)])
def test_which_runs_stay_separate(hi, uses, separate):
    body = " ".join(['"x" sp'] * uses)
    g = compile_gbnf(f'root ::= {body} "y"\nsp ::= [ \\t]{{0,{hi}}}\n')
    pda = PDA(g)
    assert ("sp" in pda.rule_names) == separate
