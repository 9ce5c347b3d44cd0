"""The ambient hook (PreToolUse on Read, Edit, Write, Glob, Grep): notes on what the tool is about to touch.

Five layers, in this order, each at most [agent_hooks] results sections and none shown twice in a session:
1. memory entries whose `[source: …]` is this file;
2. sections naming a symbol the file defines (first 500 lines, up to 20 symbols);
3. sections about the file's stem (a page or heading named after it);
4. structural notes: other sections that name the file's path;
5. on Edit, sections naming a symbol the edit removes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from gitwiki.agent_hooks.extract import removed_names, symbols
from gitwiki.agent_hooks.handlers import Call
from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.agent_hooks.memory import is_source_entry
from gitwiki.agent_hooks.protocol import context

MAX_READ = 256 * 1024  # bytes of a file read for its symbols; 500 lines of code fit well inside


def ambient(call: Call) -> dict | None:
    tool = call.event.get("tool_name")
    tool_input = call.event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    if tool in ("Glob", "Grep"):
        names = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", str(tool_input.get("pattern", "")))
        query = " ".join(names)
        return _answer(call, [Layer(f"gitwiki sections on {query!r}:", call.lookup.search(query), query)])
    if tool not in ("Read", "Edit", "Write"):
        return None
    path = _relative(call.lookup.root, tool_input.get("file_path"))
    if path is None:
        return None
    if tool != "Read":
        call.session.phase = "Build"
        call.session.edited(path)
    text = tool_input.get("content") if tool == "Write" else _head(call.lookup.root / path)
    removed = []
    if tool == "Edit":
        removed = removed_names(str(tool_input.get("old_string", "")), str(tool_input.get("new_string", "")))
    return _answer(call, file_layers(call.lookup, path, text if isinstance(text, str) else "", removed))


class Layer(NamedTuple):
    title: str
    notes: list[Note]  # best first
    query: str  # the words its snippets are cut around


def file_layers(lookup: Lookup, path: str, text: str, removed: list[str]) -> list[Layer]:
    """The five layers; the file's own sections (a wiki page being read) are not notes on it."""
    naming_path = lookup.mentions(path)
    defined = symbols(text)
    stem = Path(path).stem
    layers = [
        Layer(
            f"memory entries with [source: {path}]:",
            [n for n in naming_path if is_source_entry(n, path, lookup)],
            path,
        ),
        Layer(
            f"sections naming symbols of {path} ({', '.join(defined[:6])}):", lookup.naming(defined), " ".join(defined)
        ),
        Layer(f"sections about {stem!r}:", lookup.headed(stem), stem),
        Layer(f"notes that name {path}:", [n for n in naming_path if not is_source_entry(n, path, lookup)], path),
        Layer(
            f"this edit removes {', '.join(removed[:6])}; sections that name them:",
            lookup.naming(removed),
            " ".join(removed),
        ),
    ]
    return [layer._replace(notes=[n for n in layer.notes if n.path != path]) for layer in layers]


def _answer(call: Call, layers: list[Layer]) -> dict | None:
    picked: set[str] = set()
    parts = []
    for layer in layers:
        chosen = call.lookup.pick(layer.notes, _either(call.session.seen, picked.__contains__))
        if chosen:
            picked.update(n.key for n in chosen)
            parts.append(f"{layer.title}\n{call.lookup.render(chosen, layer.query)}")
            for note in chosen:
                call.session.injected(note.key, note.topic)
    if not parts:
        return None
    return context("PreToolUse", "\n".join(parts), call.limit)


def _either(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda key: a(key) or b(key)


def _relative(root: Path, file_path) -> str | None:
    """The repo-relative path of a tool's file_path, or None when it is not a file in this repo."""
    if not isinstance(file_path, str) or not file_path:
        return None
    full = Path(os.path.abspath(root / file_path))
    try:
        rel = full.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts and rel.parts[0] != ".git" else None


def _head(file: Path) -> str:
    try:
        with file.open("rb") as f:
            return f.read(MAX_READ).decode("utf-8", errors="replace")
    except OSError:
        return ""
