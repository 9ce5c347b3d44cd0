"""Which of gitwiki's own MCP tools Claude Code may run without asking (docs/agent-hooks.md#permissions).

The read-only tools and the memory writes that only add (docs/security.md says why those are safe) always:
the `approve-mcp` hook (PreToolUse, so it runs in every mode, `claude -p`
included, and for the plugin's tools too) answers `permissionDecision: allow` for them. Not permission
rules: Claude Code 2.1.332 ignores .claude/settings.json's `permissions.allow` in a workspace the user has
not trusted, which a `claude -p` run in a fresh checkout is ("Ignoring 1 permissions.allow entry from
.claude/settings.json: this workspace has not been trusted"), while it runs that file's hooks. The other
writes (page writes, index runs, memory edits and upkeep that remove or rewrite entries) only where the user
chose `gitwiki hooks install --allow-writes`, which adds their rules to a file Claude Code honours there:
the workspace's settings.local.json, or the user settings. `memory_topics` reads or writes by its action:
the hook allows its reading actions and checkpoint, the rule all of them.

The tool names are listed here, not read from the server: its table holds the MCP SDK's annotation types,
which a hook must not import (~0.7 s). tests/agent_hooks/test_permissions.py keeps this table equal to
the tools the server registers and their `read_only_hint`.
"""

from __future__ import annotations

from typing import Any

from gitwiki.agent_hooks import MCP_PREFIXES

READ_TOOLS = (
    "list_corpora",
    "list_files",
    "list_tree",
    "ground",
    "read_markdown",
    "outline_markdown",
    "read_many",
    "get_footnote",
    "page_history",
    "memory_search",
    "memory_brief",
    "memory_read",
)
WRITE_TOOLS = (
    "add_markdown",
    "delete_markdown",
    "index",
    "memory_store",
    "memory_batch",
    "memory_edit",
    "memory_topics",
)
TOPICS = "memory_topics"
# memory_topics actions that only read; clean and compact too, unless `apply` (their default is a dry run).
TOPICS_READ_ACTIONS = frozenset(
    {"list", "recent", "entries", "stats", "xref", "graph", "stale", "refresh", "prune", "export", "session", "resume"}
)
TOPICS_DRY_RUNS = frozenset({"clean", "compact"})
TOPICS_DEFAULT_ACTION = "list"
# Writes that only add to memory: a new entry (or a new checkpoint page, the older one kept in git) that a
# person reviews and reverts as any markdown change, nothing removed or rewritten. Not import: it replaces
# checkpoints; not reindex: a rebuild of the whole index.
ADD_TOOLS = ("memory_store", "memory_batch")
TOPICS_ADD_ACTIONS = frozenset({"checkpoint"})

REASON = "gitwiki: a read-only tool of the gitwiki MCP server"
ADD_REASON = "gitwiki: a memory write that only adds (markdown in git: reviewed and reverted as any change)"


def write_rules() -> list[str]:
    """The `permissions.allow` rules `gitwiki hooks install --allow-writes` adds: one per writing tool of the
    server registered as `gitwiki` (`claude mcp add gitwiki`), by exact name, so that a tool a later version
    adds is not allowed unseen."""
    return [MCP_PREFIXES[0] + tool for tool in WRITE_TOOLS]


def reads_only(tool: str, arguments: object) -> bool:
    """Whether this call of gitwiki tool `tool` only reads."""
    if tool in READ_TOOLS:
        return True
    action = _topics_action(tool, arguments)
    if action is None:
        return False
    return action in TOPICS_READ_ACTIONS or (
        action in TOPICS_DRY_RUNS and isinstance(arguments, dict) and arguments.get("apply") in (None, False)
    )


def adds_only(tool: str, arguments: object) -> bool:
    """Whether this call of gitwiki tool `tool` writes memory that only adds: an entry, a batch, a checkpoint."""
    return tool in ADD_TOOLS or _topics_action(tool, arguments) in TOPICS_ADD_ACTIONS


def _topics_action(tool: str, arguments: object) -> str | None:
    """The action of a memory_topics call; None for another tool or a call the server would not take."""
    if tool != TOPICS or not isinstance(arguments, dict):
        return None
    action = arguments.get("action", TOPICS_DEFAULT_ACTION)
    # e.g. ["clean"]: not a call the server takes; Claude Code asks as usual
    return action if isinstance(action, str) else None


def rule_matches(rule: str, tool: str) -> bool:
    """Whether Claude Code permission rule `rule` names MCP tool `tool` (`mcp__server__name`): the tool
    itself, its whole server (`mcp__server`) or a wildcard over it (`mcp__server__*`)."""
    server = tool.rsplit("__", 1)[0]
    rule = rule.strip()
    return rule in (tool, server) or (rule.endswith("*") and tool.startswith(rule[:-1]) and rule.startswith(server))


def approve(event: dict[str, Any]) -> dict[str, Any] | None:
    """PreToolUse: allow a read of gitwiki's own MCP server, or a memory write that only adds; no answer for
    anything else, so Claude Code applies the user's rules (a deny or ask rule still wins over this allow)
    and asks as usual."""
    name = event.get("tool_name")
    if not isinstance(name, str):
        return None
    for prefix in MCP_PREFIXES:
        if not name.startswith(prefix):
            continue
        tool, arguments = name[len(prefix) :], event.get("tool_input")
        reason = REASON if reads_only(tool, arguments) else ADD_REASON if adds_only(tool, arguments) else None
        if reason:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": reason,
                }
            }
    return None
