"""The events Claude Code really sends (recorded by the e2e suite, fixtures/claude_code_events/) through the hooks
that `gitwiki hooks install` registers for them, and the hand-written fixtures held to the recorded shapes."""

from __future__ import annotations

import json
import re

import pytest

from gitwiki.agent_hooks import HOOK_TYPES
from tests.agent_hooks.helpers import FIXTURES, context_of, load

RECORDED = sorted(p.stem for p in (FIXTURES / "claude_code_events").glob("*.json"))


def _recorded(name: str, root) -> dict:
    return load(f"claude_code_events/{name}", root)


def _hooks_for(event: dict) -> list[str]:
    """The hook types registered for this event, matched the way Claude Code matches (a regex on the tool name)."""
    tool = event.get("tool_name", "")
    return [
        h.name
        for h in HOOK_TYPES
        if h.event == event["hook_event_name"] and (h.matcher is None or re.fullmatch(h.matcher, tool))
    ]


@pytest.mark.parametrize("name", [n for n in RECORDED if (FIXTURES / f"{n}.json").exists()])
def test_hand_written_fixtures_have_the_shape_claude_code_sends(name, tmp_path):
    written, recorded = load(name, tmp_path), _recorded(name, tmp_path)
    assert set(written) <= set(recorded), set(written) - set(recorded)
    for key in ("hook_event_name", "tool_name"):
        assert written.get(key) == recorded.get(key)
    if "tool_input" in recorded:
        assert set(written["tool_input"]) == set(recorded["tool_input"])


@pytest.mark.parametrize("name", RECORDED)
def test_every_recorded_event_gets_a_well_formed_answer_from_its_hooks(name, wiki, hook):
    event = _recorded(name, wiki.path)
    for hook_type in _hooks_for(event):
        code, answer = hook(hook_type, event, wiki.path)
        assert code == 0
        if answer is not None:
            assert answer["hookSpecificOutput"]["hookEventName"] == event["hook_event_name"], answer


def test_a_failing_pytest_run_through_bash_gets_notes_on_its_assertion(wiki, hook, cli):
    """Claude Code 2.1 reports a Bash command that exits non-zero as PostToolUseFailure, its output in `error`."""
    wiki.commit("release", {"wiki/release.md": "# Release\n\n## Rollback\n\n`rollback_release` keeps the old tag.\n"})
    assert cli("index", cwd=wiki.path)[0] == 0
    event = _recorded("post_tool_use_failure_bash", wiki.path)
    assert _hooks_for(event) == ["error-context"]
    text = context_of(hook("error-context", event, wiki.path)[1])
    assert text.startswith("gitwiki notes on this error (AssertionError: rollback_release kept the old tag)")
    assert "wiki/release.md" in text


def test_the_recorded_events_are_what_the_e2e_suite_captured():
    readme = (FIXTURES / "claude_code_events/README.md").read_text()
    assert "Claude Code 2.1.332" in readme
    assert all(json.loads((FIXTURES / f"claude_code_events/{n}.json").read_text()) for n in RECORDED)
