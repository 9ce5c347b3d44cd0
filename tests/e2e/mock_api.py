"""A local stand-in for the Anthropic Messages API, for driving the real Claude Code CLI in tests.

Stdlib only (`http.server`), on 127.0.0.1 with a free port. `POST /v1/messages` answers from a scenario and
records the request body, so a test can assert on exactly what the model would have been shown. Streaming
requests (`"stream": true`) get the Messages API's server-sent events (message_start, content_block_start /
delta / stop, message_delta, message_stop); others get the JSON message. Every other path the CLI calls gets
a harmless answer and is logged, so an unexpected call shows up in the diagnostics instead of a hang.

The scenario is stateless over the conversation: Claude Code also sends side requests (a small-model title
or quota check, without tools), and may retry, so the answer is chosen from the request itself: the first
`Turn` whose `when` matches it. A side request (no `tools`) gets a plain text answer.

Run by hand to watch a CLI: `python tests/e2e/mock_api.py` prints the port and logs every request.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Request = dict[str, Any]


def tool_names(body: Request) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or []]


def is_main_loop(body: Request) -> bool:
    """The agent loop's requests carry the tool list; title, quota and summary side requests carry none."""
    return bool(body.get("tools"))


DEFERRED_HEADER = "The following deferred tools are now available via ToolSearch."


def deferred_tools(body: Request) -> list[str]:
    """Tools announced by name only (Claude Code's tool search): the model loads their schema with ToolSearch.

    The announcement is a text block listing one name per line after its header, up to a blank line.
    """
    names: list[str] = []
    for text in texts(body):
        for part in text.split(DEFERRED_HEADER)[1:]:
            lines = part.split("\n")[1:]  # the header's line ends with how to call ToolSearch
            for line in lines:
                if not line.strip():
                    break
                names.append(line.strip())
    return names


def visible_tools(body: Request) -> set[str]:
    """Every tool the model is told about: full schemas in `tools` and names announced as deferred."""
    return set(tool_names(body)) | set(deferred_tools(body))


def tool_uses(body: Request) -> list[dict]:
    """Every tool_use block the assistant made earlier in this conversation."""
    return [
        block
        for m in body.get("messages", [])
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "tool_use"
    ]


def tool_results(body: Request) -> list[dict]:
    """Every tool_result block the client sent back in this conversation, in order."""
    return [
        block
        for m in body.get("messages", [])
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]


def result_for(body: Request, tool: str) -> dict | None:
    """The tool_result the client sent back for the conversation's first call of `tool`, if any."""
    calls = [u.get("id") for u in tool_uses(body) if u.get("name") == tool]
    return next((r for r in tool_results(body) if calls and r.get("tool_use_id") == calls[0]), None)


def result_text(block: dict) -> str:
    """A tool_result's content as the model reads it (a string, or text blocks joined)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def texts(body: Request) -> list[str]:
    """Every text the model is shown, in order: the system prompt, then each message's text and tool results."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts.extend(block.get("text", "") for block in system)
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                parts.append(result_text(block))
    return parts


def prompt_text(body: Request) -> str:
    return "\n".join(texts(body))


def called(body: Request, name: str, input: dict) -> bool:
    """Whether the assistant already made this call in the conversation. The client may add defaults to the
    recorded input (Claude Code adds `"replace_all": false` to an Edit), so the given items are compared."""
    return any(u.get("name") == name and input.items() <= (u.get("input") or {}).items() for u in tool_uses(body))


@dataclass
class Turn:
    """One answer of the scenario to a main-loop request: text, or a call of `tool` with `input`.

    A tool turn is used once per conversation (until the conversation holds that exact call), a text turn
    every time it is reached, and `when(request)` narrows either; the first matching turn answers. So a list
    [call ground, say done] plays a two-step agent, whatever side requests come in between.
    """

    text: str = ""
    tool: str | None = None
    input: dict = field(default_factory=dict)
    when: Callable[[Request], bool] | None = None

    def matches(self, body: Request) -> bool:
        if not is_main_loop(body):
            return False
        if self.tool is not None and called(body, self.tool, self.input):
            return False
        return self.when is None or self.when(body)


SIDE_ANSWER = "ok"
FALLBACK = Turn(text="(mock: no scenario turn matched this request)")


class MockAnthropic:
    """`with MockAnthropic(turns) as api:` → `api.url` for ANTHROPIC_BASE_URL, `api.requests` as recorded."""

    def __init__(self, turns: list[Turn] | None = None, log: Callable[[str], None] | None = None):
        self.turns = list(turns or [])
        self.requests: list[Request] = []  # {"method", "path", "body"} for every call, in arrival order
        self.unknown: list[str] = []  # "METHOD path" of calls outside the Messages API
        self._log = log
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> MockAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self, turns: list[Turn]) -> None:
        """A new scenario and an empty record, for the next CLI run against the same server."""
        with self._lock:
            self.turns = list(turns)
            self.requests.clear()
            self.unknown.clear()

    def messages(self, main_only: bool = True) -> list[Request]:
        """The recorded /v1/messages bodies (by default only the agent loop's), in arrival order."""
        with self._lock:
            bodies = [r["body"] for r in self.requests if r["path"] == "/v1/messages" and r["method"] == "POST"]
        return [b for b in bodies if is_main_loop(b)] if main_only else bodies

    # -- answering ---------------------------------------------------------------------------------------

    def answer(self, body: Request) -> dict:
        """The Messages API response object for one request."""
        if is_main_loop(body):
            turn = next((t for t in self.turns if t.matches(body)), FALLBACK)
        else:
            turn = Turn(SIDE_ANSWER)
        n = next(self._ids)
        if turn.tool is not None:
            content = [{"type": "tool_use", "id": f"toolu_mock{n:04d}", "name": turn.tool, "input": turn.input}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": turn.text}]
            stop = "end_turn"
        return {
            "id": f"msg_mock{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-mock"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": body})
        if self._log:
            summary = ""
            if isinstance(body, dict) and path.startswith("/v1/messages"):
                summary = f" model={body.get('model')} tools={len(body.get('tools') or [])} stream={body.get('stream')}"
            self._log(f"{method} {path}{summary}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # the record above replaces it
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _send(self, status: int, payload: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", "req_mock")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj).encode(), "application/json")

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                body = self._body()
                api._record("POST", path, body)
                if path == "/v1/messages" and isinstance(body, dict):
                    message = api.answer(body)
                    if body.get("stream"):
                        self._send(200, sse(message), "text/event-stream")
                    else:
                        self._json(200, message)
                elif path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
                else:
                    api._unknown("POST", path)
                    self._json(200, {})

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                api._record("GET", path, None)
                if path == "/v1/models":
                    self._json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
                else:
                    api._unknown("GET", path)
                    self._json(200, {})

            def do_HEAD(self) -> None:
                api._record("HEAD", self.path, None)
                self._send(200, b"", "text/plain")

        return Handler

    def _unknown(self, method: str, path: str) -> None:
        with self._lock:
            self.unknown.append(f"{method} {path}")
        if self._log:
            self._log(f"unknown path: {method} {path}")


def sse(message: dict) -> bytes:
    """The message as the Messages API streams it: one content block per delta, then the stop events."""
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


if __name__ == "__main__":
    with MockAnthropic([Turn(text="hello from the mock")], log=lambda line: print(line, file=sys.stderr)) as mock:
        print(mock.url, flush=True)
        threading.Event().wait()
