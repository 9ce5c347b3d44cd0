"""The one warm `gitwiki serve` of a checkout (its owner), seen from a process that wants it: find it, start it,
open an MCP session on it, ask its status, stop it. Standard library, `config` and `gitcli` only: a bridge and
`gitwiki status` import this and never pygit2, numpy or the MCP SDK.

The owner listens on the checkout's socket (`client.socket_path`, served by `serve.server.SocketServer`) and holds
an exclusive `flock` on the lock file beside it for as long as it lives; the kernel drops that lock when the
process dies, kill -9 included. Only `gitwiki serve` starts an owner: the starter takes the lock first
(non-blocking) and hands the locked descriptor to the owner it spawns, so of two sessions starting at once, or of
every bridge of a killed owner, exactly one starts the next and the others wait for its socket.

A session connection opens with one JSON line (`{"protocol", "session": true, "root", "start", "env"}`) and the
owner's reply (`{"session": "accepted", "pid"}` or `{"declined": reason}`); after that the connection carries the
session's JSON-RPC lines both ways, one MCP session per connection.
"""

from __future__ import annotations

import _socket  # `socket`'s C type, all used here: the module adds enums and selectors (0.5 MiB, 1.5 ms)
import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.errors import GitwikiError
from gitwiki.git.gitcli import find_checkout
from gitwiki.serve import address, client

# The owner's start-up log: its stderr, kept beside the lock (truncated when it passes this at a start).
MAX_LOG = 1 << 20
# What a status or stop request may take before the owner counts as hung.
PROBE_TIMEOUT = address.PROBE_TIMEOUT


class Declined(NamedTuple):
    """An owner answered, but not for us (another environment or configuration): this session runs alone."""

    reason: str


class Place(NamedTuple):
    """Where the owner of one checkout lives: its socket, lock and log, and the directory sessions start in."""

    root: Path
    start: Path
    socket: Path

    @property
    def lock(self) -> Path:
        return self.socket.with_name(self.socket.name.removesuffix(".sock") + ".lock")

    @property
    def log(self) -> Path:
        return self.socket.with_name(self.socket.name.removesuffix(".sock") + ".log")


def place(start: str) -> Place | None:
    """The owner's place for the checkout containing `start`; None outside a checkout git can be asked about
    without pygit2 (GIT_DIR and friends), or when the configuration does not load (the caller reports it)."""
    from gitwiki.config import index_dir, load  # tomllib and the config's records: `quick_place` does without

    try:
        checkout = find_checkout(start)
        if checkout is None:
            return None
        index = index_dir(load(checkout.root), checkout.root, checkout.common_dir)
    except (OSError, ValueError, GitwikiError):
        return None
    return Place(checkout.root, Path(start).resolve(), client.socket_path(index, checkout.root))


def quick_place(start: str) -> tuple[Place, Path] | None:
    """`place(start)` and the index dir, found without loading the configuration (tomllib and the config's records:
    ~1 MiB and 5 ms of a bridge's start): of the configuration, only `[storage] index_dir` moves the owner's place,
    and it is a key of the user's own file alone (gitwiki.trust), read here only when that file names it. None when
    `place` must load it, or outside a checkout git need not be asked about. The owner checks the whole
    configuration itself when it takes a session, and declines one whose configuration is not its own."""
    found = address.owner_socket(start)
    if found is None:
        return None
    root, resolved, index, sock = found
    return Place(Path(root), Path(resolved), Path(sock)), Path(index)


def connect(where: Place, timeout: float = client.CONNECT_TIMEOUT) -> _socket.socket | Declined | None:
    """An MCP session on the owner (the connection, past the opening exchange); `Declined` when an owner answers
    but will not serve this session; None when no owner answers."""
    try:
        sock = address.connect(str(where.socket), timeout)
    except OSError:
        return None
    try:
        sock.sendall(address.session_request(str(where.root), str(where.start)))
        reply = json.loads(client.read_line(sock, 1 << 16, time.monotonic() + max(timeout, PROBE_TIMEOUT)))
        sock.settimeout(None)
    except (OSError, ValueError):
        sock.close()
        return None
    if isinstance(reply, dict) and reply.get("session") == "accepted":
        return sock
    sock.close()
    if isinstance(reply, dict) and reply.get("retired"):
        return None  # an owner of the old configuration, retired by this request: the next one is ours to start
    return Declined(str(reply.get("declined", "no sessions here")) if isinstance(reply, dict) else "a bad reply")


def start(where: Place, chdir: str, run: Callable[[int], int] | None = None) -> bool:
    """Start an owner for `where`, unless one holds the lock (running or starting): True when this call started
    it. The owner runs detached (its own session, stdin and stdout on /dev/null, stderr into the log), so it
    outlives the session that started it: a client ends its server at the session's end (SIGINT, then SIGTERM).
    With `run`, a process of one thread forks the owner, whose whole life is `run(lock fd)`: it starts from this
    process's interpreter and imports, not from new ones (a first search waits for the owner's start)."""
    fd = hold(where)
    if fd is None:
        return False
    try:
        with contextlib.suppress(OSError):
            if os.stat(where.log).st_size > MAX_LOG:
                os.truncate(where.log, 0)
        if run is not None and _one_thread():
            with contextlib.suppress(OSError):  # no fork (EAGAIN, ENOMEM) and no child: spawned below
                _fork(where, fd, run)
                return True
        import subprocess  # 5 ms, only when an owner is spawned

        with open(where.log, "ab") as log:
            process = subprocess.Popen(
                # -P: `-m` puts the working directory (the checkout) first on sys.path, where a clone's own
                # `gitwiki/` would be run in our place
                [sys.executable, "-P", "-m", "gitwiki", "-C", chdir, "serve", "--owner-fd", str(fd)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=(fd,),
                start_new_session=True,
            )
        _reap(process.wait)
        return True
    finally:
        os.close(fd)  # the owner holds the lock through its own copy of the descriptor


# The name a forked owner gives itself (its command line is its session's): `kill` signals no other process.
OWNER_NAME = b"gitwiki-owner"


def _one_thread() -> bool:
    """Whether this process runs one thread (one that may fork and go on running Python in the child)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _fork(where: Place, fd: int, run: Callable[[int], int]) -> None:
    """The owner forked in its own session, its stdin and stdout on /dev/null, its stderr the log, holding only
    the lock of this process's descriptors; reaped here as a spawned one is."""
    log = os.open(where.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setsid()
                _detach(fd, log)
                code = run(fd)
            except BaseException:  # the owner's last words go to its log
                import traceback

                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(OSError, ValueError):
                        stream.flush()
                os._exit(code)
    finally:
        os.close(log)
    _reap(lambda: os.waitpid(pid, 0))


def _reap(wait: Callable[[], object]) -> None:
    """A thread that waits for the owner this process started, so that it leaves no zombie (a relay this process
    becomes ignores SIGCHLD instead: mcp.relay)."""
    import threading

    threading.Thread(target=wait, name="gitwiki-owner-reaper", daemon=True).start()


def _detach(fd: int, log: int) -> None:
    """The forked owner's setting, as a spawned one's: stdio, no descriptor but the lock's, no working directory
    on sys.path (the spawn's `-P`), SIGCHLD as default, and its name."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(log, 2)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) != fd:
            with contextlib.suppress(OSError):
                os.close(int(name))
    if not sys.flags.safe_path and sys.path:
        del sys.path[0]
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    with contextlib.suppress(OSError), open("/proc/self/comm", "wb") as comm:
        comm.write(OWNER_NAME)


def hold(where: Place) -> int | None:
    """Take the owner lock (for an owner started by hand, or the one `start` spawns); None when another holds it."""
    where.lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def held(where: Place) -> bool:
    """Whether a live process holds the owner lock (an owner running, or one starting)."""
    try:
        fd = os.open(where.lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def mark(fd: int) -> None:
    """Write this process's pid into the owner lock it holds on `fd`: `kill` reads it when the owner hangs."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def kill(where: Place, wait: float = 5.0) -> int | None:
    """End an owner that holds the lock but does not answer: SIGTERM, then after `wait` seconds SIGKILL. Only a
    process whose command line is an owner's (`serve --owner-fd`), or a forked owner by its name, is signalled;
    its pid, or None."""
    import signal

    try:
        pid = int(where.lock.read_text(encoding="ascii").strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        name = Path(f"/proc/{pid}/comm").read_bytes().strip()
    except (OSError, ValueError):
        return None
    if name != OWNER_NAME and (b"serve" not in command or b"--owner-fd" not in command):
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while held(where) and time.monotonic() < deadline:
        time.sleep(0.05)
    if held(where):
        os.kill(pid, signal.SIGKILL)
    return pid


def ask(where: Place, what: str, timeout: float = PROBE_TIMEOUT) -> dict[str, Any] | None:
    """The owner's reply to a `status` or `stop` request; None when no owner answers within `timeout`."""
    try:
        reply = json.loads(address.ask(str(where.socket), what, client.CONNECT_TIMEOUT, timeout))
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) and "declined" not in reply else None


class Owner:
    """`mcp.bridge.Owner` for one checkout: its owner, found at `where`, started from `chdir`."""

    def __init__(self, where: Place, chdir: str) -> None:
        self._where = where
        self._chdir = chdir
        self._started = False  # an owner started here has yet to take our session

    def connect(self) -> _socket.socket | str | None:
        got = connect(self._where)
        if got is not None:
            self._started = False
        return got.reason if isinstance(got, Declined) else got

    def start(self, run: Callable[[int], int] | None = None) -> bool:
        started = start(self._where, self._chdir, run)
        self._started = self._started or started
        return started

    def failed(self) -> str | None:
        """The owner holds its lock from the spawn to its end (the kernel drops it, kill -9 included): one started
        here whose lock is free and whose socket did not take the session (`connect` just failed) has ended."""
        if not self._started or held(self._where):
            return None
        self._started = False
        try:  # its last words: the one line a start-up error leaves in the log
            last = self._where.log.read_bytes()[-4096:].decode("utf-8", "replace").strip().splitlines()[-1:]
        except OSError:
            last = []
        said = f"; its log ends: {last[0].strip()}" if last else ""
        return f"gitwiki's owner process ended as it started{said} ({self._where.log})"

    def alive(self, timeout: float) -> bool:
        return ask(self._where, "status", timeout) is not None

    def where(self) -> str:
        return str(self._where.log)

    @property
    def root(self) -> str:
        """The checkout's root."""
        return str(self._where.root)

    def address(self) -> str:
        return str(self._where.socket)
