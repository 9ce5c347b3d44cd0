"""The MCP server: the wiki's tools over stdio, a thin adapter over `Wiki`, `gitwiki.pages.pages`
and `gitwiki.operations.writes`.

One `Wiki` per process, so the store connection, the dense matrices and the embedding model (loaded
on the first hybrid search) stay warm between calls. Tool calls run one at a time on worker threads:
they share that one SQLite connection. Refusals (`UsageError`, `NotFoundError`) become JSON-RPC
-32602 with the message; anything unexpected becomes -32603 with a short message, the traceback goes
to stderr. stdout carries the protocol only.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from typing import IO, Annotated, Any, Literal, Protocol, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from gitwiki import __version__
from gitwiki.errors import GitwikiError, NotFoundError, UsageError
from gitwiki.mcp import schema
from gitwiki.mcp.early import (
    ACKNOWLEDGED,
    EARLY_ANSWERS,
    EARLY_METHODS,
    HANDSHAKE,
    LATEST_HANDSHAKE_VERSION,
    LISTEN,
    LISTENED,
    SERVER_NAME,
    STATELESS_METHODS,
    STATELESS_VERSION,
    SUBSCRIPTION,
    EarlyStdio,
    instructions,
    write_all,
)
from gitwiki.mcp.hook_event import HOOK_TOOL, Runner
from gitwiki.mcp.hook_event import META as HOOK_META
from gitwiki.mcp.lean import Bodies, tool_bodies
from gitwiki.mcp.wiki_tools import Answer, GroundTool, Searchable, WikiTools, result
from gitwiki.wiki import Wiki

__all__ = ["Answer", "GroundTool", "Searchable", "WikiTools", "result"]  # the tool bodies, as this module had them

log = logging.getLogger("gitwiki.mcp")


READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

TOOLS: dict[str, ToolAnnotations] = {
    "list_corpora": READ,
    "list_files": READ,
    "list_tree": READ,
    "ground": READ,
    "read_markdown": READ,
    "outline_markdown": READ,
    "read_many": READ,
    "get_footnote": READ,
    "page_history": READ,
    "add_markdown": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
    "delete_markdown": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "index": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
}


# it writes the session's hook state (what was shown, what was edited), never a page
HOOK_HINTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


class StrictServer(MCPServer[Any]):
    """The SDK's server, but a tool argument the tool does not take is refused (-32602, naming the ones it
    takes), as an action's parameter it does not read is (memory.actions): the SDK's argument models drop
    unknown keys, so helix's `compact` with `log` or `mode` ran as a plain compact, and a misspelt option
    (`limt`) was silently its default."""

    _takes: dict[str, frozenset[str]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._takes is None:
            self._takes = {t.name: frozenset(t.input_schema.get("properties", {})) for t in await self.list_tools()}
        takes = self._takes.get(name)
        unknown = sorted(set(arguments) - takes) if takes is not None and isinstance(arguments, dict) else []
        if unknown:
            log.info("%s refused: unknown arguments %s", name, unknown)
            raise MCPError(
                INVALID_PARAMS, f"{name} does not take {', '.join(unknown)}; it takes: {', '.join(sorted(takes or ()))}"
            )
        return await super().call_tool(name, arguments, context)


def build_server(
    wiki: Wiki, serial: threading.Lock, note: str | None = None, bodies: Bodies | None = None
) -> MCPServer:
    """`note`: the instructions' last line (what `mcp.early` answered with, so the SDK says the same); `bodies`: the
    tool bodies to register (the owner's lean path shares its own, and so their warm `Memory`), new ones if None."""
    from gitwiki.mcp import memory as mcp_memory

    app = StrictServer(SERVER_NAME, instructions=instructions(note), version=__version__, log_level="WARNING")
    bodies = bodies or tool_bodies(wiki)
    for name, hints in TOOLS.items():
        app.add_tool(guarded(getattr(bodies.pages, name), serial), name=name, annotations=hints)
    # memory_* tools, docs/memory-tools.md
    mcp_memory.register(app, bodies.memory, lambda method: guarded(method, serial))
    # the hooks' tool, not the model's; unserialized: the prompt hook's search asks this server (mcp.hook_tool)
    hook = guarded(bodies.hook.agent_hook, contextlib.nullcontext())
    app.add_tool(hook, name=HOOK_TOOL, annotations=HOOK_HINTS, meta=HOOK_META)
    return app


# Every tool takes `format`. Claude Code shows the model a tool's structuredContent instead of its text when there
# is one (a recorded request: 3,953 characters of ground JSON in place of the 3,208-character outline), so the
# text is all a tool returns by default and no tool declares an outputSchema (which would oblige it to return
# structuredContent); programs ask for the JSON contract with format json.
FORMAT = inspect.Parameter(
    "format",
    inspect.Parameter.KEYWORD_ONLY,
    default="text",
    annotation=Annotated[
        Literal["text", "json"],
        Field(
            description="text (default): the answer written for you to read. json: the JSON document, for "
            "programs (docs/json-contract.md)."
        ),
    ],
)


class Answered(Protocol):
    """What a tool body returns: an Answer, or the memory tools' `replies.Reply` (the same two fields)."""

    @property
    def text(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...


def guarded(method: Callable[..., Answered], serial: AbstractContextManager[object]) -> Callable[..., CallToolResult]:
    """The tool as the SDK sees it: `method`'s parameters plus `format`; calls serialized; gitwiki errors turned
    into JSON-RPC errors the client can act on."""
    name = method.__name__

    @functools.wraps(method)
    def call(*args: Any, format: str = "text", **kwargs: Any) -> CallToolResult:
        with serial:
            started = time.perf_counter()
            try:
                answer = method(*args, **kwargs)
            except (UsageError, NotFoundError) as e:
                log.info("%s refused: %s", name, e)
                raise MCPError(INVALID_PARAMS, str(e)) from None
            except GitwikiError as e:  # the index is busy or unusable, the model cannot load: not the caller's fault
                log.warning("%s failed: %s", name, e)
                raise MCPError(INTERNAL_ERROR, str(e)) from None
            except Exception as e:
                log.exception("%s crashed", name)
                raise MCPError(
                    INTERNAL_ERROR,
                    f"internal error in {name} ({type(e).__name__}); details are in the server log on stderr",
                ) from None
            finally:
                log.debug("%s took %.1f ms", name, (time.perf_counter() - started) * 1000)
        if format == "json":  # the serialized JSON as text too, as the MCP specification asks of structured results
            text = json.dumps(answer.data, ensure_ascii=False)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer.data)
        return CallToolResult(content=[TextContent(type="text", text=answer.text)])

    # the bodies' annotations are strings naming `mcp.schema`'s types (mcp.wiki_tools, mcp.memory_tools)
    names = schema.namespace(getattr(method, "__globals__", {}))
    signature = inspect.signature(method, eval_str=True, globals=names)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), FORMAT], return_annotation=CallToolResult
    )
    return call


def sdk_early_answers(client: str = "-") -> dict[str, dict[str, Any]]:
    """What the SDK answers to `mcp.early.EARLY_METHODS` for this server, per protocol era (era → method →
    result; methods it refuses in an era left out), asked over the SDK's own stdio transport in this process: the
    same objects, serialized the same way, as on the wire. `client` names the client asking."""
    info = {"name": client, "version": "1"}
    hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": info}
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": info,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    handshake = _ask(
        [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": m, "method": m} for m in EARLY_METHODS),
        ]
    )
    listen = {"jsonrpc": "2.0", "id": LISTEN, "method": LISTEN, "params": {"_meta": meta, "notifications": LISTENED}}
    stateless = _ask(
        [*({"jsonrpc": "2.0", "id": m, "method": m, "params": {"_meta": meta}} for m in STATELESS_METHODS), listen]
    )
    acknowledged = stateless[ACKNOWLEDGED]["params"]
    assert acknowledged["_meta"] == {SUBSCRIPTION: LISTEN}, acknowledged  # what acknowledge() sends in its place
    return {  # one connection serves one era: a session each
        HANDSHAKE: {m: handshake[m]["result"] for m in EARLY_METHODS if "result" in handshake[m]},
        STATELESS_VERSION: {m: stateless[m]["result"] for m in STATELESS_METHODS if "result" in stateless[m]}
        | {LISTEN: {"notifications": LISTENED, "acknowledged": acknowledged["notifications"]}},
    }


def _ask(requests: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The SDK's answers (by id) to `requests`, sent on one connection to a server with gitwiki's tools."""
    app = build_server(cast(Wiki, None), threading.Lock())  # listing tools calls none of them
    wire = _Wire([json.dumps(r) + "\n" for r in requests], answers=sum("id" in r for r in requests))

    async def talk() -> None:
        async with stdio_server(wire, wire) as (read, write):  # type: ignore[arg-type]
            lowlevel = app._lowlevel_server  # MCPServer.run_stdio_async's own server, without claiming fd 0 and 1
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(talk)
    # Answers by id; a subscription's acknowledgement (a notification) under the method's name.
    return {m.get("id", m.get("method")): m for m in map(json.loads, wire.written)}


def write_early_answers() -> None:
    """Write `mcp.early.EARLY_ANSWERS` for the installed SDK; tests/mcp/test_early.py says when it is due."""
    from importlib.metadata import version

    shipped = {"gitwiki": __version__, "mcp": version("mcp"), "eras": sdk_early_answers()}
    EARLY_ANSWERS.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


class _Wire:
    """An SDK stdio transport's stdin and stdout in memory: the requests, then open until all answers are out."""

    def __init__(self, lines: list[str], answers: int) -> None:
        self.lines, self.answers = lines, answers
        self.written: list[str] = []
        self.done = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[str]:
        for line in self.lines:
            yield line
        await self.done.wait()

    async def write(self, text: str) -> None:
        self.written.append(text)
        if len(self.written) == self.answers:
            self.done.set()

    async def flush(self) -> None:
        pass


def serve(wiki: Wiki, serial: threading.Lock, stdio: EarlyStdio, hooks: Runner | None = None) -> None:
    """Run the server on stdin/stdout until the client hangs up; `serial` is held by each tool call, `stdio`
    is what `mcp.early.answer_initialize` made of stdin and stdout; `hooks` the hook code `agent_hook` runs. Logging
    is set up by then (`mcp.early.log_to_stderr`)."""
    log.info("serving %s (index %s)", wiki.root, wiki.index_dir)
    try:
        build_server(wiki, serial, stdio.note, tool_bodies(wiki, hooks)).run("stdio")
    finally:
        stdio.close()
        with serial:  # not under a running warm-up
            wiki.close()


class SdkSession:
    """The SDK's session on one connection of the owner, for the lines its lean path (`mcp.session`) does not
    answer: started with the first of them, fed line by line in the order they came (through a pipe, as over
    stdio), its answers written whole onto the connection. The session's opening, which the lean path answered,
    is replayed to it first; the answer to `drop` (that `initialize`'s id) is then not sent again."""

    def __init__(self, app: MCPServer, conn: socket.socket, send: threading.Lock, drop: object = None) -> None:
        sdk_r, self._sdk_w = os.pipe()
        reader = io.TextIOWrapper(os.fdopen(sdk_r, "rb"), encoding="utf-8", errors="replace")
        lines = _Lines(conn, send, drop)
        self._thread = threading.Thread(
            target=self._run, args=(app, reader, lines), name="gitwiki-sdk-session", daemon=True
        )
        self._thread.start()

    def feed(self, line: bytes) -> None:
        write_all(self._sdk_w, line)

    def close(self, wait: float = 10.0) -> None:
        """The end of the session's input: the SDK answers what it has and returns."""
        os.close(self._sdk_w)
        self._thread.join(wait)

    @staticmethod
    def _run(app: MCPServer, reader: io.TextIOWrapper, lines: _Lines) -> None:
        async def run() -> None:
            async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(cast(IO[str], lines))) as (read, write):
                lowlevel = app._lowlevel_server
                await lowlevel.run(read, write, lowlevel.create_initialization_options())

        try:
            anyio.run(run)
        except (OSError, ExceptionGroup) as e:  # the bridge went away mid-answer
            log.info("a session's connection ended: %s", e)
        finally:
            reader.close()


class _Lines:
    """The SDK's stdout for one session: each line it writes goes whole onto the connection, but the answer to
    `drop` (an id answered already)."""

    def __init__(self, conn: socket.socket, send: threading.Lock, drop: object = None) -> None:
        self._conn, self._send = conn, send
        self._drop = json.dumps(drop) if drop is not None else None

    def write(self, text: str) -> int:
        if self._drop is not None and self._answers_dropped(text):
            self._drop = None
            return len(text)
        with self._send:
            self._conn.sendall(text.encode("utf-8"))
        return len(text)

    def _answers_dropped(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        return isinstance(message, dict) and "method" not in message and json.dumps(message.get("id")) == self._drop

    def flush(self) -> None:
        pass
