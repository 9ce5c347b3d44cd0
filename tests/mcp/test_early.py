"""`gitwiki serve` answers `initialize` before importing the MCP SDK, exactly as the SDK would, and the SDK
then serves the rest of the session over the same stdin/stdout."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki.mcp import early as mcp_early
from gitwiki.mcp import framing
from tests.helpers import LEXICAL
from tests.mcp.client import Server, initialize


def test_the_early_answer_declares_what_the_sdk_does():
    from mcp_types import version

    assert mcp_early.HANDSHAKE_VERSIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert mcp_early.LATEST_HANDSHAKE_VERSION == version.LATEST_HANDSHAKE_VERSION


def session(repo_path, *messages: dict) -> tuple[list[dict], str]:
    """Send raw JSON-RPC lines, read an answer for each request, then hang up; returns the answers and stderr."""
    server = Server(repo_path)
    server.send(*messages)
    answers = server.answers(sum("id" in m for m in messages))
    rest, stderr = server.close()  # nothing more may come: one answer per request
    return answers + rest, stderr


@pytest.mark.parametrize(("asked", "given"), [("2025-06-18", "2025-06-18"), ("1999-01-01", "2025-11-25")])
def test_initialize_is_answered_once_and_the_sdk_serves_the_rest(repo, asked, given):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    answers, stderr = session(
        repo.path,
        initialize(asked, "init-1"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "ground", "arguments": {"query": "platform", "format": "json"}},
        },
    )
    assert [a["id"] for a in answers] == ["init-1", 2, 3]  # the SDK's own initialize answer was dropped
    assert answers[0]["result"]["protocolVersion"] == given
    assert answers[0]["result"]["serverInfo"]["name"] == "gitwiki"
    assert "ground" in {t["name"] for t in answers[1]["result"]["tools"]}
    assert answers[2]["result"]["structuredContent"]["docs"][0]["path"] == "wiki/faq.md"
    assert "differs" not in stderr  # the SDK answered exactly what was sent early


def test_a_first_message_that_is_not_a_handshake_goes_to_the_sdk(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    bad = initialize("2025-06-18", 7)
    del bad["params"]["clientInfo"]
    answers, _ = session(repo.path, bad)
    assert [a["id"] for a in answers] == [7] and "error" in answers[0]


# Claude Code keeps the first 2,048 characters of a server's instructions ("Server instructions truncated from
# 2197 to 2048 chars"); 150 of them stay free for a line added at run time, such as a lexical-only notice.
CLAUDE_CODE_LIMIT = 2048
HEADROOM = 150


def test_the_instructions_fit_claude_codes_limit_with_room_to_spare(repo):
    from gitwiki.mcp import lance as mcp_lance

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    answers, _ = session(repo.path, initialize("2025-06-18"))
    sent = answers[0]["result"]["instructions"]
    for instructions in (sent, mcp_early.INSTRUCTIONS, mcp_lance.INSTRUCTIONS):
        assert len(instructions) <= CLAUDE_CODE_LIMIT - HEADROOM


def list_requests(first_id: int = 1) -> list[dict]:
    return [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(mcp_early.EARLY_METHODS, first_id)]


def test_the_shipped_early_answers_are_what_the_sdk_answers():
    """tools.json cannot go stale silently: made again from the live SDK, it must be the file shipped. When
    this fails after a change to a tool, run `python -c "from gitwiki.mcp.server import write_early_answers;
    write_early_answers()"` and commit gitwiki/mcp/tools.json."""
    from importlib.metadata import version

    from gitwiki import __version__
    from gitwiki.mcp.server import sdk_early_answers

    shipped = json.loads(mcp_early.EARLY_ANSWERS.read_text(encoding="utf-8"))
    assert (shipped["gitwiki"], shipped["mcp"]) == (__version__, version("mcp"))
    assert shipped["eras"] == sdk_early_answers() == sdk_early_answers(client="another")
    assert set(shipped["eras"][mcp_early.STATELESS_VERSION]) >= {"server/discover", "tools/list"}
    assert mcp_early.early_answers(__version__) == shipped["eras"]
    assert mcp_early.early_answers("0.0.0-other") == {}  # another version's table answers nothing
    assert mcp_early._distribution_version("mcp") == version("mcp")


@pytest.fixture
def sdk_that_never_loads(tmp_path):
    """An environment whose `import mcp` sleeps for ten minutes: whatever is answered there is answered without it."""
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp/__init__.py").write_text("import time\n\ntime.sleep(600)\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def test_the_lists_are_answered_before_the_sdk_is_loaded_and_sigint_ends_it(repo, sdk_that_never_loads):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    server = Server(repo.path, sdk_that_never_loads)
    try:
        server.send(initialize("2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send(*list_requests())
        answers = server.answers(1 + len(mcp_early.EARLY_METHODS))
    finally:
        server.process.send_signal(signal.SIGINT)  # in the middle of the SDK's import
        code = server.process.wait(timeout=30)  # the test fails here when SIGINT is ignored
    shipped = json.loads(mcp_early.EARLY_ANSWERS.read_text(encoding="utf-8"))["eras"][mcp_early.HANDSHAKE]
    assert [a["id"] for a in answers] == [0, 1, 2, 3, 4, 5]
    assert {m: a["result"] for m, a in zip(mcp_early.EARLY_METHODS, answers[1:], strict=True)} == shipped
    assert TOOL_NAMES <= {t["name"] for t in answers[1]["result"]["tools"]}
    assert code == -signal.SIGINT
    assert server.process.stderr is not None and "Traceback" not in server.process.stderr.read().decode()


TOOL_NAMES = {"ground", "read_markdown", "add_markdown", "memory_store", "memory_search"}


def ground(id_: int, query: str) -> dict:
    arguments = {"query": query, "mode": "lexical"}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": "ground", "arguments": arguments}}


def test_requests_sent_at_once_while_the_sdk_loads_each_get_one_answer(repo):
    """The burst Claude Code sends after the handshake, and calls among them: the lists are answered early, the
    calls by the SDK once it is loaded; every request exactly once, none lost and the connection never closed."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    requests = [
        initialize("2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *list_requests(1),
        ground(10, "platform"),
        *list_requests(20),
        ground(30, "team"),
        {"jsonrpc": "2.0", "id": 31, "method": "tools/list", "params": {"cursor": "x"}},  # paged: the SDK's
    ]
    answers, stderr = session(repo.path, *requests)
    ids = [a["id"] for a in answers]
    assert sorted(ids, key=str) == sorted((r["id"] for r in requests if "id" in r), key=str)
    by_id = {a["id"]: a for a in answers}
    assert by_id[1] == {**by_id[20], "id": 1}  # the same list, early or not
    assert "platform" in by_id[10]["result"]["content"][0]["text"]
    assert "faq.md" in by_id[30]["result"]["content"][0]["text"]
    assert {t["name"] for t in by_id[31]["result"]["tools"]} == {t["name"] for t in by_id[1]["result"]["tools"]}
    assert "differs" not in stderr and "Traceback" not in stderr


LONE = "\ud800"
SURROGATE_CALLS = {
    "memory_store": {"topic": "notes", "text": f"remember {LONE} this"},
    "add_markdown": {"path": "x.md", "content": f"# X\n\n{LONE}\n"},
    "ground": {"query": f"platform {LONE}"},
    "memory_search": {"query": LONE},
    "read_markdown": {"path": f"faq{LONE}.md"},
}


def test_a_lone_surrogate_in_any_request_string_is_invalid_params(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        for i, (name, arguments) in enumerate(SURROGATE_CALLS.items(), 1)
    ]
    assert all(b"\\ud800" in json.dumps(c).encode() for c in calls)  # sent as the escape, as a client would
    answers, stderr = session(repo.path, initialize("2025-06-18"), *calls, ground(9, "platform"))
    by_id = {a["id"]: a for a in answers}
    for i, name in enumerate(SURROGATE_CALLS, 1):
        error = by_id[i].get("error")
        assert error is not None and error["code"] == -32602, name
        assert "lone UTF-16 surrogate" in error["message"], name
    assert "faq.md" in by_id[9]["result"]["content"][0]["text"]  # and the server goes on
    assert not (repo.path / "wiki/x.md").exists() and not (repo.path / "wiki/memory").exists()  # nothing written
    assert "Traceback" not in stderr


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "EOF"])
def test_sigint_sigterm_or_the_end_of_stdin_end_the_server(repo, stop):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    server = Server(repo.path)
    server.send(initialize("2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"}, ground(1, "team"))
    assert [a["id"] for a in server.answers(2)] == [0, 1]  # the SDK is loaded and serving
    if stop == "EOF":
        assert server.process.stdin is not None
        server.process.stdin.close()
    else:
        server.process.send_signal(getattr(signal, stop))
    try:
        code = server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        pytest.fail(f"gitwiki serve still ran 20 s after {stop}")
    assert code == (0 if stop == "EOF" else -getattr(signal, stop))  # the shell's 0, 130 or 143
    assert server.process.stderr is not None and "Traceback" not in server.process.stderr.read().decode()


@given(st.binary(max_size=64), st.lists(st.binary(min_size=1, max_size=300), max_size=12))
def test_lines_are_the_bytes_cut_after_each_newline_however_they_arrive(start, chunks):
    """Each chunk arrives on its own read (a SOCK_SEQPACKET pair keeps the boundaries)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        for chunk in chunks:
            theirs.send(chunk)
        theirs.shutdown(socket.SHUT_WR)
        lines = list(mcp_early._lines(start, ours.fileno()))
    data = start + b"".join(chunks)
    assert b"".join(lines) == data
    assert lines == [line + b"\n" for line in data.split(b"\n")[:-1]] + (
        [data.rsplit(b"\n", 1)[-1]] * (not data.endswith(b"\n") and data != b"")
    )


@given(
    st.binary(max_size=64),
    st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    st.integers(1, 200),
)
def test_a_line_over_the_cap_comes_as_its_head_and_the_lines_after_it_are_whole(start, chunks, cap):
    """A hostile client's endless line: only its head is kept (for its id), every other line is as without a cap."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        for chunk in chunks:
            theirs.send(chunk)
        theirs.shutdown(socket.SHUT_WR)
        lines = list(mcp_early._lines(start, ours.fileno(), cap))
    data = start + b"".join(chunks)
    expected = [line + b"\n" for line in data.split(b"\n")[:-1]] + (
        [data.rsplit(b"\n", 1)[-1]] * (not data.endswith(b"\n") and data != b"")
    )
    assert len(lines) == len(expected)
    for got, line in zip(lines, expected, strict=True):
        if isinstance(got, framing.Oversized):
            # dropped only once more than `cap` bytes of it had come (a read's worth may be more)
            assert len(line.rstrip(b"\n")) > cap and line.startswith(got) and len(got) <= framing.HEAD
        else:
            assert got == line and len(line.rstrip(b"\n")) <= cap + 64 + 300


SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
TEXT = st.text(st.one_of(st.characters(), SURROGATES), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
LISTS = {"tools/list": {"tools": []}, "ping": {}}
ANSWERS = {mcp_early.HANDSHAKE: LISTS}


@given(
    st.one_of(st.integers(), TEXT),
    st.one_of(st.sampled_from([*LISTS, "tools/call"]), TEXT),
    st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, JSON, max_size=3)),
)
def test_every_request_line_is_answered_here_or_passed_on_never_an_exception(id_, method, params):
    request = {"jsonrpc": "2.0", "id": id_, "method": method, **({} if params is None else {"params": params})}
    line = json.dumps(request).encode() + b"\n"  # ASCII: a surrogate travels as its escape, as clients send it
    _, reply = mcp_early.reply_to(line, ANSWERS)
    sent = json.loads(line)  # two generated halves next to each other make one character, not two lone ones
    if any("\ud800" <= ch <= "\udfff" for ch in json.dumps(sent, ensure_ascii=False)):
        assert reply is not None and reply.endswith(b"\n")
        answer = json.loads(reply)
        assert answer["id"] == sent["id"] and answer["error"]["code"] == -32602
    elif method in LISTS and (params is None or params == {}):
        assert json.loads(reply) == {"jsonrpc": "2.0", "id": sent["id"], "result": LISTS[method]}
    elif not (params and set(params) == {"_meta"}):  # a _meta may name an era of its own
        assert reply is None  # the SDK's to answer


@given(st.binary(max_size=300))
def test_any_bytes_are_answered_or_passed_on(line):
    _, reply = mcp_early.reply_to(line, ANSWERS)
    assert reply in (None, b"") or json.loads(reply)


def test_the_stateless_era_is_answered_before_the_sdk_is_loaded(repo, sdk_that_never_loads):
    """Claude Code 2.1.332 opens with `server/discover` (protocol 2026-07-28, no `initialize`), then lists; each
    request carries its era in params._meta, and the SDK answers that era differently."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    meta = {
        "io.modelcontextprotocol/protocolVersion": mcp_early.STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
        "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
    }
    methods = ["server/discover", "tools/list", "prompts/list", "resources/list"]
    server = Server(repo.path, sdk_that_never_loads)
    try:
        server.send(*({"jsonrpc": "2.0", "id": m, "method": m, "params": {"_meta": meta}} for m in methods))
        server.send(listen(meta))  # Claude Code counts the server connected once this is acknowledged
        answers = server.answers(len(methods) + 1)
    finally:
        server.process.kill()
        server.process.wait(timeout=30)
    shipped = json.loads(mcp_early.EARLY_ANSWERS.read_text(encoding="utf-8"))["eras"][mcp_early.STATELESS_VERSION]
    assert answers[-1] == ACKNOWLEDGEMENT
    answers = answers[:-1]
    assert {a["id"]: a["result"] for a in answers} == {m: shipped[m] for m in methods}
    assert answers[0]["result"]["instructions"] == mcp_early.INSTRUCTIONS
    assert TOOL_NAMES <= {t["name"] for t in answers[1]["result"]["tools"]}


def listen(meta: dict) -> dict:
    notifications = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
    params = {"_meta": meta, "notifications": notifications}
    return {"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen", "params": params}


ACKNOWLEDGEMENT = {
    "jsonrpc": "2.0",
    "method": "notifications/subscriptions/acknowledged",
    "params": {
        "_meta": {"io.modelcontextprotocol/subscriptionId": "listen:0"},
        "notifications": {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True},
    },
}


def test_a_subscription_is_acknowledged_once_and_the_sdk_serves_the_session(repo):
    """The acknowledgement sent early is the only one: the SDK's own, for the subscription it then holds, is
    dropped; calls on the same connection are the SDK's."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    meta = {
        "io.modelcontextprotocol/protocolVersion": mcp_early.STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    call = ground(5, "platform")
    call["params"]["_meta"] = meta
    server = Server(repo.path)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}, listen(meta))
    server.send(call)
    first = server.answers(3)
    rest, stderr = server.close()
    messages = first + rest
    assert messages.count(ACKNOWLEDGEMENT) == 1
    assert sum(m.get("method") == "notifications/subscriptions/acknowledged" for m in messages) == 1
    answered = {m["id"]: m for m in messages if "id" in m}
    assert "faq.md" in answered[5]["result"]["content"][0]["text"] and "Traceback" not in stderr
