"""Every line a client sends over stdio gets what JSON-RPC 2.0 asks: each message carrying an id exactly one
answer, a notification none, and the server reads on. `mcp.framing` alone, then the real `gitwiki serve`."""

from __future__ import annotations

import json
import os
import queue
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.mcp import framing
from tests.helpers import LEXICAL, GitRepoFixture, peak_rss
from tests.mcp.client import Server, initialize


def request(id_: object, method: object = "ping", **more: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, **more}


def line(message: object) -> bytes:
    return json.dumps(message).encode()


DEEP = "[" * 1200 + "]" * 1200
# What the trial found unanswered on 26d4724, and its neighbours: the line, then (id, code) of each answer.
CASES: dict[str, tuple[bytes, list[tuple[object, int]]]] = {
    "not JSON": (b"hello", [(None, -32700)]),
    "a batch": (b"[" + line(request(4)) + b"," + line(request(5, "tools/list")) + b"]", [(4, -32600), (5, -32600)]),
    "an empty batch": (b"[]", [(None, -32600)]),
    "a batch of notifications": (b"[" + line({"jsonrpc": "2.0", "method": "notifications/x"}) + b"]", []),
    "no method": (line({"jsonrpc": "2.0", "id": 6}), [(6, -32600)]),
    "params as a list": (line(request(7, "tools/call", params=[1, 2])), [(7, -32602)]),
    "arguments 1,200 deep": (
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ground","arguments":{"a":'
        + DEEP.encode()
        + b"}}}",
        [(8, -32602)],
    ),
    "arguments 150 deep": (
        line(request(9, "tools/call", params={"a": json.loads("[" * 150 + "]" * 150)})),
        [(9, -32602)],
    ),
    "a trailing NUL": (line(request(10)) + b"\x00", [(10, -32700)]),
    "two objects on one line": (line(request(11)) + line(request(12)), [(11, -32700), (12, -32700)]),
    "a line cut short": (line(request(13, "tools/call", params={"name": "ground"}))[:-5], [(13, -32700)]),
    "not UTF-8": (line(request(14, params={"q": "caf"})).replace(b"caf", b"caf\xe9"), [(14, -32700)]),
    "UTF-16": (line(request(15)).decode().encode("utf-16-le"), [(None, -32700)]),
    "jsonrpc 1.0": (line({"jsonrpc": "1.0", "id": 16, "method": "ping"}), [(16, -32600)]),
    "an id that is true": (line(request(True)), [(None, -32600)]),
    "an id with a fraction": (line(request(1.5)), [(1.5, -32600)]),
    "an id of null": (line(request(None)), [(None, -32600)]),
    "a method that is a number": (line(request(17, 5)), [(17, -32600)]),
    "a lone surrogate": (b'{"jsonrpc":"2.0","id":18,"method":"ping","params":{"q":"\\ud800"}}', [(18, -32602)]),
    "an integer of 5,000 digits": (
        b'{"jsonrpc":"2.0","id":19,"method":"ping","params":{"n":' + b"1" * 5000 + b"}}",
        [(19, -32700)],
    ),
    "a JSON string": (b'"ping"', [(None, -32600)]),
    "a notification with params as a list": (line({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]}), []),
    "a malformed response": (line({"jsonrpc": "2.0", "id": 20, "result": 5}), []),
    "whitespace": (b"  \t ", []),
}


@pytest.mark.parametrize("case", CASES)
def test_each_malformed_line_is_answered_by_id_here(case):
    sent, expected = CASES[case]
    checked = framing.check(sent)
    assert checked.message is None  # never reaches the SDK
    assert checked.reply == b"" or checked.reply.endswith(b"\n")
    assert [(a["id"], a["error"]["code"]) for a in answers_in(checked.reply)] == expected


def answers_in(reply: bytes) -> list[dict[str, Any]]:
    """The answers in what was written back: lines of objects, or of arrays of them (a batch's)."""
    out: list[dict[str, Any]] = []
    for written in reply.splitlines():
        value = json.loads(written)
        out += value if isinstance(value, list) else [value]
    return out


SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
TEXT = st.text(st.one_of(st.characters(), SURROGATES), max_size=10)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=16
)
IDS = st.integers() | st.text(max_size=12) | SCALARS | JSON
METHODS = st.sampled_from(["ping", "tools/call", "tools/list", "initialize", "notifications/initialized"]) | JSON


def nested(depth: int, value: object) -> object:
    for _ in range(depth):
        value = [value]
    return value


MESSAGES = st.builds(
    lambda fields, depth: {**fields, **({"params": {"deep": nested(depth, 1)}} if depth else {})},
    st.fixed_dictionaries(
        {},
        optional={
            "jsonrpc": st.just("2.0") | JSON,
            "id": IDS,
            "method": METHODS,
            "params": st.dictionaries(TEXT, JSON, max_size=4) | JSON,
            "result": st.dictionaries(TEXT, JSON, max_size=3) | JSON,
            "error": st.fixed_dictionaries({"code": st.integers(), "message": TEXT}) | JSON,
            "extra": JSON,
        },
    ),
    st.sampled_from([0, 0, 0, 95, 97, 98, 99, 150, 199, 250]),
)


def usable(id_: object) -> bool:
    return isinstance(id_, str | int) and not isinstance(id_, bool)


# 100 a run: each example runs the SDK's pydantic parser (about 50 ms); the 24 hand-built cases pin the known ones.
@settings(max_examples=100, deadline=None)
@given(st.one_of(MESSAGES, st.lists(MESSAGES, max_size=3), JSON))
def test_what_is_passed_on_the_sdk_takes_as_sent_and_every_id_refused_is_answered(value):
    """Against the SDK's own parser: a line passed on is one it validates as the same kind of message with the
    same id (so the SDK answers it); a line refused is answered under each usable id it carries."""
    import mcp_types

    sent = json.dumps(value).encode()  # ASCII: a surrogate travels as its escape, as clients send it
    value = json.loads(sent)  # as received: two generated halves side by side are one character
    checked = framing.check(sent)
    answered = [a["id"] for a in answers_in(checked.reply)]
    messages = value if isinstance(value, list) else [value]
    carried = Counter(json.dumps(m["id"]) for m in messages if isinstance(m, dict) and usable(m.get("id")))
    for id_, count in Counter(json.dumps(i) for i in answered if usable(i)).items():
        assert count <= carried[id_]  # never two answers for one message
    if checked.message is not None:
        assert not checked.reply and checked.line.endswith(b"\n") and b"\r" not in checked.line
        assert checked.line.count(b"\n") == 1
        # as the SDK's stdin reads it: UTF-8 text, replacement characters for what is not
        parsed = mcp_types.jsonrpc_message_adapter.validate_json(checked.line.decode("utf-8", "replace"), by_name=False)
        assert isinstance(value, dict)
        if "method" in value:
            kind = mcp_types.JSONRPCRequest if "id" in value else mcp_types.JSONRPCNotification
            assert isinstance(parsed, kind)
        if "id" in value:
            assert parsed.id == value["id"]
        return
    for message in messages:
        if not isinstance(message, dict) or not usable(message.get("id")):
            continue
        is_response = "method" not in message and ("result" in message or "error" in message)
        if is_response:
            assert message["id"] not in answered or message.get("jsonrpc") != "2.0"
        elif isinstance(value, dict) or "method" in message:
            assert message["id"] in answered  # a request refused (alone or in a batch) is told why, by its id


@given(st.binary(max_size=300))
def test_any_bytes_get_at_most_an_answer_per_line_of_json_never_an_exception(data):
    checked = framing.check(data)
    assert checked.message is None or checked.line.endswith(b"\n")
    for answer in answers_in(checked.reply):
        assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] in (-32700, -32600, -32602)


class Session:
    """One `gitwiki serve` for the module, its answers gathered by id as they come; `exchange` writes raw bytes
    and waits for the ids expected."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.by_id: Counter[str] = Counter()
        self.answers: list[dict[str, Any]] = []
        self.pings = 0

    def _take(self, timeout: float) -> None:
        try:
            written = self.server.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no answer within {timeout} s; the last ones: {self.answers[-3:]}")
        assert written, f"the server closed stdout: {self.server.process.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
        for answer in answers_in(written):
            self.answers.append(answer)
            self.by_id[json.dumps(answer.get("id"))] += 1

    def exchange(self, raw: bytes, expected: list[object], timeout: float = 60) -> list[dict[str, Any]]:
        """Send `raw` as one line, then a ping: returns the answers that came before the ping's, after waiting
        for every id in `expected` (answers of the SDK may come after the ping's)."""
        self.pings += 1
        ping = f"alive-{self.pings}"
        start = len(self.answers)
        assert self.server.process.stdin is not None
        self.server.process.stdin.write(raw + b"\n" + line(request(ping)) + b"\n")
        self.server.process.stdin.flush()
        while self.by_id[json.dumps(ping)] == 0 or any(self.by_id[json.dumps(i)] == 0 for i in expected):
            self._take(timeout)
        assert self.by_id[json.dumps(ping)] == 1  # alive, and reading on
        return [a for a in self.answers[start:] if a.get("id") != ping]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("framing")
    (root / "repo").mkdir()
    repo = GitRepoFixture(root / "repo")
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    env = {**os.environ, "XDG_CONFIG_HOME": str(root / "xdg"), "XDG_CACHE_HOME": str(root / "cache")}
    env["GITWIKI_SERVE_ALONE"] = "1"  # as every test's (tests.helpers.isolate): an owner would outlive the module
    server = Server(repo.path, env)
    server.send(initialize("2025-06-18", "init"), {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert server.answers(1)[0]["id"] == "init"
    yield Session(server)
    rest, stderr = server.close()
    assert "Traceback" not in stderr, stderr[-3000:]


@pytest.mark.parametrize("case", CASES)
def test_the_server_answers_each_malformed_line_by_id_and_reads_on(session, case):
    sent, expected = CASES[case]
    got = session.exchange(sent, [i for i, _ in expected if i is not None])
    assert [(a["id"], a["error"]["code"]) for a in got] == expected


def test_a_good_call_after_the_malformed_lines_is_served(session):
    call = request("after", "tools/call", params={"name": "ground", "arguments": {"query": "platform"}})
    got = session.exchange(line(call), ["after"])
    answer = next(a for a in session.answers if a.get("id") == "after")
    assert "faq.md" in answer["result"]["content"][0]["text"] and got is not None


def test_a_line_over_64_mib_is_refused_by_its_id_without_being_kept(session):
    """A client (or a page it was talked into writing) sending an endless line made the server keep all of it."""
    head = b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"ground","arguments":{"query":"'
    raw = head + b"x" * (3 * framing.MAX_LINE) + b'"}}}'
    before = peak_rss(session.server.process.pid)
    got = session.exchange(raw, ["huge"])
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in got] == [
        ("huge", framing.INVALID_REQUEST, framing.TOO_LONG)
    ]
    assert peak_rss(session.server.process.pid) - before < 1.5 * framing.MAX_LINE  # not the line's 192 MiB


ARGUMENTS = st.dictionaries(
    st.sampled_from(["query", "path", "corpus", "glob", "limit", "mode", "page"]), JSON, max_size=3
)
READ_TOOLS = ["ground", "list_corpora", "list_files", "read_markdown", "outline_markdown", "get_footnote", "nosuch"]
LIVE_PARAMS = st.one_of(
    st.none(),
    JSON,
    st.builds(
        lambda name, arguments: {"name": name, "arguments": arguments}, st.sampled_from(READ_TOOLS), ARGUMENTS | JSON
    ),
    st.builds(
        lambda depth: {"name": "ground", "arguments": {"query": "x", "deep": nested(depth, 1)}}, st.integers(90, 1100)
    ),
)
LIVE_METHODS = st.sampled_from(["ping", "tools/call", "tools/list", "resources/read", "prompts/get", "no/such"]) | JSON


@st.composite
def live_lines(draw, serial=[0]):  # noqa: B006  (a counter across examples: every id unique in the session)
    """(line, ids that must be answered, ids that may be): one message per line, several, a batch, trailing bytes,
    a cut, or random bytes."""

    def message():
        serial[0] += 1
        id_ = f"h{serial[0]}"
        fields = draw(st.fixed_dictionaries({}, optional={"id": st.just(id_), "params": LIVE_PARAMS, "extra": JSON}))
        return {"jsonrpc": draw(st.just("2.0") | JSON), "method": draw(LIVE_METHODS), **fields}

    shape = draw(st.sampled_from(["one", "one", "two", "batch", "trailing", "cut", "bytes"]))
    messages = [message() for _ in range({"two": 2, "batch": draw(st.integers(0, 3))}.get(shape, 1))]
    ids = [m["id"] for m in messages if "id" in m]
    text = b"".join(map(line, messages))
    if shape == "batch":
        text = b"[" + b",".join(map(line, messages)) + b"]"
    elif shape == "trailing":
        text += draw(st.binary(min_size=1, max_size=8).filter(lambda b: b"\n" not in b and b"{" not in b))
    elif shape == "cut":
        return text[: draw(st.integers(0, max(len(text) - 1, 0)))], [], ids
    elif shape == "bytes":
        return draw(st.binary(max_size=200).filter(lambda b: b"\n" not in b)), [], []
    return text, ids, ids


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(live_lines())
def test_random_lines_each_id_answered_once_and_the_server_alive(session, sent):
    raw, must, may = sent
    session.exchange(raw, must)
    for id_ in may:
        assert session.by_id[json.dumps(id_)] <= 1


def test_no_id_was_answered_twice(session):
    """Run last in the module: an answer that came late, after its example, counts here."""
    session.exchange(b"", [])
    twice = {id_: n for id_, n in session.by_id.items() if n > 1 and id_ != "null"}
    assert not twice


@pytest.mark.slow  # a LanceDB export, then `gitwiki serve` on it
def test_the_shared_index_server_checks_every_line_too(repo, cli, tmp_path):
    """`gitwiki serve` from a LanceDB table (no checkout) ran the SDK on stdin directly: the same lines went
    unanswered there. It gets the line check, and none of the checkout server's early answers."""
    uri = tmp_path / "lance"
    config = LEXICAL + f'[storage]\nuri = "{uri}"\n'
    repo.commit("wiki", {".gitwiki.toml": config, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    assert cli("lance", "export", cwd=repo.path)[0] == 0
    reader = tmp_path / "reader"
    reader.mkdir()
    (reader / ".gitwiki.toml").write_text(config)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    server = Server(reader, env)
    server.send(initialize("2025-06-18", "init"), {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert server.answers(1)[0]["id"] == "init"
    session = Session(server)
    for case in ("a batch", "params as a list", "arguments 1,200 deep", "a trailing NUL", "not JSON"):
        sent, expected = CASES[case]
        got = session.exchange(sent, [i for i, _ in expected if i is not None])
        assert [(a["id"], a["error"]["code"]) for a in got] == expected, case
    call = request("after", "tools/call", params={"name": "ground", "arguments": {"query": "platform"}})
    session.exchange(line(call), ["after"])
    answer = next(a for a in session.answers if a.get("id") == "after")
    assert "faq.md" in answer["result"]["content"][0]["text"]
    tools = session.exchange(line(request("tools", "tools/list")), ["tools"])
    listed = next(a for a in session.answers if a.get("id") == "tools")
    assert {t["name"] for t in listed["result"]["tools"]} == {"ground", "list_corpora"} and tools is not None
    _, stderr = server.close()
    assert "Traceback" not in stderr
