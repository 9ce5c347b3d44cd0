"""`agent_hook`: the hooks Claude Code runs as `mcp_tool` hooks, answered by the session's own MCP server.

`gitwiki hooks install --via mcp` writes the prompt, tool and stop hooks that way (agent_hooks/settings.py): Claude
Code then calls this tool over the session's connection, so those hooks start no process (an interpreter and a
hook's imports, ~20 ms of CPU each, on every prompt, Read, Edit or Bash call and stop). Claude Code fills the tool's
arguments from the hook event's fields (`"${prompt}"`; an object as its JSON, a boolean as true or false), and reads
its text as it reads a command hook's stdout: hook JSON, or "" for nothing to say.

The tool is declared for the app only (`_meta.ui.visibility`, MCP Apps): Claude Code 2.1.332 does not announce it
to the model, whose tool list stays gitwiki's 19. The hook's own code answers (`agent_hooks.run`, handed in by
`gitwiki serve`: this folder does not import the hooks), on the event rebuilt from those fields, in this server's
checkout only. It runs without the tool calls' lock: the prompt hook's search asks this server over its socket,
which takes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from gitwiki.errors import UsageError
from gitwiki.mcp.wiki_tools import Answer, result
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from pydantic import Field

__all__ = ["Annotated", "Literal"]  # what the string annotations name, evaluated by `mcp.schema.namespace`

HOOK_TOOL = "agent_hook"
# The hook types answered here: Claude Code's event, and the event's fields the handler reads beyond COMMON. The
# hooks install writes the same table into settings (tests/mcp/test_hook_tool.py holds the two equal).
_CALL = ("tool_name", "tool_input", "tool_use_id")
EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "prompt": ("UserPromptSubmit", ("prompt",)),
    "ambient": ("PreToolUse", _CALL),
    "post-build": ("PostToolUse", (*_CALL, "tool_response")),
    "error-context": ("PostToolUseFailure", (*_CALL, "error", "is_interrupt")),
    "stop": ("Stop", ("stop_hook_active",)),
    "approve-mcp": ("PreToolUse", _CALL),
}
COMMON = ("session_id", "transcript_path", "cwd")
# MCP Apps' visibility: called by the host (a hook), never offered to the model
META: dict[str, Any] = {"ui": {"visibility": ["app"]}}
FLAGS = ("stop_hook_active", "is_interrupt")  # booleans in the event, "true" or "false" in the arguments
# objects in the event, which Claude Code writes into a string argument as JSON
OBJECTS = ("tool_input", "tool_response")

Runner = Callable[[str, bytes, str], "str | None"]  # (hook type, event bytes, cwd) → the hook's stdout


class HookTool:
    """The tool's body for a server of `wiki`'s checkout; `run` is the hook code (None: a server that runs no hooks
    answers nothing)."""

    def __init__(self, wiki: Wiki, run: Runner | None) -> None:
        self._wiki = wiki
        self._run = run

    def agent_hook(
        self,
        type: Annotated[
            Literal["prompt", "ambient", "post-build", "error-context", "stop", "approve-mcp"],
            Field(description="The hook type, as gitwiki-hook names it."),
        ],
        session_id: Annotated[str, Field(description="The event's session_id.")] = "",
        transcript_path: Annotated[str, Field(description="The event's transcript_path.")] = "",
        cwd: Annotated[str, Field(description="The event's cwd: this checkout or a folder in it.")] = "",
        prompt: Annotated[str, Field(description="UserPromptSubmit's prompt.")] = "",
        tool_name: Annotated[str, Field(description="The tool event's tool_name.")] = "",
        tool_input: Annotated[str, Field(description="The tool event's tool_input, as JSON.")] = "",
        tool_use_id: Annotated[str, Field(description="The tool event's tool_use_id.")] = "",
        tool_response: Annotated[str, Field(description="PostToolUse's tool_response, as JSON or text.")] = "",
        error: Annotated[str, Field(description="PostToolUseFailure's error.")] = "",
        is_interrupt: Annotated[str, Field(description="PostToolUseFailure's is_interrupt: true or false.")] = "",
        stop_hook_active: Annotated[str, Field(description="Stop's stop_hook_active: true or false.")] = "",
    ) -> Answer:
        """For Claude Code's mcp_tool hooks (gitwiki hooks install): one hook event, answered as hooks are."""
        fields = {"session_id": session_id, "transcript_path": transcript_path, "cwd": cwd, "prompt": prompt}
        fields |= {"tool_name": tool_name, "tool_input": tool_input, "tool_use_id": tool_use_id}
        fields |= {"tool_response": tool_response, "error": error, "is_interrupt": is_interrupt}
        name, raw, where = event(type, fields | {"stop_hook_active": stop_hook_active}, self._wiki.root)
        found = self._run(name, raw, where) if self._run is not None else None
        text = found or ""
        return result(text, {"hook": type, "answer": json.loads(text) if text else None})


def event(name: str, fields: dict[str, str], root: Path) -> tuple[str, bytes, str]:
    """The hook type, the event's bytes as Claude Code would send them on stdin, and the directory it runs in, from
    the tool's arguments: only the hook's own fields, its `cwd` this checkout or a folder in it."""
    if name not in EVENTS:
        raise UsageError(f"agent_hook answers {', '.join(EVENTS)}, not {name!r}")
    hook_event, own = EVENTS[name]
    where = fields.get("cwd") or str(root)
    try:
        resolved = Path(os.path.realpath(where)) if "\0" not in where else None
    except (UnicodeError, OSError, ValueError):  # a lone surrogate: no path on this system
        resolved = None
    if resolved is None or not resolved.is_relative_to(os.path.realpath(root)):
        raise UsageError(f"agent_hook answers for {root} only, not {where!r}")
    built: dict[str, Any] = {k: fields.get(k, "") for k in COMMON} | {"cwd": str(resolved)}
    built["hook_event_name"] = hook_event
    for key in own:
        built[key] = _value(key, fields.get(key, ""))
    return name, json.dumps(built, ensure_ascii=False).encode("utf-8", "surrogatepass"), str(resolved)


def _value(key: str, given: str) -> Any:
    """A field as the event held it: a flag's boolean, an object's JSON read back (a text that is not an object or a
    list stays text: a tool may answer with a plain string)."""
    if key in FLAGS:
        return given == "true"
    if key in OBJECTS and given[:1] in ("{", "["):
        try:
            return json.loads(given)
        except (ValueError, RecursionError):
            return given
    return given
