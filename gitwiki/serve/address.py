"""The serve socket's address and who may speak on it, in the standard library's `os` alone and on strings: the
CLI's client (`serve.client`), the owner's callers (`serve.owner`) and a hook's client (`agent_hooks.forward`, which
loads nothing but `json` and `_socket` besides) find and open the socket the same way.
"""

from __future__ import annotations

import _socket  # the C module under `socket`, without its enums, selectors and 1.5-4 ms of imports
import os
import stat
import sys
import time

PROTOCOL = 1
# AF_UNIX addresses: 108 bytes with the NUL on Linux, 104 on macOS; the spare bytes fit the temporary name
# the server binds before renaming it into place (`.NAME.PID`).
MAX_ADDRESS = 96
# The environment that changes an answer (config layers, index dir, model, caches) must be the server's too.
ENV_PREFIXES = ("GITWIKI_", "HF_", "FASTEMBED_")
ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GITHUB_REPOSITORY", "GITHUB_API_URL")
NO_SERVER = "GITWIKI_NO_SERVER"
# `gitwiki serve` runs each session in its own process (docs/mcp.md); it changes no answer.
SERVE_ALONE = "GITWIKI_SERVE_ALONE"
SERVE_RELAY = "GITWIKI_SERVE_RELAY"  # "0": a later session stays the bridge (mcp.relay); the owner's answers alike


# Set, git finds the repository elsewhere than a directory says (gitcli.find_checkout): git must be asked.
GIT_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_CEILING_DIRECTORIES",
)
# A listening owner accepts in microseconds; one that has not within this is stuck.
CONNECT_TIMEOUT = 0.5
# What a status or stop request, or a session's opening, may take before the owner counts as hung.
PROBE_TIMEOUT = 2.0


def environment() -> dict[str, str]:
    """The part of this process's environment a server must share to answer for it."""
    return {
        k: v
        for k, v in os.environ.items()
        if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and k not in (NO_SERVER, SERVE_ALONE, SERVE_RELAY)
    }


def default_index_dir(root: str, common: str) -> str:
    """`config.index_dir` for a configuration without `[storage] index_dir` (a key of the user's own file alone):
    $GITWIKI_INDEX_DIR relative to the worktree `root`, else the git common dir's `gitwiki` folder."""
    configured = os.environ.get("GITWIKI_INDEX_DIR")
    if configured:
        return os.path.realpath(os.path.join(root, os.path.expanduser(configured)))
    return os.path.join(common, "gitwiki")


def socket_path(index: str, root: str) -> str:
    """Where the server of the checkout at `root` listens: in the index dir, named after the checkout (the index
    dir is shared by a repo's worktrees), or when that path is too long for AF_UNIX, a short one in the user's
    runtime dir named after it."""
    path = os.path.join(index, f"serve-{digest(root)}.sock")
    if len(os.fsencode(path)) <= MAX_ADDRESS:
        return path
    return os.path.join(runtime_dir(), f"gitwiki-{digest(path)}.sock")


def runtime_dir() -> str:
    """The user's runtime dir when it leaves room for a socket's name, else a folder of the user's in /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and len(os.fsencode(runtime)) <= MAX_ADDRESS - 32 and os.path.isdir(runtime):
        return runtime
    import tempfile  # 3 ms of imports (shutil, random), only for an index dir too deep for a socket path

    # A deep TMPDIR (a test harness's, a sandbox's) leaves no room for the socket's name either: /tmp then.
    temp = tempfile.gettempdir()
    base = temp if len(os.fsencode(temp)) <= MAX_ADDRESS - 48 else "/tmp"
    return os.path.join(base, f"gitwiki-{os.getuid()}")


def digest(text: str) -> str:
    """A short stable name for `text` (FNV-1a, 64 bits): it only names a file in the user's own folder, and
    hashlib would load OpenSSL, 3 MiB of every stdio bridge's memory."""
    value = 0xCBF29CE484222325
    for byte in os.fsencode(text):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def checkout_of(start: str) -> tuple[str, str] | None:
    """The worktree root and git common dir of the checkout containing `start` (a resolved path), as
    `gitcli.find_checkout` reads them, on strings; None where it would ask git (the caller checks GIT_VARS)."""
    folder = start
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return (folder, dot) if os.path.isfile(os.path.join(dot, "HEAD")) else None
        if os.path.isfile(dot):
            with open(dot, encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = os.path.realpath(os.path.join(folder, text[len("gitdir:") :].strip()))
            common = os.path.join(git_dir, "commondir")
            if os.path.isfile(common):
                with open(common, encoding="utf-8") as f:
                    return folder, os.path.realpath(os.path.join(git_dir, f.read().strip()))
            return folder, git_dir
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def user_config_names_index_dir() -> bool:
    """Whether the user's own config file (`config.user_config_path()`) may set `[storage] index_dir`, the one key
    that moves the owner's socket: a key spelt out, or one with an escape in a quoted key (`"index\\u005fdir"`); a
    file that cannot be read may too (its load reports why). Read as bytes: no tomllib, no config module."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    try:
        with open(os.path.join(base, "gitwiki", "config.toml"), "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b"index_dir" in text or b"\\u" in text or b"\\U" in text


def owner_socket(start: str) -> tuple[str, str, str, str] | None:
    """Where the owner of the checkout containing `start` listens, found without loading the configuration (of it,
    only the user's own `[storage] index_dir` moves the socket): (worktree root, `start` resolved, index dir,
    socket path). None where git must be asked (GIT_VARS, an unusual layout), outside a checkout, or when the user's
    config may name the index dir (`serve.owner.place` loads the configuration then)."""
    if any(os.environ.get(name) for name in GIT_VARS):
        return None
    try:
        resolved = os.path.realpath(start)
        found = checkout_of(resolved)
        if found is None or user_config_names_index_dir():
            return None
        index = default_index_dir(*found)
        return found[0], resolved, index, socket_path(index, found[0])
    except (OSError, ValueError):
        return None


def session_request(root: str, start: str) -> bytes:
    """The line that opens an MCP session on the checkout's owner (`serve.owner.connect`, a later session's fast
    start in `gitwiki.cli`), without the json package (`serve.wire`)."""
    from gitwiki.serve import wire

    message = {"protocol": PROTOCOL, "session": True, "root": root, "start": start, "env": environment()}
    return wire.dumps(message).encode() + b"\n"


def connect(path: str, timeout: float) -> _socket.socket:
    """A connection to the socket at `path`, which must be this user's and served by this user; OSError if not."""
    st = os.stat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{path} is not this user's socket")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        if peer_uid(sock) not in (None, os.getuid()):
            raise OSError("another user's socket")
    except OSError:
        sock.close()
        raise
    return sock


def socket_peer(sock: _socket.socket) -> tuple[int, int] | None:
    """The process id and user id at the other end of the unix socket `sock` (Linux's SO_PEERCRED); None where the
    system does not say. The serve socket's both ends check the user; a bridge names a hung owner's pid."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    ucred = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred {int pid, uid, gid}
    pid, uid = (int.from_bytes(ucred[i : i + 4], sys.byteorder, signed=True) for i in (0, 4))
    return pid, uid


def peer_uid(sock: _socket.socket) -> int | None:
    """The user id of the process at the other end; None where the system does not say."""
    found = socket_peer(sock)
    return None if found is None else found[1]


def ask(path: str, what: str, connect_timeout: float, timeout: float) -> bytes:
    """The reply line of the owner at `path` to a `status` or `stop` request (`serve.owner.ask`, and a relay's
    probe, mcp.relay, which imports nothing heavier than this module); OSError or ValueError when none comes in
    `timeout`."""
    sock = connect(path, connect_timeout)
    try:
        sock.sendall(f'{{"protocol": {PROTOCOL}, "{what}": true}}\n'.encode())
        return Lines(sock).next(1 << 16, time.monotonic() + timeout)
    finally:
        sock.close()


class Lines:
    """The lines a connection reads, one at a time, each without its newline (what follows one is kept for the
    next)."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._kept = b""

    def next(self, limit: int = 1 << 30, deadline: float | None = None) -> bytes:
        """ValueError when the other end hangs up before a whole line or it is longer than `limit`, TimeoutError
        when it has not come by `deadline` (time.monotonic(); a timeout per read would let a peer sending a byte at
        a time hold the connection for ever)."""
        chunks, size = [self._kept], len(self._kept)
        end = self._kept.find(b"\n")
        while end < 0:
            if size > limit:
                raise ValueError("line too long")
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no whole line in time")
                self._sock.settimeout(left)
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise ValueError("the connection closed before a whole line")
            end = chunk.find(b"\n")
            if end >= 0:
                end += size
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        self._kept = data[end + 1 :]
        return data[:end]
