"""`gitwiki-hook TYPE` answered by the checkout's running owner (`gitwiki serve`), which runs the same handler.

A hook process spends most of its CPU importing the hook code (35-51 ms in a venv, of which 10-12 ms the
interpreter; docs/research/sessions-hooks.md); the owner has that code loaded. So a hook first sends its type, the
event's bytes and its directory over the checkout's socket and prints the owner's answer, and loads nothing but
`_json` (serve.wire) and `_socket` to do so (not json, whose `re` is ~6 ms, `socket`, `pathlib`, `typing` or
gitwiki's config: ~4-5 ms each in a venv).

The owner checks the request as it checks `gitwiki ground`'s (`serve.server`): the same user, checkout, environment
and configuration, or it declines. No owner, a decline, an owner that has not started the hook within BUDGET
seconds (or not answered within RUN_BUDGET after), or any error: None, and the hook answers by itself as before.
A hook never starts an owner.

The socket is found as `serve.client.socket_path` finds it, from the default index dir (or $GITWIKI_INDEX_DIR):
the index dir a configuration names is only known by reading it, which is what this path saves, so a checkout
whose `[storage] index_dir` moves the index finds no owner here and its hooks answer by themselves.
"""

from __future__ import annotations

import os
import time

# serve.address, not serve.client: that module would load the config and pathlib, the cost this path saves.
from gitwiki.serve.address import (
    GIT_VARS,
    NO_SERVER,
    PROTOCOL,
    Lines,
    checkout_of,
    connect,
    default_index_dir,
    environment,
    socket_path,
)
from gitwiki.serve.wire import dumps, loads

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
MAX_REPLY = 1 << 24  # a hook's answer is capped far below this (agent_hooks.run)


def ask(name: str, raw: bytes) -> tuple[str, int] | None:
    """The owner's answer to hook `name` on the event `raw` (stdout, without its newline, and the exit status);
    None when no owner answers it in time."""
    if os.environ.get(NO_SERVER) or os.name != "posix" or any(os.environ.get(v) for v in GIT_VARS):
        return None
    if len(raw) > MAX_EVENT:
        return None
    try:
        text = raw.decode("utf-8")  # the owner encodes it back to the same bytes (the session's duplicate check)
        event = loads(text)
        if not isinstance(event, dict):
            return None  # no answer either way; the hook's own path decides that without an owner
        where = event.get("cwd")
        # Claude Code always sends an absolute one; a relative one (or none: ".") would mean the owner's directory
        if not isinstance(where, str) or not os.path.isabs(where):
            return None
        start = os.path.realpath(where)
        found = checkout_of(start)
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
        line = dumps(message).encode() + b"\n"
        reply = _exchange(socket_path(default_index_dir(root, common), root), line, time.monotonic() + BUDGET)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(reply, dict) or "declined" in reply:
        return None
    out, code = reply.get("stdout"), reply.get("exit_code", 0)
    if not isinstance(out, str) or not isinstance(code, int) or isinstance(code, bool):
        return None
    return out, code


def _exchange(path: str, line: bytes, deadline: float) -> object:
    """The owner's reply to `line` by `deadline` (time.monotonic()); OSError or ValueError when there is none."""
    sock = connect(path, CONNECT_TIMEOUT)
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(line)
        lines = Lines(sock)
        reply = loads(lines.next(MAX_REPLY, deadline).decode())
        if isinstance(reply, dict) and reply.get("running") is True:
            # the owner runs the hook now: its answer, however long the hook takes it (in a bound)
            reply = loads(lines.next(MAX_REPLY, time.monotonic() + RUN_BUDGET).decode())
        return reply
    finally:
        sock.close()
