"""The memory the hooks read: topic pages under the memory folder, one `## <ISO timestamp> — text` section per
entry, with `[source: path:line@blob]` lines, and checkpoint pages (`checkpoint*.md`) whose last entry is the
latest checkpoint. Read from the index (topics) and the worktree (checkpoint, what changed this session).
"""

from __future__ import annotations

import os
import re
import time
from typing import NamedTuple

from gitwiki.agent_hooks.lookup import Lookup, Note

_STAMP = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?")
_ENTRY = re.compile(r"^## ", re.MULTILINE)


CHECKPOINT = "checkpoint"  # the file name prefix of checkpoint pages


class Topic(NamedTuple):
    name: str
    path: str
    entries: int
    latest: str  # the newest entry's timestamp, "" if none has one


class Checkpoint(NamedTuple):
    path: str
    text: str  # the last entry, heading included
    age_s: float


def topics(lookup: Lookup) -> list[Topic]:
    """Memory topics, most recently written first (checkpoint pages are not topics: they are shown apart)."""
    if lookup.store is None:
        return []
    blobs = {
        blob: path
        for blob, path in lookup.paths.items()
        if lookup.is_memory(path) and not path.rpartition("/")[2].startswith(CHECKPOINT)
    }
    counts: dict[str, list[str]] = {blob: [] for blob in blobs}
    for blob, breadcrumb in lookup.store.headings(blobs, 2):
        stamp = _STAMP.match(breadcrumb[-1])
        counts[blob].append(stamp.group() if stamp else "")
    out = [
        Topic(
            blobs[blob][len(lookup.memory_prefix) :].removesuffix(".md"),
            blobs[blob],
            len(stamps),
            max(stamps, default=""),
        )
        for blob, stamps in counts.items()
    ]
    return sorted(out, key=lambda t: (t.latest, t.entries), reverse=True)


def checkpoint(lookup: Lookup) -> Checkpoint | None:
    """The newest checkpoint page's last entry, read from the worktree."""
    pages = {
        os.path.getmtime(full): path
        for path, full in lookup.memory_files().items()
        if path.rpartition("/")[2].startswith(CHECKPOINT)
    }
    if not pages:
        return None
    mtime = max(pages)
    with open(lookup.root / pages[mtime], encoding="utf-8", errors="replace") as f:
        text = f.read()
    starts = [m.start() for m in _ENTRY.finditer(text)]
    last = text[starts[-1] :] if starts else text
    return Checkpoint(pages[mtime], last.strip(), time.time() - mtime)


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
