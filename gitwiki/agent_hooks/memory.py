"""The memory the hooks read, through the memory library (gitwiki/memory, docs/memory.md): its `Memory` opened
on the root and config alone (the topic pages on disk, parsed by its own parser; no `Wiki`, so no pygit2),
its meta-brief, checkpoints and session notion.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.brief import TopicActivity, activity, brief
from gitwiki.memory.checkpoint import checkpoint_page, checkpoints
from gitwiki.memory.entry import Entry, now_iso, parse_iso
from gitwiki.memory.sources import parse_source


def topics(lookup: Lookup) -> list[TopicActivity]:
    """Memory topics, most recently written first (checkpoints are not topics: they are shown apart)."""
    return activity(lookup.memory.topics().values(), datetime.now(UTC))


def meta_brief(lookup: Lookup) -> str:
    """The memory library's compact meta-briefing: totals and the five most active topics."""
    return brief(lookup.memory, compact=True).markdown.strip()


class Found(NamedTuple):
    path: str
    text: str  # the page without its title
    age_s: float


def checkpoint(lookup: Lookup) -> Found | None:
    """The newest checkpoint (by its Saved time), parsed by the library and shown as its page says it."""
    found = max(checkpoints(lookup.memory), key=lambda c: c.saved, default=None)
    if found is None:
        return None
    saved = parse_iso(found.saved)
    age = (datetime.now(UTC) - saved).total_seconds() if saved else 0.0
    return Found(found.path, checkpoint_page(found.json()).split("\n", 1)[1].strip(), max(age, 0.0))


def stored_since(lookup: Lookup, since: float) -> bool:
    """Whether an entry was stored or changed in this session: the library's `session` action, with the
    session starting when the hooks first saw it rather than when this process did."""
    mem = lookup.memory
    mem.started = now_iso(datetime.fromtimestamp(since, UTC))
    return bool(topics_mod.session(mem)[1])


def source_entries(lookup: Lookup, notes: list[Note], path: str) -> list[Note]:
    """The memory entries among `notes` whose `[source: …]` names `path`, told by the entry's parsed source
    field (not by the path appearing somewhere in its text)."""
    out = []
    for note in notes:
        entry = _entry_at(lookup, note)
        ref = parse_source(entry.source) if entry is not None else None
        if ref is not None and ref.path == path:
            out.append(note)
    return out


def _entry_at(lookup: Lookup, note: Note) -> Entry | None:
    """The entry of a topic page whose section is `note` (a checkpoint or a wiki page has none)."""
    name = note.path.removeprefix(lookup.memory_prefix)
    if name == note.path or "/" in name or not name.endswith(".md"):
        return None
    page = lookup.memory.topics(name[:-3]).get(name[:-3])
    if page is None:
        return None
    return next((e for e in page.page.entries if e.start_line <= note.start_line <= e.end_line), None)


def render_topics(found: list[TopicActivity], limit: int = 12) -> str:
    shown = ", ".join(f"{t.topic} ({t.entries})" for t in found[:limit])
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return f"memory topics, newest first: {shown}{more}"
