"""Answering the MCP `initialize` request before the MCP SDK is imported.

Importing the SDK costs about 1.2 s of CPU (docs/benchmarks.md, "Warm and at scale"), more than a client
should wait for the handshake. `gitwiki serve` therefore reads the first message itself; when it is an
`initialize` of the handshake era, it answers at once with what the SDK would say (the fields below), then
hands the SDK a stdin that starts with that same message and a stdout that drops the SDK's own answer to
it. Before dropping it, the answer is compared with ours: a newer SDK that answers differently shows up as
one warning on stderr (and tests/test_mcp_early.py fails). Anything else as the first message (another
protocol era, a malformed request) goes to the SDK untouched.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

log = logging.getLogger("gitwiki.mcp")

SERVER_NAME = "gitwiki"
# What the SDK (mcp 2.x) negotiates and declares; tests/test_mcp_early.py checks these against it.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = "2025-11-25"
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

# Claude Code cuts server instructions at 2,048 characters; tests/test_mcp_early.py keeps these under that with room
# for a line added at run time (e.g. that search is lexical only).
INSTRUCTIONS = """\
gitwiki serves the markdown wiki of this git repository: search it, read it, edit it safely.

- `ground` searches (BM25 + embeddings): per page, the best sections with heading breadcrumb,
  `path:start-end` and a snippet. Then read just those lines with `read_markdown`.
- `outline_markdown` maps a page (sections, line ranges, bytes); `read_markdown` also takes
  `page.md#section/sub` or `page.md:START-END`; `read_many` reads several pages, sections or globs.
- Page paths are relative to the corpus folder (`list_corpora`); `ground`'s repo-relative paths work too.
- Browse with `list_files` (glob) or `list_tree`; `get_footnote` resolves `[^n]`; `page_history` is git log.
- Write with `add_markdown` (overwrite: true replaces) and `delete_markdown`: folder index.md blocks are
  kept current and lint warnings returned (fix them with another add_markdown). Writes land in the
  worktree (committed only with [mcp] commit_writes); searches see them at once.
- Answers reflect HEAD plus uncommitted edits (`commit`, `dirty`). With several corpora pass `corpus`;
  `repo:NAME:wiki` / `repo:NAME:corpus` are other repositories, read-only, as of `gitwiki repo sync`.

Memory: notes that outlive the session, as markdown topic pages in the wiki.
- `memory_brief` first (no query: what memory holds; a topic or glob: its entries by category).
- `memory_search` before you dig (`tag:x topic:y source:z` inline). `memory_store` what you learn:
  start with `gotcha:`, `decision:`, `invariant:`, `how-to:`, `perf:` or `gap:` to tag it, and pass
  `source: path:line` to have it flagged stale when that code changes.
- `memory_topics` action=checkpoint before you stop, action=resume when you start.
"""


class EarlyStdio:
    """fd 0 and fd 1 rerouted through pipes for the SDK; `close()` after the SDK returns flushes what it
    wrote to the real stdout."""

    def __init__(self, first: bytes, request_id: object, answer: dict[str, Any] | None) -> None:
        self._real_in, self._real_out = os.dup(0), os.dup(1)
        in_r, self._in_w = os.pipe()
        self._out_r, out_w = os.pipe()
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.close(in_r)
        os.close(out_w)
        self._out = threading.Thread(target=self._pump_out, args=(request_id, answer), daemon=True)
        self._out.start()
        threading.Thread(target=self._pump_in, args=(first,), daemon=True).start()

    def _pump_in(self, first: bytes) -> None:
        try:
            _write_all(self._in_w, first)
            while chunk := os.read(self._real_in, 65536):
                _write_all(self._in_w, chunk)
        except OSError:
            pass
        finally:
            os.close(self._in_w)  # the SDK sees the client's end of input

    def _pump_out(self, request_id: object, answer: dict[str, Any] | None) -> None:
        pending = b""
        try:
            while chunk := os.read(self._out_r, 65536):
                if answer is None:
                    _write_all(self._real_out, chunk)
                    continue
                pending += chunk
                while answer is not None and b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    message = json.loads(line) if line.strip() else None
                    if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                        if message.get("result") != answer["result"]:
                            log.warning("the early initialize answer differs from the SDK's: %s", line[:500])
                        answer = None  # already answered: drop the SDK's copy
                    else:
                        _write_all(self._real_out, line + b"\n")
                if answer is None and pending:
                    _write_all(self._real_out, pending)
                    pending = b""
        except OSError:
            pass

    def close(self) -> None:
        """Call when the SDK is done: ends its stdout (fd 1 now points at /dev/null) so the last answers
        reach the client."""
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        self._out.join(timeout=5)


def log_to_stderr(level: str) -> None:
    """Plain `gitwiki serve: LEVEL name: message` lines on stderr. Set before anything logs or prints: before
    the SDK's own basicConfig, which then leaves it alone, and before the CLI socket may swap sys.stderr for a
    request's warnings (a handler made then would keep writing into that request's buffer)."""
    logging.basicConfig(level=level, stream=sys.stderr, format="gitwiki serve: %(levelname)s %(name)s: %(message)s")


def answer_initialize(version: str) -> EarlyStdio | None:
    """Read the first message from stdin; answer it if it is a handshake `initialize`. Returns the rerouted
    stdio the SDK must then use (None when stdin is closed before any message)."""
    first = b""
    while b"\n" not in first:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        first += chunk
    if not first:
        return None
    line = first.split(b"\n", 1)[0]
    answer = _answer(line, version)
    request_id = None
    if answer is not None:
        request_id = answer["id"]
        _write_all(1, json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    return EarlyStdio(first, request_id, answer)


def _answer(line: bytes, version: str) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return None
    info = params.get("clientInfo")
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return None  # the SDK answers malformed requests with its own error
    if not isinstance(params.get("capabilities"), dict) or "_meta" in params:
        return None
    requested = params["protocolVersion"]
    return {
        "jsonrpc": "2.0",
        "id": message["id"],
        "result": {
            "capabilities": CAPABILITIES,
            "instructions": INSTRUCTIONS,
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION,
            "serverInfo": {"name": SERVER_NAME, "version": version},
        },
    }


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
