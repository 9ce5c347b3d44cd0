"""The owner's side of a hook that `gitwiki-hook` sends it (serve/hooks.py): checked, started only while the hook
waits, said to be started before it runs, and declined in any shape this version does not know (the hook then
answers by itself; tests/agent_hooks/test_forward.py drives the whole exchange)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks.run import served
from gitwiki.serve import hooks as serve_hooks


def test_the_owner_does_not_start_a_hook_that_gave_up(tmp_path):
    ran, sent = [], []
    message = {"hook": "session", "event": "{}", "cwd": str(tmp_path), "by": time.time() - 0.1}
    reply = serve_hooks.answer(message, lambda m: None, lambda *a: ran.append(a) or "", sent.append)
    assert reply == {"declined": "too late"} and ran == [] and sent == []


def test_the_owner_says_it_started_before_it_runs_the_hook_and_not_for_a_hook_gone(tmp_path):
    events: list[object] = []
    message = {"hook": "session", "event": "{}", "cwd": str(tmp_path), "by": time.time() + 5}
    reply = serve_hooks.answer(message, lambda m: None, lambda *a: events.append("ran") or "", events.append)
    assert events == [serve_hooks.RUNNING, "ran"] and reply == {"stdout": "", "exit_code": 0}

    def gone(line: bytes) -> None:
        raise BrokenPipeError

    events.clear()
    with pytest.raises(OSError):  # the connection's end: the server drops it
        serve_hooks.answer(message, lambda m: None, lambda *a: events.append("ran") or "", gone)
    assert events == []


@pytest.mark.parametrize(
    "changes",
    [{"hook": 3}, {"event": None}, {"cwd": ["/"]}, {"cwd": "/\0"}, {"by": "soon"}, {"hook": "no-such-hook"}],
)
def test_a_hook_request_of_another_shape_is_declined(tmp_path, changes):
    message = {"hook": "session", "event": "{}", "cwd": str(tmp_path), "by": time.time() + 5, **changes}
    reply = serve_hooks.answer(message, lambda m: None, served, lambda line: None)
    assert set(reply) == {"declined"}


def test_a_hook_the_server_refuses_is_not_run(tmp_path):
    ran: list[object] = []
    message = {"hook": "session", "event": "{}", "cwd": str(tmp_path), "by": time.time() + 5}
    reply = serve_hooks.answer(message, lambda m: "another environment", lambda *a: ran.append(a) or "", ran.append)
    assert reply == {"declined": "another environment"} and ran == []
    assert serve_hooks.answer(message, lambda m: None, None, ran.append) == {"declined": "this server runs no hooks"}
    assert ran == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200)
@given(
    st.fixed_dictionaries(
        {},
        optional={"hook": JSON | st.sampled_from(["session", "stop"]), "event": JSON, "cwd": JSON, "by": JSON},
    )
)
def test_any_hook_request_gets_a_reply_and_runs_only_a_well_formed_one(message):
    ran: list[tuple[str, bytes, str]] = []

    def run(name: str, raw: bytes, cwd: str) -> str | None:
        ran.append((name, raw, cwd))
        return ""

    reply = serve_hooks.answer(message, lambda m: None, run, lambda line: None)
    assert reply == {"stdout": "", "exit_code": 0} or set(reply) == {"declined"}
    if ran:
        name, raw, cwd = ran[0]
        assert name == message["hook"] and raw == message["event"].encode("utf-8", "surrogatepass")
        assert cwd == message["cwd"] and "\0" not in cwd and message["by"] > time.time() - 60
