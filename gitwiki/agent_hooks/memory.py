"""The memory the hooks read (issue 12's format): topic pages under the memory folder, one
`## <ISO timestamp> — text` section per entry with `[source: path:line@blob]` lines, and checkpoint pages in
its `checkpoints/` folder. Topics come from the index, checkpoints and what changed this session from the
worktree. The one module to switch to issue 12's library once it lands.
"""

from __future__ import annotations

import os
import re
import time
from typing import NamedTuple

from gitwiki.agent_hooks.lookup import Lookup, Note

_STAMP = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?")


CHECKPOINTS = "checkpoints/"  # the memory folder's subfolder of checkpoint pages


class Topic(NamedTuple):
    name: str
    path: str
    entries: int
    latest: str  # the newest entry's timestamp, "" if none has one


class Checkpoint(NamedTuple):
    path: str
    text: str  # the page without its title
    age_s: float


def topics(lookup: Lookup) -> list[Topic]:
    """Memory topics, most recently written first (checkpoints are not topics: they are shown apart)."""
    if lookup.store is None:
        return []
    blobs = {
        blob: path
        for blob, path in lookup.paths.items()
        if lookup.is_memory(path) and not path.startswith(lookup.memory_prefix + CHECKPOINTS)
    }
    out = []
    for blob, (count, breadcrumb) in lookup.store.last_sections(blobs, 2).items():
        stamp = _STAMP.match(breadcrumb[-1])  # entries are appended: the last is the newest
        name = blobs[blob][len(lookup.memory_prefix) :].removesuffix(".md")
        out.append(Topic(name, blobs[blob], count, stamp.group() if stamp else ""))
    return sorted(out, key=lambda t: (t.latest, t.entries), reverse=True)


def checkpoint(lookup: Lookup) -> Checkpoint | None:
    """The newest checkpoint page, read from the worktree."""
    pages = {
        os.path.getmtime(full): path
        for path, full in lookup.memory_files().items()
        if path.startswith(lookup.memory_prefix + CHECKPOINTS)
    }
    if not pages:
        return None
    mtime = max(pages)
    with open(lookup.root / pages[mtime], encoding="utf-8", errors="replace") as f:
        text = f.read()
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    return Checkpoint(pages[mtime], body.strip(), time.time() - mtime)


def stored_since(lookup: Lookup, since: float) -> bool:
    """Whether any memory page was written after `since` (a store, committed or not)."""
    return any(os.path.getmtime(full) > since for full in lookup.memory_files().values())


def is_source_entry(note: Note, path: str, lookup: Lookup) -> bool:
    """A memory entry whose `[source: …]` is `path`."""
    return lookup.is_memory(note.path) and f"[source: {path}" in note.text


def render_topics(found: list[Topic], limit: int = 12) -> str:
    shown = ", ".join(f"{t.name} ({t.entries})" for t in found[:limit])
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return f"memory topics, newest first: {shown}{more}"
