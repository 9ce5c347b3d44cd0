"""Memory writes: store, batch, edit and import, all read-modify-write under the index writer lock.

Each touched topic page goes through the wiki's page write path (atomic write, index blocks, optional
commit, the page folded into the index) and its new entries are embedded before the call returns, so
the next search finds them without paying for it. Two processes storing at once serialize on the lock
and re-read the page inside it: neither loses the other's entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki import writes as page_writes  # the safe, locked, atomic page path of the MCP page tools
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.gitcli import blob_id
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import (
    DEFAULT_CONFIDENCE,
    Entry,
    auto_tags,
    clean_text,
    jaccard,
    normalize_tags,
    now_iso,
    parse_iso,
    render_page,
    terms,
    topic_name,
)
from gitwiki.memory.sources import pin

if TYPE_CHECKING:
    from gitwiki.writes import WriteReport

DUPLICATE_OVERLAP = 0.7  # Jaccard overlap of token sets above which a new entry is a duplicate
DUPLICATE_MIN_TOKENS = 6  # shorter texts share words by chance ("fix the build" vs "build fix")
ITEM_KEYS = {"topic", "text", "tags", "source", "confidence", "links", "force"}
EDIT_ACTIONS = ("append", "revise", "delete", "tag", "rename", "merge")


class StoreResult(NamedTuple):
    stored: bool
    topic: str
    entry: Entry | None  # as written (index and lines filled), None when refused as a duplicate
    duplicate_of: Entry | None
    overlap: float
    warnings: tuple[str, ...]


class Stored(NamedTuple):
    results: list[StoreResult]
    writes: list[WriteReport]


class Edited(NamedTuple):
    action: str
    topic: str
    entries: list[Entry]  # the entries changed, as they read now (empty for deletions)
    removed: int
    target: str  # the new topic of rename and merge, else the topic
    writes: list[WriteReport]


# ---- store and batch ---------------------------------------------------------------------------------


def store(
    mem: Memory,
    topic: str,
    text: str,
    *,
    tags=None,
    source: str | None = None,
    confidence: float | None = None,
    links=None,
    force: bool = False,
) -> Stored:
    item = {"topic": topic, "text": text, "tags": tags, "source": source, "confidence": confidence, "links": links}
    return batch(mem, [item], force=force)


def batch(mem: Memory, items: list[dict[str, Any]], force: bool = False) -> Stored:
    """Store several entries under one lock with one write per touched topic; a later item that duplicates
    an earlier one of the same batch is refused like any duplicate."""
    if not isinstance(items, list) or not items:
        raise UsageError("entries must be a non-empty list of {topic, text, tags?, source?, confidence?, links?}")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not {"topic", "text"} <= item.keys() or item.keys() - ITEM_KEYS:
            raise UsageError(
                f"entry {n} must be an object with topic and text (optional: tags, source, confidence, links, force)"
            )
    with mem.wiki.store.lock():
        pages = mem.topics(fresh={mem.writable_topic(item["topic"]) for item in items})
        current = {name: list(t.page.entries) for name, t in pages.items()}
        preambles = {name: t.page.preamble for name, t in pages.items()}
        results: list[StoreResult] = []
        touched: set[str] = set()
        for item in items:
            name = mem.writable_topic(item["topic"])
            entries = current.setdefault(name, [])
            entry, warnings = _new_entry(mem, name, item, current, entries)
            duplicate = None if force or item.get("force") else _duplicate(entry, entries)
            if duplicate:
                results.append(StoreResult(False, name, None, duplicate[0], duplicate[1], tuple(warnings)))
                continue
            entries.append(entry._replace(index=len(entries) + 1))
            touched.add(name)
            results.append(StoreResult(True, name, entries[-1], None, 0.0, tuple(warnings)))
        writes = write_pages(mem, {t: render_page(t, current[t], preambles.get(t, "")) for t in sorted(touched)})
        return Stored([_as_read(mem, r) for r in results], writes)


def _new_entry(mem: Memory, topic: str, item: dict, current: dict[str, list[Entry]], entries: list[Entry]):
    text = clean_text(item["text"])
    warnings: list[str] = []
    confidence = item.get("confidence")
    confidence = DEFAULT_CONFIDENCE if confidence is None else confidence
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise UsageError(f"confidence must be a number from 0 to 1, not {confidence!r}")
    source, source_warnings = pin(mem, item.get("source"))
    warnings += source_warnings
    links = _links(item.get("links"))
    for link in links:
        name, _, index = link.partition(":")
        known = current.get(name)
        if known is None or (known == [] and name != topic):
            warnings.append(f"link {link}: no topic {name!r} yet")
        elif index and not (index.isdigit() and 1 <= int(index) <= len(known)):
            warnings.append(f"link {link}: topic {name!r} has {len(known)} entries")
    created = _unique_stamp(now_iso(), text, entries)
    tags = normalize_tags([*normalize_tags(item.get("tags") or ()), *auto_tags(text)])
    return Entry(topic, created, text, tags, source, float(confidence), links), warnings


def _links(raw) -> tuple[str, ...]:
    if not raw:
        return ()
    values = raw.split() if isinstance(raw, str) else raw
    out = []
    for value in values:
        name, sep, index = str(value).strip().partition(":")
        out.append(topic_name(name) + (f":{index.strip()}" if sep else ""))
    return tuple(dict.fromkeys(out))


def _unique_stamp(stamp: str, text: str, entries: list[Entry]) -> str:
    """Headings must differ (their anchors would collide): the same first line in the same second moves on."""
    title = Entry("", stamp, text).heading.split(" — ", 1)[1]
    taken = {e.heading for e in entries}
    moment = parse_iso(stamp) or datetime.now(UTC)
    while f"## {now_iso(moment)} — {title}" in taken:
        moment += timedelta(seconds=1)
    return now_iso(moment)


def _duplicate(entry: Entry, entries: list[Entry]) -> tuple[Entry, float] | None:
    new = terms(entry.text)
    if len(new) < DUPLICATE_MIN_TOKENS:
        return None
    best: tuple[Entry, float] | None = None
    for old in entries:
        old_terms = terms(old.text)
        if len(old_terms) < DUPLICATE_MIN_TOKENS:
            continue
        overlap = jaccard(new, old_terms)
        if overlap > DUPLICATE_OVERLAP and (best is None or overlap > best[1]):
            best = (old, overlap)
    return best


def _as_read(mem: Memory, result: StoreResult) -> StoreResult:
    """The stored entry with the line range it got in the page."""
    if result.entry is None:
        return result
    entries = mem.topics(result.topic)[result.topic].page.entries
    return result._replace(entry=entries[result.entry.index - 1])


# ---- the page writes -------------------------------------------------------------------------------


def write_pages(mem: Memory, contents: dict[str, str | None], folder: str = "") -> list[WriteReport]:
    """Write (or with None delete) topic pages through the page write path and embed what is new.

    The caller holds the writer lock (it is re-entrant), so its read of the pages and these writes are one
    critical section."""
    reports, replaced = [], set()
    for name, content in contents.items():
        rel = mem.rel_path(name, folder)
        old = mem.wiki.root / mem.repo_path(rel)
        if old.is_file():
            replaced.add(blob_id(old.read_bytes()))
        if content is None:
            reports.append(page_writes.delete_page(mem.page_wiki, mem.corpus.name, rel))
        else:
            reports.append(page_writes.add_page(mem.page_wiki, mem.corpus.name, rel, content, overwrite=True))
    versions = [c.encode("utf-8") for c in contents.values() if c is not None]
    _embed(mem, versions)
    # The replaced versions would stay in the full-text table, and every later query would rank them
    # only to filter them out (measured: 2,000 such chunks after 100 stores doubled search time).
    with mem.wiki.store.write():
        mem.wiki.store.drop(replaced - {blob_id(v) for v in versions})
    return reports


def _embed(mem: Memory, versions: list[bytes]) -> None:
    """Parse and embed the new page versions now (only chunks whose text is new reach the model)."""
    embedder = mem.wiki.embedder() if versions else None
    if embedder is None:
        return
    from gitwiki.indexer import ensure_blobs, ensure_vectors

    sources: dict[str, Callable[[], bytes]] = {blob_id(data): functools.partial(bytes, data) for data in versions}
    ensure_blobs(mem.wiki.store, sources)
    ensure_vectors(mem.wiki.store, embedder, set(sources))
    mem.indexed.update((blob, embedder.model_id) for blob in sources)


# ---- edit ------------------------------------------------------------------------------------------


def edit(
    mem: Memory,
    action: str,
    topic: str,
    *,
    index: int | None = None,
    text: str | None = None,
    match_str: str | None = None,
    all: bool = False,
    add=None,
    remove=None,
    to: str | None = None,
    into: str | None = None,
) -> Edited:
    if action not in EDIT_ACTIONS:
        raise UsageError(f"edit action must be one of {', '.join(EDIT_ACTIONS)}, not {action!r}")
    with mem.wiki.store.lock():
        name = topic_name(topic)
        pages = mem.topics(fresh=True if action in ("rename", "merge") else {name})
        if name not in pages:
            raise NotFoundError(f"no memory topic {name!r}; topics: {', '.join(pages) or 'none yet'}")
        page = pages[name].page
        entries = list(page.entries)
        if action in ("rename", "merge"):
            return _move(mem, action, name, pages, to if action == "rename" else into)
        if action == "delete":
            kept = _delete(entries, index, match_str, all)
            writes = write_pages(mem, {name: render_page(name, kept, page.preamble) if kept else None})
            return Edited(action, name, [], len(entries) - len(kept), name, writes)
        if index is None:
            raise UsageError(f"{action} needs the entry's index (memory_read {name} lists them)")
        old = _pick(entries, index, name)
        if action in ("append", "revise"):
            if not text or not str(text).strip():
                raise UsageError(f"{action} needs text")
            body = clean_text(text)
            new_text = f"{old.text}\n\n{body}" if action == "append" else body
            tags = normalize_tags([*old.tags, *auto_tags(body)])
            changed = old._replace(text=new_text, title="", tags=tags, modified=now_iso())
        else:
            if not add and not remove:
                raise UsageError("tag needs add or remove (a list of tags)")
            kept_tags = set(old.tags) - set(normalize_tags(remove or ()))
            changed = old._replace(tags=normalize_tags([*kept_tags, *normalize_tags(add or ())]), modified=now_iso())
        entries[index - 1] = changed
        writes = write_pages(mem, {name: render_page(name, entries, page.preamble)})
        return Edited(action, name, [mem.topics(name)[name].page.entries[index - 1]], 0, name, writes)


def _pick(entries: list[Entry], index, topic: str) -> Entry:
    if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= len(entries):
        raise NotFoundError(
            f"topic {topic!r} has {len(entries)} entries; index {index!r} is not one of 1..{len(entries)}"
        )
    return entries[index - 1]


def _delete(entries: list[Entry], index, match_str, everything: bool) -> list[Entry]:
    chosen = [x for x in (index is not None, bool(match_str), everything) if x]
    if len(chosen) != 1:
        raise UsageError("delete needs exactly one of index, match_str or all")
    if everything:
        return []
    if index is not None:
        _pick(entries, index, entries[0].topic if entries else "")
        return [e for e in entries if e.index != index]
    needle = str(match_str).lower()
    kept = [e for e in entries if needle not in e.text.lower() and needle not in e.title.lower()]
    if len(kept) == len(entries):
        raise NotFoundError(f"no entry contains {match_str!r}; nothing deleted")
    return kept


def _move(mem: Memory, action: str, name: str, pages, target_raw: str | None) -> Edited:
    """rename (to a new topic) or merge (append into an existing one), rewriting links that pointed here."""
    if not target_raw:
        raise UsageError(f"{action} needs {'to' if action == 'rename' else 'into'}: the other topic's name")
    target = mem.writable_topic(target_raw)
    if target == name:
        raise UsageError(f"{action}: {name!r} is already that topic")
    if action == "rename" and target in pages:
        raise UsageError(f"topic {target!r} exists; merge into it instead (edit merge with into={target!r})")
    if action == "merge" and target not in pages:
        raise NotFoundError(f"no topic {target!r} to merge into; rename creates a new topic")
    base = list(pages[target].page.entries) if target in pages else []
    moved = [e._replace(topic=target, index=len(base) + e.index) for e in pages[name].page.entries]
    renumber = {e.index: len(base) + e.index for e in pages[name].page.entries}
    contents: dict[str, str | None] = {}
    for other, tf in pages.items():
        if other in (name, target):
            continue
        relinked = [e._replace(links=_relink(e.links, name, target, renumber)) for e in tf.page.entries]
        if relinked != list(tf.page.entries):
            contents[other] = render_page(other, relinked, tf.page.preamble)
    merged = [e._replace(links=_relink(e.links, name, target, renumber)) for e in base + moved]
    preamble = pages[target].page.preamble if target in pages else pages[name].page.preamble
    contents[target] = render_page(target, merged, preamble)
    contents[name] = None
    writes = write_pages(mem, contents)
    now = mem.topics()[target].page.entries
    return Edited(action, name, list(now[len(base) :]), 0, target, writes)


def _relink(links: tuple[str, ...], old: str, new: str, renumber: dict[int, int]) -> tuple[str, ...]:
    out = []
    for link in links:
        name, sep, index = link.partition(":")
        if name == old:
            link = new + (f":{renumber.get(int(index), index)}" if sep and index.isdigit() else "")
        out.append(link)
    return tuple(out)


# ---- import ----------------------------------------------------------------------------------------


def import_topics(mem: Memory, topics: list[dict]) -> dict[str, int]:
    """Merge exported topics into the wiki: entries not already present (same time and text) are appended
    in time order; existing entries keep their index. Returns added entries per topic."""
    with mem.wiki.store.lock():
        pages = mem.topics(fresh=True)
        contents: dict[str, str | None] = {}
        added: dict[str, int] = {}
        for topic in topics:
            name = mem.writable_topic(topic.get("name", ""))
            existing = list(pages[name].page.entries) if name in pages else []
            seen = {(e.created, e.text) for e in existing}
            incoming = sorted((_from_json(name, raw) for raw in topic.get("entries", [])), key=lambda e: e.created)
            new = [e for e in incoming if (e.created, e.text) not in seen]
            if new:
                preamble = pages[name].page.preamble if name in pages else topic.get("preamble", "")
                contents[name] = render_page(name, existing + new, preamble)
                added[name] = len(new)
        if contents:
            write_pages(mem, contents)
    return added


def _from_json(topic: str, raw: dict) -> Entry:
    if not isinstance(raw, dict) or not raw.get("text"):
        raise UsageError(f"an entry of topic {topic!r} in the import has no text")
    return Entry(
        topic=topic,
        created=str(raw.get("created", "")),
        text=clean_text(str(raw["text"])),
        tags=normalize_tags(raw.get("tags") or ()),
        source=str(raw.get("source") or ""),
        confidence=float(raw.get("confidence", DEFAULT_CONFIDENCE)),
        links=tuple(raw.get("links") or ()),
        modified=str(raw.get("modified") or ""),
        title="" if raw.get("created") else str(raw.get("title") or ""),
    )
