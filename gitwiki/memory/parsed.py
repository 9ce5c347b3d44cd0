"""Topic pages as parsed before: `Memory` takes a page version's entries and search terms from the index dir's
cache (gitwiki.index.store.memory_entries) instead of parsing the page and stemming every entry again, which
cost a fresh CLI process 1.2 s at 996 entries. Rows are made by this code and keyed by the page's git blob id
and topic name, so a cached page reads back as the same `Entry`s the parser gives (tests/memory/test_parsed.py).

The cache's version is a digest of the parser's and the tokenizer's source: a change to either, even one that
forgets to bump a number, makes every page parse again once.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki.memory.entry import Entry, TopicPage

if TYPE_CHECKING:
    from gitwiki.index.store.memory_entries import CachedPage, MemoryEntries

FORMAT = "2"  # the rows' layout (below); the source digest covers the parser and the tokenizer


@functools.cache
def version() -> str:
    import hashlib

    from gitwiki.index import tokens
    from gitwiki.memory import entry

    digest = hashlib.sha1(FORMAT.encode())
    for module in (entry, tokens):
        try:
            digest.update(Path(module.__file__ or "").read_bytes())
        except OSError:  # no source beside the bytecode: the package's version names the code
            from gitwiki import __version__

            digest.update(f"{module.__name__} {__version__}".encode())
    return digest.hexdigest()[:16]


def open_cache(index_dir: Path) -> MemoryEntries | None:
    """The cache in `index_dir`, or None where it cannot be used."""
    from gitwiki.index.store.memory_entries import MemoryEntries

    return MemoryEntries.open(index_dir, version())


def lookup(
    store: MemoryEntries | None, blobs: dict[str, str]
) -> dict[str, tuple[TopicPage, tuple[frozenset[str], ...]]]:
    """The pages (topic as shown → blob) the cache holds: their parse and their entries' search terms."""
    if store is None or not blobs:
        return {}
    found = store.pages([(blob, shown) for shown, blob in blobs.items()])
    return {shown: _page(shown, found[blob, shown]) for shown, blob in blobs.items() if (blob, shown) in found}


Parsed = tuple[str, TopicPage, tuple[frozenset[str], ...]]  # (blob, parse, terms per entry)


def keep(store: MemoryEntries | None, made: dict[str, Parsed], before: dict[str, Parsed] | None = None) -> None:
    """Cache pages just parsed: topic as shown → (blob, parse, terms per entry); `before`: the version each
    replaces, as parsed, whose rows the entries the two share at their start take over (a store appends one)."""
    if store is None:
        return
    from gitwiki.index.store.memory_entries import CachedPage

    seen = time.time_ns()
    for shown, (blob, page, terms) in made.items():
        prior = (before or {}).get(shown)
        n = 0 if prior is None or prior[0] == blob else _same_start(page, terms, prior[1], prior[2])
        if prior is not None and n:
            rows = [_row(e, t) for e, t in zip(page.entries[n:], terms[n:], strict=True)]
            cached = CachedPage(page.name, page.preamble, page.head, [r for r, _ in rows])
            # Rows that would not read back: the page is not cached (as when it is put whole).
            if not all(splits for _, splits in rows) or store.put(blob, shown, cached, seen, (prior[0], n)):
                continue
        made_rows = [_row(e, t) for e, t in zip(page.entries, terms, strict=True)]
        if all(splits for _, splits in made_rows):
            store.put(blob, shown, CachedPage(page.name, page.preamble, page.head, [r for r, _ in made_rows]), seen)


def _same_start(
    page: TopicPage, terms: tuple[frozenset[str], ...], old: TopicPage, old_terms: tuple[frozenset[str], ...]
) -> int:
    """How many entries (with their terms) the two versions share at their start: rows are made of nothing else."""
    n = 0
    for a, b, ta, tb in zip(page.entries, old.entries, terms, old_terms, strict=False):
        if not ((a is b or a == b) and (ta is tb or ta == tb)):
            break
        n += 1
    return n


def _row(e: Entry, terms: frozenset[str]) -> tuple[tuple[Any, ...], bool]:
    """An entry's cached row, and whether every tag, link and term of it reads back as itself from a
    space-separated row (as the parser and the tokenizer make them they hold no whitespace; a page with one
    that does not is not cached). Remembered: a store keeps a topic's new version, every entry but the new one
    as the version before had it."""
    try:
        return _made_row(e, terms)
    except TypeError:  # unhashable (a list where a tuple belongs): made all the same
        return _make_row(e, terms)


def _make_row(e: Entry, terms: frozenset[str]) -> tuple[tuple[Any, ...], bool]:
    words = [*e.tags, *e.links, *terms]
    row = (
        e.created,
        e.modified,
        e.text,
        " ".join(e.tags),
        e.source,
        e.confidence,
        " ".join(e.links),
        e.start_line,
        e.end_line,
        e.after,
        e.shown,
        f" {' '.join(sorted(terms))} ",  # padded: a term is found as ' word '
    )
    return row, " ".join(words).split() == words


_made_row = functools.lru_cache(maxsize=32768)(_make_row)


def _page(shown: str, cached: CachedPage) -> tuple[TopicPage, tuple[frozenset[str], ...]]:
    pairs = [entry(shown, i, row) for i, row in enumerate(cached.entries)]
    entries = tuple(e for e, _ in pairs)
    return TopicPage(cached.name, cached.preamble, entries, cached.head), tuple(t for _, t in pairs)


def entry(shown: str, position: int, row: tuple[Any, ...]) -> tuple[Entry, frozenset[str]]:
    """An entry (the `position`-th of its page, from 0) and its search terms, from its cached row."""
    created, modified, text, tags, source, confidence, links, start, end, after, shown_text, words = row
    e = Entry(
        shown,
        created,
        text,
        tuple(tags.split()),
        source,
        confidence,
        tuple(links.split()),
        modified,
        position + 1,
        start,
        end,
        after,
        shown_text,
    )
    return e, frozenset(words.split())
