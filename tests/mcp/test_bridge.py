"""A first session's bridge answers the hooks' calls (`agent_hook`) itself until the owner it started is up
(gitwiki/mcp/bridge.py `_answer_hook`), with the hook's own code as a `gitwiki-hook` process would; every other call,
and every hook call once the owner is connected, goes to the owner."""

from __future__ import annotations

import _socket
import json
import socket
import threading

from gitwiki import __version__
from gitwiki.errors import UsageError
from gitwiki.mcp import bridge, early


class Starting:
    """An owner that is starting and never comes up: every connect finds no one yet."""

    def connect(self) -> _socket.socket | str | None:
        return None

    def start(self) -> bool:
        return False

    def alive(self, timeout: float) -> bool:
        return True

    def address(self) -> str:
        return "/nonexistent/owner.sock"

    def where(self) -> str:
        return "/nonexistent/owner.log"

    def failed(self) -> str | None:
        return None


def call(request_id: int, name: str, arguments: dict, **params) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    message["params"] = {"name": name, "arguments": arguments, **params}
    return json.dumps(message).encode() + b"\n"


def answers(capfd, count: int) -> dict:
    """The lines the bridge wrote to its stdout, by id, once `count` have come."""
    out: dict = {}
    for _ in range(200):
        out |= {m["id"]: m for m in map(json.loads, capfd.readouterr().out.splitlines())}
        if len(out) >= count:
            return out
        threading.Event().wait(0.01)
    return out


def test_before_the_owner_is_up_a_hook_call_is_answered_here_and_nothing_else_is(capfd):
    asked: list[dict] = []

    def hooks(arguments: dict) -> str:
        asked.append(arguments)
        if arguments.get("cwd") == "/elsewhere":
            raise UsageError("agent_hook answers for /repo only, not '/elsewhere'")
        return '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "notes"}}'

    session = bridge.Bridge(Starting(), early.early_answers(__version__), None, hooks=hooks)
    session.take(call(1, "agent_hook", {"type": "prompt", "prompt": "roll back"}))
    session.take(call(2, "agent_hook", {"type": "prompt", "cwd": "/elsewhere"}))
    session.take(call(3, "ground", {"query": "roll back"}))  # the owner's: it waits for it
    session.take(call(4, "agent_hook", {"type": "prompt", "prompt": 5}))  # not a call Claude Code makes: the owner's
    got = answers(capfd, 2)
    threading.Event().wait(0.2)
    got |= answers(capfd, 0)
    assert set(got) == {1, 2}  # 3 and 4 wait for the owner
    assert json.loads(got[1]["result"]["content"][0]["text"])["hookSpecificOutput"]["additionalContext"] == "notes"
    assert got[1]["result"]["isError"] is False
    assert got[2]["error"] == {"code": -32602, "message": "agent_hook answers for /repo only, not '/elsewhere'"}
    assert asked == [{"type": "prompt", "prompt": "roll back"}, {"type": "prompt", "cwd": "/elsewhere"}]


def test_once_the_owner_is_connected_hook_calls_go_to_it():
    ours, theirs = socket.socketpair()
    owner = _socket.socket(fileno=theirs.detach())
    session = bridge.Bridge(Starting(), early.early_answers(__version__), owner, hooks=lambda arguments: "here")
    session.take(call(1, "agent_hook", {"type": "prompt", "prompt": "roll back"}))
    reader = ours.makefile("rb")
    assert json.loads(reader.readline())["params"]["name"] == "agent_hook"
    ours.close()
