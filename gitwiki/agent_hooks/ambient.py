"""The ambient hook (PreToolUse on Read, Edit, Write, Glob, Grep, Bash): notes on what the tool is about to touch.

Five layers, in this order, each at most [agent_hooks] results sections and none shown twice in a session:
1. memory entries whose `[source: …]` is this file (the entry's source field, as the memory library parses it);
2. sections naming a symbol the file defines (first 500 lines, up to 20 symbols);
3. sections about the file's stem (a page or heading named after it);
4. structural notes: other sections that name the file's path, and the files that changed together with it
   in recent commits (coupling.py);
5. on Edit, sections naming a symbol the edit removes.

A Bash command is read for the files it reads (`cat`, `head`, `sed -n`, …) and the patterns it searches for
(`grep`, `rg`, `find -name`, …; shell.py): each file gets a Read's layers, each pattern a Grep's.

Only regular files inside the repository are read: a FIFO or device would block the hook or never end, and a
symlink that leads out of the repository would put another folder's code into the context.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.agent_hooks import coupling
from gitwiki.agent_hooks.extract import removed_names, symbols
from gitwiki.agent_hooks.handlers import Call
from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.agent_hooks.memory import source_entries
from gitwiki.agent_hooks.protocol import context

MAX_READ = 256 * 1024  # bytes of a file read for its symbols; 500 lines of code fit well inside
MAX_PATTERN = 1000
MAX_PATH = 4096  # characters of a search pattern whose words are searched for


def ambient(call: Call) -> dict[str, Any] | None:
    tool = call.event.get("tool_name")
    tool_input = call.event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    if tool == "Bash":
        return _bash(call, tool_input.get("command"))
    if tool in ("Glob", "Grep"):
        return _answer(call, _pattern_layers(call, [str(tool_input.get("pattern", ""))]))
    if tool not in ("Read", "Edit", "Write"):
        return None
    path = _relative(call.lookup.root, call.lookup.root, tool_input.get("file_path"))
    if path is None:
        return None
    if tool != "Read":
        call.session.phase = "Build"
        call.session.edited(path)
    text = tool_input.get("content") if tool == "Write" else _head(call.lookup.root, path)
    removed = []
    if tool == "Edit":
        removed = removed_names(str(tool_input.get("old_string", "")), str(tool_input.get("new_string", "")))
    return _answer(call, _file_blocks(call, path, text if isinstance(text, str) else "", removed))


def _bash(call: Call, command: object) -> dict[str, Any] | None:
    """A Read's notes for each file the command reads, a Grep's for each pattern it searches for."""
    if not isinstance(command, str):
        return None
    from gitwiki.agent_hooks.shell import shell_use  # only Bash calls pay for shlex

    cwd = call.event.get("cwd")
    use = shell_use(command, cwd if isinstance(cwd, str) and os.path.isabs(cwd) else str(call.lookup.root))
    blocks: list[Layer | str] = []
    for read in use.reads:
        path = _relative(call.lookup.root, Path("/"), read)
        if path is not None and _regular(call.lookup.root, path):
            blocks += _file_blocks(call, path, _head(call.lookup.root, path), [])
    return _answer(call, blocks + _pattern_layers(call, use.patterns))


def _pattern_layers(call: Call, patterns: list[str]) -> list[Layer | str]:
    """Sections on the words of search patterns (a regex's escapes such as `\\b` are not words)."""
    layers: list[Layer | str] = []
    for pattern in patterns:
        names = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", re.sub(r"\\.", " ", pattern[:MAX_PATTERN]))
        query = " ".join(names)
        if query:
            layers.append(Layer(f"gitwiki sections on {query!r}:", call.lookup.search(query), query))
    return layers


def _file_blocks(call: Call, path: str, text: str, removed: list[str]) -> list[Layer | str]:
    """The five layers on `path`, with the coupling note after the fourth."""
    layers = file_layers(call.lookup, path, text, removed)
    return [*layers[:4], _coupling(call, path), *layers[4:]]


def _coupling(call: Call, path: str) -> str:
    """Layer 4's coupling note on `path`, once per session."""
    key = f"coupling:{path}"
    if call.session.seen(key):
        return ""
    found = coupling.coupled(call.lookup.root, call.lookup.index_dir, path)
    if not found:
        return ""
    call.session.injected(key)
    return coupling.render(path, found)


class Layer(NamedTuple):
    title: str
    notes: list[Note]  # best first
    query: str  # the words its snippets are cut around


def file_layers(lookup: Lookup, path: str, text: str, removed: list[str]) -> list[Layer]:
    """The five layers; the file's own sections (a wiki page being read) are not notes on it."""
    naming_path = lookup.mentions(path)
    sourced = source_entries(lookup, naming_path, path)
    defined = symbols(text)
    stem = Path(path).stem
    layers = [
        Layer(
            f"memory entries with [source: {path}]:",
            sourced,
            path,
        ),
        Layer(
            f"sections naming symbols of {path} ({', '.join(defined[:6])}):", lookup.naming(defined), " ".join(defined)
        ),
        Layer(f"sections about {stem!r}:", lookup.headed(stem), stem),
        Layer(f"notes that name {path}:", [n for n in naming_path if n not in sourced], path),
        Layer(
            f"this edit removes {', '.join(removed[:6])}; sections that name them:",
            lookup.naming(removed),
            " ".join(removed),
        ),
    ]
    return [layer._replace(notes=[n for n in layer.notes if n.path != path]) for layer in layers]


def _answer(call: Call, blocks: list[Layer | str]) -> dict[str, Any] | None:
    """The layers' notes not shown before, and the ready-made notes (coupling) as they are, in order."""
    picked: set[str] = set()
    parts = []
    for block in blocks:
        if isinstance(block, str):
            if block:
                parts.append(block)
            continue
        chosen = call.lookup.pick(block.notes, _either(call.session.seen, picked.__contains__))
        if chosen:
            picked.update(n.key for n in chosen)
            parts.append(f"{block.title}\n{call.lookup.render(chosen, block.query)}")
            for note in chosen:
                call.session.injected(note.key, note.topic)
    if not parts:
        return None
    # The answer names the event it answers: the hook may be registered for PostToolUse on Bash too.
    event = call.event.get("hook_event_name")
    return context(event if event in ("PreToolUse", "PostToolUse") else "PreToolUse", "\n".join(parts), call.limit)


def _either(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda key: a(key) or b(key)


def _relative(root: Path, base: Path, file_path: object) -> str | None:
    """The repo-relative path of a tool's file_path (relative to `base` unless absolute), or None when it is
    not a path in this repo."""
    # Longer than any path the system opens (PATH_MAX): resolving symlinks in a 2 MB path of 700,000
    # components took longer than the hook may (found by tests/agent_hooks/test_fuzz.py).
    if not isinstance(file_path, str) or not file_path or "\0" in file_path or len(file_path) > MAX_PATH:
        return None
    full = Path(os.path.abspath(base / file_path))
    try:
        rel = full.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts and rel.parts[0] != ".git" else None


def _inside(root: Path, path: str) -> str | None:
    """The real path of repo-relative `path` when it stays inside the repository's worktree, symlinks resolved
    (a link to a file outside it, or into `.git`, is not followed)."""
    real = os.path.realpath(root / path)
    top = os.path.realpath(root).rstrip(os.sep) + os.sep
    if not real.startswith(top) or real[len(top) :].split(os.sep, 1)[0] == ".git":
        return None
    return real


def _regular(root: Path, path: str) -> bool:
    """Whether `path` is a regular file inside the repository, symlinks resolved."""
    real = _inside(root, path)
    try:
        return real is not None and stat.S_ISREG(os.stat(real).st_mode)
    except OSError:
        return False


def _head(root: Path, path: str) -> str:
    """The start of repo-relative `path`, or "" when it is not a regular file inside the repository. Opened
    without blocking (a FIFO's open waits for a writer) and checked on the open file, not its name."""
    real = _inside(root, path)
    if real is None:
        return ""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            return f.read(MAX_READ).decode("utf-8", errors="replace")
        except OSError:
            return ""
