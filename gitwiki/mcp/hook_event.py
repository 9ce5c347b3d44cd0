"""The event a hook of Claude Code's `mcp_tool` kind stands for, rebuilt from the string arguments of its call to
`agent_hook` (mcp/hook_tool.py): what the tool is called, which hook types it answers and the fields of each, and
the checks that keep the event in the server's checkout. Pure and light (no SDK, no index code): the first
session's bridge uses it too, answering hooks itself until the owner it started is up (mcp/bridge.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitwiki.errors import UsageError

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


def answer(arguments: dict[str, str], root: Path, run: Runner | None) -> str:
    """A call's answer: the hook `run` gives the event its arguments stand for ("" for nothing to say, or when there
    is no hook code to run)."""
    name, raw, cwd = event(arguments.get("type", ""), arguments, root)
    return (run(name, raw, cwd) if run is not None else None) or ""


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
