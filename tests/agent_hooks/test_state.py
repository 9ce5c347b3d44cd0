"""Session state shared by the copies of a hook: the plugin's hooks and `gitwiki hooks install`'s together."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gitwiki.agent_hooks import state
from tests.agent_hooks.helpers import context_of, load


def test_the_second_copy_of_an_event_stays_silent_in_either_order(wiki, hook):
    """The plugin registers `gitwiki-hook TYPE`, an install may write the CLI form or another path: whichever
    copy runs first answers, the other, on the same stdin, says nothing."""
    for first_cli, session in ((False, "plugin-first"), (True, "settings-first")):
        event = json.dumps(load("session_start", wiki.path, session_id=session)).encode()
        assert "corpus wiki (wiki/)" in context_of(hook("session", event, wiki.path, cli=first_cli)[1])
        assert hook("session", event, wiki.path, cli=not first_cli) == (0, None)
        prompt = json.dumps(load("user_prompt_submit", wiki.path, session_id=session)).encode()
        assert hook("prompt", prompt, wiki.path, cli=first_cli)[1] is not None
        assert hook("prompt", prompt, wiki.path, cli=not first_cli) == (0, None)


def test_the_same_event_is_answered_again_after_the_window(wiki, hook, monkeypatch):
    event = json.dumps(load("session_start", wiki.path, session_id="later")).encode()
    assert hook("session", event, wiki.path)[1] is not None
    real = state.time.time
    monkeypatch.setattr(state.time, "time", lambda: real() + state.DUPLICATE_WINDOW + 1)
    assert hook("session", event, wiki.path)[1] is not None


def test_other_hook_types_on_the_same_event_are_not_copies(wiki, hook):
    event = load("pre_tool_use_edit", wiki.path, session_id="types")
    hook("ambient", event, wiki.path)
    assert hook("approve-mcp", event, wiki.path) == (0, None)  # not a gitwiki tool: no answer either way
    other = json.dumps(load("session_start", wiki.path, session_id="types")).encode()
    assert hook("session", other, wiki.path)[1] is not None


def test_two_processes_started_together_answer_once(wiki):
    """As Claude Code runs them: two `gitwiki-hook session` processes on one event at the same time."""
    event = json.dumps(load("session_start", wiki.path, session_id="parallel")).encode()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gitwiki.agent_hooks", "session"],
            cwd=wiki.path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(event, timeout=60)[0] for p in procs]
    assert sorted(bool(o.strip()) for o in outs) == [False, True]


def test_the_same_json_after_the_transcript_grew_is_a_new_event(wiki, hook, tmp_path):
    """A Stop after another short turn can carry the same JSON: the transcript has grown since."""
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "user"}\n')
    event = load("session_start", wiki.path, session_id="grown", transcript_path=str(transcript))
    assert hook("session", event, wiki.path)[1] is not None
    assert hook("session", event, wiki.path) == (0, None)
    with transcript.open("a") as f:
        f.write('{"type": "assistant"}\n')
    assert hook("session", event, wiki.path)[1] is not None
