"""The owner's lean answers (`mcp.lean`, `mcp.session`) against the MCP SDK's own, byte for byte: for every tool and
each kind of argument case (valid, a missing required argument, a wrong type, an unknown argument) the lines a
session gets are the ones the SDK's session writes for the same requests; and the argument validator, which parses
untrusted input, never raises and never accepts what pydantic refuses."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitwiki import __version__
from gitwiki.mcp import early, lean
from gitwiki.mcp import server as mcp_server
from gitwiki.mcp.session import Sessions
from gitwiki.wiki import Wiki
from tests.helpers import DEPLOY, LEXICAL, GitRepoFixture

WAIT = 60.0
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
OPENING = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
NOTES = "# Notes\n\nA claim.[^1] And another.[^web]\n\n[^1]: The first note.\n[^web]: A named one.\n"
# Per tool: valid calls (each answered without the SDK), then cases the SDK decides (declined by the lean path).
READS: dict[str, list[dict[str, Any]]] = {
    "list_corpora": [{}, {"format": "json"}],
    "list_files": [{}, {"glob": "wiki/*.md", "format": "json"}, {"corpus": "null"}],
    "list_tree": [{}, {"depth": 1, "format": "json"}, {"path": "wiki"}],
    "ground": [
        {"query": "helm rollback"},
        {"query": "helm rollback", "format": "json", "explain": True, "top_files": 2, "mode": "lexical"},
        {"query": "helm", "corpus": ["wiki"], "snippet_chars": 40, "limit": 3, "chunks_per_file": 1},
        {"query": "nothing matches zzzq"},
    ],
    "read_markdown": [
        {"path": "wiki/deploy.md#rollback"},
        {"path": "wiki/deploy.md", "start_line": 1, "end_line": 3, "format": "json"},
        {"path": "wiki/nope.md"},  # a refusal: -32602
        {"path": "wiki/deploy.md:1-2", "start_line": 1},  # a refusal
    ],
    "outline_markdown": [{"path": "wiki/deploy.md", "format": "json"}, {"path": "deploy.md"}],
    "read_many": [
        {"paths": ["wiki/deploy.md#rollback", "wiki/notes.md"], "max_bytes": 200},
        {"paths": '["wiki/*.md"]'},
    ],
    "get_footnote": [
        {"page": "wiki/notes.md", "footnote_number": 1},
        {"page": "wiki/notes.md", "footnote_number": "web"},
    ],
    "page_history": [{"path": "wiki/deploy.md", "limit": 5, "format": "json"}],
    "memory_search": [{}, {"query": "helm", "detail": "brief", "days": 3, "mode": "or"}],
    "memory_brief": [{}, {"query": "deploys", "since": 24, "focus": "gotchas,decisions", "format": "json"}],
    "memory_read": [{"topic": "deploys"}, {"topic": "deploys", "index": 1}, {"topic": "deploys", "index": "0"}],
    "memory_topics": [{}, {"action": "stats", "format": "json"}],
    # no hook code in these servers: nothing to say; a cwd outside the checkout is refused
    "agent_hook": [{"type": "prompt", "prompt": "helm rollback", "session_id": "s"}, {"type": "stop", "cwd": "/"}],
}
# Writes, in an order that leaves the checkout as it found it (each run of them sees the same state).
WRITES: list[tuple[str, dict[str, Any]]] = [
    ("add_markdown", {"path": "wiki/new.md", "content": "# New\n\nA page.\n"}),
    ("add_markdown", {"path": "wiki/new.md", "content": "# New\n\nAgain.\n"}),  # refused: it exists
    ("add_markdown", {"path": "wiki/new.md", "content": "# New\n\nAgain.\n", "overwrite": True, "format": "json"}),
    ("delete_markdown", {"path": "wiki/new.md"}),
    ("memory_store", {"topic": "scratch", "text": "gotcha: a note", "tags": "a,b", "confidence": 1}),
    ("memory_batch", {"entries": [{"topic": "scratch", "text": "another"}], "verbose": True}),
    ("memory_edit", {"action": "delete", "topic": "scratch", "all": True}),
    ("index", {"format": "json"}),
]
# Cases the SDK decides: a missing required argument, wrong types, a coercion pydantic makes, an unknown tool.
DECLINED: list[tuple[str, dict[str, Any]]] = [
    ("ground", {}),
    ("ground", {"query": 1}),
    ("ground", {"query": "x", "top_files": "2"}),
    ("ground", {"query": "x", "top_files": 0}),
    ("ground", {"query": "x", "top_files": 2.0}),
    ("ground", {"query": "x", "explain": "yes"}),
    ("ground", {"query": "x", "mode": "fuzzy"}),
    ("read_many", {"paths": "wiki/deploy.md"}),
    ("memory_search", {"limit": True}),
    ("agent_hook", {"type": "session"}),
    ("nosuch", {}),
]
UNKNOWN: list[tuple[str, dict[str, Any]]] = [
    ("ground", {"query": "x", "limt": 1}),
    ("list_corpora", {"corpus": "wiki", "zzz": 1}),
    ("memory_search", {"qurey": "x"}),
    ("add_markdown", {"path": "wiki/x.md", "content": "# X\n", "force": True}),
]


@pytest.fixture
def wiki(repo):
    repo.commit(
        "init",
        {
            ".gitwiki.toml": LEXICAL,
            "wiki/deploy.md": DEPLOY,
            "wiki/notes.md": NOTES,
            "wiki/memory/deploys.md": "# deploys\n\n## gotcha: helm rollback needs the release name\n\n"
            "- tags: gotcha\n- at: 2026-11-01T10:00:00Z\n",
        },
    )
    wiki = Wiki.open(repo.path)
    wiki.index()
    yield wiki
    wiki.close()


def call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def talk(serve: Any, requests: list[dict[str, Any]], opening: bool = True) -> dict[Any, bytes]:
    """The answer lines (by id; a notification by its method) a session served by `serve(conn)` writes for the
    opening and `requests`, each request's line read before the next is sent."""
    ours, theirs = socket.socketpair()
    runner = threading.Thread(target=serve, args=(theirs,))
    runner.start()
    reader = ours.makefile("rb")
    answers: dict[Any, bytes] = {}
    for message in [*(OPENING if opening else []), *requests]:  # one at a time: a write's answer before the next
        ours.sendall(json.dumps(message).encode() + b"\n")
        if "id" in message:
            line = reader.readline()
            answers[json.loads(line).get("id", json.loads(line).get("method"))] = line
    reader.close()
    ours.close()
    runner.join(WAIT)
    assert not runner.is_alive()
    return answers


def sdk_serve(wiki: Wiki, serial: threading.Lock) -> Any:
    app = mcp_server.build_server(wiki, serial)

    def serve(conn: socket.socket) -> None:
        session = mcp_server.SdkSession(app, conn, threading.Lock())
        try:
            for line in early.read_lines(b"", conn.fileno()):
                session.feed(line)
        finally:
            session.close()

    return serve


def test_every_tool_is_answered_as_the_sdk_answers_it(repo, wiki, tmp_path):
    """Byte for byte, every tool: what the lean path answers, and what it leaves to the SDK. The writes go to two
    copies of one checkout, one for each path."""
    serial = threading.Lock()
    copy = Wiki.open(GitRepoFixture.copied(repo.path, tmp_path / "copy").path)
    cases = [(name, args) for name, calls in READS.items() for args in calls] + DECLINED + UNKNOWN
    schemas = early.early_answers(__version__)[early.HANDSHAKE]["tools/list"]["tools"]
    assert {t["name"] for t in schemas} <= {name for name, _ in cases + WRITES}, "a tool with no case here"
    requests = [call(i + 1, name, args) for i, (name, args) in enumerate(cases)]
    writes = [call(i + 1, name, args) for i, (name, args) in enumerate(WRITES)]
    sessions = Sessions(wiki, serial, __version__)
    through_lean = talk(sessions.serve, requests)
    through_sdk = talk(sdk_serve(wiki, serial), requests)
    tools = lean.LeanTools(sessions.bodies, schemas, serial, __version__)
    direct = [tools.answer(request) for request in requests]  # before the writes change the checkout
    written = talk(Sessions(copy, serial, __version__).serve, writes), talk(sdk_serve(wiki, serial), writes)
    copy.close()
    assert through_lean.pop(0) is not None and through_sdk.pop(0) is not None  # initialize: early's answer
    for request, (name, args) in zip(requests, cases, strict=True):
        assert through_lean[request["id"]] == through_sdk[request["id"]], (name, args)
    for request, (name, args) in zip(writes, WRITES, strict=True):
        if name == "index":  # its answer holds the time it took
            assert b'"isError":false' in written[0][request["id"]] and b'"isError":false' in written[1][request["id"]]
        else:
            ours = written[0][request["id"]].replace(str(copy.root).encode(), str(repo.path).encode())
            assert ours == written[1][request["id"]], (name, args)
    # which of them the lean path answered itself: all but the declined
    for request, answered, (name, args) in zip(requests, direct, cases, strict=True):
        assert (answered is None) == ((name, args) in DECLINED), (name, args)
        if answered is not None:
            assert answered == through_sdk[request["id"]], (name, args)


def test_a_session_that_needs_the_sdk_gets_it_with_its_opening_replayed(wiki):
    """A line the lean path does not answer starts the SDK's session: it answers that line (and later ones) as a
    session opened with the client's own initialize, whose second answer is not sent."""
    sessions = Sessions(wiki, threading.Lock(), __version__)
    requests = [
        call(1, "ground", {"query": "helm rollback"}),
        {"jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "x"}},
        call(4, "ground", {"query": 5}),
        call(5, "ground", {"query": "helm rollback"}),
    ]
    answers = talk(sessions.serve, requests)
    assert sorted(answers, key=str) == [0, 1, 2, 3, 4, 5]
    assert "error" in json.loads(answers[2])
    assert json.loads(answers[4])["result"]["isError"] is True
    assert json.loads(answers[1])["result"] == json.loads(answers[5])["result"]


def test_a_session_of_tool_calls_never_builds_the_sdks_server(wiki):
    sessions = Sessions(wiki, threading.Lock(), __version__)
    cases = [(name, args) for name, calls in READS.items() for args in calls] + UNKNOWN
    requests = [call(i + 1, name, args) for i, (name, args) in enumerate(cases)]
    requests.append({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    requests.append({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    requests.append({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    answers = talk(sessions.serve, requests)
    assert len(answers) == len(requests)  # the initialize's answer, and none to the notification
    assert sessions._app is None


def test_the_stateless_era_is_answered_as_the_sdk_answers_it(wiki):
    """Claude Code's era (no initialize; each request names its version in `_meta`): its calls and its
    subscription, byte for byte as the SDK's session writes them."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": early.STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "L",
        "method": early.LISTEN,
        "params": {"_meta": meta, "notifications": early.LISTENED},
    }
    cases = [("ground", {"query": "helm rollback"}), ("ground", {"query": "helm", "format": "json"})]
    cases += [("read_markdown", {"path": "wiki/nope.md"}), ("ground", {"query": "x", "limt": 1})]
    requests = [listen] + [
        {**call(i + 1, name, args), "params": {"name": name, "arguments": args, "_meta": meta}}
        for i, (name, args) in enumerate(cases)
    ]
    serial = threading.Lock()
    sessions = Sessions(wiki, serial, __version__)
    through_lean = talk(sessions.serve, requests, opening=False)
    assert sessions._app is None
    assert through_lean == talk(sdk_serve(wiki, serial), requests, opening=False)
    assert len(through_lean) == len(requests)  # the acknowledgement, and an answer to each call


def test_a_call_the_lean_path_is_not_sure_of_is_the_sdks(wiki):
    schemas = early.early_answers(__version__)[early.HANDSHAKE]["tools/list"]["tools"]
    tools = lean.LeanTools(lean.tool_bodies(wiki), schemas, threading.Lock(), __version__)
    message = call(1, "ground", {"query": "helm"})
    assert tools.answer(message) is not None
    assert tools.answer(message, opened=False) is None  # a handshake-era call before initialize
    odd = {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    assert tools.answer({**message, "params": {**message["params"], "_meta": odd}}) is None
    assert tools.answer({**message, "params": {**message["params"], "_meta": {"progressToken": 3}}}) is not None
    assert tools.answer({**message, "params": {**message["params"], "task": {}}}) is None


# ---- the validator against pydantic's own validation (the SDK's argument models)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
JSONISH = JSON | st.sampled_from(["null", "[]", '["a"]', "{}", "1", "true", "[1", "hybrid", "json", "text"])


def fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values near what a parameter's schema allows: its members, bounds and enums (and their near misses)."""
    if "anyOf" in schema:
        return st.one_of([fitting(member) for member in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from([*schema["enum"], "other"])
    kind = schema.get("type")
    low = schema.get("minimum", schema.get("exclusiveMinimum", -3))
    high = schema.get("maximum", schema.get("exclusiveMaximum", low + 6))
    if kind == "integer":
        return st.integers(int(low) - 1, int(high) + 1) | st.floats(low - 1, high + 1) | st.booleans()
    if kind == "number":
        return st.floats(low - 1, high + 1) | st.integers(int(low) - 1, int(high) + 1) | st.booleans()
    if kind == "array":
        return st.lists(fitting(schema.get("items", {})) | JSON, max_size=3)
    if kind == "object":
        return st.dictionaries(st.text(max_size=3), JSON, max_size=2)
    if kind == "string":
        return st.text(max_size=6) | st.integers(0, 3)
    return JSON


@pytest.fixture(scope="module")
def models():
    """Each tool's validator and the SDK's argument model for it."""
    app = mcp_server.build_server(None, threading.Lock())  # type: ignore[arg-type]
    manager = app._tool_manager
    schemas = early.early_answers(__version__)[early.HANDSHAKE]["tools/list"]["tools"]
    return {t["name"]: (lean.Validator(t["name"], t["inputSchema"]), manager.get_tool(t["name"])) for t in schemas}


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_validator_accepts_only_what_pydantic_accepts_and_as_pydantic_gives_it(models, data):
    from pydantic import ValidationError

    name = data.draw(st.sampled_from(sorted(models)))
    validator, tool = models[name]
    arguments = {
        key: data.draw(JSONISH if data.draw(st.integers(0, 3)) == 3 else fitting(schema))
        for key, schema in validator.properties.items()
        if key in validator.required or data.draw(st.booleans())
    }
    if data.draw(st.integers(0, 9)) == 9:
        arguments["zz"] = data.draw(JSONISH)
    checked = validator.check(arguments)  # never raises
    event("refused" if isinstance(checked, lean.Refused) else "the SDK's" if checked is None else "accepted")
    if isinstance(checked, lean.Refused):
        assert set(arguments) - set(validator.properties)
        return
    if checked is None:
        return  # the SDK decides
    try:
        theirs = tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as e:
        raise AssertionError(f"{name} {arguments!r}: accepted here, refused by pydantic: {e}") from None
    for key, value in checked.items():
        assert type(value) is type(theirs[key]) and value == theirs[key], (name, key, value, theirs[key])


def _pre_parse_json(value: str) -> Any:
    """The SDK's `pre_parse_json` for one string argument, as lean's fast path must keep it."""
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return value
    return value if isinstance(parsed, str | int | float) else parsed


@given(
    st.text(' \t\n\r[]{}tfnrueals0123456789.-",:Ex\ufeff', max_size=12)
    | st.sampled_from([" null", "\ttrue", "false", "[1]", ' {"a": 1}', "nan", "NaN", "lexical", "no", "-1", "1e5"])
)
def test_a_string_for_a_json_parameter_is_pre_parsed_as_the_sdk_does(value):
    schema = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
    assert lean._pre_parsed(schema, value) == _pre_parse_json(value)
    assert type(lean._pre_parsed(schema, value)) is type(_pre_parse_json(value))
