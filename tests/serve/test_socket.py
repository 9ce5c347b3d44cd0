"""`gitwiki ground` asks a running `gitwiki serve` of the same checkout over its unix socket, gets exactly what
it would have printed by itself, and answers by itself whenever the server cannot answer for it."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.operations.ground import GroundRequest
from gitwiki.serve import address
from gitwiki.serve import client as serve_client
from gitwiki.serve.server import SocketServer
from gitwiki.wiki import Wiki
from tests.helpers import DEPLOY, LEXICAL, needs_model, socket_server

FAQ = "# FAQ\n\nAsk the platform team about access.\n"
WAIT = 60.0  # generous: CI is a loaded 2-core machine


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def lexical_repo(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": DEPLOY, "wiki/faq.md": FAQ})
    return repo


@pytest.fixture
def server(lexical_repo):
    """A socket server in this process over its own `Wiki` of the repo (what `gitwiki serve` starts)."""
    with socket_server(lexical_repo.path) as listening:
        yield listening


def test_the_cli_prints_what_it_prints_without_the_server(lexical_repo, server, cli, monkeypatch):
    runs = [("ground", "rollback"), ("ground", "rollback", "--json"), ("ground", "team", "--format", "json-pretty")]
    local = [cli(*args, "--no-server", cwd=lexical_repo.path) for args in runs]
    assert "wiki/deploy.md" in local[0][1]

    def no_local_path(*args, **kwargs):
        raise AssertionError("the CLI answered by itself")

    monkeypatch.setattr(Wiki, "open", no_local_path)
    assert [cli(*args, cwd=lexical_repo.path) for args in runs] == local


def test_explain_is_answered_by_the_server_as_by_the_cli(lexical_repo, server, cli, monkeypatch):
    runs = [("ground", "rollback", "--explain"), ("ground", "rollback", "--explain", "--json")]
    local = [cli(*args, "--no-server", cwd=lexical_repo.path) for args in runs]
    assert "  why: lexical #1" in local[0][1] and '"explain": {' in local[1][1]

    def no_local_path(*args, **kwargs):
        raise AssertionError("the CLI answered by itself")

    monkeypatch.setattr(Wiki, "open", no_local_path)
    assert [cli(*args, cwd=lexical_repo.path) for args in runs] == local


def test_a_worktree_edit_made_just_before_is_seen(lexical_repo, server):
    lexical_repo.write("wiki/faq.md", FAQ + "\n## Zebra\n\nThe zebra canary lives here.\n")
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("zebra canary", format="json"))
    assert asked is not None
    assert '"wiki/faq.md"' in asked.stdout and '"dirty": ["wiki/faq.md"]' in asked.stdout


def test_an_error_is_the_local_error(lexical_repo, server, cli):
    code, _, err = cli("ground", "deploy", "--corpus", "nope", cwd=lexical_repo.path)
    local_code, _, local_err = cli("ground", "deploy", "--corpus", "nope", "--no-server", cwd=lexical_repo.path)
    assert code == local_code == 3
    assert err == local_err and "no corpus named 'nope'" in err
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("deploy", corpus="nope"))
    assert asked is not None and asked.exit_code == 3
    with pytest.raises(serve_client.ServerError) as raised:
        asked.check()
    assert raised.value.exit_code == 3 and str(raised.value) in err


def test_the_server_declines_what_it_cannot_answer_for(lexical_repo, server, monkeypatch, cli):
    request = GroundRequest("rollback")
    assert serve_client.ask(str(lexical_repo.path), request) is not None
    with monkeypatch.context() as m:
        m.setenv("GITWIKI_NO_SERVER", "1")
        assert serve_client.ask(str(lexical_repo.path), request) is None
    with monkeypatch.context() as m:
        m.setenv("GITWIKI_MODEL", "another/model")  # another environment: another answer
        assert serve_client.ask(str(lexical_repo.path), request) is None
    assert serve_client.ask(str(lexical_repo.path), request) is not None
    (lexical_repo.path / ".gitwiki.toml").write_text(LEXICAL + '\n[search]\nmode = "lexical"\n')
    assert serve_client.ask(str(lexical_repo.path), request) is None  # the config changed since the start
    assert server.reply(
        {
            "protocol": serve_client.PROTOCOL,
            "root": str(lexical_repo.path.resolve()),
            "start": str(lexical_repo.path),
            "env": serve_client.environment(),
            "request": dataclasses.asdict(request),
        }
    ) == {"declined": "the configuration changed since the server started"}
    code, out, _ = cli("ground", "rollback", cwd=lexical_repo.path)  # the CLI answers by itself
    assert code == 0 and "wiki/deploy.md" in out


def test_another_worktree_is_not_answered_by_this_ones_server(lexical_repo, server, tmp_path, cli):
    other = tmp_path / "other"
    lexical_repo.git("worktree", "add", "-q", str(other), "-b", "other")
    (other / "wiki/deploy.md").write_text("# Deploy\n\nOnly in the other worktree: zebra.\n")
    assert serve_client.ask(str(other), GroundRequest("zebra")) is None  # its own socket path: none there
    reply = server.reply(
        {
            "protocol": serve_client.PROTOCOL,
            "root": str(other.resolve()),
            "start": str(other),
            "env": serve_client.environment(),
            "request": dataclasses.asdict(GroundRequest("zebra")),
        }
    )
    assert reply == {"declined": f"another checkout ({other.resolve()})"}
    code, out, _ = cli("ground", "zebra", cwd=other)
    assert code == 0 and "Only in the other worktree" in out


def test_the_socket_is_private_and_a_second_server_leaves_it_to_the_first(lexical_repo, server):
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600
    second = Wiki.open(lexical_repo.path)
    assert server.path == serve_client.socket_path(second.index_dir, second.root)
    assert SocketServer.listen(second, threading.Lock()) is None
    assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is not None
    second.close()


def raw_exchange(path: Path, line: bytes) -> bytes:
    """What the server sends back to `line` before it closes the connection."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(WAIT)
        sock.connect(str(path))
        received = b""
        try:
            sock.sendall(line)
            while chunk := sock.recv(65536):
                received += chunk
        except (BrokenPipeError, ConnectionResetError):  # closed before reading what was sent
            pass
        return received


def test_garbage_and_other_users_get_nothing_and_the_server_keeps_serving(lexical_repo, server, monkeypatch):
    assert raw_exchange(server.path, b"not json\n") == b""
    assert raw_exchange(server.path, b'{"protocol": 99}\n') == b'{"declined": "another protocol"}\n'
    with monkeypatch.context() as m:
        m.setattr(address, "peer_uid", lambda sock: os.getuid() + 1)  # both ends check the peer
        assert raw_exchange(server.path, b'{"protocol": 1}\n') == b""
        assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is None
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("rollback"))
    assert asked is not None and "wiki/deploy.md" in asked.stdout


def test_a_dead_servers_socket_is_replaced_and_a_closed_one_removed(lexical_repo):
    wiki = Wiki.open(lexical_repo.path)
    path = serve_client.socket_path(wiki.index_dir, wiki.root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # bound, never listening: what a killed server leaves
    assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is None
    listening = SocketServer.listen(wiki, threading.Lock())
    assert listening is not None
    assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is not None
    listening.close()
    assert not path.exists()
    assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is None
    wiki.close()


def test_a_folder_squatting_a_socket_name_in_the_runtime_dir_stops_no_owner(lexical_repo, tmp_path, monkeypatch):
    """The runtime dir is shared by every checkout with a deep index dir: one entry there that is not a socket (a
    folder left by a crashed test, a file) is left alone, and every server still listens, its own path included."""
    runtime = Path(tempfile.mkdtemp(prefix="gw"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("GITWIKI_INDEX_DIR", str(tmp_path / ("deep-" * 30) / "index"))
    (runtime / "gitwiki-0123456789abcdef.sock").mkdir()  # another checkout's name, a folder
    wiki = Wiki.open(lexical_repo.path)
    listening = SocketServer.listen(wiki, threading.Lock())
    assert listening is not None
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("rollback"))
    assert asked is not None and "wiki/deploy.md" in asked.stdout
    assert (runtime / "gitwiki-0123456789abcdef.sock").is_dir()
    own = listening.path
    listening.close()
    own.mkdir()  # this checkout's own name squatted: no listening there, no error, the folder kept
    assert SocketServer.listen(wiki, threading.Lock()) is None
    assert own.is_dir()
    wiki.close()
    for folder in runtime.iterdir():
        folder.rmdir()
    runtime.rmdir()


def test_the_socket_lives_in_the_index_dir_unless_that_path_is_too_long(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    root = Path("/src/project")
    short = serve_client.socket_path(Path("/src/project/.git/gitwiki"), root)
    assert short.parent == Path("/src/project/.git/gitwiki") and short.name.startswith("serve-")
    assert serve_client.socket_path(Path("/src/project/.git/gitwiki"), Path("/src/other")) != short  # per worktree
    deep = Path("/src", "x" * 100, ".git/gitwiki")
    assert serve_client.socket_path(deep, root).parent == serve_client.runtime_dir()


def test_a_deep_tmpdir_without_a_runtime_dir_still_leaves_room_for_the_socket(tmp_path, monkeypatch):
    """A test harness's or sandbox's TMPDIR can be too deep for the socket's name (and the temporary name the
    server binds first): an owner then could never listen, and every session waited for it in vain."""
    import tempfile as tempfile_module

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    deep = tmp_path / ("deep-" * 20)
    deep.mkdir()
    monkeypatch.setattr(tempfile_module, "tempdir", str(deep))
    path = serve_client.socket_path(Path("/src", "x" * 100, ".git/gitwiki"), Path("/src/project"))
    assert path.parent == Path("/tmp", f"gitwiki-{os.getuid()}")
    assert len(os.fsencode(path.with_name(f".{path.name}.4194304"))) < 104  # macOS's limit, the lower one


def test_an_index_dir_too_long_for_af_unix_uses_a_short_path(lexical_repo, tmp_path, monkeypatch):
    runtime = Path(tempfile.mkdtemp(prefix="gw"))  # short, unlike tmp_path
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("GITWIKI_INDEX_DIR", str(tmp_path / ("deep-" * 30) / "index"))
    wiki = Wiki.open(lexical_repo.path)
    listening = SocketServer.listen(wiki, threading.Lock())
    assert listening is not None
    assert listening.path.parent == runtime and len(os.fsencode(listening.path)) <= serve_client.MAX_ADDRESS
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("rollback"))
    assert asked is not None and "wiki/deploy.md" in asked.stdout
    listening.close()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(runtime / "gitwiki-0123456789abcdef.sock"))  # a killed server's, for another checkout
    listening = SocketServer.listen(wiki, threading.Lock())
    assert listening is not None
    assert [p.name for p in runtime.iterdir()] == [listening.path.name]  # the dead one swept
    listening.close()
    wiki.close()
    runtime.rmdir()


@needs_model
def test_gitwiki_serve_answers_a_fresh_cli_process(repo):
    """End to end: `gitwiki serve` (before any MCP client spoke) answers a fresh `gitwiki ground`, hybrid, with
    the bytes a fresh local `gitwiki ground` prints."""
    repo.commit("init", {"wiki/deploy.md": DEPLOY, "wiki/faq.md": FAQ})
    env = dict(os.environ)
    command = [sys.executable, "-m", "gitwiki", "-C", str(repo.path)]
    subprocess.run([*command, "index"], env=env, check=True, capture_output=True)
    served = subprocess.Popen([*command, "serve"], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        wiki = Wiki.open(repo.path)
        path = serve_client.socket_path(wiki.index_dir, wiki.root)
        wiki.close()
        wait_for(path.exists, "the server's socket")
        ground = [*command, "ground", "how do we undo a release", "--json"]
        via_server = subprocess.run(ground, env=env, check=True, capture_output=True, text=True)
        local = subprocess.run([*ground, "--no-server"], env=env, check=True, capture_output=True, text=True)
        assert via_server.stdout == local.stdout and '"mode": "hybrid"' in local.stdout
        asked = serve_client.ask(str(repo.path), GroundRequest("how do we undo a release", format="json"))
        assert asked is not None and asked.stdout == local.stdout
    finally:
        assert served.stdin is not None
        served.stdin.close()  # hung up before initialize: the server exits and removes its socket
        served.wait(timeout=WAIT)
    assert not Path(path).exists()


def test_a_terminated_server_removes_its_socket(lexical_repo):
    """MCP clients send SIGTERM to a server slow to exit; it dies of the signal as before, its socket file gone."""
    served = subprocess.Popen(
        [sys.executable, "-m", "gitwiki", "-C", str(lexical_repo.path), "serve"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    wiki = Wiki.open(lexical_repo.path)
    path = serve_client.socket_path(wiki.index_dir, wiki.root)
    wiki.close()
    try:
        wait_for(path.exists, "the server's socket")
        served.terminate()
        assert served.wait(timeout=WAIT) == -signal.SIGTERM
    finally:
        served.kill()
        served.wait(timeout=WAIT)
    assert not path.exists()


def _calls() -> int:
    return sum(t.name == "gitwiki-socket-call" for t in threading.enumerate())


def test_idle_connections_are_capped_and_the_server_keeps_serving(lexical_repo, server, monkeypatch):
    """400 idle connections once held 400 threads; past MAX_CONNECTIONS a connection is closed at once (its
    CLI answers by itself) instead of waiting out its REQUEST_TIMEOUT on a thread of its own."""
    import select

    from gitwiki.serve import server as serve_socket

    monkeypatch.setattr(serve_socket, "REQUEST_TIMEOUT", 600.0)  # the idle ones stay for the whole test
    idle = []
    try:
        for _ in range(serve_socket.MAX_CONNECTIONS + 40):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(server.path))
            idle.append(sock)
        waiting = set(idle[serve_socket.MAX_CONNECTIONS :])
        deadline = time.monotonic() + WAIT
        while waiting and time.monotonic() < deadline:
            readable, _, _ = select.select(list(waiting), [], [], 1.0)
            for sock in readable:
                assert sock.recv(1) == b""  # closed by the server
                waiting.discard(sock)
        assert not waiting, f"{len(waiting)} connections past the cap were left open"
        assert _calls() == serve_socket.MAX_CONNECTIONS
        assert serve_client.ask(str(lexical_repo.path), GroundRequest("rollback")) is None  # the CLI answers itself
    finally:
        for sock in idle:
            sock.close()
    wait_for(lambda: _calls() == 0, "the idle connections' threads to end")
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("rollback"))
    assert asked is not None and "wiki/deploy.md" in asked.stdout


def test_a_client_that_trickles_its_request_is_dropped_when_its_time_is_up(lexical_repo, server, monkeypatch):
    from gitwiki.serve import server as serve_socket

    monkeypatch.setattr(serve_socket, "REQUEST_TIMEOUT", 1.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(WAIT)
        sock.connect(str(server.path))
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < WAIT:
            try:
                sock.sendall(b" ")  # one byte at a time, never a whole line: each read waits less than the timeout
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.3)
        assert closed


FRAME_EXAMPLES = int(os.environ.get("GITWIKI_FUZZ_EXAMPLES", "40"))
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_request_fields = st.dictionaries(
    st.sampled_from([*(f.name for f in dataclasses.fields(GroundRequest)), "nope"]) | st.text(max_size=8),
    _json | st.text(),
    max_size=5,
)


@pytest.mark.slow
@settings(max_examples=FRAME_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_frames_get_one_json_reply_or_none_and_never_stop_the_server(lexical_repo, server, data):
    """Socket frames from a same-user process: bytes, JSON of any shape, deep nesting, and well-addressed
    requests with fuzzed fields. The answer is one JSON line or a closed connection, never a traceback."""
    addressed = {
        "protocol": serve_client.PROTOCOL,
        "root": str(lexical_repo.path.resolve()),
        "start": data.draw(st.just(str(lexical_repo.path)) | st.text(max_size=10)),
        "env": serve_client.environment(),
        "request": data.draw(_request_fields),
    }
    frame = data.draw(
        st.binary(max_size=200)
        | _json.map(lambda v: json.dumps(v).encode())
        | st.just(json.dumps(addressed).encode())
        | st.integers(1, 100_000).map(lambda n: b"[" * n + b"]" * n)
    )
    reply = raw_exchange(server.path, frame.replace(b"\n", b" ") + b"\n")
    if reply:
        assert reply.endswith(b"\n") and reply.count(b"\n") == 1
        parsed = json.loads(reply)
        assert set(parsed) <= {"declined", "stdout", "stderr", "error", "exit_code"}
        assert not str(parsed.get("declined")).startswith("internal error"), parsed
    in_process = server.reply(addressed)  # the same call in process raises nothing either
    assert not str(in_process.get("declined")).startswith("internal error"), in_process


def test_a_request_of_the_wrong_shape_is_declined_not_run(lexical_repo, server):
    """Found by the frame fuzz: a list as the query reached the search (an internal error, its traceback in
    the server's log), and a NUL in the start directory raised ValueError out of `reply`."""
    message = {
        "protocol": serve_client.PROTOCOL,
        "root": str(lexical_repo.path.resolve()),
        "start": str(lexical_repo.path),
        "env": serve_client.environment(),
        "request": {"query": ["rollback"]},
    }
    assert server.reply(message) == {"declined": "not a request this version knows: query is a list"}
    assert server.reply({**message, "request": {"query": "x", "limit": True}}) == {
        "declined": "not a request this version knows: limit is a bool"
    }
    assert server.reply({**message, "start": "wiki\x00"}) == {"declined": "no start directory"}
    assert "wiki/deploy.md" in server.reply({**message, "request": {"query": "rollback", "limit": 3}})["stdout"]


def test_a_frame_nested_past_the_parser_is_dropped_without_a_traceback(lexical_repo, server, monkeypatch):
    died: list = []
    monkeypatch.setattr(threading, "excepthook", died.append)  # a RecursionError once ended the thread here
    assert raw_exchange(server.path, b"[" * 100_000 + b"]" * 100_000 + b"\n") == b""
    wait_for(lambda: _calls() == 0, "the connection's thread to end")
    assert died == []
    asked = serve_client.ask(str(lexical_repo.path), GroundRequest("rollback"))
    assert asked is not None and "wiki/deploy.md" in asked.stdout


def test_a_memory_search_sent_to_the_server_carries_every_option_the_command_has():
    """The CLI sends the server the options named in MEMORY_SEARCH and the local path builds its MemoryQuery from
    every flag named after a field: a flag added to one and not the other would be dropped when a server answers."""
    import dataclasses

    from gitwiki.cli import build_parser
    from gitwiki.memory.search import MemoryQuery

    args = build_parser("memory").parse_args(["memory", "search", "deploy"])
    flags = set(vars(args)) & ({f.name for f in dataclasses.fields(MemoryQuery)} | {"detail", "json"})
    assert set(serve_client.MEMORY_SEARCH) == flags | {"query"}


def test_a_closing_server_sends_the_replies_it_is_making(lexical_repo, monkeypatch):
    """Before: an owner asked to stop ended its process (`cli.end_now`) as soon as its main thread saw the request,
    sometimes before the request's thread had sent `stopping`, and `serve --stop` said no owner ran (CI)."""
    replying, replied, real = threading.Event(), threading.Event(), SocketServer.reply

    def slow(self, message):
        found = real(self, message)
        replying.set()
        time.sleep(0.3)  # the request's thread, behind the main thread that closes the server
        replied.set()  # its reply is sent next, and its slot given back after that
        return found

    monkeypatch.setattr(SocketServer, "reply", slow)
    wiki = Wiki.open(lexical_repo.path)
    server = SocketServer.listen(wiki, threading.Lock())
    assert server is not None
    got: list[bytes] = []

    def ask() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(server.path))
            sock.sendall(b'{"protocol": 1, "status": true}\n')
            got.append(serve_client.read_line(sock, deadline=time.monotonic() + 10))

    asking = threading.Thread(target=ask)
    asking.start()
    try:
        assert replying.wait(10)
        server.close()
        assert replied.is_set()  # close() returned after the reply went out: the process may end now
    finally:
        asking.join(10)
        wiki.close()
    assert got and b"declined" in got[0]


def test_listening_says_whether_a_servers_socket_is_there_without_connecting(repo, monkeypatch):
    """`client.listening`: a fresh memory search does not start its model's load when a server will answer it."""
    from gitwiki.config import index_dir, load
    from gitwiki.git.gitcli import find_checkout

    repo.commit("init", {"wiki/index.md": "# Home\n"})
    monkeypatch.delenv(address.NO_SERVER, raising=False)
    checkout = find_checkout(repo.path)
    assert checkout is not None
    path = serve_client.socket_path(index_dir(load(checkout.root), checkout.root, checkout.common_dir), checkout.root)
    assert not serve_client.listening(str(repo.path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    try:
        assert serve_client.listening(str(repo.path))
        monkeypatch.setenv(address.NO_SERVER, "1")  # asked to run alone: no server answers
        assert not serve_client.listening(str(repo.path))
    finally:
        path.unlink()


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["memory", "search", "deploy", "rollback"], "."),
        (["-C", "sub", "memory", "search", "--json", "deploy"], "sub"),
        (["memory", "search", "--limit", "5"], None),  # after an option: maybe its value
        (["memory", "search", "--limit", "5", "deploy"], "."),
        (["memory", "search", "--topic", "ops"], None),  # no words: no model
        (["memory", "search"], None),
        (["memory", "store", "ops", "text"], None),
        (["search", "memory", "search"], None),
        (["-C"], None),
    ],
)
def test_a_memory_search_is_told_from_its_words_before_the_parser(argv, start):
    from gitwiki.cli import _memory_search_at

    assert _memory_search_at(argv) == start
