"""Sessions of `gitwiki serve` sharing one owner, for the tests of the owner, the bridge and the relay."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitwiki.serve import owner as serve_owner
from tests.helpers import DEPLOY, LEXICAL

WAIT = 60.0  # generous: a loaded 2-core machine starts an owner in seconds


HELLO = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


class Session:
    """One `gitwiki serve` process and its JSON-RPC lines, read on a thread (a test never blocks for ever)."""

    def __init__(
        self,
        repo: Path,
        *flags: str,
        importtime: bool = False,
        cwd: Path | None = None,
        level: str | None = "INFO",
        safe_path: bool = True,
    ) -> None:
        python = [sys.executable, "-X", "importtime"] if importtime else [sys.executable]
        logged = ["--log-level", level] if level else []  # none: a later session is the relay (mcp.relay)
        # -P, as the console script a client runs: never the working directory first on sys.path
        safe = ["-P"] if safe_path else []
        self.process = subprocess.Popen(
            [*python, *safe, "-m", "gitwiki", "-C", str(repo), "serve", *logged, *flags],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[bytes] = []
        self.early: dict[Any, dict[str, Any]] = {}
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()  # type: ignore[arg-type]
        self.next_id = 1

    def _read(self) -> None:
        for line in self.process.stdout:  # type: ignore[union-attr]
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        id_ = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})})
        return id_

    def answer(self, id_: int | str, timeout: float = WAIT) -> dict[str, Any]:
        """The answer to request `id_`; answers to others that come first are kept for their turn."""
        deadline = time.monotonic() + timeout
        while id_ not in self.early:
            message = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if "id" in message and "method" not in message:
                self.early[message["id"]] = message
        return self.early.pop(id_)

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = WAIT) -> dict[str, Any]:
        return self.answer(self.request(method, params), timeout)

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        return self.call("tools/call", {"name": name, "arguments": arguments})

    def open(self) -> dict[str, Any]:
        answer = self.answer(self._initialize())
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def _initialize(self) -> int:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO})
        return 0

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=WAIT)


def status(repo: Path) -> dict[str, Any] | None:
    where = serve_owner.place(str(repo))
    assert where is not None
    return serve_owner.ask(where, "status")


def wait_for(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def stop(pid: int) -> None:
    """SIGSTOP `pid`, and wait until every thread of it has stopped. The stop waits for the thread the signal went to:
    in a busy process (an owner's warm-up reading its postings) that took 1-4 ms here, while another of its threads
    went on and answered a call sent meanwhile."""

    def stopped() -> bool:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
            return all(Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(") ", 1)[1][0] == "T" for t in tasks)
        except (OSError, IndexError):  # a thread that ended meanwhile: look again
            return False

    os.kill(pid, signal.SIGSTOP)
    wait_for(stopped, f"process {pid} to stop")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie (the owner's parent bridge has not reaped it yet) is gone too
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def sharing(repo: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[Session]]]:
    """A repo whose `gitwiki serve` sessions share an owner; every owner it had is gone after the test."""
    monkeypatch.delenv("GITWIKI_SERVE_ALONE", raising=False)
    repo.commit("init", {".gitwiki.toml": LEXICAL + "\n[mcp]\nidle_timeout = 30\n", "wiki/deploy.md": DEPLOY})
    sessions: list[Session] = []
    yield repo, sessions
    for session in sessions:
        if session.process.poll() is None:
            session.process.kill()
    for pid, _ in owners(repo.path):  # every owner the test started, answering or not
        os.kill(pid, signal.SIGKILL)


def start(shared: Any, *flags: str, importtime: bool = False, level: str | None = "INFO") -> Session:
    repo, sessions = shared
    session = Session(repo.path, *flags, importtime=importtime, level=level)
    sessions.append(session)
    return session


def owner_pid(repo: Path) -> int:
    found = wait_for(lambda: status(repo), "an owner")
    return int(found["pid"])


def connected(shared: Any, **ground: str) -> tuple[Session, int]:
    """A session started and opened whose first `ground` the owner answered: the session, and the owner's pid."""
    repo, _ = shared
    session = start(shared)
    session.open()
    assert "wiki/deploy.md" in text(session.tool("ground", query="helm rollback", **ground))
    return session, owner_pid(repo.path)


def text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def drift_script(session: Session) -> list[dict[str, Any]]:
    """What a client sees of a session, in order: the handshake, the lists, answers and refusals."""
    seen = [session.open()]
    for method in ("tools/list", "prompts/list", "resources/list", "ping"):
        seen.append(session.call(method))
    calls = [
        ("ground", {"query": "helm rollback"}),
        ("ground", {"query": "helm rollback", "format": "json"}),
        ("read_markdown", {"path": "wiki/deploy.md#rollback"}),
        ("outline_markdown", {"path": "wiki/deploy.md"}),
        ("get_footnote", {"page": "wiki/deploy.md", "footnote_number": 1}),
        ("read_markdown", {"path": "wiki/nope.md"}),  # a refusal: -32602 with the message
        ("ground", {"query": "x", "limt": 3}),  # an unknown argument
        ("memory_search", {"query": "rollback"}),
    ]
    for name, arguments in calls:
        seen.append(session.tool(name, **arguments))
    session.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": []})  # framing's refusal
    seen.append(session.answer(99))
    return seen


def owners(repo: Path) -> list[tuple[int, str]]:
    """The live owner processes of `repo` (pid, command line): spawned (`serve --owner-fd`), or forked from the
    session that started it (its command line, and the owner's name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                forked = (entry / "comm").read_bytes().strip() == serve_owner.OWNER_NAME
            except OSError:
                continue
            ours = f"-C {repo} serve --owner-fd" in line or (forked and f"-C {repo} serve" in line)
            if ours and not gone(int(entry.name)):
                found.append((int(entry.name), line))
    return found


def is_relay(session: Session) -> bool:
    """Whether the session's process is the lean relay (mcp.relay) now."""
    command = Path(f"/proc/{session.process.pid}/cmdline").read_bytes().split(b"\0")
    return b"-I" in command and any(b"gitwiki.mcp.relay" in word for word in command)


def relayed(shared: Any) -> tuple[Session, int]:
    """A later session (the owner up, started by a first one) and the owner's pid: the relay runs it."""
    connected(shared)
    later = start(shared, level=None)
    later.open()
    assert is_relay(later)
    return later, owner_pid(shared[0].path)


def session_of(kind: str, shared: Any) -> tuple[Session, int]:
    """A session whose first `ground` the owner answered, and the owner's pid: the bridge of the session that
    started the owner ("bridge"), or a later one's relay ("relay")."""
    return connected(shared) if kind == "bridge" else relayed(shared)
