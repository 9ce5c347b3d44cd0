"""Claude Code's hook protocol (code.claude.com/docs/en/hooks): the event a hook reads, the JSON it answers.

Input: one JSON object on stdin with `session_id`, `transcript_path`, `cwd`, `hook_event_name` and the
event's own fields. Output, on exit 0: a JSON object on stdout; context for the model goes in
`hookSpecificOutput.additionalContext` (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
PostToolUseFailure, SubagentStart), a PreToolUse hook may also decide with
`hookSpecificOutput.permissionDecision` (gitwiki.agent_hooks.permissions), and a Stop hook keeps the agent
going with `{"decision": "block", "reason": …}`. No output means no opinion.
"""

from __future__ import annotations

import json
from typing import Any

CUT = "\n… (cut to {limit} characters: [agent_hooks] max_chars)"


def parse_event(raw: bytes) -> dict[str, Any] | None:
    """The event object, or None when stdin is not one (the hook then does nothing): not JSON, not UTF-8, or
    nested deeper than the parser's recursion limit (RecursionError, which once ended the hook in a traceback)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def cap(text: str, limit: int) -> str:
    """`text` cut at a line end so that it fits in `limit` characters, saying so."""
    if len(text) <= limit:
        return text
    note = CUT.format(limit=limit)
    head = text[: max(0, limit - len(note))]
    cut = head.rfind("\n")
    return (head[:cut] if cut > 0 else head) + note


def context(event: str, text: str, limit: int) -> dict[str, Any] | None:
    """Add `text` to the model's context, or None when there is nothing to add. Page titles, memory topics and
    a failed command's output reach it, so terminal escapes and control characters are left out
    (`pagetext.printable`)."""
    from gitwiki.pagetext import printable  # here: approve-mcp, which adds no context, does without its 1-2 ms

    text = printable(text)
    if not text.strip():
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": cap(text, limit)}}


def keep_going(reason: str) -> dict[str, Any]:
    """A Stop hook's answer that keeps the agent working, with `reason` as its next instruction."""
    return {"decision": "block", "reason": reason}
