"""`gitwiki-hook TYPE` asks the checkout's owner first (agent_hooks/forward.py), which runs the hook's own handler
(serve/hooks.py): the same answer and the same session state as the hook's own path, and that path whenever no
owner answers (none up, another checkout, environment or configuration, a hung or killed one), never starting one."""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gitwiki.agent_hooks import forward
from gitwiki.agent_hooks.run import served
from gitwiki.agent_hooks.state import peek
from gitwiki.serve import address
from gitwiki.serve import client as serve_client
from gitwiki.serve import hooks as serve_hooks
from gitwiki.serve.server import SocketServer
from gitwiki.wiki import Wiki
from tests.agent_hooks.helpers import PAGES, SESSION, context_of, load
from tests.helpers import ROOT, GitRepoFixture, hung_socket, socket_server


@pytest.fixture
def owner(wiki):
    """The owner's socket server over the hooks' wiki, in this process, running the hooks sent to it (as `gitwiki
    serve` passes them); yields the hook types it answered."""
    answered: list[str] = []

    def run(name: str, raw: bytes, cwd: str) -> str | None:
        answered.append(name)
        return served(name, raw, cwd)

    with socket_server(wiki.path, hooks=run):
        yield answered


def _socket_path(repo: Path) -> Path:
    opened = Wiki.open(repo)
    try:
        return serve_client.socket_path(opened.index_dir, opened.root)
    finally:
        opened.close()


def test_the_client_finds_the_socket_the_server_listens_on(wiki, tmp_path, monkeypatch):
    """forward.py finds the checkout and its index dir without the config (serve/client.py loads it)."""
    found = address.checkout_of(str(wiki.path / "wiki"))
    assert found == (str(wiki.path), str(wiki.path / ".git"))
    assert forward.socket_path(address.default_index_dir(*found), found[0]) == str(_socket_path(wiki.path))
    deep = tmp_path / ("d" * 90)  # past AF_UNIX's length: the runtime dir's short name
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert forward.socket_path(str(deep), "/r") == str(serve_client.socket_path(deep, Path("/r")))
    monkeypatch.setenv("GITWIKI_INDEX_DIR", "elsewhere")
    assert address.default_index_dir(*found) == str(wiki.path / "elsewhere")


def test_a_linked_worktree_finds_its_repositorys_index_dir(wiki):
    worktree = wiki.path.parent / "linked"
    subprocess.run(["git", "-C", str(wiki.path), "worktree", "add", "-q", str(worktree)], check=True)
    assert address.checkout_of(str(worktree)) == (str(worktree), str(wiki.path / ".git"))


def test_each_installed_hook_answered_by_the_owner_equals_its_own_answer(wiki, hook, owner, monkeypatch):
    """A session through the owner and the same session by the hooks alone: the same answers, hook by hook, and
    the same session state in the same index dir."""
    answers = {}
    for via_owner in (True, False):
        session = "through-owner" if via_owner else "alone"
        if via_owner:
            monkeypatch.delenv(serve_client.NO_SERVER, raising=False)
        else:
            monkeypatch.setenv(serve_client.NO_SERVER, "1")
        answers[session] = [
            hook(name, load(event, wiki.path, session_id=session), wiki.path) for name, event in SESSION
        ]
    assert owner == [name for name, _ in SESSION]  # each one the owner's, and none of the second session
    assert answers["through-owner"] == answers["alone"]
    assert sum(a is not None for _, a in answers["alone"]) >= 8  # most of them say something
    states = {s: peek(wiki.path / ".git" / "gitwiki", s) for s in answers}
    for key in ("injected", "focus", "phase", "edited", "reminded"):
        assert states["through-owner"][key] == states["alone"][key], key
    assert states["alone"]["edited"] == ["src/keys.py"] and states["alone"]["reminded"]


@pytest.mark.parametrize("cwd", [None, "wiki", ""])
def test_an_event_without_its_absolute_directory_is_answered_by_the_hook(wiki, hook, owner, cwd):
    """No `cwd` in the event, or a relative one, means one relative to the hook's own directory, which the hook's
    own path knows and the owner's handlers (searching from ".") would not."""
    event = load("user_prompt_submit", wiki.path, cwd=cwd)
    if cwd is None:
        del event["cwd"]
    text = context_of(hook("prompt", event, wiki.path)[1])
    assert owner == [] and "wiki/deploy.md:3-5" in text


def test_without_an_owner_the_hook_answers_by_itself_and_starts_none(wiki, hook):
    path = _socket_path(wiki.path)
    assert forward.ask("prompt", json.dumps(load("user_prompt_submit", wiki.path)).encode()) is None
    assert "wiki/deploy.md:3-5" in context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert not path.exists() and not path.with_suffix(".lock").exists()


def test_a_server_without_hooks_declines_them(wiki, hook):
    """`gitwiki serve --alone` and the like answer `gitwiki ground`, not hooks: the hook runs itself."""
    opened = Wiki.open(wiki.path)
    server = SocketServer.listen(opened, threading.Lock())
    assert server is not None
    try:
        assert forward.ask("session", json.dumps(load("session_start", wiki.path)).encode()) is None
        assert "corpus wiki" in context_of(hook("session", load("session_start", wiki.path), wiki.path)[1])
    finally:
        server.close()
        opened.close()


def test_an_owner_of_another_environment_does_not_answer(wiki, hook, owner, monkeypatch):
    monkeypatch.setenv("GITWIKI_INDEX_BATCH", "7")  # set after the owner started: not its environment
    assert "wiki/deploy.md:3-5" in context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert owner == []


def test_an_owner_of_another_configuration_does_not_answer_nor_retire(wiki, hook, owner, cli):
    toml = PAGES[".gitwiki.toml"] + "[agent_hooks]\nmax_chars = 120\n"
    wiki.commit("config", {".gitwiki.toml": toml})
    code, answer = hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)
    assert owner == []
    assert code == 0 and len(context_of(answer)) <= 120  # the new configuration's answer, made by the hook
    assert _socket_path(wiki.path).exists()  # a hook does not retire the owner: only a session does


def test_an_owner_of_another_checkout_does_not_answer(wiki, hook, owner, tmp_path):
    """A socket that leads to another checkout's owner (here a link to it) gets a decline, not an answer."""
    (tmp_path / "other").mkdir()
    other = GitRepoFixture(tmp_path / "other")
    other.commit("wiki", PAGES)
    path = _socket_path(other.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(_socket_path(wiki.path))
    assert forward.ask("session", json.dumps(load("session_start", other.path)).encode()) is None
    assert owner == []


def test_a_hung_owner_holds_the_hook_at_most_its_budget(wiki, hook):
    """A stopped owner (its socket listening, never answering): the hook answers itself after the budget."""
    with hung_socket(_socket_path(wiki.path)):
        started = time.monotonic()
        code, answer = hook("session", load("session_start", wiki.path), wiki.path)
        took = time.monotonic() - started
    assert code == 0 and "corpus wiki" in context_of(answer)
    assert forward.BUDGET <= took < forward.BUDGET + 3.0  # room for a loaded machine (not RUN_BUDGET: never started)


def test_an_owner_stuck_in_the_hook_holds_it_at_most_the_run_budget(wiki, hook, monkeypatch):
    """An owner that said it started the hook and never answers: the hook answers itself after RUN_BUDGET."""
    monkeypatch.setattr(forward, "RUN_BUDGET", 0.6)
    path = _socket_path(wiki.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.bind(str(path))
    stuck.listen(4)
    held: list[socket.socket] = []

    def started_and_stuck() -> None:
        conn, _ = stuck.accept()
        held.append(conn)
        conn.recv(1 << 20)
        conn.sendall(serve_hooks.RUNNING)

    threading.Thread(target=started_and_stuck, daemon=True).start()
    try:
        started = time.monotonic()
        code, answer = hook("session", load("session_start", wiki.path), wiki.path)
        took = time.monotonic() - started
    finally:
        stuck.close()
        for conn in held:
            conn.close()
        path.unlink()
    assert code == 0 and "corpus wiki" in context_of(answer)
    assert 0.6 <= took < forward.BUDGET + 0.6 + 3.0


def test_an_owner_killed_mid_request_leaves_the_hook_its_own_answer(wiki, hook):
    """kill -9 of the owner between the request and its answer: the connection closes, the hook answers itself."""
    path = _socket_path(wiki.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dying = (
        "import os, signal, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(1)\n"
        "print('up', flush=True)\n"
        "c, _ = s.accept(); c.recv(1 << 20)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", dying, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "up\n"
        started = time.monotonic()
        code, answer = hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)
        took = time.monotonic() - started
        assert owner.wait(timeout=10) == -signal.SIGKILL
    finally:
        owner.kill()
        path.unlink(missing_ok=True)
    assert code == 0 and "wiki/deploy.md:3-5" in context_of(answer)
    assert took < forward.BUDGET  # not a timeout: the closed connection says it at once


def test_a_hook_the_owner_has_started_waits_for_its_answer_past_the_first_budget(wiki, hook, monkeypatch):
    """An owner slow in the hook (a briefing made anew under load): the hook takes the owner's answer, and does not
    answer the same event a second time by itself."""
    answered = []

    def slow(name: str, raw: bytes, cwd: str) -> str | None:
        time.sleep(forward.BUDGET + 0.3)
        answered.append(name)
        return served(name, raw, cwd)

    with socket_server(wiki.path, hooks=slow):
        text = context_of(hook("session", load("session_start", wiki.path), wiki.path)[1])
    assert answered == ["session"] and "corpus wiki" in text


@pytest.fixture
def short_runtime_dir(monkeypatch):
    """A runtime dir with room for the socket's name: a test's index dir is too deep for AF_UNIX, and the fallback
    to /tmp loads `tempfile`, which a user's hook with a runtime dir does not."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="gw-", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_client_loads_the_c_json_and_socket_modules_only(short_runtime_dir, wiki, owner):
    """The hook process an owner answers: no hook code, config, json (its `re`), pathlib, typing, `socket` or
    `tempfile` (in a `-S` interpreter, whose start loads none of them either)."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from gitwiki.agent_hooks.__main__ import answer\n"
        "code = answer(['prompt'])\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write(repr(sorted(set(sys.modules) - before)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    event = json.dumps(load("user_prompt_submit", wiki.path)).encode()
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe], input=event, capture_output=True, cwd=wiki.path, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "wiki/deploy.md:3-5" in context_of(json.loads(done.stdout))
    assert owner == ["prompt"]
    loaded = set(ast.literal_eval(done.stderr.decode()))
    assert {"gitwiki.agent_hooks.forward", "_socket", "_json"} <= loaded
    unwanted = {
        "json",
        "re",
        "typing",
        "pathlib",
        "socket",
        "selectors",
        "tempfile",
        "sqlite3",
        "tomllib",
        "dataclasses",
    }
    assert not loaded & unwanted, loaded & unwanted
    # the socket's address (os, stat, sys and _socket) and the lines' JSON (_json)
    light = {"gitwiki.serve", "gitwiki.serve.address", "gitwiki.serve.wire"}
    assert not {m for m in loaded - light if m.startswith(("gitwiki.serve", "gitwiki.git", "gitwiki.config"))}
    assert not {m for m in loaded if m.startswith("gitwiki.agent_hooks.") and not m.endswith(("__main__", "forward"))}


@pytest.mark.parametrize(
    "reply",
    [
        b"not json\n",
        b"[1, 2]\n",
        b'{"stdout": 3, "exit_code": 0}\n',
        b'{"stdout": "{}", "exit_code": true}\n',
        b'{"running": true}\n{"running": true}\n',
        b'{"declined": "no"}\n',
        b'{"stdout": "{}"',  # no line end: the connection closes
    ],
)
def test_an_owners_reply_of_another_shape_leaves_the_hook_its_own_answer(wiki, hook, reply):
    path = _socket_path(wiki.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    odd = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    odd.bind(str(path))
    odd.listen(4)

    def answer_once() -> None:
        conn, _ = odd.accept()
        with conn:
            conn.recv(1 << 20)
            conn.sendall(reply)

    threading.Thread(target=answer_once, daemon=True).start()
    try:
        assert forward.ask("session", json.dumps(load("session_start", wiki.path)).encode()) is None
    finally:
        odd.close()
        path.unlink()
    assert "corpus wiki" in context_of(hook("session", load("session_start", wiki.path), wiki.path)[1])
