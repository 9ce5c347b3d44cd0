"""One warm owner per checkout: the first `gitwiki serve` starts it, every session is a stdio bridge to it that
answers as a direct session does, and the bridges survive the owner's death (kill -9) and notice its hang."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from gitwiki.mcp import framing
from gitwiki.serve import client
from gitwiki.serve import owner as serve_owner
from tests.helpers import DEPLOY, LEXICAL, needs_model, peak_rss
from tests.serve.sessions import (
    HELLO,
    WAIT,
    Session,
    connected,
    drift_script,
    gone,
    owner_pid,
    owners,
    session_of,
    sharing,
    start,
    status,
    stop,
    text,
    wait_for,
)

HEAVY = ("mcp.server", "mcp_types", "numpy", "pygit2", "onnxruntime", "fastembed", "pydantic")


@pytest.fixture
def shared(repo, monkeypatch):
    yield from sharing(repo, monkeypatch)


def test_a_checkouts_own_gitwiki_package_is_never_run_as_the_owner(shared):
    """`python -m` puts the working directory first on sys.path: started in a clone, the owner ran its `gitwiki/`."""
    repo, sessions = shared
    marker = repo.path.parent / "planted-ran"
    planted = f"open({str(marker)!r}, 'w').close()\n"
    repo.commit("plant", {"gitwiki/__init__.py": planted, "gitwiki/__main__.py": planted})
    session = Session(repo.path, cwd=repo.path)  # as a client starts it: in the checkout
    sessions.append(session)
    session.open()
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))
    owner_pid(repo.path)
    assert not marker.exists()


def test_an_owner_forked_from_a_session_run_with_python_m_never_imports_the_checkouts_modules(shared):
    """A session started as `python -m gitwiki serve` in a clone has the clone first on sys.path; the owner it
    forks (serve.owner) drops that entry, as a spawned owner's `-P` does, before importing pygit2 or numpy."""
    repo, sessions = shared
    marker = repo.path.parent / "planted-ran"
    planted = f"open({str(marker)!r}, 'w').close()\n"
    repo.commit("plant", {f"{name}/__init__.py": planted for name in ("pygit2", "numpy", "onnxruntime")})
    session = Session(repo.path, cwd=repo.path, safe_path=False)
    sessions.append(session)
    session.open()
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))
    pid = owner_pid(repo.path)
    assert Path(f"/proc/{pid}/comm").read_bytes().strip() == serve_owner.OWNER_NAME  # forked, not spawned
    assert not marker.exists()


def test_an_owner_forked_from_a_session_holds_none_of_its_pipes(shared):
    """The client sees its session's end (EOF on the session's stdout) however long the owner lingers: the forked
    owner's stdin and stdout are /dev/null, its stderr the log, and it keeps no other copy of the session's pipes."""
    repo, _ = shared
    session, pid = connected(shared)
    pipes = {
        f"pipe:[{os.fstat(stream.fileno()).st_ino}]"
        for stream in (session.process.stdin, session.process.stdout, session.process.stderr)
        if stream is not None
    }
    held = {int(fd.name): os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
    assert held[0] == held[1] == os.devnull and held[2].endswith(".log")
    assert not pipes & set(held.values()), held
    assert session.close() == 0 and not gone(pid)  # the session ended; the owner lingers


def test_an_owner_that_cannot_be_forked_is_spawned(tmp_path, monkeypatch):
    """No fork (EAGAIN, ENOMEM): the owner is spawned as a bridge restarting one spawns it, and the lock is
    handed to it."""
    where = serve_owner.Place(tmp_path, tmp_path, tmp_path / "serve-x.sock")
    spawned: list[list[str]] = []

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    class Spawned:
        def __init__(self, argv: list[str], **options: Any) -> None:
            spawned.append(argv)

        def wait(self) -> int:
            return 0

    monkeypatch.setattr(serve_owner, "_one_thread", lambda: True)
    monkeypatch.setattr(os, "fork", no_fork)
    monkeypatch.setattr(subprocess, "Popen", Spawned)
    assert serve_owner.start(where, str(tmp_path), run=lambda fd: 0)
    assert len(spawned) == 1 and spawned[0][-3:-1] == ["serve", "--owner-fd"]


def test_the_second_session_bridges_to_the_first_ones_owner(shared):
    repo, _ = shared
    first = start(shared)
    first.open()
    assert "wiki/deploy.md" in text(first.tool("ground", query="helm rollback"))
    pid = owner_pid(repo.path)
    assert pid != first.process.pid  # the owner is a process of its own: it outlives the session

    second = start(shared, importtime=True)
    second.open()
    assert "wiki/deploy.md" in text(second.tool("ground", query="helm rollback"))
    found = status(repo.path)
    assert found is not None and found["pid"] == pid and found["sessions"] == 2 and found["served"] == 2
    assert found["rss_kib"] > 0
    assert first.close() == 0 and second.close() == 0
    # the bridge never imported the SDK, the model's runtime or pygit2 (python -X importtime lists every import)
    imported = {line.split(b"|")[-1].strip().decode() for line in second.stderr if line.startswith(b"import time:")}
    assert imported and not {name for name in imported if name.split(".")[0] in HEAVY or name in HEAVY}
    # the owner stays for the next session, once it has seen both end (a busy owner sees it a little later)
    wait_for(lambda: (found := status(repo.path)) is not None and found["sessions"] == 0, "the sessions to end")


# What a later session's bridge (`gitwiki.cli.serve_bridged`) never imports: the parser and the command table,
# logging, the configuration and its TOML reader, the socket module (its C type is all a bridge uses) and the
# model's module. (`-X importtime` does not list what `importlib.import_module` imports: the command modules.)
NOT_IN_A_BRIDGE = {
    "argparse",
    "logging",
    "tomllib",
    "socket",
    "gitwiki.config",
    "gitwiki.index.embed",
}
OPENING = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
]


def imported(stderr: list[bytes] | bytes) -> set[str]:
    """The modules `python -X importtime` says a process imported."""
    lines = stderr.splitlines() if isinstance(stderr, bytes) else stderr
    return {line.split(b"|")[-1].strip().decode() for line in lines if line.startswith(b"import time:")}


class Run(NamedTuple):
    code: int
    answers: list[bytes]
    stderr: bytes
    imported: set[str]
    bridged: bool  # the owner served it (its count of sessions served went up)


def run_once(repo: Path, argv: list[str], lines: list[bytes] | None = None, cwd: Path | None = None) -> Run:
    """One `python -X importtime -m gitwiki ARGV` session, its input `lines` (by default the opening and the tool
    list) then its end: what it answered and imported, and whether the owner served it."""
    served = wait_for(lambda: status(repo), "an owner")["served"]
    lines = lines if lines is not None else [json.dumps(m).encode() for m in OPENING]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gitwiki", *argv],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        cwd=cwd,
        timeout=WAIT,
    )
    bridged = status(repo)["served"] > served
    return Run(done.returncode, done.stdout.splitlines(), done.stderr, imported(done.stderr), bridged)


def test_a_session_starts_its_bridge_without_the_parser_or_logging_and_a_later_one_without_the_config(shared):
    repo, _ = shared
    first = start(shared, importtime=True)  # no owner yet: the fast start checks the configuration and starts one
    first.open()
    assert "wiki/deploy.md" in text(first.tool("ground", query="helm rollback"))
    later = start(shared, importtime=True)  # `-C REPO serve --log-level INFO`
    later.open()
    assert "wiki/deploy.md" in text(later.tool("ground", query="helm rollback"))
    assert status(repo.path)["sessions"] == 2
    assert first.close() == 0 and later.close() == 0
    assert "gitwiki.config" in imported(first.stderr) and not {"argparse", "logging"} & imported(first.stderr)
    assert imported(later.stderr) and not imported(later.stderr) & NOT_IN_A_BRIDGE
    # the console script's form, `serve` run in the checkout, and the other spelling of the level
    for argv, cwd in ((["serve"], repo.path / "wiki"), (["-C", str(repo.path), "serve", "--log-level=DEBUG"], None)):
        run = run_once(repo.path, argv, cwd=cwd)
        assert run.code == 0 and run.bridged and len(run.answers) == 2
        assert run.imported and not run.imported & NOT_IN_A_BRIDGE


@pytest.mark.parametrize(
    ("flags", "env", "bridged"),
    [
        (["--log-level", "INFO", "--alone"], {}, False),
        (["--log-level", "INFO"], {"GITWIKI_SERVE_ALONE": "1"}, False),
        (["--log-level", "INFO"], {"GITWIKI_NO_SERVER": "1"}, False),
        (["--log", "INFO"], {}, True),  # an abbreviation argparse takes
    ],
)
def test_every_other_form_of_a_later_session_starts_as_before(shared, monkeypatch, flags, env, bridged):
    """A session the fast start does not take runs the full start, with its answers and log lines byte for byte
    those of a fast one."""
    repo, _ = shared
    first = start(shared)
    first.open()
    lines = [json.dumps(m).encode() for m in OPENING] + [b"this is not JSON"]
    fast = run_once(repo.path, ["-C", str(repo.path), "serve", "--log-level", "INFO"], lines)
    assert fast.bridged and not fast.imported & NOT_IN_A_BRIDGE
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    other = run_once(repo.path, ["-C", str(repo.path), "serve", *flags], lines)
    assert other.code == 0 and other.bridged is bridged and "argparse" in other.imported
    assert other.answers == fast.answers and b'"code":-32700' in fast.answers[-1]
    refused = [line for line in fast.stderr.splitlines() if b"refused a line" in line]
    assert refused and refused[0].startswith(b"gitwiki serve: INFO gitwiki.mcp: refused a line: ")
    assert refused == [line for line in other.stderr.splitlines() if b"refused a line" in line]
    assert first.close() == 0


def test_help_and_a_bad_level_are_the_parsers_with_an_owner_up(shared):
    repo, _ = shared
    first = start(shared)
    first.open()
    helped = run_once(repo.path, ["-C", str(repo.path), "serve", "--help"], [])
    assert helped.code == 0 and helped.answers[0].startswith(b"usage: gitwiki serve")
    bad = run_once(repo.path, ["-C", str(repo.path), "serve", "--log-level", "LOUD"], [])
    assert bad.code == 2 and b"invalid choice: 'LOUD'" in bad.stderr and not bad.answers and not bad.bridged
    assert first.close() == 0


def test_a_user_config_naming_the_index_dir_is_read_and_the_session_bridged(shared, tmp_path):
    repo, _ = shared
    elsewhere = tmp_path / "elsewhere"
    user = Path(os.environ["XDG_CONFIG_HOME"], "gitwiki", "config.toml")
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[storage]\nindex_dir = "{elsewhere}"\n')
    first = start(shared)
    first.open()
    assert "wiki/deploy.md" in text(first.tool("ground", query="helm rollback"))
    assert elsewhere.is_dir()
    later = run_once(repo.path, ["-C", str(repo.path), "serve"])
    assert later.bridged and "tomllib" in later.imported and len(later.answers) == 2
    assert first.close() == 0


def test_a_later_session_says_search_is_lexical_when_the_model_was_recorded_not_loading(shared, monkeypatch):
    repo, _ = shared
    (repo.path / ".gitwiki.toml").write_text("[mcp]\nidle_timeout = 30\n")  # embeddings on
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(repo.path / "no-model-here"))
    first = start(shared)
    first.open()
    assert "wiki/deploy.md" in text(first.tool("ground", query="helm rollback"))  # lexically
    wait_for(lambda: (repo.path / ".git" / "gitwiki" / "model-unavailable").is_file(), "the model's failure recorded")
    later = run_once(repo.path, ["-C", str(repo.path), "serve"])
    assert later.bridged
    assert "Search is lexical only" in json.loads(later.answers[0])["result"]["instructions"]
    assert first.close() == 0


@pytest.mark.parametrize(
    ("user_config", "index_env", "quick"),
    [
        (None, None, True),
        ("[search]\ntop_files = 3\n", None, True),
        (None, "elsewhere", True),
        ('[storage]\nindex_dir = "{elsewhere}"\n', None, False),
        ('[storage]\n"index\\u005fdir" = "{elsewhere}"\n', None, False),
    ],
)
def test_the_quick_place_is_the_place_or_leaves_it_to_the_config(
    repo, monkeypatch, tmp_path, user_config, index_env, quick
):
    from gitwiki import config

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": DEPLOY})
    if user_config is not None:
        user = Path(os.environ["XDG_CONFIG_HOME"], "gitwiki", "config.toml")
        user.parent.mkdir(parents=True, exist_ok=True)
        user.write_text(user_config.format(elsewhere=tmp_path / "elsewhere"))
    if index_env is not None:
        monkeypatch.setenv("GITWIKI_INDEX_DIR", index_env)
    start_dir = str(repo.path / "wiki")
    root = repo.path.resolve()
    place = serve_owner.place(start_dir)
    assert place is not None
    found = serve_owner.quick_place(start_dir)
    if not quick:
        assert found is None and place.socket == client.socket_path((tmp_path / "elsewhere").resolve(), root)
        return
    assert found is not None and found[0] == place
    assert found[1] == config.index_dir(config.load(root), root, root / ".git")


def test_the_quick_place_of_a_linked_worktree_is_its_place(repo, tmp_path):
    """A linked worktree's `.git` is a file; its index dir is the main checkout's, its socket its own."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": DEPLOY})
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    found = serve_owner.quick_place(str(linked / "wiki"))
    assert found is not None and found[0] == serve_owner.place(str(linked / "wiki"))
    assert found[0].root == linked.resolve() and found[1] == (repo.path / ".git" / "gitwiki").resolve()


def test_a_line_over_64_mib_is_refused_by_the_bridge_and_the_session_goes_on(shared):
    first = start(shared)
    first.open()
    second = start(shared)
    second.open()  # a bridge: the first session's process started the owner
    assert second.process.stdin is not None
    before = peak_rss(second.process.pid)
    head = b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"ground","arguments":{"query":"'
    second.process.stdin.write(head + b"x" * (3 * framing.MAX_LINE) + b'"}}}\n')
    second.process.stdin.flush()
    assert second.answer("huge")["error"] == {"code": framing.INVALID_REQUEST, "message": framing.TOO_LONG}
    assert "wiki/deploy.md" in text(second.tool("ground", query="helm rollback"))
    assert peak_rss(second.process.pid) - before < 1.5 * framing.MAX_LINE  # not the line's 192 MiB
    assert first.close() == 0 and second.close() == 0


def test_a_bridged_session_answers_as_a_direct_one(shared):
    bridge = start(shared)
    bridged = drift_script(bridge)
    assert owner_pid(shared[0].path) != bridge.process.pid
    assert bridge.close() == 0
    direct = drift_script(start(shared, "--alone"))
    assert bridged == direct
    assert len(direct[1]["result"]["tools"]) > 10 and "error" in direct[-1]


def test_two_sessions_starting_at_once_share_one_owner(shared):
    repo, _ = shared
    sessions = [start(shared), start(shared)]
    for session in sessions:
        session.open()
    answers = [text(s.tool("ground", query="helm rollback")) for s in sessions]
    assert answers[0] == answers[1] and "wiki/deploy.md" in answers[0]
    found = status(repo.path)
    assert found is not None and found["sessions"] == 2
    where = serve_owner.place(str(repo.path))
    assert where is not None and serve_owner.held(where)
    # no second owner lingers: every gitwiki process left is a session or the one owner
    left = owners(repo.path)
    assert len(left) == 1, left


def test_every_bridge_recovers_from_a_killed_owner_and_reads_are_asked_again(shared):
    repo, _ = shared
    a, b = start(shared), start(shared)
    a.open()
    b.open()
    assert "wiki/deploy.md" in text(a.tool("ground", query="helm rollback"))
    pid = owner_pid(repo.path)
    # an acknowledged write survives the owner's death
    written = a.tool("add_markdown", path="wiki/kept.md", content="# Kept\n\nA canary page about zebras.\n")
    assert "created wiki/kept.md" in text(written)
    # a read in flight when the owner dies: stopped first, so the call is surely out when the kill comes
    stop(pid)
    in_flight = a.request("tools/call", {"name": "ground", "arguments": {"query": "zebras"}})
    time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    assert "wiki/kept.md" in text(a.answer(in_flight))
    new = owner_pid(repo.path)
    assert new != pid
    # the other bridge reconnects to the same new owner, its session opened again for it
    assert "canary page about zebras" in text(b.tool("read_markdown", path="wiki/kept.md"))
    assert status(repo.path)["sessions"] == 2
    assert a.close() == 0 and b.close() == 0


@pytest.mark.parametrize("kind", ["bridge", "relay"])
def test_a_write_in_flight_when_the_owner_dies_is_answered_not_resent(shared, kind):
    repo, _ = shared
    session, pid = session_of(kind, shared)  # connected to the owner
    stop(pid)
    write = session.request(
        "tools/call", {"name": "add_markdown", "arguments": {"path": "wiki/w.md", "content": "# W\n"}}
    )
    time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    answer = session.answer(write)
    assert answer["error"]["code"] == -32603 and "may or may not have been made" in answer["error"]["message"]
    assert not (repo.path / "wiki/w.md").exists()  # the stopped owner never read it; nothing was sent twice
    # the caller checks and writes again, on the new owner
    assert "created wiki/w.md" in text(session.tool("add_markdown", path="wiki/w.md", content="# W\n"))
    assert owner_pid(repo.path) != pid


@pytest.mark.parametrize("kind", ["bridge", "relay"])
def test_a_hung_owner_is_answered_for_within_a_bound(shared, kind):
    repo, _ = shared
    session, pid = session_of(kind, shared)  # connected to the owner
    stop(pid)
    try:
        started = time.monotonic()
        answer = session.call("tools/call", {"name": "ground", "arguments": {"query": "helm"}}, timeout=30)
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "hung" in answer["error"]["message"] and str(pid) in answer["error"]["message"]
    assert took < 15, took  # (the relay's) PROBE_EVERY, the bridge's PROBE_EVERY + HANG_AFTER, the load's margin
    # the owner woke up: the session goes on with it
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))
    # `serve --stop` ends a hung owner too (it cannot answer the request to stop)
    stop(pid)
    stopped = subprocess.run(
        [sys.executable, "-m", "gitwiki", "-C", str(repo.path), "serve", "--stop"], capture_output=True, text=True
    )
    assert stopped.returncode == 0 and f"killed the hung gitwiki owner (pid {pid})" in stopped.stdout
    wait_for(lambda: gone(pid), "the hung owner to end")
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))  # on a new owner


def test_a_stopped_owner_ends_without_the_interpreters_teardown(shared, monkeypatch):
    """Before: an owner stopped while its model still loaded on a thread ran the interpreter's teardown beside
    onnxruntime's build, and the C++ runtime aborted it ("terminate called without an active exception" in its
    log, SIGABRT). It now ends with os._exit once its index is closed: no exit handler runs."""
    repo, _ = shared
    hooks = repo.path.parent / "exit-hook"
    hooks.mkdir()
    marker = hooks / "torn-down"
    (hooks / "sitecustomize.py").write_text(
        "import atexit, os, sys\n"
        "if '--owner-fd' in sys.argv:\n"
        f"    atexit.register(lambda: open({str(marker)!r}, 'a').write(str(os.getpid())))\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])))
    session, pid = connected(shared)
    stopped = subprocess.run(
        [sys.executable, "-m", "gitwiki", "-C", str(repo.path), "serve", "--stop"], capture_output=True, text=True
    )
    assert stopped.returncode == 0 and f"(pid {pid})" in stopped.stdout
    wait_for(lambda: gone(pid), "the owner to end")
    assert not marker.exists()


def test_the_owner_ends_after_its_idle_timeout_and_stop_ends_it_at_once(shared):
    repo, _ = shared
    repo.commit("idle", {".gitwiki.toml": LEXICAL + "\n[mcp]\nidle_timeout = 0\n"})
    session = start(shared)
    session.open()
    pid = owner_pid(repo.path)
    assert session.close() == 0
    wait_for(lambda: gone(pid), "the owner to end with its last session (idle_timeout 0)")
    assert status(repo.path) is None

    repo.commit("linger", {".gitwiki.toml": LEXICAL + "\n[mcp]\nidle_timeout = 300\n"})
    session = start(shared)
    session.open()
    pid = owner_pid(repo.path)
    assert session.close() == 0
    time.sleep(0.5)
    assert status(repo.path) is not None  # lingering for the next session
    code = subprocess.run(
        [sys.executable, "-m", "gitwiki", "-C", str(repo.path), "serve", "--stop"], capture_output=True, text=True
    )
    assert code.returncode == 0 and f"pid {pid}" in code.stdout
    wait_for(lambda: gone(pid), "the owner to stop")


def test_status_shows_the_owner_and_the_cli_never_starts_one(shared, cli):
    repo, _ = shared
    code, out, _ = cli("ground", "helm rollback", cwd=repo.path)
    assert code == 0 and "wiki/deploy.md" in out
    code, out, _ = cli("status", cwd=repo.path)
    assert "owner: none" in out
    where = serve_owner.place(str(repo.path))
    assert where is not None and not serve_owner.held(where)
    session = start(shared)
    session.open()
    pid = owner_pid(repo.path)
    wait_for(lambda: status(repo.path)["sessions"] == 1, "the bridge to connect")
    code, out, _ = cli("status", cwd=repo.path)
    assert f"owner: pid {pid} since " in out and "1 session(s) now, 1 served, RSS " in out
    code, out, _ = cli("status", "--json", cwd=repo.path)
    assert json.loads(out)["owner"]["pid"] == pid


def test_memory_search_is_answered_by_the_owner_as_by_the_cli(shared, cli, monkeypatch):
    repo, _ = shared
    for text_ in ("gotcha: helm rollback needs the release name", "decision: deploys go through kubectl"):
        assert cli("memory", "store", "ops", text_, cwd=repo.path)[0] == 0
    runs = [("memory", "search", "rollback"), ("memory", "search", "deploys", "--json"), ("memory", "search")]
    with monkeypatch.context() as m:
        m.setenv("GITWIKI_NO_SERVER", "1")
        local = [cli(*args, cwd=repo.path) for args in runs]
    assert "release name" in local[0][1]
    session = start(shared)
    session.open()
    owner_pid(repo.path)

    def no_local_path(*args, **kwargs):
        raise AssertionError("the CLI answered by itself")

    from gitwiki.memory.base import Memory

    monkeypatch.setattr(Memory, "open", no_local_path)
    served = [cli(*args, cwd=repo.path) for args in runs]
    assert [served[0], served[2]] == [local[0], local[2]]
    # the score decays with the entry's age (a microsecond's difference between the two runs): the rest is the same
    unscored = [
        {**json.loads(out), "hits": [{**h, "score": None} for h in json.loads(out)["hits"]]}
        for _, out, _ in (served[1], local[1])
    ]
    assert unscored[0] == unscored[1] and unscored[0]["total"] == 1


def test_an_owner_whose_configuration_changed_hands_over_to_a_new_one(shared):
    repo, _ = shared
    old = start(shared)
    old.open()
    assert "wiki/deploy.md" in text(old.tool("ground", query="helm rollback"))
    pid = owner_pid(repo.path)
    (repo.path / ".gitwiki.toml").write_text(LEXICAL + "\n[mcp]\nidle_timeout = 30\n[search]\ntop_files = 2\n")
    new = start(shared)
    new.open()
    assert "wiki/deploy.md" in text(new.tool("ground", query="helm rollback"))
    fresh = owner_pid(repo.path)
    assert fresh != pid  # a new owner, of the new configuration, took the new session
    assert not gone(pid)  # the old one still serves its session ...
    assert "wiki/deploy.md" in text(old.tool("ground", query="helm rollback"))
    assert old.close() == 0
    wait_for(lambda: gone(pid), "the retired owner to end with its last session")
    assert status(repo.path)["pid"] == fresh


@pytest.mark.parametrize("kind", ["bridge", "relay"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_bridge_at_once_and_the_owner_stays(shared, signum, kind):
    repo, sessions = shared
    session, pid = session_of(kind, shared)
    left = len(sessions) - 1  # a relay's first session stays open
    session.process.send_signal(signum)
    assert session.process.wait(timeout=WAIT) == -signum
    assert b"Traceback" not in b"".join(session.stderr)
    wait_for(lambda: status(repo.path)["sessions"] == left, "the owner to see the session leave")
    assert status(repo.path)["pid"] == pid


def test_kill_9_during_writes_loses_no_acknowledged_write_and_leaves_no_call_unanswered(shared):
    """Writes sent back to back, the owner killed at a different moment each round: every write is answered (a
    result, or the error that says it may or may not have been made); every answered one is on disk whole; an
    errored one is wholly there or not at all."""
    repo, _ = shared
    session = start(shared)
    session.open()
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))
    seen = {"result": 0, "error": 0}
    for round_, delay in enumerate((0.1, 1.0, 3.0)):
        assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))  # connected, warm
        pid = owner_pid(repo.path)
        bodies = {f"wiki/r{round_}-{i}.md": f"# Page {round_} {i}\n\n" + "words " * 2000 + "\n" for i in range(6)}
        ids = {
            session.request("tools/call", {"name": "add_markdown", "arguments": {"path": path, "content": body}}): path
            for path, body in bodies.items()
        }
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        for id_, path in ids.items():
            answer = session.answer(id_)
            on_disk = repo.path / path
            seen["result" if "result" in answer else "error"] += 1
            if "result" in answer:
                assert on_disk.read_text() == bodies[path], path  # acknowledged: there, whole
            else:
                assert "may or may not have been made" in answer["error"]["message"]
                assert not on_disk.exists() or on_disk.read_text() == bodies[path], path
        wait_for(lambda pid=pid: gone(pid), "the killed owner to be reaped")
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))  # a new owner serves
    assert sum(seen.values()) == 18, seen


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
LISTEN = {
    "jsonrpc": "2.0",
    "id": "listen:0",
    "method": "subscriptions/listen",
    "params": {
        "_meta": STATELESS_META,
        "notifications": {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True},
    },
}


def stateless_script(session: Session) -> list[dict[str, Any]]:
    """The stateless era (Claude Code 2.1.332): `server/discover`, a subscription, calls carrying their era."""
    session.send({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": STATELESS_META}})
    session.send(LISTEN)
    seen = [session.answer("d"), session.lines.get(timeout=WAIT)]  # type: ignore[arg-type]
    for i, query in enumerate(("helm rollback", "kubectl")):
        params = {"name": "ground", "arguments": {"query": query}, "_meta": STATELESS_META}
        session.send({"jsonrpc": "2.0", "id": 50 + i, "method": "tools/call", "params": params})
        seen.append(session.answer(50 + i))
    return seen


def test_the_stateless_era_bridged_answers_as_direct_and_survives_the_owner(shared):
    repo, _ = shared
    bridge = start(shared)
    bridged = stateless_script(bridge)
    pid = owner_pid(repo.path)
    os.kill(pid, signal.SIGKILL)
    params = {"name": "ground", "arguments": {"query": "helm rollback"}, "_meta": STATELESS_META}
    bridge.send({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": params})
    assert bridge.answer(60) == bridged[2] | {"id": 60}  # asked of the new owner, its subscription replayed
    assert bridge.close() == 0
    assert bridge.lines.empty()  # the new owner's acknowledgement of the replayed subscription was not passed on
    direct = stateless_script(start(shared, "--alone"))
    assert bridged == direct
    assert direct[1]["method"] == "notifications/subscriptions/acknowledged"


def test_a_bridge_whose_owner_exits_at_start_answers_at_once_and_tries_again_on_the_next_call(shared):
    """An owner that dies before it listens (here: something else listens on its socket and hangs up on every
    connection, so the owner it starts ends with status 1) is seen by its lock coming free: the call waiting is
    answered at once with the owner's last words, not after bridge.START_TIMEOUT with owners spawned again and
    again meanwhile, and the next call, once the cause is gone, starts an owner that answers it."""
    repo, _ = shared
    where = serve_owner.place(str(repo.path))
    assert where is not None
    where.socket.parent.mkdir(parents=True, exist_ok=True)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(str(where.socket))
    squatter.listen(16)
    gave_up = "holds this checkout's socket"

    def ended() -> int:  # the owners that ended so, by their log
        return where.log.read_text().count(gave_up) if where.log.exists() else 0

    before = ended()

    def hang_up() -> None:
        while True:
            try:
                conn, _ = squatter.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        session = start(shared)
        session.open()  # the handshake is the bridge's own
        started = time.monotonic()
        answer = session.call("tools/call", {"name": "ground", "arguments": {"query": "helm"}}, timeout=40)
        took = time.monotonic() - started
        message = answer["error"]["message"]
        assert "owner process ended as it started" in message and gave_up in message, message
        assert took < 30, took  # an owner's start and exit on a loaded machine; START_TIMEOUT is 60 s
        assert ended() - before == 1  # one owner started, not one every few ms
        assert session.call("tools/list")["result"]["tools"]  # the session goes on
    finally:
        squatter.close()
        where.socket.unlink()
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback"))  # a new owner, started now


# Put on the owner's PYTHONPATH as sitecustomize: notes in EVENTS each ask for the model's early load (and whether
# the CLI was imported by then) and each start of a model's build, in whichever process, which waits for GATE.
GATED_MODEL = """
import os, sys, time
from gitwiki.index import onnx_embed
from gitwiki.search import model_process

build, load_for_owner = onnx_embed.OnnxEmbedder.__init__, model_process.load_for_owner


def note(event):
    with open(os.environ["TEST_MODEL_EVENTS"], "a") as f:
        f.write(f"{event} {os.getpid()}\\n")


def gated(self, *args, **kwargs):
    note("build")
    deadline = time.monotonic() + 60
    while not os.path.exists(os.environ["TEST_MODEL_GATE"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    build(self, *args, **kwargs)


def asked(*args, **kwargs):
    note("asked-late" if "pygit2" in sys.modules else "asked-early")
    load_for_owner(*args, **kwargs)


onnx_embed.OnnxEmbedder.__init__ = gated
model_process.load_for_owner = asked
"""


def _gated_model(shared: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The checkout indexed with the model (the owner's calls then only need the query's vector), and its sessions'
    processes running GATED_MODEL: the gate's file and the events' file."""
    repo, _ = shared
    repo.commit("hybrid", {".gitwiki.toml": "[mcp]\nidle_timeout = 30\n"})
    assert cli("index", cwd=repo.path)[0] == 0
    hooks = repo.path.parent / "gated"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(GATED_MODEL)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TEST_MODEL_GATE", str(hooks / "open"))
    monkeypatch.setenv("TEST_MODEL_EVENTS", str(hooks / "events"))
    return hooks / "open", hooks / "events"


@needs_model
def test_an_owner_answers_lexical_calls_while_its_model_loads_and_hybrid_ones_once_it_has(shared, cli, monkeypatch):
    """The owner asks for its model's load before its own imports (pygit2's, the wiki's), in a process of its own:
    a lexical call does not wait for it, a hybrid one does, ranked there; the owner then loads its own copy, the
    model's process ends, and the same call answers as before."""
    gate, events = _gated_model(shared, cli, monkeypatch)

    session, pid = connected(shared, mode="lexical")
    assert events.read_text().splitlines()[0] == f"asked-early {pid}"
    builds = wait_for(
        lambda: [int(line.split()[1]) for line in events.read_text().splitlines() if "build" in line], "a build"
    )
    assert len(builds) == 1 and builds[0] != pid  # loading in the model's process, held at the gate
    lender = builds[0]
    assert Path(f"/proc/{lender}/comm").read_text().strip() == "gitwiki-model"
    hybrid = session.request("tools/call", {"name": "ground", "arguments": {"query": "helm rollback"}})
    with pytest.raises(queue.Empty):
        session.answer(hybrid, timeout=1.0)
    gate.touch()
    waited = text(session.answer(hybrid))
    assert "wiki/deploy.md" in waited

    # the owner's own copy once its warm-up is done; the model's process then ends
    wait_for(lambda: f"build {pid}" in events.read_text().splitlines(), "the owner's own model")
    wait_for(lambda: not Path(f"/proc/{lender}").exists(), "the model's process to end")
    later = start(shared)  # a new session's hybrid call, ranked by the owner itself, answers as the first did
    later.open()
    assert text(later.tool("ground", query="helm rollback")) == waited
    assert session.close() == 0 and later.close() == 0
    builds = [line for line in events.read_text().splitlines() if line.startswith("build ")]
    assert sorted(builds) == sorted([f"build {lender}", f"build {pid}"])  # once each, never again


@needs_model
def test_an_owner_killed_while_its_model_loads_elsewhere_leaves_its_lock_free_and_that_process_ends(
    shared, cli, monkeypatch
):
    """kill -9 of a new owner whose model still loads in its own process: the next session starts the next owner at
    once (the model's process holds none of the lock), and the orphaned process ends once its load is done."""
    gate, events = _gated_model(shared, cli, monkeypatch)

    first, pid = connected(shared, mode="lexical")
    (lender,) = wait_for(
        lambda: [int(line.split()[1]) for line in events.read_text().splitlines() if "build" in line], "a build"
    )
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: gone(pid), "the owner's end")
    assert not gone(lender)  # still held at the gate
    second, successor = connected(shared, mode="lexical")
    assert successor != pid
    gate.touch()
    wait_for(lambda: gone(lender), "the orphaned model process to end")
    assert "wiki/deploy.md" in text(second.tool("ground", query="helm rollback"))
    assert second.close() == 0
    first.process.kill()


def test_a_session_the_owner_declines_runs_alone_and_starts_no_owner(shared, monkeypatch):
    repo, _ = shared
    first = start(shared)
    first.open()
    assert "wiki/deploy.md" in text(first.tool("ground", query="helm rollback"))
    pid = owner_pid(repo.path)
    monkeypatch.setenv("GITWIKI_TEST_OTHER", "1")  # another environment: the owner would answer it differently
    other = start(shared)
    other.open()
    assert "wiki/deploy.md" in text(other.tool("ground", query="helm rollback"))
    found = status(repo.path)
    assert found is not None and found["pid"] == pid and found["sessions"] == 1  # not bridged: answered itself
    assert [p for p, _ in owners(repo.path)] == [pid]
    assert other.close() == 0 and first.close() == 0
    assert b"running alone: the owner declined (another environment)" in b"".join(other.stderr)
