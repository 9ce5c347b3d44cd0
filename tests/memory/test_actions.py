"""The adapters' action tables (gitwiki/memory/actions.py): action names onto the library's typed functions, and
a batch's JSON items read once into BatchItems, with helix's strings."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.memory.actions import EDIT_ACTIONS, TOPIC_ACTIONS, EditCall, TopicsCall, batch_items, run_edit, run_topics
from gitwiki.memory.store import BatchItem


def test_helix_strings_in_batch_items_are_read_as_helix_writes_them():
    items = batch_items(
        [
            {"topic": "engine", "text": "a", "tags": "gotchas, build", "links": "build:0 engine", "confidence": "0.9"},
            {"topic": "engine", "text": "b", "tags": ["x"], "links": ["build:1"], "force": "true", "source": None},
        ]
    )
    assert items == [
        BatchItem("engine", "a", ("gotchas", " build"), None, 0.9, ("build:1", "engine"), False),
        BatchItem("engine", "b", ("x",), None, None, ("build:1",), True),
    ]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ([], "non-empty list"),
        ({"topic": "t", "text": "x"}, "non-empty list"),
        ([{"topic": "t", "text": "x"}, {"text": "no topic"}], "entry 2 must be an object with topic and text"),
        ([{"topic": "t", "text": "x", "colour": "red"}], "entry 1 must be an object"),
        ([{"topic": 5, "text": "x"}], "entry 1: topic must be text"),
        ([{"topic": "t", "text": "x", "tags": 5}], "entry 1: tags must be a list of strings"),
        ([{"topic": "t", "text": "x", "links": [1]}], "entry 1: links must be a list of strings"),
        ([{"topic": "t", "text": "x", "confidence": "high"}], "entry 1: confidence must be a number"),
        ([{"topic": "t", "text": "x", "confidence": True}], "entry 1: confidence must be a number"),
        ([{"topic": "t", "text": "x", "force": "yes"}], "entry 1: force must be true or false"),
    ],
)
def test_a_batch_item_of_the_wrong_shape_names_its_entry(raw, says):
    with pytest.raises(UsageError, match=says):
        batch_items(raw)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
ITEM = st.fixed_dictionaries(
    {"topic": JSON, "text": JSON},
    optional=dict.fromkeys(("tags", "source", "confidence", "links", "force", "other"), JSON),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, st.lists(ITEM, max_size=3)))
def test_any_json_is_batch_items_or_one_usage_error(raw):
    try:
        items = batch_items(json.loads(json.dumps(raw, allow_nan=True)))
    except UsageError:
        return
    for item in items:
        assert isinstance(item.topic, str) and isinstance(item.text, str) and isinstance(item.force, bool)
        assert all(isinstance(t, str) for t in (*item.tags, *item.links))
        assert item.confidence is None or isinstance(item.confidence, int | float)


def test_every_action_reads_only_parameters_its_call_has():
    topic_fields = {f.name for f in dataclasses.fields(TopicsCall)}
    edit_fields = {f.name for f in dataclasses.fields(EditCall)}
    for spec in TOPIC_ACTIONS.values():
        assert set(spec.takes) | set(spec.needs) <= topic_fields and set(spec.needs) <= set(spec.takes)
    for edit in EDIT_ACTIONS.values():
        assert set(edit.takes) <= edit_fields


def test_an_argument_the_action_does_not_take_is_refused_before_memory_is_touched():
    # No Memory is needed: the refusal comes before the library is called (None would fail loudly if used).
    with pytest.raises(UsageError, match=r"edit action=revise does not take tag; it takes: index, text, match_str"):
        run_edit(None, "revise", "t", EditCall(text="x", tag="perf"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"topics action=stale does not take topic; it takes: nothing"):
        run_topics(None, "stale", TopicsCall(topic="t"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"topics action=checkpoint needs task; it takes: task, done"):
        run_topics(None, "checkpoint", TopicsCall(done=("x",)))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="edit action must be one of append, revise, delete, tag, rename, merge"):
        run_edit(None, "frobnicate", "t", EditCall())  # type: ignore[arg-type]
