"""Talking to a real `gitwiki serve` subprocess from a test: through the MCP SDK's stdio client (`connect`, then
`call`, `text` or `refused` a tool), or in raw JSON-RPC lines (`Server`, `initialize`) where the SDK would hide
what goes over the wire."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client


def server_params(repo_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gitwiki", "-C", str(repo_path), "serve"], env=dict(os.environ)
    )


@asynccontextmanager
async def connect(repo_path: Path, errlog=None):
    async with stdio_client(server_params(repo_path), errlog=errlog or sys.stderr) as streams:
        async with ClientSession(*streams) as session:
            await session.initialize()
            yield session


def run(fn, *args):
    return anyio.run(fn, *args)


async def call(session, name: str, **arguments):
    """A tool call that must succeed, answered with the JSON contract (format json) unless `format` is given."""
    result = await session.call_tool(name, {"format": "json", **arguments})
    assert not result.is_error, result.content
    return result


async def text(session, name: str, **arguments) -> str:
    """What the model reads: the tool's default answer, text only."""
    result = await call(session, name, format="text", **arguments)
    assert result.structured_content is None and len(result.content) == 1
    return result.content[0].text


async def refused(session, name: str, **arguments) -> MCPError:
    with pytest.raises(MCPError) as info:
        await session.call_tool(name, arguments)
    return info.value


class Server:
    """`gitwiki serve` as a subprocess spoken to in raw JSON-RPC lines; its answers are read on a thread, so a
    missing answer fails the test after `timeout` instead of hanging it."""

    def __init__(self, repo_path, env: dict | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gitwiki", "-C", str(repo_path), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or dict(os.environ),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, *messages: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.process.stdin.flush()

    def answers(self, count: int, timeout: float = 60) -> list[dict]:
        out = []
        for _ in range(count):
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no answer within {timeout} s after {out}")
            assert line, f"the server closed stdout after {out}"
            out.append(json.loads(line))
        return out

    def close(self) -> tuple[list[dict], str]:
        """Hang up; what the server still wrote, and its stderr."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        rest = []
        while (line := self.lines.get(timeout=10)) != b"":
            rest.append(json.loads(line))
        return rest, self.process.stderr.read().decode()


def initialize(version: str, id_: object = 0) -> dict:
    client = {"name": "test", "version": "1"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params}
