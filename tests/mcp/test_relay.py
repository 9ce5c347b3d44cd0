"""gitwiki.mcp.relay: a later session (the owner up, no log level asked for) is a lean relay that answers as a
bridge does, and hands the session to the bridge when the owner dies, hangs, or a line is too long for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.mcp import framing, relay
from tests.helpers import ROOT, python_prints
from tests.serve.sessions import (
    HELLO,
    connected,
    drift_script,
    is_relay,
    owner_pid,
    relayed,
    sharing,
    start,
    status,
    stop,
    text,
    wait_for,
)


@pytest.fixture
def shared(repo, monkeypatch):
    yield from sharing(repo, monkeypatch)


def test_a_later_session_is_the_relay_and_answers_as_a_direct_one(shared):
    connected(shared)
    later = start(shared, level=None)
    seen = drift_script(later)
    assert is_relay(later)  # the whole script, its refusal included, went through the relay
    assert later.close() == 0
    assert seen == drift_script(start(shared, "--alone"))


def test_a_later_session_becomes_the_relay_before_the_owner_modules_imports(shared):
    """The owner up, a later session opens its session in `serve.address` and `mcp.relay` alone, then execs the
    relay: `serve.owner` and `serve.client` (pathlib, typing, json) are never imported (-X importtime lists every
    import of the process before its exec)."""
    connected(shared)
    later = start(shared, importtime=True, level=None)
    later.open()
    assert is_relay(later) and "wiki/deploy.md" in text(later.tool("ground", query="helm rollback"))
    imported = {line.split(b"|")[-1].strip().decode() for line in later.stderr if line.startswith(b"import time:")}
    assert "gitwiki.serve.address" in imported
    assert not imported & {"gitwiki.serve.owner", "gitwiki.serve.client", "gitwiki.git.gitcli"}


def test_the_relay_loads_no_module_of_the_bridges():
    """What it is for: a later session without typing, json, re, threading, pathlib and the rest (1.9, 1.3, 0.85 MiB…)."""
    script = f"import sys; sys.path.append({str(ROOT)!r}); import gitwiki.mcp.relay; print(*sorted(sys.modules))"
    loaded = set(python_prints(script, "-I", "-S"))
    assert "gitwiki.mcp.relay" in loaded
    assert not loaded & {"typing", "json", "re", "threading", "pathlib", "collections", "enum", "signal", "socket"}


def test_a_later_sessions_way_to_the_relay_loads_no_typing_json_or_re():
    """What `gitwiki serve` imports before its exec when the owner is up (`cli.serve_bridged`, `_relay_at_once`):
    none of typing, json or re (with enum and collections, 3-8 ms of a later session's start)."""
    modules = "gitwiki.cli, gitwiki.mcp.logs, gitwiki.mcp.relay, gitwiki.serve.address, gitwiki.serve.wire"
    script = f"import sys; sys.path.append({str(ROOT)!r}); import {modules}; print(*sorted(sys.modules))"
    loaded = set(python_prints(script, "-I", "-S"))
    assert "gitwiki.cli" in loaded
    assert not loaded & {"typing", "json", "re", "enum", "pathlib", "gitwiki.serve.owner", "gitwiki.serve.client"}


def test_serve_relay_0_keeps_a_later_session_the_bridge_and_bridged(shared, monkeypatch):
    connected(shared)
    monkeypatch.setenv("GITWIKI_SERVE_RELAY", "0")
    later = start(shared, level=None)
    later.open()
    assert "wiki/deploy.md" in text(later.tool("ground", query="helm rollback"))
    assert not is_relay(later) and status(shared[0].path)["sessions"] == 2  # the owner's session, not one alone


def test_the_session_that_started_the_owner_goes_on_in_the_relay_once_quiet(shared):
    repo, _ = shared
    first = start(shared, level=None)  # no owner yet: a bridge, which starts one and answers the opening
    first.open()
    tools = first.call("tools/list")
    answer = first.tool("ground", query="helm rollback")
    pid = owner_pid(repo.path)
    wait_for(lambda: is_relay(first), "the session to go on in the relay")
    assert first.call("tools/list") == {**tools, "id": tools["id"] + 2}
    assert text(first.tool("ground", query="helm rollback")) == text(answer)
    stop(pid)
    out = first.request("tools/call", {"name": "ground", "arguments": {"query": "helm rollback"}})
    time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    assert text(first.answer(out)) == text(answer)  # asked again of a new owner, by the bridge again
    assert owner_pid(repo.path) != pid and not is_relay(first)
    assert not Path(f"/proc/{pid}").exists()  # the killed owner, the session's child, reaped: no zombie
    assert first.close() == 0


def test_a_read_out_when_the_owner_dies_is_asked_again_and_the_relay_hands_over(shared):
    repo, _ = shared
    later, pid = relayed(shared)
    stop(pid)
    out = later.request("tools/call", {"name": "ground", "arguments": {"query": "helm rollback"}})
    time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    assert "wiki/deploy.md" in text(later.answer(out))
    assert owner_pid(repo.path) != pid and not is_relay(later)  # the bridge took the session over
    assert "helm rollback" in text(later.tool("read_markdown", path="wiki/deploy.md"))
    assert later.close() == 0


def test_a_slow_owner_that_answers_its_status_keeps_the_session_in_the_relay(shared):
    later, pid = relayed(shared)
    stop(pid)
    try:
        out = later.request("tools/call", {"name": "ground", "arguments": {"query": "helm rollback"}})
        time.sleep(relay.PROBE_EVERY + 1)  # the relay's status request waits too
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "wiki/deploy.md" in text(later.answer(out))
    assert is_relay(later)  # the owner answered its status: at work, not hung, and nothing handed over
    assert later.close() == 0


def test_a_line_too_long_for_the_relay_goes_to_the_bridge_which_refuses_it(shared):
    later, _ = relayed(shared)
    assert later.process.stdin is not None
    head = b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"ground","arguments":{"query":"'
    later.process.stdin.write(head + b"x" * (framing.MAX_LINE + relay.MAX_HELD) + b'"}}}\n')
    later.process.stdin.flush()
    assert later.answer("huge")["error"] == {"code": framing.INVALID_REQUEST, "message": framing.TOO_LONG}
    assert "wiki/deploy.md" in text(later.tool("ground", query="helm rollback"))
    assert later.close() == 0


def test_a_session_whose_whole_input_comes_at_once_gets_every_answer(shared):
    """The console script's form, its input and its end in one write: the answers are written before the relay
    ends (it ended once as the other thread was writing them, and the client got none)."""
    repo, _ = shared
    connected(shared)
    opening = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in opening)
    for _ in range(10):
        done = subprocess.run(
            [sys.executable, "-P", "-m", "gitwiki", "serve"],
            input=lines,
            capture_output=True,
            cwd=repo.path,
            timeout=60,
        )
        assert done.returncode == 0 and [json.loads(line)["id"] for line in done.stdout.splitlines()] == [0, 1]


SLOW_CLIENT = """
import os, socket, sys, threading, time
sys.path.insert(0, ROOT)
from gitwiki.mcp import relay

ours, owners = socket.socketpair()
stdin_r, stdin_w = os.pipe()
stdout_r, stdout_w = os.pipe()
os.dup2(stdin_r, 0)
os.dup2(stdout_w, 1)
os.write(stdin_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
os.close(stdin_w)  # the whole input, and its end, at once
threading.Thread(target=lambda: (owners.recv(4096), owners.sendall(b'{"jsonrpc":"2.0","id":1,"result":{}}\\n'))).start()
write = os.write
def slow(fd, data):  # the thread writing the answer is descheduled before its write
    if fd == 1:
        time.sleep(0.2)
    return write(fd, data)
os.write = slow
relay.Relay(ours.fileno(), "/tmp", ["false"], "/nonexistent").run()
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
os.close(stdout_w)
sys.stderr.write(os.read(stdout_r, 4096).decode())
"""


def test_the_relay_ends_only_once_the_answers_taken_are_written():
    """It ended once while the other thread was writing the last answers, and the client got none."""
    script = SLOW_CLIENT.replace("ROOT", repr(str(ROOT)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stderr == '{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_answers_due_when_the_input_ends_are_still_given(shared):
    later, _ = relayed(shared)
    asked = [later.request("tools/call", {"name": "ground", "arguments": {"query": q}}) for q in ("helm", "deploy")]
    assert later.process.stdin is not None
    later.process.stdin.close()
    assert all("result" in later.answer(id_) for id_ in asked)
    assert later.process.wait(timeout=30) == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_message_takes_any_line_and_reads_objects_as_json_does(line):
    found = relay.message(line)
    try:
        expected = json.loads(line)
    except (ValueError, RecursionError):
        expected = None
    if isinstance(expected, dict):
        assert json.dumps(found) == json.dumps(expected)  # (NaN is not equal to itself)
    elif found is not None:  # the scanner reads the first value only: `{} x` is {} (the owner refuses the line)
        assert isinstance(found, dict) and line.lstrip(b" \t\r\n")[:1] == b"{"


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
            lambda inner: st.lists(inner) | st.dictionaries(st.text(max_size=8), inner),
            max_leaves=10,
        ),
    )
)
def test_message_reads_every_json_object_as_json_does(value):
    assert relay.message(json.dumps(value).encode() + b"\n") == value


@pytest.mark.parametrize("value", ["", "x", "1", "999 3", "-1 -1"])
def test_a_resume_variable_set_by_hand_is_ignored(monkeypatch, value):
    monkeypatch.setenv(relay.RESUME, value)
    assert relay.handover() is None and relay.RESUME not in os.environ


lines = st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" ") + b"\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(lines, max_size=4), st.lists(lines, max_size=4), st.binary(max_size=80), st.binary(max_size=80))
def test_the_state_a_relay_hands_over_reads_back_whole(opening, pending, held, answers):
    kept = relay.Relay(7, "/nonexistent", ["python"], "/nonexistent")
    kept._opening = list(opening)
    now = time.monotonic()
    kept._pending = {str(i): (line, now - i) for i, line in enumerate(pending)}
    kept._held, kept._answers = held, answers
    handed = relay.parse(kept.state(), 7)
    assert (handed.opening, handed.held, handed.answers, handed.sock) == (opening, held, answers, 7)
    assert [line for line, _ in handed.pending] == pending
    assert all(i <= age < i + 60 for i, (_, age) in enumerate(handed.pending))


def test_a_broken_line_in_the_relays_own_process_is_left_to_the_owner():
    """The relay's interpreter never imports json: `{not json` was a SystemError that ended the relay, and a
    session sending it with its initialize got no answer at all. It goes to the owner, which answers -32700."""
    from tests.helpers import python_prints

    code = (
        "import sys\n"
        "from gitwiki.mcp import relay\n"
        "print('json' in sys.modules, relay.message(b'{not json'), relay.message(b'{\"id\": 3}'))\n"
    )
    assert python_prints(code) == ["False", "None", "{'id':", "3}"]
