"""`gitwiki ground` answered by a running `gitwiki serve` of the same checkout, over a unix socket.

A fresh `gitwiki ground` pays for importing pygit2, numpy and onnxruntime, opening the index and loading the
model before it can search (1.1–2.2 s, docs/research/mcp-startup.md); a running server has all of that warm. So the CLI
first asks the server, if one is up: this module needs only the standard library, `config` and `gitcli` (no
pygit2, SQLite or numpy), and any failure (no server, another user's socket, a server that declines or
dies) returns None, and the CLI answers by itself as before.

The protocol is one JSON request line, one JSON reply line. The request names the checkout, the directory the
command ran in and the environment that shapes an answer; the server declines when any of them differ from its
own, so the answer is always the one the local path would print.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.errors import GitwikiError
from gitwiki.git.gitcli import Checkout, find_checkout
from gitwiki.serve import address
from gitwiki.serve.address import MAX_ADDRESS as MAX_ADDRESS
from gitwiki.serve.address import NO_SERVER, PROTOCOL
from gitwiki.serve.address import environment as environment

if TYPE_CHECKING:
    import _socket

    from gitwiki.operations.ground import GroundRequest

# A listening server accepts in microseconds; one that has not within this is stuck, and the CLI answers itself.
CONNECT_TIMEOUT = address.CONNECT_TIMEOUT
# A query can wait for the server's other calls (one at a time) or an index catch-up, as long as the local path
# would; past this the server is hung and the CLI answers itself.
REPLY_TIMEOUT = 300.0


class ServerError(GitwikiError):
    """A gitwiki error the server met answering: the same message and exit code the local path would give."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Reply(NamedTuple):
    stdout: str
    stderr: str
    error: str | None = None  # a gitwiki error the server met, with its exit code
    exit_code: int = 0

    def check(self) -> None:
        """Raise the error the server met, if any, as the local path would have (`ServerError`)."""
        if self.error is not None:
            raise ServerError(self.error, self.exit_code)


def socket_path(index: Path, root: Path) -> Path:
    """Where the server of the checkout at `root` listens: in the index dir, named after the checkout (the index
    dir is shared by a repo's worktrees), or when that path is too long for AF_UNIX, a short one in the user's
    runtime dir named after it."""
    return Path(address.socket_path(str(index), str(root)))


def runtime_dir() -> Path:
    """The user's runtime dir when it leaves room for a socket's name, else a folder of the user's in /tmp."""
    return Path(address.runtime_dir())


def ask(start: str, request: GroundRequest) -> Reply | None:
    """The server's answer to `request` for the checkout containing `start`; None when no server of the same
    user answers it (the caller then answers by itself). A gitwiki error the server met comes in the reply
    (`Reply.check` raises it)."""
    import dataclasses  # with inspect, ast and dis: 2 MiB a stdio bridge (which only asks for sessions) does without

    return _ask(start, "request", dataclasses.asdict(request))


def ask_memory_search(start: str, fields: dict[str, Any]) -> Reply | None:
    """`gitwiki memory search` answered by the server (its model warm), as `ask`: `fields` are the command's
    options (MEMORY_SEARCH), `json` among them; None when no server answers."""
    return _ask(start, "memory_search", fields)


def ask_search(root: Path, index: Path, start: str, fields: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """`gitwiki ground --json`'s result (SearchResult.to_json) from the server of the checkout at `root` (index dir
    `index`), for a caller that has both at hand and `timeout` seconds in all (the hooks: a hung server must not
    hold a tool call); `fields` are GroundRequest's. None when no server answers in time, it declines or it meets
    an error: the caller then searches by itself."""
    if os.environ.get(NO_SERVER) or os.name != "posix":
        return None
    message = {
        "protocol": PROTOCOL,
        "root": str(root),
        "start": str(Path(start).resolve()),
        "env": environment(),
        "request": {**fields, "format": "json"},
    }
    try:
        line = json.dumps(message).encode() + b"\n"
        reply = _exchange(socket_path(index, root), line, time.monotonic() + timeout)
        if reply is None or "declined" in reply or reply.get("error") is not None:
            return None
        found = json.loads(reply["stdout"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if isinstance(found, dict) else None


# `gitwiki memory search`'s options a server takes, and their types (a float option takes an int too).
MEMORY_SEARCH: dict[str, tuple[type, ...]] = {
    "query": (str, type(None)),
    "detail": (str,),
    "limit": (int,),
    "after": (str, type(None)),
    "before": (str, type(None)),
    "days": (float, int, type(None)),
    "hours": (float, int, type(None)),
    "tag": (str, type(None)),
    "topic": (str, type(None)),
    "mode": (str,),
    "json": (bool,),
}


def _ask(start: str, kind: str, request: dict[str, Any]) -> Reply | None:
    try:
        found = _server_socket(start)
        if found is None:
            return None
        checkout, path = found
        message = {
            "protocol": PROTOCOL,
            "root": str(checkout.root),
            "start": str(Path(start).resolve()),
            "env": environment(),
            kind: request,
        }
        reply = _exchange(path, json.dumps(message).encode() + b"\n")
        if reply is None or "declined" in reply:
            return None
        return Reply(str(reply["stdout"]), str(reply["stderr"]), reply.get("error"), int(reply.get("exit_code", 0)))
    except (OSError, ValueError, KeyError, TypeError, GitwikiError):
        return None  # no server, a bad reply; a bad config: the local path says so


def listening(start: str) -> bool:
    """Whether a server may answer for the checkout at `start` (its socket is there, no connection made): a
    fresh process that would load the model for a search that server answers does not start that load."""
    try:
        found = _server_socket(start)
    except (OSError, ValueError, GitwikiError):
        return False
    return found is not None and found[1].exists()


def _server_socket(start: str) -> tuple[Checkout, Path] | None:
    """The checkout at `start` and its server's socket path; None where no server is asked (GITWIKI_NO_SERVER, not
    POSIX, or GIT_DIR and friends or an unusual layout, which only git understands: the local path asks it)."""
    if os.environ.get(NO_SERVER) or os.name != "posix":
        return None
    from gitwiki.config import index_dir, load  # not at the top: a stdio bridge finds its owner without them

    checkout = find_checkout(start)
    if checkout is None:
        return None
    return checkout, socket_path(index_dir(load(checkout.root), checkout.root, checkout.common_dir), checkout.root)


def _exchange(path: Path, line: bytes, deadline: float | None = None) -> dict[str, Any] | None:
    """The server's reply to `line`; by `deadline` (time.monotonic()) in all when one is given."""
    timeout = CONNECT_TIMEOUT if deadline is None else max(deadline - time.monotonic(), 0.001)
    with contextlib.closing(address.connect(str(path), timeout)) as sock:  # OSError: not this user's socket
        sock.settimeout(REPLY_TIMEOUT)
        sock.sendall(line)
        data = read_line(sock, deadline=deadline)
    reply = json.loads(data)
    return reply if isinstance(reply, dict) else None


def read_line(sock: _socket.socket, limit: int = 1 << 30, deadline: float | None = None) -> bytes:
    """One line from `sock`, without its newline; ValueError when the other end hangs up before it or it is
    longer than `limit`, TimeoutError when it has not come by `deadline` (time.monotonic(); a timeout per read
    would let a client sending a byte at a time hold the connection for ever)."""
    return address.Lines(sock).next(limit, deadline)
