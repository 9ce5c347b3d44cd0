"""The owner's MCP sessions (`serve.owner`), one per bridge connection, answered without the MCP SDK where they can
be: the handshake `initialize` and the lists as `mcp.early` answers them, every tool call `mcp.lean` can decide, and
nothing else. The first line of a session that needs the SDK (another era's subscription, a call that fails
validation, a method this path does not know) imports it, once per owner, and starts the SDK's own session for
that connection (`mcp.server.SdkSession`): the opening is replayed to it, and it answers that line and every later
one the lean path declines, in the order they came. So an owner whose sessions only call tools never imports the
SDK (0.6–1 s of CPU, 50 MiB), and one that does answers those lines exactly as before.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import TYPE_CHECKING, Any, Protocol

from gitwiki.mcp import early
from gitwiki.mcp.hook_event import Runner
from gitwiki.mcp.lean import LeanTools, encode, tool_bodies
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger("gitwiki.mcp")

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
# Notifications the SDK's session would take in silence here: a cancellation comes after the call's answer (each
# call is answered before the next line is read), and no tool depends on the client's roots.
QUIET = ("notifications/cancelled", "notifications/roots/list_changed")


class Feed(Protocol):
    """The SDK's session on a connection (`mcp.server.SdkSession`)."""

    def feed(self, line: bytes) -> None: ...

    def close(self, wait: float = 10.0) -> None: ...


class Sessions:
    """The sessions of one owner: `serve(conn)` runs one until its connection ends. `note`: the instructions' last
    line, as the bridge answers them; `hooks`: the hook code the `agent_hook` tool runs."""

    def __init__(
        self, wiki: Wiki, serial: threading.Lock, version: str, note: str | None = None, hooks: Runner | None = None
    ) -> None:
        self._wiki, self._serial, self._version, self._note = wiki, serial, version, note
        self._answers = early.early_answers(version, note)
        # no early answers for this gitwiki and SDK (another version's tools.json): the SDK answers every line
        schemas = self._answers.get(early.HANDSHAKE, {}).get("tools/list", {}).get("tools", [])
        self.bodies = tool_bodies(wiki, hooks)
        self._lean = LeanTools(self.bodies, schemas, serial, version)
        self._app: MCPServer | None = None
        self._building = threading.Lock()

    def app(self) -> MCPServer:
        """The SDK's server over the same tool bodies: built (and the SDK imported) on the first need."""
        with self._building:
            if self._app is None:
                from gitwiki.mcp.server import build_server

                log.info("a session needs the MCP SDK: importing it")
                self._app = build_server(self._wiki, self._serial, self._note, self.bodies)
            return self._app

    def sdk_session(self, conn: socket.socket, send: threading.Lock, drop: object) -> Feed:
        from gitwiki.mcp.server import SdkSession

        return SdkSession(self.app(), conn, send, drop)

    def serve(self, conn: socket.socket) -> None:
        """Answer one session on `conn` until the bridge hangs up."""
        send = threading.Lock()
        opening: list[bytes] = []  # the lines answered here that open the session: replayed to the SDK's
        opened: list[object] = []  # the id of the session's `initialize`, once answered here
        sdk: Feed | None = None

        def write(data: bytes) -> None:
            with send:
                conn.sendall(data)

        try:
            for line in early.read_lines(b"", conn.fileno()):
                # What the SDK could not parse is answered here (a relay passes every line on, mcp.relay)
                checked = early.check(line)
                if checked.message is None:
                    if checked.reply:
                        write(checked.reply)
                    continue
                reply = self._reply(line, checked.message, opening, opened, sdk is not None)
                if reply is not None:
                    if reply:
                        write(reply)
                    continue
                if sdk is None:
                    sdk = self.sdk_session(conn, send, opened[0] if opened else None)
                    for sent in opening:
                        sdk.feed(sent)
                sdk.feed(line)
        except OSError:
            pass
        finally:
            if sdk is not None:
                sdk.close()

    def _reply(
        self, line: bytes, message: dict[str, Any], opening: list[bytes], opened: list[object], sdk: bool
    ) -> bytes | None:
        """Our answer to a line (b"" for none due), or None: the SDK's."""
        method = message.get("method")
        if method == "tools/call":
            return self._lean.answer(message, opened=bool(opened))
        if sdk:
            return None  # the SDK holds the session's state from now on
        if method == INITIALIZE and not opened and "id" in message:
            answer = early.initialize_answer(line, self._version, self._note)
            if answer is None:
                return None
            opening.append(line)
            opened.append(message["id"])
            return encode(answer)
        if method == INITIALIZED and opened and "id" not in message:
            opening.append(line)
            return b""
        if method in QUIET and "id" not in message:
            return b""  # a call here is answered before the next line is read: there is nothing left to cancel
        if method == early.LISTEN and self._answers:
            # The SDK acknowledges a subscription and then sends nothing on it (every list here is fixed): the
            # acknowledgement, which the bridge has sent already and drops, is all it gets.
            acknowledgement = early.acknowledge(line, self._answers)
            return acknowledgement[1] if acknowledgement is not None else None
        return early.answer_message(message, len(line), self._answers) if self._answers else None
