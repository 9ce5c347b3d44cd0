"""Answering what a client asks first before the MCP SDK is imported, and guarding every request line.

Importing the SDK costs about 1 s of CPU (more on a loaded host), and Claude Code sends its first
model request 1–2 s after `initialize` is answered: a `tools/list` left to the SDK came too late, and the model's
first turn had no gitwiki tools. `gitwiki serve` therefore reads stdin itself from the spawn on:

- the first message, when it is an `initialize` of the handshake era, is answered at once with what the SDK would
  say (the fields below); the SDK gets it too, for its session, and its own answer is dropped (compared first: a
  difference is one warning on stderr);
- `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` and `ping` are answered from
  `tools.json`: the SDK's answers for this server, written by `mcp.server.write_early_answers()` and checked
  against the live SDK by tests/mcp/test_early.py. They are keyed to the gitwiki and mcp versions; another
  version's file answers nothing and the SDK answers as usual. Nothing is handed over at some moment: those
  methods are always answered here, everything else always goes to the SDK, in the order it came;
- every line is checked first (`mcp.framing`): what the SDK could not parse, and so would leave unanswered with
  the client waiting for ever (a batch, a request without `method`, `params` as a list, nesting past 100 levels,
  a lone UTF-16 surrogate escape, two objects or a NUL on one line, a line that is not JSON), is answered here
  with the JSON-RPC error and never reaches the SDK.

Anything else as the first message (another protocol era) goes to the SDK untouched, after that check.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gitwiki.mcp import framing, logs

log = logs.Logger("gitwiki.mcp")  # `logging` only at a first record: a bridge's start does without it

SERVER_NAME = "gitwiki"
EARLY_ANSWERS = Path(__file__).with_name("tools.json")
EARLY_METHODS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")
# The stateless era (Claude Code 2.1.332 opens with `server/discover`, no `initialize`): each request names its
# protocol version in params._meta, and the answers differ (cacheScope, resultType, ...).
HANDSHAKE = "handshake"
STATELESS_VERSION = "2026-07-28"
DISCOVER = "server/discover"
STATELESS_METHODS = (DISCOVER, *EARLY_METHODS)
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
# Claude Code 2.1.332 then opens a `subscriptions/listen` and counts the server connected only once it is
# acknowledged (a notification). The request goes to the SDK, which keeps the subscription; the acknowledgement
# is sent here at once when the notifications asked for are these, and the SDK's own is dropped.
LISTEN = "subscriptions/listen"
LISTENED = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
# What the SDK (mcp 2.x) negotiates and declares; tests/mcp/test_early.py checks these against it.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = "2025-11-25"
CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

# Claude Code cuts server instructions at 2,048 characters; tests/mcp/test_early.py keeps these under that with room
# for a line added at run time (e.g. that search is lexical only).
INSTRUCTIONS = """\
gitwiki serves the markdown wiki of this git repository: search it, read it, edit it safely.

- `ground` searches (BM25 + embeddings): per page, the best sections with heading breadcrumb,
  `path:start-end` and a snippet. Then read just those lines with `read_markdown`.
- `outline_markdown` maps a page (sections, line ranges, bytes); `read_markdown` also takes
  `page.md#section/sub` or `page.md:START-END`; `read_many` reads several pages, sections or globs.
- Page paths are repo-relative, as `ground` prints them; every tool takes and prints that form.
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


def instructions(note: str | None = None) -> str:
    """The instructions, with `note` (e.g. that search is lexical only, `embed.lexical_notice`) as their last line:
    the model reads them before its first search, and a degraded search changes how far to trust it."""
    return INSTRUCTIONS + (f"\n{note}\n" if note else "")


class EarlyStdio:
    """fd 0 and fd 1 rerouted through pipes for the SDK, with three threads in between: one reads the client's
    lines and answers what it can, one feeds the rest to the SDK (an unbounded queue, so a slow SDK never stops
    the reading), one copies the SDK's answers out. `close()` after the SDK returns flushes what it wrote."""

    def __init__(
        self,
        first: bytes,
        initialize: dict[str, Any] | None,
        version: str,
        note: str | None = None,
        early: bool = True,
    ) -> None:
        self.note = note  # the instructions' last line, for the SDK's own answers to say the same
        self._early = early  # False: only the line check, for a server whose tools are not tools.json's
        self._real_in, self._real_out = os.dup(0), os.dup(1)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.close(in_r)
        os.close(out_w)
        self._write = threading.Lock()  # whole lines on the real stdout, from the reader and the SDK's pump
        self._to_sdk: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._answers: dict[str, dict[str, Any]] = {}
        self._acknowledged: set[str] = set()  # subscriptions acknowledged here (JSON of their request ids)
        self._out = threading.Thread(target=self._pump_out, args=(out_r, initialize), daemon=True)
        self._out.start()
        threading.Thread(target=self._feed, args=(in_w,), daemon=True).start()
        threading.Thread(target=self._read, args=(first, initialize is not None, version), daemon=True).start()

    def _read(self, first: bytes, handshake: bool, version: str) -> None:
        self._answers = early_answers(version, self.note) if self._early else {}
        line, _, rest = first.partition(b"\n")
        if handshake:
            self._to_sdk.put(framing.check(line).line)  # the SDK's session starts with it; its answer is dropped
            start = rest
        else:
            start = first  # e.g. `server/discover`, answered here like any other line
        try:
            for message in _lines(start, self._real_in, framing.MAX_LINE):
                try:
                    self._take(message)
                except OSError:
                    raise
                except Exception:  # a bug here must not end the session: the line is lost, the next one is read
                    log.exception("could not handle a line from the client")
                    failed = framing.error(None, framing.INTERNAL_ERROR, "internal error reading a line")
                    self._send(framing.json_line(failed))
        except OSError:
            pass
        finally:
            self._to_sdk.put(None)  # the SDK sees the client's end of input

    def _take(self, line: bytes) -> None:
        checked = check(line)
        if checked.message is None:
            if checked.reply:
                self._send(checked.reply)
            return
        reply = answer_message(checked.message, len(line), self._answers)
        if reply is None:
            acknowledgement = acknowledge(line, self._answers)
            if acknowledgement is not None:
                request_id, sent = acknowledgement
                with self._write:
                    self._acknowledged.add(json.dumps(request_id))  # before the SDK can answer it
                self._send(sent)
            self._to_sdk.put(checked.line)
        elif reply:
            self._send(reply)

    def _feed(self, in_w: int) -> None:
        try:
            while (line := self._to_sdk.get()) is not None:
                _write_all(in_w, line)
        except OSError:
            pass
        finally:
            os.close(in_w)

    def _send(self, line: bytes) -> None:
        with self._write:
            _write_all(self._real_out, line)

    def _pump_out(self, out_r: int, initialize: dict[str, Any] | None) -> None:
        try:
            for line in _lines(b"", out_r):
                if initialize is not None:
                    message = _parse(line)
                    if isinstance(message, dict) and message.get("id") == initialize["id"] and "method" not in message:
                        if message.get("result") != initialize["result"]:
                            log.warning("the early initialize answer differs from the SDK's: %s", line[:500])
                        initialize = None  # already answered: drop the SDK's copy
                        continue
                if ACKNOWLEDGED.encode() in line and self._drop_acknowledgement(line):
                    continue
                self._send(line)
        except OSError:
            pass

    def _drop_acknowledgement(self, line: bytes) -> bool:
        message = _parse(line)
        if not isinstance(message, dict) or message.get("method") != ACKNOWLEDGED:
            return False
        meta = message.get("params", {}).get("_meta", {})
        key = json.dumps(meta.get(SUBSCRIPTION)) if isinstance(meta, dict) else None
        with self._write:
            if key in self._acknowledged:
                self._acknowledged.discard(key)
                return True
        return False

    def close(self) -> None:
        """Call when the SDK is done: ends its stdout (fd 1 now points at /dev/null) so the last answers
        reach the client."""
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        self._out.join(timeout=5)


def reply_to(line: bytes, answers: dict[str, dict[str, Any]]) -> tuple[dict[str, Any] | None, bytes | None]:
    """The message a client's line holds (None when `check` refused it) and our answer to it (`answers`: era →
    method → result, see `early_answers`): b"" to drop it, None to pass it on. A line that is not a message the SDK
    can take (`mcp.framing`) is answered or dropped here, never passed on: the SDK answers nothing it cannot parse."""
    checked = check(line)
    if checked.message is None:
        return None, checked.reply
    return checked.message, answer_message(checked.message, len(line), answers)


def check(line: bytes) -> framing.Checked:
    """`framing.check` of a client's line, a refusal logged: the bridge's and the owner's sessions' first look."""
    checked = framing.check(line)
    if checked.message is None and checked.note:
        log.info("refused a line: %s", checked.note)
    return checked


def answer_message(message: dict[str, Any], size: int, answers: dict[str, dict[str, Any]]) -> bytes | None:
    """`reply_to` for a line `check` passed (`message`, from a line of `size` bytes): our answer, b"" to drop it, or
    None to pass it to the SDK."""
    if size > 4096:
        return None  # a tool call's arguments: the SDK's (only short lines can be a method answered here)
    params = message.get("params")
    if "id" not in message or not (params is None or _only_meta(params)):
        return None  # a notification, a cursor, arguments: the SDK's
    meta = params.get("_meta") if isinstance(params, dict) else None
    era = meta.get(_VERSION_KEY, HANDSHAKE) if isinstance(meta, dict) else HANDSHAKE
    method = message.get("method")
    result = answers.get(era, {}).get(method) if isinstance(era, str) and isinstance(method, str) else None
    if result is None:
        return None  # a method, or an era, the SDK answers
    return framing.json_line({"jsonrpc": "2.0", "id": message["id"], "result": result})


def acknowledge(line: bytes, answers: dict[str, dict[str, Any]]) -> tuple[object, bytes] | None:
    """For a `subscriptions/listen` of an era we know, asking for the notifications the SDK was asked for when
    `answers` were made: its request id and the acknowledgement the SDK would send. None for anything else."""
    if LISTEN.encode() not in line or len(line) > 4096:
        return None
    message = _parse(line)
    if not isinstance(message, dict) or message.get("method") != LISTEN or "id" not in message:
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    era = meta.get(_VERSION_KEY) if isinstance(meta, dict) else None
    known = answers.get(era, {}).get(LISTEN) if isinstance(era, str) else None
    if known is None or not isinstance(params, dict) or params.get("notifications") != known["notifications"]:
        return None
    if set(params) != {"_meta", "notifications"}:
        return None
    acknowledgement = {"_meta": {SUBSCRIPTION: message["id"]}, "notifications": known["acknowledged"]}
    return message["id"], framing.json_line({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": acknowledgement})


def _parse(line: bytes) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _only_meta(params: object) -> bool:
    return isinstance(params, dict) and set(params) <= {"_meta"}


def _lines(start: bytes, fd: int, cap: int | None = None, idle: Callable[[], None] | None = None) -> Iterator[bytes]:
    """The lines (newline kept) of `start` and then of what `fd` gives until its end; a last unterminated line too.
    Only each new chunk is searched for a line end, so a long line costs its length, not its length squared. With
    `cap`, a line longer than that is read to its end but not kept: its head comes as `framing.Oversized`. `idle` is
    called before each read that holds nothing of a line (the bridge's switch to the relay, mcp.bridge)."""
    parts = [start] if start else []
    size = len(start)
    while True:
        chunk = b"".join(parts) if parts and b"\n" in parts[-1] else None
        if chunk is not None:
            *whole, tail = chunk.split(b"\n")
            yield from (line + b"\n" for line in whole)
            parts = [tail] if tail else []
            size = len(tail)
            continue
        if cap is not None and size > cap:
            head, rest = _head(parts), _skip_line(fd)
            yield framing.Oversized(head)
            if rest is None:
                return
            parts, size = [rest] if rest else [], len(rest)
            continue
        if idle is not None and not parts:
            idle()
        read = os.read(fd, 65536)
        if not read:
            break
        parts.append(read)
        size += len(read)
    if parts:
        yield b"".join(parts)


def _skip_line(fd: int) -> bytes | None:
    """Read `fd` past the end of the line under way, keeping none of it: what came after the newline (None: `fd`
    ended first)."""
    while read := os.read(fd, 65536):
        end = read.find(b"\n")
        if end >= 0:
            return read[end + 1 :]
    return None


def _head(parts: list[bytes]) -> bytes:
    """The first `framing.HEAD` bytes of `parts`, without joining them (a copy of the whole line)."""
    head = bytearray()
    for part in parts:
        head += part[: framing.HEAD - len(head)]
        if len(head) >= framing.HEAD:
            break
    return bytes(head)


def early_answers(version: str, note: str | None = None) -> dict[str, Any]:
    """The shipped answers (era → method → result), or none when they were made for another gitwiki or mcp
    version; `server/discover`'s instructions end with `note`."""
    mcp = _distribution_version("mcp")
    try:
        shipped = json.loads(EARLY_ANSWERS.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        log.info("no early answers (%s): the SDK answers every request", e)
        return {}
    if (shipped.get("gitwiki"), shipped.get("mcp")) != (version, mcp):
        made = f"gitwiki {shipped.get('gitwiki')}, mcp {shipped.get('mcp')}"
        log.info("early answers made for %s, not gitwiki %s, mcp %s: the SDK answers every request", made, version, mcp)
        return {}
    eras = dict(shipped["eras"])
    for answers in eras.values():
        if note and "instructions" in answers.get(DISCOVER, {}):
            answers[DISCOVER] = {**answers[DISCOVER], "instructions": instructions(note)}
    return eras


def _distribution_version(name: str) -> str | None:
    """`importlib.metadata.version(name)` without importing importlib.metadata (~100 ms of CPU for email and
    zipfile, while the SDK's import wants the same core): the version in the name of the first
    `NAME-VERSION.dist-info` folder on sys.path."""
    prefix, suffix = name + "-", ".dist-info"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for found in names:
            if found.startswith(prefix) and found.endswith(suffix):
                return found[len(prefix) : -len(suffix)]
    return None


def log_to_stderr(level: str) -> None:
    """Plain `gitwiki serve: LEVEL name: message` lines on stderr. Set before anything logs or prints: before
    the SDK's own basicConfig, which then leaves it alone, and before the CLI socket may swap sys.stderr for a
    request's warnings (a handler made then would keep writing into that request's buffer)."""
    import logging

    logging.basicConfig(level=level, stream=sys.stderr, format=logs.FORMAT)


def _first_line() -> bytes:
    first = b""
    while b"\n" not in first and len(first) <= framing.MAX_LINE:  # `_lines` drops the rest of a longer one
        chunk = os.read(0, 65536)
        if not chunk:
            break
        first += chunk
    return first


def guard_lines() -> EarlyStdio | None:
    """stdin and stdout rerouted through the line check alone (`mcp.framing`), nothing answered early: for the
    shared-index server, whose tools are not tools.json's. None when stdin closes before any message."""
    first = _first_line()
    return EarlyStdio(first, None, "", early=False) if first else None


def answer_initialize(version: str, note: str | None = None) -> EarlyStdio | None:
    """Read the first message from stdin; answer it if it is a handshake `initialize`. Returns the rerouted
    stdio the SDK must then use (None when stdin is closed before any message)."""
    first = _first_line()
    if not first:
        return None
    line = first.split(b"\n", 1)[0]
    answer = _answer(line, version, note)
    if answer is not None:
        _write_all(1, framing.json_line(answer))
    return EarlyStdio(first, answer, version, note)


class Handshake:
    """`answer_initialize` on a thread from the spawn on, while the server gets ready to serve; `note()` gives the
    instructions' last line (None: none), asked on that thread before the answer."""

    def __init__(self, version: str, note: Callable[[], str | None] = lambda: None) -> None:
        self._stdio: EarlyStdio | None = None
        self._thread = threading.Thread(target=self._run, args=(version, note), name="gitwiki-handshake", daemon=True)
        self._thread.start()

    def _run(self, version: str, note: Callable[[], str | None]) -> None:
        self._stdio = answer_initialize(version, note())

    def stdio(self) -> EarlyStdio | None:
        """Waits for the first message; None when the client hung up before it."""
        self._thread.join()
        return self._stdio


def _answer(line: bytes, version: str, note: str | None = None) -> dict[str, Any] | None:
    message = framing.check(line).message  # anything else is refused by the reader, as any line is
    if message is None or message.get("method") != "initialize" or "id" not in message:
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
            "instructions": instructions(note),
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION,
            "serverInfo": {"name": SERVER_NAME, "version": version},
        },
    }


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# The pieces `mcp.bridge` shares with this module's reader: a bridge answers the same lines the same way.
def read_lines(
    start: bytes, fd: int, cap: int | None = None, idle: Callable[[], None] | None = None
) -> Iterator[bytes]:
    """`start`'s lines and then `fd`'s, as the early reader reads the client's (`cap`, `idle`: see `_lines`)."""
    return _lines(start, fd, cap, idle)


def read_first_line() -> bytes:
    """stdin's first line (and whatever came with it); b"" when stdin closes first."""
    return _first_line()


def initialize_answer(line: bytes, version: str, note: str | None = None) -> dict[str, Any] | None:
    """The answer to a handshake `initialize` line, as the SDK would give it; None for anything else."""
    return _answer(line, version, note)


def write_all(fd: int, data: bytes) -> None:
    _write_all(fd, data)
