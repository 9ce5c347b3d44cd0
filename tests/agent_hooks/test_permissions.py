"""The permission table (agent_hooks/permissions.py) against the tools the MCP server really registers."""

from __future__ import annotations

import inspect

from gitwiki.agent_hooks import permissions


def test_the_table_lists_every_server_tool_by_its_read_only_hint():
    from gitwiki.mcp import memory as mcp_memory
    from gitwiki.mcp import server as mcp_server

    tools = {**mcp_server.TOOLS, **mcp_memory.TOOLS}
    assert set(permissions.READ_TOOLS) == {name for name, hints in tools.items() if hints.read_only_hint}
    assert set(permissions.WRITE_TOOLS) == {name for name, hints in tools.items() if not hints.read_only_hint}


def test_every_memory_topics_action_is_classified():
    from gitwiki.memory.actions import TOPIC_ACTIONS

    reads = permissions.TOPICS_READ_ACTIONS | permissions.TOPICS_DRY_RUNS
    assert reads <= set(TOPIC_ACTIONS)
    # the rest write: import, reindex (the index), checkpoint and clear_checkpoint (pages)
    assert set(TOPIC_ACTIONS) - reads == {"import", "reindex", "checkpoint", "clear_checkpoint"}
    from gitwiki.mcp.memory import MemoryTools

    parameters = inspect.signature(MemoryTools.memory_topics).parameters
    assert parameters["action"].default == permissions.TOPICS_DEFAULT_ACTION
    assert parameters["apply"].default is False  # clean and compact are dry runs unless asked
