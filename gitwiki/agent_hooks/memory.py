"""The memory the hooks read, through the memory library (gitwiki/memory, docs/memory.md): its `Memory` opened
on the root and config alone (no `Wiki`, so no pygit2) for where the topic pages are, its parser for them, its
meta-brief, checkpoints and session notion.

Parsing every topic page costs a hook too much, most of it for search terms a hook never uses
(docs/research/agent-hooks.md). So the entries' metadata, without their text, is cached in the index dir per page,
keyed by the page file's inode, mtime and size, as `Memory` keys its in-process cache: a hook re-parses only the
pages that changed. On top of it, the overview the session and subagent hooks show (agent-overview.json) and layer
1's reading of the cached rows let a hook on unchanged memory run without importing the library at all (it is
imported inside the functions that parse).
"""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
from collections.abc import Collection
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.agent_hooks import cache
from gitwiki.agent_hooks.lookup import Lookup, Note

if TYPE_CHECKING:
    from gitwiki.memory.entry import Entry, TopicPage

CACHE = "agent-memory.json"
OVERVIEW = "agent-overview.json"
CACHE_VERSION = 3  # 3: a person's undated sections are no longer entries, so rows cached by 2 are re-parsed
_FIELDS = ("created", "modified", "tags", "source", "start_line", "end_line")  # what the hooks read of an entry
# A cached entry row is _FIELDS, then the path its [source: …] names ("" for none), parsed once by the library.
_START, _END, _SOURCE_PATH = 4, 5, 6


class Topic(NamedTuple):
    """A topic page as the library's brief functions take it (`.name`, `.page.entries`); entries without text."""

    name: str
    path: str  # repo-relative
    page: TopicPage


def load_topics(lookup: Lookup, only: Collection[str] | None = None) -> dict[str, Topic]:
    """Every topic page (or those at the repo paths `only`), by name, from the cache where the file is
    unchanged, else parsed by the library."""
    from gitwiki.errors import RefusedFile
    from gitwiki.fs import read_bounded
    from gitwiki.memory.entry import TopicPage, parse_page
    from gitwiki.memory.sources import parse_source

    mem = lookup.memory
    pages = _cached_pages(lookup)
    out, changed = {}, False
    fresh = {} if only is None else dict(pages)  # a partial read keeps the other pages' entries
    for name, file in mem.topic_files().items():
        path = f"{lookup.memory_prefix}{name}.md"
        if only is not None and path not in only:
            continue
        try:
            key = cache.stamp(file.stat())
        except OSError:
            continue
        hit = pages.get(path)
        if hit is None or hit[0] != key:
            try:  # as the library reads a page: a link out of the repository, or a FIFO, is no page
                text = read_bounded(file, roots=[mem.root]).decode("utf-8", errors="replace")
            except (OSError, RefusedFile):
                continue
            rows = []
            for e in parse_page(text, name).entries:
                ref = parse_source(e.source) if e.source else None
                rows.append([*(getattr(e, f) for f in _FIELDS), ref.path if ref is not None else ""])
            hit = [key, rows]
            changed = True
        fresh[path] = hit
        shown = mem.label + name  # a personal topic reads ~personal/NAME, as the library shows it
        entries = tuple(_entry(shown, i, row) for i, row in enumerate(hit[1], 1))
        out[shown] = Topic(shown, path, TopicPage(shown, "", entries))
    if changed or len(fresh) != len(pages):  # a page parsed again, or one gone
        cache.save(lookup.index_dir / CACHE, {"version": CACHE_VERSION, "pages": fresh})
    return out


def every_topic(lookup: Lookup) -> dict[str, Topic]:
    """The topics of the project's memory and of the personal memory repository (its names ~personal/…)."""
    found = load_topics(lookup)
    if lookup.personal is not None:
        found |= load_topics(lookup.personal)
    return found


def _cached_pages(lookup: Lookup) -> dict[str, list[Any]]:
    """Repo path → [file stamp, entry rows] as agent-memory.json holds them ({} for none or an old version)."""
    cached = cache.load(lookup.index_dir / CACHE)
    pages = cached.get("pages") if cached.get("version") == CACHE_VERSION else None
    return pages if isinstance(pages, dict) else {}


def _entry(topic: str, index: int, row: list[Any]) -> Entry:
    from gitwiki.memory.entry import Entry

    fields = dict(zip(_FIELDS, row[: len(_FIELDS)], strict=True))
    return Entry(topic=topic, text="", **{**fields, "tags": tuple(fields["tags"])}, index=index)


class Overview(NamedTuple):
    """What the session and subagent hooks show of memory."""

    topics: list[tuple[str, int]]  # (topic, entries), most recently written first
    meta: str  # the library's compact meta-briefing: totals and the five most active topics
    checkpoint: tuple[str, str, float | None] | None  # the newest: (path, text without title, saved at)
    until: float = math.inf  # when the first entry counted as recent leaves the meta-brief's 7-day window


def overview(lookup: Lookup) -> Overview:
    """The memory overview, from agent-overview.json while no file in the memory folder changed and no entry
    has left the library's "last 7 days" window since it was made: building it parses the entry cache
    (1,000 entries in the bench) and loads the library's brief and checkpoint modules, ~5 ms of a session
    hook. The stamps are those of every page in the folder (topics, checkpoints, its index page): listing
    only the topics takes the library's `Memory`, ~2 ms of imports."""
    stamps = {}
    for each in (lookup, lookup.personal) if lookup.personal is not None else (lookup,):
        for path, full in each.memory_files().items():
            with contextlib.suppress(OSError):
                stamps[each.label + path] = cache.stamp(os.stat(full))
    now = datetime.now(UTC)
    data = cache.load(lookup.index_dir / OVERVIEW)
    try:
        if data["stamps"] == stamps and now.timestamp() < data["until"]:
            found = data["checkpoint"]
            topics = [(t, n) for t, n in data["topics"]]
            return Overview(topics, data["meta"], tuple(found) if found else None, float(data["until"]))
    except (KeyError, TypeError, ValueError):
        pass
    from gitwiki.memory.brief import VELOCITY_DAYS, meta
    from gitwiki.memory.entry import parse_iso

    found_topics = every_topic(lookup)
    brief = meta(found_topics.values(), now, compact=True)
    # The brief counts entries changed in the last VELOCITY_DAYS: it holds until the first of them leaves.
    window = VELOCITY_DAYS * 86400
    entries = (e for t in found_topics.values() for e in t.page.entries)
    recent = [s.timestamp() + window for e in entries if (s := parse_iso(e.when))]
    until = min((u for u in recent if u > now.timestamp()), default=float("inf"))
    made = Overview([(a.topic, a.entries) for a in brief.topics], brief.markdown.strip(), _checkpoint(lookup), until)
    cache.save(lookup.index_dir / OVERVIEW, {"stamps": stamps, "until": until, **made._asdict()})  # inf: Infinity
    return made


def _checkpoint(lookup: Lookup) -> tuple[str, str, float | None] | None:
    """The newest checkpoint (by its Saved time), parsed by the library and shown as its page says it."""
    from gitwiki.memory.checkpoint import checkpoint_page, checkpoints
    from gitwiki.memory.entry import parse_iso

    found = max(checkpoints(lookup.memory), key=lambda c: c.saved, default=None)
    if found is None:
        return None
    saved = parse_iso(found.saved)
    return found.path, checkpoint_page(found.json()).split("\n", 1)[1].strip(), saved.timestamp() if saved else None


def stored_since(lookup: Lookup, since: float) -> bool:
    """Whether an entry was stored or changed in this session, as the library's `session` action counts
    them (an entry's time of last change at or after the start), the session starting when the hooks
    first saw it."""
    from gitwiki.memory.entry import now_iso

    start = now_iso(datetime.fromtimestamp(since, UTC))
    return any(e.when >= start for t in every_topic(lookup).values() for e in t.page.entries)


def source_entries(lookup: Lookup, notes: list[Note], path: str) -> list[Note]:
    """The memory entries among `notes` whose `[source: …]` names `path`, told by the entry's parsed source
    field (not by the path appearing somewhere in its text). Read from the cached rows while the pages are
    unchanged: the memory library's parser, its Entry and the topic listing (~2.5 ms of imports) load only
    to parse a changed page."""
    if not notes:
        return []
    wanted = {n.path for n in notes}
    pages = _cached_pages(lookup)
    for page in wanted:
        try:
            now = cache.stamp(os.stat(lookup.root / page))
        except OSError:
            continue
        hit = pages.get(page)
        stale = hit is not None and hit[0] != now
        if stale or (hit is None and posixpath.dirname(page) + "/" == lookup.memory_prefix):
            load_topics(lookup, wanted)  # parses the changed pages into the cache
            pages = _cached_pages(lookup)
            break
    out = []
    for note in notes:
        rows = pages.get(note.path, [[], []])[1]
        row = next((r for r in rows if r[_START] <= note.start_line <= r[_END]), None)
        if row is not None and row[_SOURCE_PATH] == path:
            out.append(note)
    if out:  # a source the library does not read (a symlink out of the repository, a FIFO…) is no source
        from gitwiki.memory.sources import source_problem

        if source_problem(lookup.root, path) is not None:
            return []
    return out


def render_topics(found: list[tuple[str, int]], limit: int = 12) -> str:
    shown = ", ".join(f"{topic} ({entries})" for topic, entries in found[:limit])
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return f"memory topics, newest first: {shown}{more}"
