"""Whether Claude Code runs gitwiki's MCP server for a project, and under which name: the server the hooks of
`gitwiki hooks install --via mcp` call (settings.py), and what `install` and `status` say about it.

Read where Claude Code keeps the registrations: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), the user's
servers (`mcpServers`) and the project's (`projects[ROOT].mcpServers`, what `claude mcp add` writes); and the
project's `.mcp.json` when the user approved its server (`enableAllProjectMcpServers`, `enabledMcpjsonServers` in the
settings or that project's entry), since Claude Code starts no project server it was not allowed to. A server is
gitwiki's when its command line runs `gitwiki serve` (`uvx --from gitwiki-search gitwiki serve` too). Files that
cannot be read or parsed count as registering nothing (the hooks then name the server `gitwiki`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gitwiki.errors import GitwikiError
from gitwiki.fs import read_bounded

PROGRAMS = ("gitwiki", "gitwiki.exe")
MAX_BYTES = 64 * 1024 * 1024  # ~/.claude.json holds every project's history; past this it is not read


def claude_json() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(base) / ".claude.json" if base else Path(os.path.expanduser("~")) / ".claude.json"


def registered_server(root: Path, settings: list[Path]) -> str | None:
    """The name gitwiki's MCP server runs under in Claude Code for the project at `root`, or None; `settings`: the
    settings files that may approve the project's `.mcp.json` servers (those in the checkout are read as its files)."""
    state = _load(claude_json(), None)
    project = _project(state, root)
    found = _gitwiki(project.get("mcpServers")) or _gitwiki(state.get("mcpServers"))
    if found is not None:
        return found
    shared = _gitwiki(_load(root / ".mcp.json", root).get("mcpServers"))
    if shared is None:
        return None
    approvals = [project, *(_load(path, root if path.is_relative_to(root) else None) for path in settings)]
    if any(a.get("enableAllProjectMcpServers") is True for a in approvals):
        return shared
    enabled = (a.get("enabledMcpjsonServers") for a in approvals)
    return shared if any(isinstance(names, list) and shared in names for names in enabled) else None


def runs_gitwiki_serve(config: object) -> bool:
    """Whether an `mcpServers` entry's command line runs `gitwiki serve`."""
    if not isinstance(config, dict) or config.get("type", "stdio") != "stdio":
        return False
    command, args = config.get("command"), config.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return False
    words = [command, *args]
    return any(os.path.basename(w) in PROGRAMS and nxt == "serve" for w, nxt in zip(words, words[1:], strict=False))


def _gitwiki(servers: object) -> str | None:
    if not isinstance(servers, dict):
        return None
    return next((name for name, config in servers.items() if runs_gitwiki_serve(config)), None)


def _project(state: dict[str, Any], root: Path) -> dict[str, Any]:
    projects = state.get("projects")
    if not isinstance(projects, dict):
        return {}
    entry = projects.get(str(root)) or projects.get(os.path.realpath(root))
    return entry if isinstance(entry, dict) else {}


def _load(path: Path, inside: Path | None) -> dict[str, Any]:
    """The JSON object in `path`, {} for anything else. Read as a file a checkout names (`fs.read_bounded`: a regular
    file, at most MAX_BYTES, inside `inside` when given, the checkout's files), so a FIFO or a link to /dev/zero
    named `.mcp.json` neither hangs nor fills the install."""
    try:
        data = json.loads(read_bounded(path, roots=None if inside is None else [inside], cap=MAX_BYTES))
    except (OSError, ValueError, RecursionError, GitwikiError):
        return {}
    return data if isinstance(data, dict) else {}
