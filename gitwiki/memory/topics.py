"""Topic-level views and maintenance: listings, stats, cross references, the link graph, stale sources,
idle topics (prune), clean and compact (dry runs unless `apply`), export, reindex and the session's entries."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.errors import UsageError
from gitwiki.memory import stores
from gitwiki.memory.brief import TopicActivity, activity, classify
from gitwiki.memory.entry import (
    Entry,
    drop_entries,
    is_entry_number,
    near_duplicate,
    normalize_tags,
    now_iso,
    render_page,
    topic_name,
)
from gitwiki.memory.sources import STALE_FACTOR, Ignored, Refresh, Staleness, ignored, refresh, stale

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress
    from gitwiki.memory.base import Memory

EXPORT_FORMAT = "gitwiki-memory"
EXPORT_VERSION = 1
PRUNE_CONFIDENCE = 0.3  # clean's threshold
PRUNE_DAYS = 30  # helix's default (helix/src/topics.rs)
# An import file's largest size: a helix log of 10,000 entries is ~5 MB; a JSON document this large already
# takes ~1 GB to parse.
IMPORT_CAP = 64 * 1024 * 1024


class Stats(NamedTuple):
    topics: int
    entries: int
    tagged: int
    sourced: int
    stale: int
    oldest: str
    newest: str
    tags: list[tuple[str, int]]  # all of them with detail=tags, else the top 10
    index: dict[str, Any]  # type: ignore[assignment]  # (shadows tuple.index) with detail=index: indexed pages, chunks and vectors of the topic pages


class XRef(NamedTuple):
    source: str  # the entry's ref
    target: str  # topic or topic:index
    kind: str  # "link" (its [links:]) or "mention" (another topic's name in its text)
    valid: bool  # the target exists


class Graph(NamedTuple):
    nodes: list[tuple[str, int]]  # topic, entries
    edges: list[tuple[str, str, int]]  # from topic, to topic, references


class Change(NamedTuple):
    entry: Entry
    reason: str  # why prune would drop it, or the refs compact merges into it


class Maintenance(NamedTuple):
    action: str  # prune or compact
    changes: list[Change]
    applied: bool


def list_topics(mem: Memory, pattern: str | None = None) -> list[TopicActivity]:
    return sorted(activity(stores.readable_topics(mem, pattern).values(), datetime.now(UTC)), key=lambda a: a.topic)


def recent(mem: Memory, limit: int | None = None, days: float | None = None, hours: float | None = None) -> list[Entry]:
    """The newest entries: those of the last `days` or `hours` (hours wins, as helix's topics recent,
    helix/src/topics.rs), at most `limit`; with neither, the newest `limit` (default 10)."""
    from gitwiki.memory.search import in_window, window

    rows = sorted(stores.readable_entries(mem), key=lambda e: (e.when, e.ref), reverse=True)
    if days is None and hours is None:
        return rows[: limit or 10]
    lo, _ = window(days=None if hours is not None else days, hours=hours)
    rows = [e for e in rows if in_window(e, lo, None)]
    return rows[:limit] if limit else rows


def session(mem: Memory, since: str | None = None) -> tuple[str, list[Entry]]:
    """When the session started and the entries stored or changed since: by default the session is this
    process (a server's lifetime); a CLI command, its own process, names the start (`since`)."""
    from gitwiki.memory.search import parse_day

    start = now_iso(parse_day(since)) if since else mem.started
    return start, sorted((e for e in stores.readable_entries(mem) if e.when >= start), key=lambda e: (e.when, e.ref))


def stats(mem: Memory, detail: str | None = None) -> Stats:
    if detail not in (None, "tags", "index"):
        raise UsageError(f"stats detail must be tags or index, not {detail!r}")
    files = mem.topics()
    entries = [e for tf in files.values() for e in tf.page.entries]
    tags = Counter(t for e in entries for t in e.tags)
    stamps = sorted(e.created for e in entries if e.created)
    index: dict[str, Any] = {}
    if detail == "index":
        store = mem.search_index
        blobs = {tf.blob for tf in files.values()}
        embedder = mem.wiki.embedder()
        missing = store.missing_vectors(embedder.model_id, blobs) if embedder else []
        index = {
            "pages": len(files),
            "parsed": len(store.known_blobs(blobs)),
            "chunks": store.chunk_count(blobs),
            "model": embedder.model_id if embedder else None,
            "chunks_without_vectors": len(missing),
        }
    ordered = sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))
    return Stats(
        len(files),
        len(entries),
        sum(1 for e in entries if e.tags),
        sum(1 for e in entries if e.source),
        sum(1 for e in entries if stale(mem, e)),
        stamps[0] if stamps else "",
        stamps[-1] if stamps else "",
        ordered if detail == "tags" else ordered[:10],
        index,
    )


XREF_DIRECTIONS = ("in", "out", "both")


def xref(mem: Memory, topic: str | None = None, direction: str = "in") -> list[XRef]:
    """References between topics: an entry's links and the other topic names its text mentions. For one
    topic, those of the other topics that point at it (`in`, helix's direction: "engine is referenced
    by", helix/docs/TOOLS.md), its own (`out`), or both."""
    if direction not in XREF_DIRECTIONS:
        raise UsageError(f"xref direction must be in, out or both, not {direction!r}")
    found = _xrefs(mem)
    if not topic:
        return found
    name = mem.label + topic_name(mem.reader(topic)[1])  # as the refs name it (~personal/… in the personal memory)
    incoming = [x for x in found if x.target.partition(":")[0] == name and x.source.partition(":")[0] != name]
    outgoing = [x for x in found if x.source.partition(":")[0] == name]
    return {"in": incoming, "out": outgoing, "both": incoming + outgoing}[direction]


def _xrefs(mem: Memory) -> list[XRef]:
    files = mem.topics()
    sizes = {name: len(tf.page.entries) for name, tf in files.items()}
    mention = (
        re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(sizes, key=len, reverse=True)) + r")\b")
        if sizes
        else None
    )
    out = []
    for tf in files.values():
        for e in tf.page.entries:
            for link in e.links:
                name, _, index = link.partition(":")
                valid = name in sizes and (not index or (is_entry_number(index) and 1 <= int(index) <= sizes[name]))
                out.append(XRef(e.ref, mem.label + link, "link", valid))
            named = {mem.label + m.group(1) for m in mention.finditer(e.text.lower())} if mention else set()
            out += [XRef(e.ref, n, "mention", True) for n in sorted(named) if n != e.topic]
    return out


def graph(mem: Memory, focus: str | None = None) -> Graph:
    """Topics and the references between them; `focus` (a glob) keeps those topics and their neighbours."""
    import fnmatch

    weights = Counter((x.source.split(":")[0], x.target.split(":")[0]) for x in xref(mem) if x.valid)
    sizes = {tf.name: len(tf.page.entries) for tf in mem.topics().values()}
    if focus:
        core = {n for n in sizes if fnmatch.fnmatchcase(n, focus)}
        weights = Counter({k: w for k, w in weights.items() if k[0] in core or k[1] in core})
        keep = core | {n for pair in weights for n in pair}
        sizes = {n: c for n, c in sizes.items() if n in keep}
    edges = sorted(((a, b, w) for (a, b), w in weights.items()), key=lambda e: (-e[2], e[0], e[1]))
    return Graph(sorted(sizes.items()), edges)


def stale_entries(mem: Memory) -> list[Staleness]:
    return [s for s in (stale(mem, e) for e in mem.entries()) if s is not None]


def refresh_entries(mem: Memory, topic: str | None = None, index: int | None = None) -> list[Refresh]:
    return [r for r in (refresh(mem, e) for e in _chosen(mem, topic, index)) if r is not None]


def ignored_sources(mem: Memory, topic: str | None = None, index: int | None = None) -> list[Ignored]:
    """The entries (all, a topic's, or one) whose source gitwiki does not read: stale and refresh name them."""
    return [i for i in (ignored(mem, e) for e in _chosen(mem, topic, index)) if i is not None]


def _chosen(mem: Memory, topic: str | None, index: int | None) -> list[Entry]:
    if index is not None and topic:
        return [mem.entry(topic, index)]
    return [e for e in mem.entries() if not topic or e.topic == topic]


class Idle(NamedTuple):
    topic: str
    last: str  # its newest entry's time
    days: int  # whole days since


def prune(mem: Memory, days: float = PRUNE_DAYS, now: datetime | None = None) -> list[Idle]:
    """helix's prune (helix/src/topics.rs): the topics whose newest entry is more than `days` days old, the
    most recently active first. It lists them; clean is the upkeep that drops entries."""
    from gitwiki.memory.entry import parse_iso

    if isinstance(days, bool) or not isinstance(days, (int, float)) or not days >= 0:  # nan too
        raise UsageError(f"prune days must be a number ≥ 0, not {days!r}")
    now = now or datetime.now(UTC)
    out = []
    for a in activity(mem.topics().values(), now):
        last = parse_iso(a.last) if a.last else None
        idle = (now - last).total_seconds() / 86400 if last else float("inf")
        if idle > days:
            out.append(Idle(a.topic, a.last, int(idle) if last else -1))
    return sorted(out, key=lambda i: (i.last, i.topic), reverse=True)


def clean(mem: Memory, min_confidence: float = PRUNE_CONFIDENCE, apply: bool = False) -> Maintenance:
    """Entries superseded by a newer one, or whose confidence (× 0.7 when the source is stale) fell
    below `min_confidence`, or whose source file is gone."""
    superseded = {i.entry.ref: i.superseded_by for i in classify(mem.entries()) if i.superseded_by}
    changes = []
    for e in mem.entries():
        gone = stale(mem, e)
        confidence = e.confidence * (STALE_FACTOR if gone else 1.0)
        if e.ref in superseded:
            changes.append(Change(e, f"superseded by {superseded[e.ref]}"))
        elif gone and gone.current is None:
            changes.append(Change(e, f"source {gone.path} was deleted"))
        elif confidence < min_confidence:
            changes.append(Change(e, f"confidence {confidence:.2f} < {min_confidence:g}"))
    if apply and changes:
        _rewrite(mem, {c.entry.ref for c in changes}, {})
    return Maintenance("clean", changes, apply and bool(changes))


def compact(mem: Memory, topic: str | None = None, apply: bool = False) -> Maintenance:
    """Near-duplicates within a topic (> 70 % alike, those store warns about) folded into the newest: tags and
    links united."""
    changes, merged_into = [], {}
    for tf in mem.topics(topic).values():
        entries = sorted(tf.page.entries, key=lambda e: e.when, reverse=True)
        absorbed: set[str] = set()
        for keep in entries:
            if keep.ref in absorbed:
                continue
            same = [
                e
                for e in entries
                if e.ref != keep.ref and e.ref not in absorbed and near_duplicate(keep.text, e.text) is not None
            ]
            if same:
                absorbed |= {e.ref for e in same}
                merged_into[keep.ref] = same
                changes.append(Change(keep, "absorbs " + ", ".join(e.ref for e in same)))
    if apply and changes:
        _rewrite(mem, {e.ref for group in merged_into.values() for e in group}, merged_into)
    return Maintenance("compact", changes, apply and bool(changes))


def _rewrite(mem: Memory, drop: set[str], merged_into: dict[str, list[Entry]]) -> None:
    from gitwiki.memory.store import write_pages

    with mem.lock():
        contents: dict[str, str | None] = {}
        for name, tf in mem.topics(fresh=True).items():
            preamble, kept = drop_entries(tf.page.preamble, tf.page.entries, lambda e: e.ref in drop)
            entries = []
            for e in kept:
                if e.ref in merged_into:
                    group = merged_into[e.ref]
                    tags = normalize_tags([*e.tags, *(t for g in group for t in g.tags)])
                    links = tuple(dict.fromkeys([*e.links, *(link for g in group for link in g.links)]))
                    e = e._replace(tags=tags, links=links, modified=now_iso())
                entries.append(e)
            if len(entries) != len(tf.page.entries) or any(e.ref in merged_into for e in tf.page.entries):
                person = preamble or tf.page.head  # a page with a person's text stays
                contents[name] = render_page(name, entries, preamble, tf.page.head) if entries or person else None
        write_pages(mem, contents)


def export(mem: Memory) -> dict[str, Any]:
    """Every topic (entries with all their fields) and checkpoint as one JSON document; import reads it back."""
    from gitwiki.memory.checkpoint import checkpoints

    topics = [
        {
            "name": name,
            **({"head": tf.page.head} if tf.page.head else {}),
            "preamble": tf.page.preamble,
            "entries": [_export_entry(e) for e in tf.page.entries],
        }
        for name, tf in mem.topics().items()
    ]
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported": now_iso(),
        "topics": topics,
        "checkpoints": [c.json() for c in checkpoints(mem)],
    }


def import_memory(
    mem: Memory,
    data: dict[str, Any] | list[Any],
    dry_run: bool = False,
    notes: list[str] | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, int], list[str]]:
    """Merge an export back: entries per topic added, and the checkpoints written (with `dry_run`, what
    would be added, every check made and nothing written). helix's JSON export is read as well. What was
    changed on the way in (a source dropped, a name shortened) is appended to `notes`."""
    from gitwiki.memory import helix
    from gitwiki.memory.checkpoint import checkpoint_pages, import_checkpoints
    from gitwiki.memory.store import import_topics

    notes = notes if notes is not None else []
    if helix.is_export(data):
        data = helix.parse_export(data)
        notes += data.pop("notes", [])
    if not isinstance(data, dict) or not isinstance(data.get("topics"), list):
        raise UsageError('import needs an export document: {"topics": [{"name": …, "entries": […]}]}')
    checkpoints = checkpoint_pages(data.get("checkpoints") or [])  # checked before any topic is written
    added = import_topics(mem, data["topics"], dry_run, notes, progress)
    return added, list(checkpoints) if dry_run else import_checkpoints(mem, checkpoints)


def import_helix_log(
    mem: Memory, log: bytes, dry_run: bool = False, notes: list[str] | None = None, progress: Progress | None = None
) -> dict[str, int]:
    """Merge the live entries of helix's binary data.log (its bytes); a damaged log writes nothing."""
    from gitwiki.memory import helix
    from gitwiki.memory.store import import_topics

    notes = notes if notes is not None else []
    document = helix.parse_log(log)
    notes += document.pop("notes", [])
    return import_topics(mem, document["topics"], dry_run, notes, progress)


def _export_entry(e: Entry) -> dict[str, Any]:
    """The entry's fields, and the text a person wrote after it (`after`) when there is some."""
    data = e.json()
    for key in ("topic", "index", "lines"):
        data.pop(key)
    return {**data, "after": e.after} if e.after else data


def reindex(mem: Memory) -> dict[str, Any]:
    """Parse and embed every topic page version again if the index lacks it (after a rebuilt index)."""
    from gitwiki.memory.search import memory_view

    mem.indexed.clear()
    files = mem.topics(fresh=True)
    embedder = mem.wiki.embedder() if mem.wiki.config.search.mode != "lexical" else None
    view = memory_view(mem, files, embedder)
    blobs = set(view.pages.values())
    return {
        "pages": len(blobs),
        "chunks": mem.search_index.chunk_count(blobs),
        "model": embedder.model_id if embedder else None,
    }
