"""Every line a client sends over stdio, checked as JSON-RPC 2.0 before anything acts on it: what reaches the
MCP SDK is a message it can parse, and every message that carries an id and is refused here is answered here.

The SDK answers nothing it cannot validate (it logs the error and reads on), so a client that sent a batch, a
request without `method`, `params` as a list, arguments nested deeper than its parser goes (200), a trailing NUL
or two objects on one line waited for ever. Here:

- a line that is not one JSON value is -32700 (parse error): with the id of each message whose `id` member could
  still be read (a truncated line, trailing bytes, two objects on one line, a nesting too deep to parse), else
  with id null;
- a value that is not a request, a notification or a response is -32600 (invalid request), with its id when it
  has a usable one (a string, an integer; a fraction is echoed), else null;
- a request whose `params` is not an object (MCP names its arguments), is nested deeper than `MAX_DEPTH` or holds
  a lone UTF-16 surrogate escape (not text; the SDK cannot parse it) is -32602 (invalid params);
- a batch (a JSON array) is refused element by element in one array: MCP 2025-06-18 dropped JSON-RPC batching
  and the SDK has none, so rather than run part of the array, each request in it is told, under its own id, to
  come one per line (an empty array is one -32600 with id null, as JSON-RPC asks);
- a notification, valid or not, is never answered (JSON-RPC), nor is a response from the client; what of them is
  malformed is dropped with a line on stderr;
- a line of whitespace only is nothing, skipped.

Pure: bytes in, the message to pass on and the bytes to answer out.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, NamedTuple

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Deeper than any MCP message needs (a tool call's arguments sit at depth 3, their values a few levels more), well
# under the SDK's parser (pydantic-core's jiter stops at 200, tests/mcp/test_framing.py checks) and Python's json
# (its recursion limit, about 1,000).
MAX_DEPTH = 100

# A line longer than any MCP message needs (a page write is capped at [mcp] max_page_bytes, 1 MB by default) is
# not kept in memory while it lasts: its first HEAD bytes are, for its id (`early.read_lines`).
MAX_LINE = 64 * 2**20
HEAD = 4096

ONE_PER_LINE = "send one JSON-RPC message per line, as UTF-8 JSON"
TOO_LONG = f"invalid request: a message is at most {MAX_LINE // 2**20} MiB on one line; send a smaller one"
TOO_DEEP = f"invalid params: the message is nested deeper than {MAX_DEPTH} levels"
LONE_SURROGATE = (
    "invalid params: a string in the request holds a lone UTF-16 surrogate escape (\\ud800-\\udfff), which is not "
    "text; send the characters as UTF-8 or as escaped surrogate pairs"
)


class Checked(NamedTuple):
    """`message`: the parsed message to pass on (None: nothing to pass) and `line`, the line to give the SDK for
    it; `reply`: the bytes to send back now (b"": nothing), one line; `note`: why a line was refused or dropped,
    for the log."""

    message: dict[str, Any] | None
    reply: bytes
    note: str = ""
    line: bytes = b""


NOTHING = Checked(None, b"")


class Oversized(bytes):
    """The first `HEAD` bytes of a line longer than `MAX_LINE`, the rest of which was read and dropped."""


def check(line: bytes) -> Checked:
    """What to do with one line a client sent (its newline included or not)."""
    if isinstance(line, Oversized):
        return _salvaged(bytes(line), INVALID_REQUEST, TOO_LONG)
    text = line.strip(b" \t\r\n")
    if not text:
        return NOTHING
    try:
        value = json.loads(text.decode("utf-8"))  # json.loads(bytes) would take UTF-16 and -32 too; the SDK does not
    except RecursionError:
        return _salvaged(text, INVALID_PARAMS, TOO_DEEP)
    except ValueError as e:
        return _salvaged(text, PARSE_ERROR, _parse_reason(e))
    if isinstance(value, list):
        return _batch(value)
    refusal = _refusal(value)
    if refusal is None:
        assert isinstance(value, dict)
        # The SDK reads its stdin in universal-newline mode, where a lone CR ends a line: in valid JSON a CR can
        # only be whitespace between tokens (not in a string), so a space keeps the message one line for it.
        return Checked(value, b"", line=text.replace(b"\r", b" ") + b"\n")
    if isinstance(refusal, str):
        return Checked(None, b"", refusal)
    return Checked(None, json_line(refusal), refusal["error"]["message"])


def error(id_: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _refusal(value: object) -> dict[str, Any] | str | None:
    """None: a message to pass on; an error object to answer; a reason to drop it unanswered (a malformed
    notification or response: JSON-RPC answers neither)."""
    if not isinstance(value, dict):
        return error(None, INVALID_REQUEST, f"invalid request: a JSON-RPC message is an object; {ONE_PER_LINE}")
    has_id = "id" in value
    id_ = _echo(value.get("id"))
    if value.get("jsonrpc") != "2.0":
        return error(id_, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    method = value.get("method")
    if "method" not in value:
        if "result" in value or "error" in value:  # the client's answer to a request of ours: never answered
            return None if _response(value) else "dropped a malformed response"
        return error(id_, INVALID_REQUEST, 'invalid request: no "method" (a request names the method it calls)')
    if not isinstance(method, str):
        return error(id_, INVALID_REQUEST, 'invalid request: "method" must be a string')
    if "result" in value or "error" in value:  # the SDK would take it for a response, and answer nothing
        return error(
            id_, INVALID_REQUEST, 'invalid request: a request has a "method", a response a "result" or "error"'
        )
    if has_id and not _usable_id(value["id"]):
        return error(id_, INVALID_REQUEST, 'invalid request: "id" must be a string or an integer')
    params = value.get("params")
    problem = None
    if not (params is None or isinstance(params, dict)):
        problem = "invalid params: params must be an object (MCP passes arguments by name)"
    else:
        problem = _content_problem(value)
    if problem is None:
        return None
    return error(id_, INVALID_PARAMS, problem) if has_id else f"dropped a notification: {problem}"


def _response(value: dict[str, Any]) -> bool:
    """Whether a message without a method is a response the SDK can take."""
    if not _usable_id(value.get("id")) or ("result" in value) == ("error" in value):
        return False
    if "result" in value:
        return isinstance(value["result"], dict) and _content_problem(value) is None
    fault = value["error"]
    return (
        isinstance(fault, dict)
        and _usable_id(fault.get("code"))
        and isinstance(fault.get("code"), int)
        and isinstance(fault.get("message"), str)
        and _content_problem(value) is None
    )


def _usable_id(id_: object) -> bool:
    return isinstance(id_, str | int) and not isinstance(id_, bool)


def _echo(id_: object) -> object:
    """The id to answer with: the one sent when a client can match it (a string or a finite number), else null."""
    if isinstance(id_, bool) or not isinstance(id_, str | int | float):
        return None
    return id_ if not isinstance(id_, float) or math.isfinite(id_) else None


_SURROGATE = re.compile("[\ud800-\udfff]")  # after json.loads a surrogate is lone: pairs were joined into one


def _content_problem(value: dict[str, Any]) -> str | None:
    """Why the SDK cannot take this parsed message whatever its shape: nesting past MAX_DEPTH or a lone
    surrogate. None when it can."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return LONE_SURROGATE
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return TOO_DEEP
            items = [*item, *item.values()] if isinstance(item, dict) else item
            stack.extend((inner, depth + 1) for inner in items)
    return None


def _batch(values: list[object]) -> Checked:
    if not values:
        empty = error(None, INVALID_REQUEST, "invalid request: an empty batch")
        return Checked(None, json_line(empty), "an empty batch")
    answers = []
    for value in values:
        refusal = _refusal(value)
        if isinstance(refusal, str):
            continue
        if refusal is None:  # a good message, but in a batch
            assert isinstance(value, dict)
            if "method" not in value or "id" not in value:
                continue  # a notification or a response: nothing to answer
            reason = (
                "invalid request: batches (a JSON array of messages) are not supported: MCP 2025-06-18 dropped "
                f"them; {ONE_PER_LINE}"
            )
            refusal = error(value["id"], INVALID_REQUEST, reason)
        answers.append(refusal)
    return Checked(None, json_line(answers) if answers else b"", f"refused a batch of {len(values)}")


def _parse_reason(e: ValueError) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"parse error: the line is not UTF-8 (byte {e.start}); {ONE_PER_LINE}"
    if isinstance(e, json.JSONDecodeError):
        if e.msg == "Extra data":
            return f"parse error: more than one JSON value, or bytes after it, at character {e.pos}; {ONE_PER_LINE}"
        return f"parse error: {e.msg} (character {e.pos}); {ONE_PER_LINE}"
    if "digits" in str(e):
        return f"parse error: a number of more than {sys.get_int_max_str_digits()} digits"
    return f"parse error: {e}"


def _salvaged(text: bytes, code: int, reason: str) -> Checked:
    """An error for each message in `text` whose id can still be read; else one with id null, unless every
    message there reads as a notification (never answered)."""
    messages = _messages(text)
    ids = [id_ for id_ in map(_member_id, messages) if id_ is not None]
    if ids:
        return Checked(None, b"".join(json_line(error(id_, code, reason)) for id_ in ids), reason)
    if messages and all("method" in m and "id" not in m for m in messages):
        return Checked(None, b"", f"dropped a notification: {reason}")
    return Checked(None, json_line(error(None, code, reason)), reason)


def _member_id(members: dict[str, bytes]) -> object:
    raw = members.get("id")
    if raw is None:
        return None
    try:
        id_ = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return id_ if _usable_id(id_) else None


# The bytes that matter to find where a member of an object starts and ends; strings are skipped whole.
_SPECIAL = re.compile(rb'["{}\[\],:]')
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+"', re.DOTALL)


def _messages(text: bytes) -> list[dict[str, bytes]]:
    """The members (name → raw value) of each object at message level, read from the start of `text` without
    parsing it: top-level objects, and objects directly inside a top-level array. Tolerates what json.loads
    does not: any nesting depth, trailing bytes, a line cut short (the members before the cut). Linear: each
    byte is looked at once by a regular expression."""
    found: list[dict[str, bytes]] = []
    stack: list[bytes] = []
    members: dict[str, bytes] | None = None
    level = 0  # the stack depth of the members of the message being read
    key: str | None = None
    start = -1
    pos = 0
    while (match := _SPECIAL.search(text, pos)) is not None:
        char, at, pos = match.group(), match.start(), match.end()
        if char == b'"':
            rest = _STRING_REST.match(text, pos)
            if rest is None:
                break  # an unterminated string runs to the end of the line
            if members is not None and len(stack) == level and start < 0:
                try:
                    key = json.loads(text[at : rest.end()])
                except ValueError:
                    key = None
            pos = rest.end()
        elif char == b":" and members is not None and len(stack) == level:
            start = pos
        elif char in b"{[":
            if char == b"{" and members is None and (not stack or stack == [b"["]):
                members, level, key, start = {}, len(stack) + 1, None, -1
            stack.append(char)
        elif char == b"," or char in b"}]":
            if members is not None and len(stack) == level:
                if key is not None and start >= 0:
                    members[key] = text[start:at]
                key, start = None, -1
                if char != b",":
                    found.append(members)
                    members = None
            if char in b"}]" and stack:
                stack.pop()
    if members is not None:
        if key is not None and start >= 0:
            members[key] = text[start:]
        found.append(members)
    return found


def json_line(message: object) -> bytes:
    """`message` as one compact JSON line, as the early answers, the bridge and framing's refusals write them."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"
