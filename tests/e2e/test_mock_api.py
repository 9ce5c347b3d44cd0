"""The mock Messages API itself (no Claude Code needed): the stream it sends, the scenario it plays."""

from __future__ import annotations

import json
import urllib.request

from tests.e2e.mock_api import MockAnthropic, Turn, deferred_tools, visible_tools

EVENTS = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
]


def post(url: str, body: dict) -> tuple[str, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def parse_sse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in raw.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_streams_the_scenario_and_records_requests():
    call = Turn(tool="mcp__gitwiki__ground", input={"query": "rollback"})
    with MockAnthropic([call, Turn(text="done")]) as api:
        first = {"stream": True, "tools": [{"name": "mcp__gitwiki__ground"}], "messages": []}
        kind, raw = post(f"{api.url}/v1/messages", first)
        events = parse_sse(raw)
        assert kind == "text/event-stream" and [name for name, _ in events] == EVENTS
        start, delta = events[1][1]["content_block"], events[2][1]["delta"]
        assert start["type"] == "tool_use" and start["name"] == "mcp__gitwiki__ground"
        assert json.loads(delta["partial_json"]) == {"query": "rollback"}
        assert events[4][1]["delta"]["stop_reason"] == "tool_use"

        # the client echoes the call back with a default added: the call counts as made, the text turn answers
        made = {"type": "tool_use", "id": start["id"], "name": start["name"], "input": {"query": "rollback", "x": 1}}
        second = {**first, "stream": False, "messages": [{"role": "assistant", "content": [made]}]}
        _, raw = post(f"{api.url}/v1/messages", second)
        assert json.loads(raw)["content"] == [{"type": "text", "text": "done"}]

        _, raw = post(f"{api.url}/v1/messages", {"messages": [{"role": "user", "content": "title?"}]})
        assert json.loads(raw)["content"][0]["text"] == "ok"  # a side request, without tools
        post(f"{api.url}/v1/somewhere", {})
        assert len(api.messages()) == 2 and len(api.messages(main_only=False)) == 3
        assert api.unknown == ["POST /v1/somewhere"]


def test_reads_the_deferred_tool_announcement():
    announcement = (
        "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded:\n"
        "WebFetch\nmcp__gitwiki__ground\n\nAvailable agent types: …"
    )
    body = {"tools": [{"name": "ToolSearch"}], "messages": [{"role": "system", "content": announcement}]}
    assert deferred_tools(body) == ["WebFetch", "mcp__gitwiki__ground"]
    assert visible_tools(body) == {"ToolSearch", "WebFetch", "mcp__gitwiki__ground"}
