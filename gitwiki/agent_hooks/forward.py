"""`gitwiki-hook TYPE` answered by the checkout's running owner (`gitwiki serve`), which runs the same handler.

A hook process spends most of its CPU importing the hook code (35-51 ms in a venv, of which 10-12 ms the
interpreter; docs/research/sessions-hooks.md); the owner has that code loaded. So a hook first sends its type, the
event's bytes and its directory over the checkout's socket and prints the owner's answer, and loads nothing but
`json` and `_socket` to do so (not `socket`, `pathlib`, `typing` or gitwiki's config: ~4-5 ms each in a venv).

The owner checks the request as it checks `gitwiki ground`'s (`serve.server`): the same user, checkout, environment
and configuration, or it declines. No owner, a decline, an owner that has not started the hook within BUDGET
seconds (or not answered within RUN_BUDGET after), or any error: None, and the hook answers by itself as before.
A hook never starts an owner.

The socket is found as `serve.client.socket_path` finds it, from the default index dir (or $GITWIKI_INDEX_DIR):
the index dir a configuration names is only known by reading it, which is what this path saves, so a checkout
whose `[storage] index_dir` moves the index finds no owner here and its hooks answer by themselves.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

# The serve socket's protocol and identity, as serve/client.py has them (tests/agent_hooks/test_forward.py checks
# that they agree): importing that module would load the config and pathlib, the cost this path saves.
PROTOCOL = 1
MAX_ADDRESS = 96
ENV_PREFIXES = ("GITWIKI_", "HF_", "FASTEMBED_")
ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GITHUB_REPOSITORY", "GITHUB_API_URL")
NO_SERVER = "GITWIKI_NO_SERVER"
SERVE_ALONE = "GITWIKI_SERVE_ALONE"
# Set, git finds the repository elsewhere than the event's directory says (gitcli.find_checkout): the hook asks git.
GIT_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_CEILING_DIRECTORIES",
)

# Connect, send, and hear that the owner started the hook (serve/hooks.py's RUNNING), in all: a warm owner does in
# a ms or two. Past this it is hung or stuck, and the hook answers by itself, this much later than it would have.
BUDGET = 0.5
# Once the owner has started the hook, its answer: a warm owner's takes a few ms (the prompt hook's search inside it
# may wait up to its own 0.5 s for a busy owner). The hook does not answer by itself meanwhile, which would make a
# second answer of the same event; past this (an owner stuck in the hook) it does, inside Claude Code's 10 s.
RUN_BUDGET = 5.0
# A listening owner accepts at once; a full backlog or a stopped process is not worth more of the budget.
CONNECT_TIMEOUT = 0.25
# An event larger than this is answered here: the owner takes request lines of up to 1 MiB.
MAX_EVENT = 256 * 1024


def ask(name: str, raw: bytes) -> tuple[str, int] | None:
    """The owner's answer to hook `name` on the event `raw` (stdout, without its newline, and the exit status);
    None when no owner answers it in time."""
    if os.environ.get(NO_SERVER) or os.name != "posix" or any(os.environ.get(v) for v in GIT_VARS):
        return None
    if len(raw) > MAX_EVENT:
        return None
    try:
        text = raw.decode("utf-8")  # the owner encodes it back to the same bytes (the session's duplicate check)
        event = json.loads(text)
        if not isinstance(event, dict):
            return None  # no answer either way; the hook's own path decides that without an owner
        where = event.get("cwd")
        # Claude Code always sends an absolute one; a relative one (or none: ".") would mean the owner's directory
        if not isinstance(where, str) or not os.path.isabs(where):
            return None
        start = os.path.realpath(where)
        found = _checkout(start)
        if found is None:
            return None
        root, common = found
        message = {
            "protocol": PROTOCOL,
            "hook": name,
            "event": text,
            "cwd": os.getcwd(),
            "root": root,
            "start": start,
            "env": environment(),
            "by": time.time() + BUDGET,  # the owner does not start on a hook that has given up on it
        }
        line = json.dumps(message).encode() + b"\n"
        reply = _exchange(socket_path(_index_dir(root, common), root), line, time.monotonic() + BUDGET)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(reply, dict) or "declined" in reply:
        return None
    out, code = reply.get("stdout"), reply.get("exit_code", 0)
    if not isinstance(out, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    return out, code


def environment() -> dict[str, str]:
    """The part of this process's environment the owner must share to answer for it (`serve.client.environment`)."""
    return {
        k: v
        for k, v in os.environ.items()
        if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and k not in (NO_SERVER, SERVE_ALONE)
    }


def socket_path(index: str, root: str) -> str:
    """`serve.client.socket_path`, on strings."""
    path = os.path.join(index, f"serve-{_digest(root)}.sock")
    if len(os.fsencode(path)) <= MAX_ADDRESS:
        return path
    return os.path.join(_runtime_dir(), f"gitwiki-{_digest(path)}.sock")


def _runtime_dir() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and len(os.fsencode(runtime)) <= MAX_ADDRESS - 32 and os.path.isdir(runtime):
        return runtime
    import tempfile  # only for an index dir too deep for a socket path

    temp = tempfile.gettempdir()
    base = temp if len(os.fsencode(temp)) <= MAX_ADDRESS - 48 else "/tmp"
    return os.path.join(base, f"gitwiki-{os.getuid()}")


def _index_dir(root: str, common: str) -> str:
    """`config.index_dir` without the configuration's `[storage] index_dir` (see the module's note)."""
    configured = os.environ.get("GITWIKI_INDEX_DIR")
    if configured:
        return os.path.realpath(os.path.join(root, os.path.expanduser(configured)))
    return os.path.join(common, "gitwiki")


def _checkout(start: str) -> tuple[str, str] | None:
    """The worktree root and git common dir of the checkout containing `start` (a resolved path), as
    `gitcli.find_checkout` reads them; None where it would ask git."""
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


def _exchange(path: str, line: bytes, deadline: float) -> object:
    """The owner's reply to `line` by `deadline` (time.monotonic()); OSError or ValueError when there is none."""
    st = os.stat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{path} is not this user's socket")
    import _socket  # the C module under `socket`, without its enum, selectors and 4 ms of imports

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        option = getattr(_socket, "SO_PEERCRED", None)
        if option is not None:  # struct ucred {pid, uid, gid}: the peer must be this user (`fs.socket_peer`)
            uid = int.from_bytes(sock.getsockopt(_socket.SOL_SOCKET, option, 12)[4:8], sys.byteorder)
            if uid != os.getuid():
                raise OSError("another user's socket")
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(line)
        data = b""
        first = True
        while True:
            end = data.find(b"\n")
            if end < 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer in time")
                sock.settimeout(left)
                chunk = sock.recv(1 << 16)
                if not chunk:
                    raise ValueError("the owner closed the connection before its answer")
                data += chunk
                continue
            reply, data = json.loads(data[:end]), data[end + 1 :]
            if not (first and isinstance(reply, dict) and reply.get("running") is True):
                return reply
            first = False  # the owner runs the hook now: its answer, however long the hook takes it (in a bound)
            deadline = time.monotonic() + RUN_BUDGET
    finally:
        sock.close()


def _digest(text: str) -> str:
    """`serve.client`'s name for `text` (FNV-1a, 64 bits)."""
    value = 0xCBF29CE484222325
    for byte in os.fsencode(text):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"
