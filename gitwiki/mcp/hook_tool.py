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
from typing import TYPE_CHECKING, Annotated, Literal

from gitwiki.mcp.hook_event import Runner, answer
from gitwiki.mcp.wiki_tools import Answer, result
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from pydantic import Field

__all__ = ["Annotated", "Literal"]  # what the string annotations name, evaluated by `mcp.schema.namespace`


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
        fields = {"type": type, "session_id": session_id, "transcript_path": transcript_path, "cwd": cwd}
        fields |= {"prompt": prompt, "tool_name": tool_name, "tool_input": tool_input, "tool_use_id": tool_use_id}
        fields |= {"tool_response": tool_response, "error": error, "is_interrupt": is_interrupt}
        text = answer(fields | {"stop_hook_active": stop_hook_active}, self._wiki.root, self._run)
        return result(text, {"hook": type, "answer": json.loads(text) if text else None})
