"""`gitwiki serve` answering the CLI's `gitwiki ground` over a unix socket, from its warm `Wiki`.

The other end is `serve.client.py`, which has the protocol. The socket is the user's alone: created with mode
0600 (under a umask, so there is no moment it is open to others), and each connection's peer must be the
same user (SO_PEERCRED, where the system has it). A socket file left by a dead server is found by connecting
to it (refused) and replaced; one whose server is alive is left to it, and this server does without a socket.
The file is bound under a temporary name and renamed into place, so a client never meets a file that is
bound but not yet listening.

As the owner of its checkout (`serve.owner`, `gitwiki serve --owner-fd`), the server also takes MCP sessions: a
connection that opens with `"session": true` is checked as a request is, accepted, and handed to `sessions` (the
MCP server, run on that connection until it closes); `status` and `stop` requests are answered for `gitwiki
status` and `gitwiki serve --stop`. `wait_idle` returns when the owner should end: stopped, or no session for the
idle timeout.

Requests are answered one at a time with the tool calls (the same lock), by `ground.answer`, the call the
CLI's local path makes. At most MAX_CONNECTIONS connections are served at once, each given REQUEST_TIMEOUT in
all to send its request: a connection past the cap is closed at once (its CLI answers by itself), so idle or
slow connections cannot pile up threads (400 idle ones once made 408). A request whose checkout, directory,
environment or configuration differs from this server's is declined, and the CLI answers it by itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import os
import socket
import stat
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki.config import load
from gitwiki.errors import GitwikiError
from gitwiki.operations.ground import GroundRequest, answer
from gitwiki.serve import address
from gitwiki.serve import client as serve_client
from gitwiki.sources.repositories import for_checkout
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory

log = logging.getLogger("gitwiki.socket")

# A client sends its request line at once; one that has not within this (in all) is not a gitwiki client.
REQUEST_TIMEOUT = 10.0
MAX_REQUEST = 1 << 20
# Connections served at once, each on its own thread; requests wait for the lock anyway, so more would only
# hold threads and memory. A CLI turned away answers by itself.
MAX_CONNECTIONS = 16
DRAIN = 2.0  # seconds a closing server gives the requests being answered (a hook's may take longer: it is cut)
# MCP sessions served at once (each holds a thread while its client is connected).
MAX_SESSIONS = 64
CONFIG_CHANGED = "the configuration changed since the server started"
# An owner started for a session waits this long for its first one even with idle_timeout 0.
FIRST_SESSION_GRACE = 30.0


class SocketServer:
    def __init__(
        self,
        wiki: Wiki,
        lock: threading.Lock,
        sock: socket.socket,
        path: Path,
        sessions: Callable[[socket.socket], None] | None = None,
        retire: Callable[[], None] | None = None,
        hooks: Callable[[str, bytes, str], str | None] | None = None,
    ) -> None:
        self._wiki = wiki
        self._hooks = hooks  # runs a hook `gitwiki-hook` sent (serve/hooks.py); None: hooks answer by themselves
        self._sessions = sessions
        self._retire = retire  # gives up the owner lock, so that a new owner can start beside this one
        self._retired = False
        self._state = threading.Condition()
        self._active = 0  # sessions connected now
        self._served = 0  # sessions served since the start
        self._last = time.monotonic()  # when the last session left (or the server started)
        self._stopping = False
        self._memory: Memory | None = None  # memory search's, kept warm (parsed topic pages) as the MCP tools'
        self.since = time.time()
        self._lock = lock
        self._sock = sock
        self.path = path
        self._inode = os.stat(path).st_ino
        self._env = serve_client.environment()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        threading.Thread(target=self._accept, name="gitwiki-socket", daemon=True).start()

    @classmethod
    def listen(
        cls,
        wiki: Wiki,
        lock: threading.Lock,
        sessions: Callable[[socket.socket], None] | None = None,
        retire: Callable[[], None] | None = None,
        hooks: Callable[[str, bytes, str], str | None] | None = None,
    ) -> SocketServer | None:
        """Listen for `wiki`'s checkout, answering under `lock` (and running MCP sessions with `sessions`, for an
        owner); None when another live server already does or no socket can be made here (the CLI then answers
        by itself)."""
        if not hasattr(socket, "AF_UNIX"):
            return None
        path = serve_client.socket_path(wiki.index_dir, wiki.root)
        try:
            _private_dir(path.parent)
            if _alive(path):
                log.info("another gitwiki serve answers the CLI at %s", path)
                return None
            sock = _bind(path)
        except OSError as e:
            log.warning("no socket for the CLI at %s: %s", path, e)
            return None
        return cls(wiki, lock, sock, path, sessions, retire, hooks)

    def wait_idle(self, idle_timeout: float) -> None:
        """Return when `stop` was asked, or no session has been connected for `idle_timeout` seconds (0: when
        the last one leaves; before the first, at least FIRST_SESSION_GRACE), or the owner retired (its
        configuration changed) and its last session left."""
        with self._state:
            while not self._stopping:
                wait = 0 if self._retired else idle_timeout if self._served else max(idle_timeout, FIRST_SESSION_GRACE)
                left = self._last + wait - time.monotonic()
                if self._active == 0 and left <= 0:
                    return
                self._state.wait(timeout=None if self._active else left)

    def status(self) -> dict[str, Any]:
        """What `gitwiki status` shows of the owner."""
        with self._state:
            return {
                "pid": os.getpid(),
                "since": self.since,
                "sessions": self._active,
                "served": self._served,
                "rss_kib": _rss_kib(),
                "root": str(self._wiki.root),
            }

    def close(self) -> None:
        """Stop listening; the socket file goes unless another server has replaced it meanwhile. Requests being
        answered are given DRAIN seconds to send their replies: the owner ends without waiting for its threads
        (`cli.end_now`), and `serve --stop` must hear that it stopped."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the thread (close alone does not)
        self._sock.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        deadline, taken = time.monotonic() + DRAIN, 0
        while taken < MAX_CONNECTIONS and self._slots.acquire(timeout=max(deadline - time.monotonic(), 0)):
            taken += 1  # every slot free: no request is being answered (a session gives its slot back at its start)
        for _ in range(taken):
            self._slots.release()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            if not self._slots.acquire(blocking=False):
                log.info("turned a connection away: %d are being served", MAX_CONNECTIONS)
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="gitwiki-socket-call", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        released = False
        with conn:
            try:
                if address.peer_uid(conn) not in (None, os.getuid()):
                    log.warning("refused a connection from another user")
                    return
                line = serve_client.read_line(conn, MAX_REQUEST, time.monotonic() + REQUEST_TIMEOUT)
                message = json.loads(line)
                conn.settimeout(None)
                if isinstance(message, dict) and message.get("session") is True:
                    self._slots.release()  # a session holds a session's place, not a request's
                    released = True
                    self._session(conn, message)
                    return
                if isinstance(message, dict) and "hook" in message:  # gitwiki-hook's: serve/hooks.py
                    from gitwiki.serve import hooks

                    refusal = self._refusal
                    found = hooks.answer(message, lambda m: refusal(m, session=True), self._hooks, conn.sendall)
                    conn.sendall(json.dumps(found, ensure_ascii=False).encode() + b"\n")
                    return
                conn.sendall(json.dumps(self.reply(message), ensure_ascii=False).encode() + b"\n")
            # The client went away, was too slow, or sent garbage (not UTF-8, not JSON, nested past the parser's
            # recursion limit): nothing to answer.
            except (OSError, ValueError, RecursionError) as e:
                log.info("socket request dropped: %s", type(e).__name__)
            finally:
                if not released:
                    self._slots.release()

    def _session(self, conn: socket.socket, message: dict[str, Any]) -> None:
        """Run one MCP session on `conn`, if this server takes sessions and the session is for it."""
        refusal = "this server takes no sessions (gitwiki serve --alone)" if self._sessions is None else None
        refusal = refusal or self._refusal(message, session=True)
        if refusal == CONFIG_CHANGED and self._sessions is not None:
            self._retire_now()
            conn.sendall(json.dumps({"declined": refusal, "retired": True}).encode() + b"\n")
            return
        with self._state:
            if refusal is None and self._stopping:
                refusal = "the owner is stopping"
            if refusal is None and self._active >= MAX_SESSIONS:
                refusal = f"{MAX_SESSIONS} sessions are connected"
            if refusal is None:
                self._active += 1
                self._served += 1
        if refusal is not None:
            log.info("declined a session: %s", refusal)
            conn.sendall(json.dumps({"declined": refusal}).encode() + b"\n")
            return
        assert self._sessions is not None
        try:
            conn.sendall(json.dumps({"session": "accepted", "pid": os.getpid()}).encode() + b"\n")
            self._sessions(conn)
        except Exception:  # one session's end, however it ends, is not the owner's
            log.exception("a session ended with an error")
        finally:
            with self._state:
                self._active -= 1
                self._last = time.monotonic()
                self._state.notify_all()

    def reply(self, message: Any) -> dict[str, Any]:
        """The reply to one request: stdout and stderr as the local path would write them, a gitwiki error with
        its exit code, or `declined` with the reason."""
        if isinstance(message, dict) and message.get("status") is True and self._sessions is not None:
            return self.status()
        if isinstance(message, dict) and message.get("stop") is True and self._sessions is not None:
            log.info("stopping: asked by gitwiki serve --stop")
            with self._state:
                self._stopping = True
                self._state.notify_all()
            return {"stopping": os.getpid()}
        if isinstance(message, dict) and isinstance(message.get("memory_search"), dict):
            return self._memory_search(message)
        refusal = self._refusal(message)
        if refusal is not None:
            log.info("declined a CLI request: %s", refusal)
            return {"declined": refusal}
        request = _request(message["request"])
        if isinstance(request, str):
            return {"declined": f"not a request this version knows: {request}"}
        err = io.StringIO()
        with self._lock, contextlib.redirect_stderr(err):  # the warnings the local path prints are the client's
            try:
                return {"stdout": answer(self._wiki, request), "stderr": err.getvalue()}
            except GitwikiError as e:
                return {"stdout": "", "stderr": err.getvalue(), "error": str(e), "exit_code": e.exit_code}
            except Exception as e:
                log.exception("ground over the socket crashed")  # the client answers by itself, and shows it
                return {"declined": f"internal error ({type(e).__name__})"}

    def _retire_now(self) -> None:
        """The checkout's configuration changed since this owner started: a new session needs a new owner. This
        one stops listening and gives up the owner lock (the session asking starts the next owner), serves the
        sessions it has until they leave, and ends."""
        with self._state:
            if self._retired:
                return
            self._retired = True
            self._state.notify_all()
        log.info("retiring: the configuration changed; a new owner takes the new sessions")
        self.close()
        if self._retire is not None:
            self._retire()

    def _memory_search(self, message: dict[str, Any]) -> dict[str, Any]:
        """`gitwiki memory search` as the CLI's local path prints it, from this server's warm `Memory`."""
        fields = message["memory_search"]
        refusal = self._refusal(message, session=True)
        if refusal is None and (
            set(fields) != set(serve_client.MEMORY_SEARCH)
            or any(
                not isinstance(fields[k], allowed) or (isinstance(fields[k], bool) and bool not in allowed)
                for k, allowed in serve_client.MEMORY_SEARCH.items()
            )
        ):
            refusal = "not a memory search this version knows"
        if refusal is not None:
            log.info("declined a memory search: %s", refusal)
            return {"declined": refusal}
        from gitwiki.memory import replies
        from gitwiki.memory.base import Memory
        from gitwiki.memory.search import MemoryQuery

        query = MemoryQuery(**{k: v for k, v in fields.items() if k not in ("detail", "json")})
        err = io.StringIO()
        with self._lock, contextlib.redirect_stderr(err):
            try:
                if self._memory is None:
                    self._memory = Memory(self._wiki)
                reply = replies.search(self._memory, query, detail=fields["detail"])
            except GitwikiError as e:
                return {"stdout": "", "stderr": err.getvalue(), "error": str(e), "exit_code": e.exit_code}
            except Exception as e:
                log.exception("memory search over the socket crashed")
                return {"declined": f"internal error ({type(e).__name__})"}
        shown = json.dumps(reply.data, ensure_ascii=False) if fields["json"] else reply.text
        return {"stdout": shown + "\n", "stderr": err.getvalue()}

    def _refusal(self, message: Any, session: bool = False) -> str | None:
        if not isinstance(message, dict) or message.get("protocol") != serve_client.PROTOCOL:
            return "another protocol"
        if not session and not isinstance(message.get("request"), dict):
            return "no request"
        if message.get("root") != str(self._wiki.root):
            return f"another checkout ({message.get('root')})"
        if message.get("env") != self._env:
            return "another environment"
        root = self._wiki.root
        start = message.get("start")
        if not isinstance(start, str) or "\0" in start:
            return "no start directory"
        try:
            seen = for_checkout(load(root), root, Path(start))
        except GitwikiError as e:  # the configuration broke since the start: the local path reports it
            return f"configuration: {e}"
        if seen[0] != self._wiki.config:
            return CONFIG_CHANGED
        if seen[1] != self._wiki.default:
            return "another default corpus"
        return None


# Each GroundRequest field's allowed types: `str | None` → (str, NoneType).
_FIELD_TYPES = {name: typing.get_args(hint) or (hint,) for name, hint in typing.get_type_hints(GroundRequest).items()}


def _request(fields: dict[str, Any]) -> GroundRequest | str:
    """The request `fields` describe, or what is wrong with them: a field of the wrong type (a list as the
    query) once reached the search and ended in an internal error with a traceback in the server's log."""
    try:
        request = GroundRequest(**fields)
    except TypeError as e:
        return str(e)
    for name, value in dataclasses.asdict(request).items():
        allowed = _FIELD_TYPES[name]
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            return f"{name} is a {type(value).__name__}"
    return request


def _rss_kib() -> int | None:
    """This process's resident memory in KiB (Linux's /proc), None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _private_dir(folder: Path) -> None:
    """`folder` exists (the index dir, or the runtime dir, which must be the user's own and closed to others). In
    the runtime dir, the sockets of killed servers (SIGKILL leaves its file) are removed: their repos' next
    servers may never come, and the folder is shared by every checkout with a deep index dir."""
    if folder != serve_client.runtime_dir():
        folder.mkdir(parents=True, exist_ok=True)
        return
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.stat(folder)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{folder} is not private to this user")
    for name in os.listdir(folder):
        if name.startswith("gitwiki-") and name.endswith(".sock"):
            with contextlib.suppress(OSError):  # one entry that cannot be probed must not stop every owner here
                _alive(folder / name)


def _alive(path: Path) -> bool:
    """Whether a server listens at `path`; a socket file no one listens on (a dead server's) is removed."""
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):  # a file or folder squatting the name: not ours to remove
            return True
    except FileNotFoundError:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(serve_client.CONNECT_TIMEOUT)
        try:
            probe.connect(str(path))
            return True
        except (ConnectionRefusedError, FileNotFoundError):
            pass
        except OSError:  # not a socket, or one we may not use: leave it, do without
            return True
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    log.info("removed a stale socket at %s", path)
    return False


def _bind(path: Path) -> socket.socket:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        old = os.umask(0o177)  # mode 0600 from the start
        try:
            sock.bind(str(temporary))
        finally:
            os.umask(old)
        sock.listen(16)
        os.replace(temporary, path)
    except OSError:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return sock
