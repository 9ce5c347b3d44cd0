"""Memory writes: store, batch, edit and import, all read-modify-write under the index writer lock.

Each touched topic page goes through the wiki's page write path (atomic write, index blocks, optional
commit, the page folded into the index) and its new entries are embedded before the call returns, so
the next search finds them without paying for it; in `gitwiki serve` they are embedded on a background
thread instead, which the next search waits for (gitwiki.index.background_embed). Two processes storing at
once serialize on the lock and re-read the page inside it: neither loses the other's entry.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal, NamedTuple

from gitwiki.errors import NotFoundError, UsageError
from gitwiki.git.gitcli import blob_id
from gitwiki.memory.base import Memory, TopicFile, no_such_entry
from gitwiki.memory.entry import (
    DEFAULT_CONFIDENCE,
    Entry,
    TopicPage,
    auto_tags,
    check_unicode,
    clean_text,
    drop_entries,
    first_line,
    is_confidence,
    is_entry_number,
    is_stamp,
    near_duplicate,
    normalize_tags,
    now_iso,
    parse_iso,
    render_page,
    split_lines,
    topic_name,
    with_text,
)
from gitwiki.memory.sources import parse_source, pin, source_problem
from gitwiki.operations import writes as page_writes  # the safe, locked, atomic page path of the MCP page tools

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress
    from gitwiki.operations.writes import WriteReport


class StoreResult(NamedTuple):
    stored: bool
    topic: str
    entry: Entry | None  # as written (index and lines filled), None when it was there already
    duplicate_of: Entry | None  # the entry with the same text (whitespace aside): nothing stored
    overlap: float  # the word overlap with `duplicate_of` (1.0) or `similar_to`
    warnings: tuple[str, ...]
    similar_to: Entry | None = None  # a near-duplicate of the stored entry, named in a warning


class Stored(NamedTuple):
    results: list[StoreResult]
    writes: list[WriteReport]


Edit = Literal["append", "revise", "tag", "delete", "rename", "merge"]


class Edited(NamedTuple):
    action: Edit  # which edit made it
    topic: str
    entries: list[Entry]  # the entries changed, as they read now (empty for deletions)
    removed: int
    target: str  # the new topic of rename and merge, else the topic
    writes: list[WriteReport]


# ---- store and batch ---------------------------------------------------------------------------------


class BatchItem(NamedTuple):
    """One entry to store (`store` makes one, a batch takes a list): its values as the caller gave them;
    store checks and normalizes them (tags, links, source pinned)."""

    topic: str
    text: str
    tags: Sequence[str] = ()
    source: str | None = None
    confidence: float | None = None
    links: Sequence[str] = ()
    force: bool = False


def store(
    mem: Memory,
    topic: str,
    text: str,
    *,
    tags: Sequence[str] = (),
    source: str | None = None,
    confidence: float | None = None,
    links: Sequence[str] = (),
    force: bool = False,
) -> Stored:
    return batch(mem, [BatchItem(topic, text, tags, source, confidence, links)], force=force)


def batch(mem: Memory, items: Sequence[BatchItem], force: bool = False) -> Stored:
    """Store several entries under one lock with one write per touched topic; a later item that duplicates
    an earlier one of the same batch is refused like any duplicate."""
    if not items:
        raise UsageError("entries must be a non-empty list of {topic, text, tags?, source?, confidence?, links?}")
    with mem.lock():
        names = []
        for n, item in enumerate(items, 1):
            with _numbered(n, len(items)):
                names.append(mem.writable_topic(item.topic))
        pages = mem.topics(fresh=set(names))
        current = {name: list(t.page.entries) for name, t in pages.items()}
        results: list[StoreResult] = []
        touched: set[str] = set()
        for n, (item, name) in enumerate(zip(items, names, strict=True), 1):
            entries = current.setdefault(name, [])
            with _numbered(n, len(items)):
                entry, warnings = _new_entry(mem, name, item, current, entries)
            same = _same_text(entry, entries)
            if same is not None:  # never twice, whatever its length and `force`: an agent retrying loses nothing
                results.append(StoreResult(False, name, None, same, 1.0, tuple(warnings)))
                continue
            similar = None if force or item.force else _duplicate(entry, entries)
            entries.append(entry._replace(index=len(entries) + 1))
            touched.add(name)
            if similar is None:
                results.append(StoreResult(True, name, entries[-1], None, 0.0, tuple(warnings)))
                continue
            old, overlap = similar
            warnings.append(
                f"{overlap:.0%} like {mem.label}{old.ref} ({first_line(old.text)}); stored anyway: if the two say the "
                "same, revise one and delete the other"
            )
            results.append(StoreResult(True, name, entries[-1], None, overlap, tuple(warnings), old))
        writes = write_pages(
            mem, {t: _render(t, current[t], pages[t].page if t in pages else None) for t in sorted(touched)}
        )
        return Stored([_as_read(mem, r) for r in results], writes)


@contextlib.contextmanager
def _numbered(n: int, of: int) -> Iterator[None]:
    """A refused item of a batch of several is named by its number, as `actions.batch_items` names a malformed one:
    the whole batch is refused, and the agent has to know which item to fix."""
    try:
        yield
    except UsageError as e:
        if of < 2 or type(e) is not UsageError:
            raise
        raise UsageError(f"entry {n}: {e}") from None


def _new_entry(
    mem: Memory, topic: str, item: BatchItem, current: dict[str, list[Entry]], entries: list[Entry]
) -> tuple[Entry, list[str]]:
    text = item.text
    shown = with_text(Entry(topic, "", ""), text).shown  # refuses an empty text or one no page can hold
    warnings: list[str] = []
    confidence = DEFAULT_CONFIDENCE if item.confidence is None else item.confidence
    if not is_confidence(confidence):
        raise UsageError(f"confidence must be a number from 0 to 1, not {confidence!r}")
    source, source_warnings = pin(mem, item.source)
    warnings += source_warnings
    links = _links(item.links)
    for link in links:
        name, _, index = link.partition(":")
        known = current.get(name)
        if known is None or (known == [] and name != topic):
            warnings.append(f"link {link}: no topic {name!r} yet")
        elif index and not (is_entry_number(index) and 1 <= int(index) <= len(known)):
            warnings.append(f"link {link}: topic {name!r} has {len(known)} entries")
    created = _unique_stamp(now_iso(), shown or text, entries)
    tags = normalize_tags([*_tags(item.tags), *auto_tags(text)])
    return Entry(topic, created, text, tags, source, float(confidence), links, shown=shown), warnings


def _links(raw: object) -> tuple[str, ...]:
    if not raw:
        return ()
    values = raw.split() if isinstance(raw, str) else raw
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"links must be a list of 'topic' or 'topic:N' strings, not {raw!r}")
    out = []
    for value in values:
        name, sep, index = value.strip().partition(":")
        if sep and not is_entry_number(index.strip()):
            raise UsageError(f"link {value[:200]!r} must be 'topic' or 'topic:N' with N an entry number")
        out.append(topic_name(name) + (f":{int(index)}" if sep else ""))
    return tuple(dict.fromkeys(out))


def _tags(raw: object) -> tuple[str, ...]:
    if not raw:
        return ()
    if not isinstance(raw, (list, tuple, str)) or not all(isinstance(t, str) for t in raw):
        raise UsageError(f"tags must be a list of strings, not {raw!r}")
    return normalize_tags(raw)


def _render(name: str, entries: list[Entry], page: TopicPage | None) -> str:
    """The topic page with these entries, keeping what a person wrote (front matter, H1, their sections)."""
    return render_page(name, entries, page.preamble, page.head) if page else render_page(name, entries)


def _unique_stamp(stamp: str, text: str, entries: list[Entry]) -> str:
    """Headings must differ (their anchors would collide): the same first line in the same second moves on."""
    title = Entry("", stamp, text).heading.split(" — ", 1)[1]
    moment = parse_iso(stamp) or datetime.now(UTC)
    while _taken(f"## {now_iso(moment)} — {title}", now_iso(moment), entries):
        moment += timedelta(seconds=1)
    return now_iso(moment)


def _taken(heading: str, stamp: str, entries: list[Entry]) -> bool:
    """Whether an entry has this heading ("## <stamp> — <title>"). Only an entry created at a time that starts
    with the stamp can (a stamp holds no " — "), so the others' headings are not made: a 1,200-entry page's
    were, at each store."""
    return any(e.created.startswith(stamp) and e.heading == heading for e in entries)


def _same_text(entry: Entry, entries: list[Entry]) -> Entry | None:
    """The entry of the topic whose text is this one's, whitespace aside (runs of it, and at the ends)."""
    words = _words(entry.text)
    return next((old for old in entries if _words(old.text) == words), None)


@functools.lru_cache(maxsize=32768)  # every entry of the topic is compared at each store
def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _duplicate(entry: Entry, entries: list[Entry]) -> tuple[Entry, float] | None:
    best: tuple[Entry, float] | None = None
    for old in entries:
        overlap = near_duplicate(entry.text, old.text)
        if overlap is not None and (best is None or overlap > best[1]):
            best = (old, overlap)
    return best


def _as_read(mem: Memory, result: StoreResult) -> StoreResult:
    """The stored entry with the line range it got in the page."""
    if result.entry is None:
        return result
    entries = mem.topics(result.topic)[result.topic].page.entries
    return result._replace(entry=entries[result.entry.index - 1])


# ---- the page writes -------------------------------------------------------------------------------


def write_pages(
    mem: Memory, contents: dict[str, str | None], folder: str = "", progress: Progress | None = None
) -> list[WriteReport]:
    """Write (or with None delete) topic pages through the page write path and embed what is new; `progress`
    ("import", pages written, pages) is told after each page (a large import's ~0.3 s a page is its time).

    The caller holds the writer lock (it is re-entrant), so its read of the pages and these writes are one
    critical section."""
    reports, replaced = [], set()
    for n, (name, content) in enumerate(contents.items()):
        if progress:
            progress("import", n, len(contents))
        rel = mem.rel_path(name, folder)
        old = mem.wiki.root / mem.repo_path(rel)
        previous = blob_id(old.read_bytes()) if old.is_file() else None
        if previous is not None:
            replaced.add(previous)
        if content is None:
            reports.append(page_writes.delete_page(mem.wiki, mem.corpus.name, rel, commit=mem.config.commit))
        else:
            if previous is not None:
                _carry_over(mem, previous, content)
            # A memory keeps the index blocks a wiki has current, and makes none: a front index.md listing every
            # page of a wiki without one (or over an mkdocs site's home page) is not the store's to write
            written = page_writes.add_page(
                mem.wiki, mem.corpus.name, rel, content, overwrite=True, commit=mem.config.commit, scaffold=False
            )
            reports.append(written)
    if progress:
        progress("import", len(contents), len(contents))
    versions = [c.encode("utf-8") for c in contents.values() if c is not None]
    _embed(mem, versions)
    # The replaced versions would stay in the full-text table, and every later query would rank them
    # only to filter them out (measured: 2,000 such chunks after 100 stores doubled search time).
    mem.drop(replaced - {blob_id(v) for v in versions})
    return reports


def _carry_over(mem: Memory, previous: str, content: str) -> None:
    """Index the page's new version before it is written, from the version it replaces: the entries that did
    not change keep their index rows (`Store.replace_blob`), where indexing it after the write re-inserted
    every row of the page (~1,200 at 10,000 entries) and dropping the old version deleted them all. The
    write's own indexing then finds the version known."""
    from gitwiki.index.indexer import ensure_blobs

    data = content.encode("utf-8")
    blob = blob_id(data)
    sources: dict[str, Callable[[], bytes]] = {blob: functools.partial(bytes, data)}
    ensure_blobs(mem.search_index, sources, max_bytes=mem.wiki.local.max_bytes, replacing={blob: previous})


def _embed(mem: Memory, versions: list[bytes]) -> None:
    """Parse the new page versions now and embed them, now or on the server's background thread (only
    chunks whose text is new reach the model). Embedded later, they are not marked indexed: the next search
    waits for the thread (`memory_view`)."""
    embedder = mem.wiki.embedder() if versions else None
    if embedder is None:
        return
    from gitwiki.index.indexer import ensure_blobs

    sources: dict[str, Callable[[], bytes]] = {blob_id(data): functools.partial(bytes, data) for data in versions}
    ensure_blobs(mem.search_index, sources)
    if mem.wiki.local.embed_blobs(set(sources)):
        mem.indexed.update((blob, embedder.model_id) for blob in sources)


# ---- edit: one function per operation ----------------------------------------------------------------
# The entry is chosen as helix's edit chooses it (helix/src/write.rs): by `index` (1-based here), else the
# first entry containing `match_str`, else (append) the last with `tag`, else the last entry; revise needs
# index or match_str.


def append(
    mem: Memory,
    topic: str,
    text: str,
    *,
    index: int | None = None,
    match_str: str | None = None,
    tag: str | None = None,
) -> Edited:
    """Add `text` as a new paragraph of one entry."""
    body = _edit_text("append", text)

    def appended(old: Entry) -> Entry:
        # The joined text is cleaned again: a line that was a title alone (`<?php`) is a block in a body.
        new = with_text(old, f"{old.text}\n\n{body}")
        return new._replace(tags=normalize_tags([*old.tags, *auto_tags(body)]), modified=now_iso())

    return _change(mem, "append", topic, (index, match_str, tag), appended)


def revise(mem: Memory, topic: str, text: str, *, index: int | None = None, match_str: str | None = None) -> Edited:
    """Replace one entry's text (it gets `[modified: …]`); the entry is named by index or match_str."""
    body = _edit_text("revise", text)
    if index is None and not match_str:
        raise UsageError(f"revise needs the entry's index or a match_str (memory_read {topic_name(topic)} lists them)")

    def revised(old: Entry) -> Entry:
        new = with_text(old, body)
        return new._replace(tags=normalize_tags([*old.tags, *auto_tags(body)]), modified=now_iso())

    return _change(mem, "revise", topic, (index, match_str, None), revised)


def tag(
    mem: Memory,
    topic: str,
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    index: int | None = None,
    match_str: str | None = None,
) -> Edited:
    """Add and remove tags of one entry."""
    if not add and not remove:
        raise UsageError("tag needs add or remove (a list of tags)")

    def tagged(old: Entry) -> Entry:
        kept = set(old.tags) - set(normalize_tags(remove))
        return old._replace(tags=normalize_tags([*kept, *normalize_tags(add)]), modified=now_iso())

    return _change(mem, "tag", topic, (index, match_str, None), tagged)


def delete(
    mem: Memory, topic: str, *, index: int | None = None, match_str: str | None = None, all: bool = False
) -> Edited:
    """Delete one entry (by index or match_str, else the last), or with `all` every entry of the topic."""
    if all and (index is not None or match_str):
        raise UsageError("delete takes one of index, match_str or all")
    with mem.lock():
        name = topic_name(topic)
        page = _existing(name, mem.topics(fresh={name}))
        entries = list(page.entries)
        doomed = None if all else pick(entries, name, index, match_str).index
        preamble, kept = drop_entries(page.preamble, entries, lambda e: doomed is None or e.index == doomed)
        writes = write_pages(mem, {name: _rendered_or_gone(name, kept, page._replace(preamble=preamble))})
        return Edited("delete", name, [], len(entries) - len(kept), name, writes)


def rename(mem: Memory, topic: str, to: str) -> Edited:
    """Move a topic (its page, with what a person wrote in it) to a new name, rewriting links to it."""
    return _move(mem, "rename", topic, to)


def merge(mem: Memory, topic: str, into: str) -> Edited:
    """Append a topic's entries to an existing topic, rewriting links to them."""
    return _move(mem, "merge", topic, into)


def _edit_text(action: str, text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{action} needs text")
    clean_text(text)  # refuses a text no page can hold before anything is read
    return text


def _existing(name: str, pages: dict[str, TopicFile]) -> TopicPage:
    if name not in pages:
        raise NotFoundError(f"no memory topic {name!r}; topics: {', '.join(pages) or 'none yet'}")
    return pages[name].page


def _change(
    mem: Memory,
    action: Edit,
    topic: str,
    target: tuple[int | None, str | None, str | None],
    change: Callable[[Entry], Entry],
) -> Edited:
    """Change the entry `target` (index, match_str, tag) picks, under the lock."""
    with mem.lock():
        name = topic_name(topic)
        page = _existing(name, mem.topics(fresh={name}))
        entries = list(page.entries)
        old = pick(entries, name, *target)
        entries[old.index - 1] = change(old)
        writes = write_pages(mem, {name: _render(name, entries, page)})
        return Edited(action, name, [mem.topics(name)[name].page.entries[old.index - 1]], 0, name, writes)


def pick(
    entries: list[Entry], topic: str, index: int | None = None, match_str: str | None = None, tag: str | None = None
) -> Entry:
    """The entry an edit addresses: index (1-based), else the first containing match_str (case-insensitive),
    else the last with tag, else the last; an index or text that finds none is refused, never another entry."""
    if not entries:
        raise NotFoundError(f"topic {topic!r} has no entries")
    given = [x for x in (index is not None, bool(match_str), tag is not None) if x]
    if len(given) > 1:
        raise UsageError("choose the entry by one of index, match_str or tag")
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= len(entries):
            raise no_such_entry(topic, len(entries), index)
        return entries[index - 1]
    if match_str:
        needle = str(match_str).lower()
        found = next((e for e in entries if needle in e.text.lower()), None)
        if found is None:
            raise UsageError(f"no entry of {topic!r} contains {match_str!r}; nothing changed")
        return found
    if tag is not None:
        wanted = normalize_tags([tag])
        found = next((e for e in reversed(entries) if wanted and wanted[0] in e.tags), None)
        if found is None:
            raise UsageError(f"no entry of {topic!r} has the tag {tag!r}; nothing changed")
        return found
    return entries[-1]


def _rendered_or_gone(name: str, entries: list[Entry], page: TopicPage) -> str | None:
    """The page, or None (delete the file) when no entry is left and no person wrote anything in it."""
    if not entries and not page.preamble and not page.head:
        return None
    return _render(name, entries, page)


def _move(mem: Memory, action: Literal["rename", "merge"], topic: str, target_raw: str) -> Edited:
    """rename (to a new topic) or merge (append into an existing one), rewriting links that pointed here."""
    if not target_raw:
        raise UsageError(f"{action} needs {'to' if action == 'rename' else 'into'}: the other topic's name")
    with mem.lock():
        name = topic_name(topic)
        pages = mem.topics(fresh=True)
        _existing(name, pages)
        return _moved(mem, action, name, pages, mem.writable_topic(target_raw))


def _moved(
    mem: Memory, action: Literal["rename", "merge"], name: str, pages: dict[str, TopicFile], target: str
) -> Edited:
    if target == name:
        raise UsageError(f"{action}: {name!r} is already that topic")
    if action == "rename" and target in pages:
        raise UsageError(f"topic {target!r} exists; merge into it instead (edit merge with into={target!r})")
    if action == "merge" and target not in pages:
        raise NotFoundError(f"no topic {target!r} to merge into; rename creates a new topic")
    source = pages[name].page
    base = list(pages[target].page.entries) if target in pages else []
    # rename moves the page with what a person wrote in it; merge moves only the entries, and the source
    # page stays while a person's text is left in it.
    moved = [
        e._replace(topic=target, index=len(base) + e.index, after=e.after if action == "rename" else "")
        for e in source.entries
    ]
    renumber = {e.index: len(base) + e.index for e in source.entries}
    contents: dict[str, str | None] = {}
    for other, tf in pages.items():
        if other in (name, target):
            continue
        relinked = [e._replace(links=_relink(e.links, name, target, renumber)) for e in tf.page.entries]
        if relinked != list(tf.page.entries):
            contents[other] = _render(other, relinked, tf.page)
    merged = [e._replace(links=_relink(e.links, name, target, renumber)) for e in base + moved]
    if action == "merge":
        contents[target] = _render(target, merged, pages[target].page)
        left, _ = drop_entries(source.preamble, source.entries, lambda e: True)
        contents[name] = _rendered_or_gone(name, [], source._replace(preamble=left))
    else:
        contents[target] = render_page(target, merged, source.preamble, source.head)
        contents[name] = None
    writes = write_pages(mem, contents)
    now = mem.topics()[target].page.entries
    return Edited(action, name, list(now[len(base) :]), 0, target, writes)


def _relink(links: tuple[str, ...], old: str, new: str, renumber: dict[int, int]) -> tuple[str, ...]:
    out = []
    for link in links:
        name, sep, index = link.partition(":")
        if name == old:
            link = new + (f":{renumber.get(int(index), index)}" if sep and is_entry_number(index) else "")
        out.append(link)
    return tuple(out)


# ---- import ----------------------------------------------------------------------------------------


MAX_IMPORT_TOPICS = 1000


def import_topics(
    mem: Memory,
    topics: list[object],
    dry_run: bool = False,
    notes: list[str] | None = None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Merge exported topics into the wiki: entries not already present (same time and text) are appended
    in time order; existing entries keep their index. Returns the entries added per topic, as written
    (with `dry_run`, as they would be: every check is made, nothing is written).

    The whole document is checked before anything is written: a bad entry refuses the import. Topics whose
    names sanitize to one page (`Victim`, `victim`) are merged into it. What the import changed rather than
    refused is said in `notes` (when given): a source outside the repository dropped, a future `modified`
    brought back to the import's time."""
    if len(topics) > MAX_IMPORT_TOPICS:  # a page write each: 100,000 took hours, and were half written when stopped
        raise UsageError(
            f"the import has {len(topics):,} topics; one import takes at most {MAX_IMPORT_TOPICS:,}: split the file"
        )
    incoming: dict[str, list[Entry]] = {}
    starts: dict[str, TopicPage] = {}  # a new page's head and preamble, from the first topic that has them
    now = datetime.now(UTC)
    said = notes if notes is not None else []
    for n, topic in enumerate(topics, 1):
        if not isinstance(topic, dict) or not isinstance(topic.get("name"), str):
            raise UsageError(f'topic {n} of the import must be an object {{"name": …, "entries": […]}}')
        try:
            name = mem.writable_topic(topic["name"])
        except UsageError as refused:
            raise UsageError(f"topic {n} of the import ({_short(topic['name'])}): {refused}") from None
        raw_entries = topic.get("entries", [])
        if not isinstance(raw_entries, list):
            raise UsageError(f"topic {topic['name']!r} of the import: entries must be a list of entry objects")
        incoming.setdefault(name, []).extend(
            _from_json(mem, name, m, raw, now, said) for m, raw in enumerate(raw_entries, 1)
        )
        head, preamble = (_persons_text(name, topic.get(key), key) for key in ("head", "preamble"))
        if (head or preamble) and name not in starts:
            starts[name] = TopicPage(name, preamble, (), head)
    with mem.lock():
        pages = mem.topics(fresh=True)
        contents: dict[str, str | None] = {}
        added: dict[str, int] = {}
        for name, entries in incoming.items():
            existing = list(pages[name].page.entries) if name in pages else []
            seen = {(e.created, e.text) for e in existing}
            new = []
            for e in sorted(entries, key=lambda e: e.created):
                # `shown`: an entry imported before texts were kept exactly holds what the page showed
                if (e.created, e.text) not in seen and (e.created, e.shown) not in seen:
                    seen.add((e.created, e.text))
                    new.append(e)
            if new:
                page = pages[name].page if name in pages else starts.get(name, TopicPage(name, "", ()))
                contents[name] = _render(name, existing + new, page)
                added[name] = len(new)
        for name, content in contents.items():
            check_unicode(content or "", f"topic {name!r} of the import")
        if contents and not dry_run:
            write_pages(mem, contents, progress=progress)
    return added


def _persons_text(name: str, value: object, key: str) -> str:
    """A topic's `head` (front matter, H1), `preamble` or an entry's `after` in an import: text a person
    wrote, which must come back from the page as it went in, without an entry header or a block left open."""
    from gitwiki.memory.entry import parse_page

    if not value:
        return ""
    if not isinstance(value, str):
        raise UsageError(f"topic {name!r} of the import: {key} must be text, not {value!r}")
    value = "\n".join(split_lines(value)).strip("\n")
    if not value.strip():
        return ""
    probes = [Entry(name, "2000-01-01T00:00:00Z", "probe"), Entry(name, "2000-01-01T00:00:01Z", "probe")]
    if key == "after":
        probes[0] = probes[0]._replace(after=value)
    page = render_page(name, probes, value if key == "preamble" else "", value if key == "head" else "", verify=False)
    back = parse_page(page, name)
    found = {"head": back.head, "preamble": back.preamble, "after": back.entries[0].after if back.entries else ""}
    if [e.text for e in back.entries] != ["probe", "probe"] or back.entries[1].after or found[key] != value:
        raise UsageError(
            f"topic {name!r} of the import: its {key} holds an entry header or leaves a code fence or HTML block "
            "open (or, for head, is more than front matter and an H1); entries go in entries"
        )
    return value


def _from_json(mem: Memory, topic: str, n: int, raw: object, now: datetime, notes: list[str]) -> Entry:
    """One exported entry, every field checked: a field that could end its metadata line (a newline) would
    forge entries, a value outside its range would poison every score.

    Dates after the import (beyond a day of clock skew) would read as the last activity for ever: a future
    `created` (the entry's identity, which a re-import matches on) refuses the import; a future `modified`
    (only when it was last revised) becomes the import's time, with a note. A source outside the repository
    is dropped with a note: helix keeps one knowledge base for every project, so its entries may name
    files of another one, and the entry's text is still worth having."""
    where = f"entry {n} of topic {topic!r} in the import"
    if not isinstance(raw, dict):
        raise UsageError(f"{where} must be an object with created and text")
    if not isinstance(raw.get("text"), str) or not raw["text"].strip():
        raise UsageError(f"{where} has no text")
    latest = now + FUTURE_MARGIN
    created = raw.get("created")
    if not is_stamp(created):
        raise UsageError(f"{where}: created must be a UTC time like 2026-11-23T15:46:31Z, not {_short(created)}")
    if (parse_iso(created) or now) > latest:
        raise UsageError(
            f"{where}: created {created} is after today ({now_iso(now)}); the export is damaged or was written "
            "by a wrong clock: fix the date and import again"
        )
    modified = raw.get("modified") or ""
    if modified and not is_stamp(modified):
        raise UsageError(f"{where}: modified must be a UTC time like 2026-11-24T09:00:00Z, not {_short(modified)}")
    if modified and (parse_iso(modified) or now) > latest:
        notes.append(f"{where}: modified {modified} is after today; imported as {now_iso(now)}")
        modified = now_iso(now)
    source = raw.get("source") or ""
    if not isinstance(source, str) or (source and (parse_source(source) is None or _breaks_line(source))):
        raise UsageError(f"{where}: source must be one line like src/app.py:42@3f2a9c1d0e7b, not {_short(source)}")
    ref = parse_source(source) if source else None
    why = source_problem(mem.root, ref.path) if ref is not None else None
    if why is not None:
        notes.append(f"{where}: source {_short(source)} {why}; imported without it")
        source = ""
    confidence = raw.get("confidence", DEFAULT_CONFIDENCE)
    if not is_confidence(confidence):
        raise UsageError(f"{where}: confidence must be a number from 0 to 1, not {confidence!r}")
    try:
        tags, links = _tags(raw.get("tags")), _links(raw.get("links"))
    except UsageError as e:
        raise UsageError(f"{where}: {e}") from None
    after = _persons_text(topic, raw.get("after"), "after")
    entry = Entry(
        topic=topic,
        created=raw["created"],
        text="",
        tags=tags,
        source=source,
        confidence=float(confidence),
        links=links,
        modified=modified,
        after=after,
    )
    return with_text(entry, raw["text"])


FUTURE_MARGIN = timedelta(days=1)  # a clock a day ahead (another time zone written as UTC) is not damage


def _short(value: object) -> str:
    """A value quoted in a message, cut: an import may hold a 100,000-character one."""
    shown = repr(value)
    return shown if len(shown) <= 120 else shown[:120] + "…"


def _breaks_line(value: str) -> bool:
    return "\n" in value or "\r" in value or value.strip() != value
