"""The event an `agent_hook` call stands for (gitwiki/mcp/hook_event.py): built from strings Claude Code fills
from whatever the session holds, so any of them gives the hook's own fields as JSON in this checkout, or a refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.mcp import hook_event

_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(["\0", "\ud800"])
) | st.sampled_from(["true", "{", "[" * 5000, '{"command": "ls"}', "[1, 2]"])


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    name=st.sampled_from(["prompt", "stop", "session", ""]) | st.text(max_size=8),
    fields=st.dictionaries(
        st.sampled_from([*hook_event.COMMON, *{f for _, own in hook_event.EVENTS.values() for f in own}, "other"]),
        _TEXT,
    ),
)
def test_any_arguments_make_an_event_of_this_checkout_or_a_refusal(tmp_path, name, fields):
    """The event is built from strings Claude Code fills from whatever the session holds: any of them gives the
    hook's own fields as JSON in this checkout, or a UsageError."""
    root = Path(os.path.realpath(tmp_path))
    try:
        hook, raw, cwd = hook_event.event(name, fields, root)
    except UsageError:
        return
    event = json.loads(raw)
    assert hook == name and set(event) == {*hook_event.COMMON, "hook_event_name", *hook_event.EVENTS[name][1]}
    assert Path(cwd).is_relative_to(root) and event["cwd"] == cwd
    for flag in hook_event.FLAGS:
        if flag in event:
            assert event[flag] is (fields.get(flag) == "true")
