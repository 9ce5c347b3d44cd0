"""Claude Code hooks: `gitwiki-hook TYPE` reads one hook event (JSON on stdin) and answers with Claude Code's
hook JSON, so wiki sections and memory entries reach the agent's context without it having to search.

Every hook is a fresh process on every tool call, so this package stays on the standard library plus
gitwiki's light modules (config, store read with sqlite3, tokens, gitcli): no pygit2, numpy, embedding model
or MCP SDK. `gitwiki hooks install` writes the table below into `.claude/settings.json`.
"""

from __future__ import annotations


class HookType:
    """One hook type. A plain class, not a NamedTuple: `typing` is ~4 ms of a hook the owner answers (forward.py)."""

    __slots__ = ("name", "event", "matcher", "does", "handler", "repository")

    def __init__(
        self, name: str, event: str, matcher: str | None, does: str, handler: str, repository: bool = True
    ) -> None:
        self.name = name  # `gitwiki-hook NAME`
        self.event = event  # Claude Code's hook_event_name
        self.matcher = matcher  # tool (or source, agent type) pattern; None: every one
        self.does = does
        # "module:function" in gitwiki.agent_hooks, imported on demand so a hook loads only its own code. The
        # function takes a handlers.Call, or the bare event when `repository` is False (then no index code loads).
        self.handler = handler
        self.repository = repository


# The MCP tools Claude Code names after our server: `mcp__<server>__<tool>` from a settings or .mcp.json
# registration, `mcp__plugin_<plugin>_<server>__<tool>` from the plugin.
MCP_PREFIXES = ("mcp__gitwiki__", "mcp__plugin_gitwiki_gitwiki__")

HOOK_TYPES = (
    HookType(
        "session",
        "SessionStart",
        None,
        "briefing: corpora, freshness, memory topics, the checkpoint",
        "handlers:session_start",
    ),
    HookType(
        "prompt", "UserPromptSubmit", None, "the wiki and memory sections that match the prompt", "handlers:prompt"
    ),
    # Bash too: file reads and searches go through it (`cat`, `sed -n`, `grep`, `rg`) in Claude Code builds
    # without Glob and Grep tools; Glob and Grep stay for the builds that have them.
    HookType(
        "ambient",
        "PreToolUse",
        "Read|Edit|Write|Glob|Grep|Bash",
        "notes on the file a tool is about to touch",
        "ambient:ambient",
    ),
    HookType(
        "post-build",
        "PostToolUse",
        "Bash",
        "after a failed build or test command, notes on its error",
        "failures:post_build",
    ),
    HookType(
        "error-context", "PostToolUseFailure", None, "notes on a failed tool call's error", "failures:error_context"
    ),
    HookType(
        "pre-compact",
        "PreCompact",
        None,
        "keeps the checkpoint and focus topics for after the compaction",
        "handlers:pre_compact",
    ),
    HookType(
        "stop",
        "Stop",
        None,
        "a reminder to store findings when files were edited and nothing was stored",
        "handlers:stop",
    ),
    HookType("subagent", "SubagentStart", None, "the memory topic list for a subagent", "handlers:subagent"),
    # PreToolUse, not PermissionRequest: Claude Code never runs PermissionRequest hooks in print mode (`-p`).
    HookType(
        "approve-mcp",
        "PreToolUse",
        "|".join(p + ".*" for p in MCP_PREFIXES),
        "allows gitwiki's read-only MCP tools and memory writes that only add",
        "permissions:approve",
        repository=False,  # the tool name decides
    ),
)
BY_NAME = {h.name: h for h in HOOK_TYPES}
# The hooks Claude Code can hand to gitwiki's MCP server instead of starting a process (`mcp_tool` hooks, written by
# `hooks install --via mcp`: settings.py): the server's tool and, per hook type, the event's fields it is given (the
# same in gitwiki/mcp/hook_event.py, which answers them; tests/mcp/test_hook_tool.py holds the two equal). Not the
# session's start (it runs beside the server's start, before Claude Code waits on anything), nor the compaction's
# and a subagent's (rare, and fields of their own).
HOOK_TOOL = "agent_hook"
_CALL = ("session_id", "transcript_path", "cwd", "tool_name", "tool_input", "tool_use_id")
HOOK_TOOL_FIELDS = {
    "prompt": ("session_id", "transcript_path", "cwd", "prompt"),
    "ambient": _CALL,
    "post-build": (*_CALL, "tool_response"),
    "error-context": (*_CALL, "error", "is_interrupt"),
    "stop": ("session_id", "transcript_path", "cwd", "stop_hook_active"),
    "approve-mcp": _CALL,
}
HOOK_TIMEOUT = 10  # seconds Claude Code gives one hook before it carries on without it
