"""`gitwiki serve` answers `initialize` before importing the MCP SDK, exactly as the SDK would, and the SDK
then serves the rest of the session over the same stdin/stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gitwiki import mcp_early
from tests.test_mcp_server import LEXICAL


def test_the_early_answer_declares_what_the_sdk_does():
    from mcp_types import version

    assert mcp_early.HANDSHAKE_VERSIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert mcp_early.LATEST_HANDSHAKE_VERSION == version.LATEST_HANDSHAKE_VERSION


def session(repo_path, *messages: dict) -> tuple[list[dict], str]:
    """Send raw JSON-RPC lines, read an answer for each request, then hang up; returns the answers and stderr."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gitwiki", "-C", str(repo_path), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    server.stdin.flush()
    answers = [json.loads(server.stdout.readline()) for m in messages if "id" in m]
    server.stdin.close()
    rest = server.stdout.read()  # nothing more may come: one answer per request
    server.wait(timeout=60)
    assert server.stderr is not None
    stderr = server.stderr.read()
    return answers + [json.loads(line) for line in rest.splitlines() if line.strip()], stderr


def initialize(version: str, id_: object = 0) -> dict:
    client = {"name": "test", "version": "1"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params}


@pytest.mark.parametrize(("asked", "given"), [("2025-06-18", "2025-06-18"), ("1999-01-01", "2025-11-25")])
def test_initialize_is_answered_once_and_the_sdk_serves_the_rest(repo, asked, given):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    answers, stderr = session(
        repo.path,
        initialize(asked, "init-1"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "ground", "arguments": {"query": "platform", "format": "json"}},
        },
    )
    assert [a["id"] for a in answers] == ["init-1", 2, 3]  # the SDK's own initialize answer was dropped
    assert answers[0]["result"]["protocolVersion"] == given
    assert answers[0]["result"]["serverInfo"]["name"] == "gitwiki"
    assert "ground" in {t["name"] for t in answers[1]["result"]["tools"]}
    assert answers[2]["result"]["structuredContent"]["docs"][0]["path"] == "wiki/faq.md"
    assert "differs" not in stderr  # the SDK answered exactly what was sent early


def test_a_first_message_that_is_not_a_handshake_goes_to_the_sdk(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    bad = initialize("2025-06-18", 7)
    del bad["params"]["clientInfo"]
    answers, _ = session(repo.path, bad)
    assert [a["id"] for a in answers] == [7] and "error" in answers[0]


# Claude Code keeps the first 2,048 characters of a server's instructions ("Server instructions truncated from
# 2197 to 2048 chars"); 150 of them stay free for a line added at run time, such as a lexical-only notice.
CLAUDE_CODE_LIMIT = 2048
HEADROOM = 150


def test_the_instructions_fit_claude_codes_limit_with_room_to_spare(repo):
    from gitwiki import mcp_lance

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n"})
    answers, _ = session(repo.path, initialize("2025-06-18"))
    sent = answers[0]["result"]["instructions"]
    for instructions in (sent, mcp_early.INSTRUCTIONS, mcp_lance.INSTRUCTIONS):
        assert len(instructions) <= CLAUDE_CODE_LIMIT - HEADROOM
