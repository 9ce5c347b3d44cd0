"""The JSON text editor behind `gitwiki hooks install`: strict parsing with spans, edits that keep every other byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks.jsontext import JsonTextError, Number, insert, parse, remove

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
VALUES = st.recursive(
    SCALARS | TEXT, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=20
)
LAYOUTS = st.sampled_from([{}, {"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"separators": (",", ":")}])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(VALUES, LAYOUTS)
def test_parse_reads_what_json_reads_with_numbers_as_their_text(value, layout):
    text = json.dumps(value, ensure_ascii=False, **layout)
    assert parse(text).value == json.loads(text, parse_int=Number, parse_float=Number)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40) | st.text(alphabet='{}[]",:0123456789.eE+-truefalsnNI \\u', max_size=40))
def test_parse_refuses_anything_else_with_its_own_error(text):
    try:
        parse(text)
    except JsonTextError:
        return
    json.loads(text)  # what was accepted is JSON


@pytest.mark.parametrize(
    "text",
    ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '["\\ud800"]', '{"\\udfff": 1}', "[1,]", "{} {}", "01", ""],
)
def test_what_json_loads_accepts_or_claude_code_cannot_read_is_refused(text):
    with pytest.raises(JsonTextError):
        parse(text)


def test_numbers_out_of_double_range_stay_as_written():
    text = '{"big": 1e400, "small": -1E-400, "cents": 0.10}'
    assert parse(text).value == {"big": Number("1e400"), "small": Number("-1E-400"), "cents": Number("0.10")}
    node = parse(text)
    assert insert(text, node, [1], "x") == '{"big": 1e400, "small": -1E-400, "cents": 0.10, "x": [1]}'


def test_deep_nesting_is_an_error_not_a_recursion_error():
    with pytest.raises(JsonTextError, match="nested deeper"):
        parse("[" * 100_000 + "]" * 100_000)


def test_the_last_of_repeated_keys_counts_as_json_parse_reads_it():
    assert parse('{"a": 1, "a": [2]}').member("a").value == [Number("2")]


CONTAINERS = st.lists(VALUES, max_size=4) | st.dictionaries(TEXT, VALUES, max_size=4)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(CONTAINERS, LAYOUTS, st.lists(SCALARS | TEXT, min_size=1, max_size=3))
def test_removing_what_was_appended_gives_the_original_bytes(value, layout, added):
    """Children appended to the root of a document laid out by json.dumps, then removed newest first."""
    text = json.dumps(value, ensure_ascii=False, **layout) + "\n"
    keys = [f"new {i}" for i in range(len(added))] if isinstance(value, dict) else [None] * len(added)
    edited = text
    for key, item in zip(keys, added, strict=True):
        edited = insert(edited, parse(edited), item, key)
    grown = {**value, **dict(zip(keys, added, strict=True))} if isinstance(value, dict) else value + added
    assert json.loads(edited) == grown
    for _ in added:
        node = parse(edited)
        edited = remove(edited, node, len(node.children) - 1)
    assert edited == text


def test_new_children_follow_the_container_layout():
    nested = '{\n    "a": [\n        1\n    ],\n    "b": []\n}\n'
    node = parse(nested)
    assert insert(nested, node.member("a"), {"k": 2}) == (
        '{\n    "a": [\n        1,\n        {\n            "k": 2\n        }\n    ],\n    "b": []\n}\n'
    )
    assert insert(nested, node.member("b"), 3) == '{\n    "a": [\n        1\n    ],\n    "b": [\n        3\n    ]\n}\n'
    assert insert('{"a":[1]}', parse('{"a":[1]}').member("a"), "x") == '{"a":[1,"x"]}'
