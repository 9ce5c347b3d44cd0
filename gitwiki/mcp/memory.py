"""The memory tools of `gitwiki serve` (docs/memory-tools.md): thin wrappers over `gitwiki.memory.replies`.

mcp_server.build_server registers them next to the page tools, behind the same guard (calls one at a
time, gitwiki errors as JSON-RPC errors). One `Memory` per server keeps the parsed topic pages warm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp_types import ToolAnnotations

from gitwiki.mcp.memory_tools import MemoryTools, entry_number
from gitwiki.memory import replies

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

__all__ = ["MemoryTools", "entry_number"]  # the tool bodies, as this module had them

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
# edits and topics upkeep can delete entries (delete, merge, clean, compact, clear_checkpoint)
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
TOOLS: dict[str, ToolAnnotations] = {
    "memory_store": WRITE,
    "memory_batch": WRITE,
    "memory_search": READ,
    "memory_brief": READ,
    "memory_read": READ,
    "memory_edit": CHANGE,
    "memory_topics": CHANGE,
}


def register(
    app: MCPServer, tools: MemoryTools, guard: Callable[[Callable[..., replies.Reply]], Callable[..., CallToolResult]]
) -> None:
    for name, hints in TOOLS.items():
        app.add_tool(guard(getattr(tools, name)), name=name, annotations=hints)
