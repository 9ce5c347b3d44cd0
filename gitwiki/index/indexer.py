"""Bring a corpus's index to a git tree (and the worktree) doing only the work that changed.

Same corpus tree id as indexed → nothing at all. Otherwise only blobs the store has never seen are
parsed, and only chunk texts without a cached vector for the model are embedded; the new state (path →
blob listing, commit, tree, model) is switched in one transaction at the end.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, TypeGuard

from gitwiki import pagetext
from gitwiki.config import CorpusConfig, SearchConfig
from gitwiki.fs import UnsafeFile, atomic_write, read_page_file
from gitwiki.git.gitcli import blob_id
from gitwiki.git.gitrepo import Commit, GitRepo, PageMap
from gitwiki.index.embed import Embedder
from gitwiki.index.store import LOCK_TIMEOUT, State, Store
from gitwiki.markdown.chunker import ParsedPage, parse_page

# progress(stage, done, total): stage is "parse" or "embed"
Progress = Callable[[str, int, int], None]
# Chunks embedded per committed transaction. A commit costs ~2 ms and 64 MiniLM chunks ~6 s on one core, so
# Ctrl-C or a kill loses at most a few seconds of embedding (with 256 it lost the first 25 s of every run).
EMBED_BATCH = 64
MAX_PAGE_BYTES = SearchConfig().max_page_bytes
# What a page that cannot be indexed is stored as: known (so it is not re-read on every run), no chunks.
UNINDEXED = ParsedPage("", (), None, (), None)
# In the index dir: {blob: bytes} of the page versions over [search] max_page_bytes, indexed up to the limit only,
# so `gitwiki status` and the ground footer can name them long after the run that parsed them said so.
TRUNCATED_FILE = "truncated.json"


class IndexReport(NamedTuple):
    corpus: str
    commit: str
    tree: str
    pages: int
    added: int
    changed: int
    deleted: int
    parsed: int  # page versions (blobs) chunked in this run
    embedded: int  # chunk texts embedded in this run (cache misses)
    model: str | None
    seconds: float
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why) of pages parsed in this run but not indexed
    truncated: tuple[tuple[str, int], ...] = ()  # (path, bytes) of pages parsed in this run, indexed in part

    @property
    def up_to_date(self) -> bool:
        return self.added == self.changed == self.deleted == self.parsed == self.embedded == 0

    def to_json(self) -> dict[str, object]:
        """The `gitwiki index --json` record (also the MCP `index` tool's)."""
        return {
            **self._asdict(),
            "skipped": dict(self.skipped),
            "truncated": dict(self.truncated),
            "up_to_date": self.up_to_date,
        }

    def summary(self) -> str:
        """One line for people: what changed and what it cost."""
        where = f"commit {self.commit[:12]}" if self.commit else "no commits yet"
        if self.up_to_date:
            return f"{self.corpus}: up to date, {self.pages} pages at {where} ({self.seconds * 1000:.0f} ms)"
        return (
            f"{self.corpus}: {self.pages} pages at {where}: {self.added} added, {self.changed} changed, "
            f"{self.deleted} deleted; parsed {self.parsed} page versions, embedded {self.embedded} chunks "
            f"({self.model or 'lexical only'}) in {self.seconds:.2f} s"
        )


def corpus_tree(repo: GitRepo, corpus: CorpusConfig, commit: Commit | None) -> str:
    if commit is None:
        return ""
    return repo.subtree(commit.tree, corpus.path) or ""


def is_current(state: State | None, tree: str, model: str | None) -> TypeGuard[State]:
    """Whether a state already covers `tree` with vectors for `model` (None: lexical is enough)."""
    return state is not None and state.tree == tree and (model is None or state.model == model)


class Parsed(NamedTuple):
    parsed: int  # page versions parsed
    skipped: dict[str, str]  # blob → why it is not indexed
    truncated: dict[str, int]  # blob → its bytes, of the pages indexed up to [search] max_page_bytes only


def ensure_blobs(
    store: Store,
    sources: dict[str, Callable[[], bytes]],
    progress: Progress | None = None,
    max_bytes: int = MAX_PAGE_BYTES,
    replacing: Mapping[str, str] | None = None,
) -> Parsed:
    """Parse and store every blob in `sources` the store lacks (the caller holds the store's lock); a page that
    cannot be indexed is stored without chunks (said why in `skipped`), one over `max_bytes` with its first
    `max_bytes` only (in `truncated`). `replacing` maps a blob to the version it replaces, which is dropped
    (unless a corpus state holds it) and whose unchanged chunks carry over (`Store.replace_blob`)."""
    known = store.known_blobs(sources)  # one query for all, not one per blob
    missing = [b for b in sources if b not in known]
    skipped: dict[str, str] = {}
    sizes: dict[str, int | None] = {}  # blob → its size when truncated, None when parsed whole
    with store.write():
        for i, blob in enumerate(missing, 1):
            data = sources[blob]()
            page, why = read_page(data, max_bytes)
            if why:
                skipped[blob] = why
            sizes[blob] = len(data) if len(data) > max_bytes and not why else None
            if replacing and blob in replacing:
                store.replace_blob(replacing[blob], blob, page)
            else:
                store.add_blob(blob, page)
            if progress:
                progress("parse", i, len(missing))
    _record_truncated(store.index_dir, sizes)
    return Parsed(len(missing), skipped, {b: n for b, n in sizes.items() if n is not None})


def read_page(data: bytes, max_bytes: int) -> tuple[ParsedPage, str | None]:
    """A page version's chunks, or UNINDEXED and why: one bad page costs that page, never the run. A page over
    `max_bytes` is indexed up to its last whole line within the limit (the caller says so): searchable in part
    beats absent without a word."""
    page, why = pagetext.attempt(lambda: parse_page(pagetext.decode(pagetext.head(data, max_bytes))))
    return (UNINDEXED, why) if page is None else (page, None)


def truncation(size: int, max_bytes: int) -> str:
    """What a person is told about a page indexed in part, and what to do."""
    return (
        f"{size:,} bytes, over the {max_bytes:,}-byte limit ([search] max_page_bytes): only the lines "
        f"within it are searched; split the page (or raise the limit and run `gitwiki index --rebuild`)"
    )


def truncated(index_dir: Path) -> dict[str, int]:
    """{blob: bytes} of the page versions this index holds in part (over [search] max_page_bytes)."""
    try:
        found = json.loads((index_dir / TRUNCATED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in found.items() if isinstance(v, int)} if isinstance(found, dict) else {}


def truncated_pages(index_dir: Path, pages: Mapping[str, str]) -> list[tuple[str, int]]:
    """(path, bytes) of the pages of a listing (path → blob) indexed in part, by path."""
    sizes = truncated(index_dir)
    return sorted((path, sizes[blob]) for path, blob in pages.items() if blob in sizes) if sizes else []


def _record_truncated(index_dir: Path, sizes: dict[str, int | None]) -> None:
    recorded = truncated(index_dir)
    updated = {**recorded, **{b: n for b, n in sizes.items() if n is not None}}
    for blob in (b for b, n in sizes.items() if n is None):  # parsed whole now (a rebuild with a higher limit)
        updated.pop(blob, None)
    if updated != recorded:
        with contextlib.suppress(OSError):  # a read-only index dir: the run's own report still names them
            atomic_write(index_dir / TRUNCATED_FILE, json.dumps(updated, sort_keys=True), sync=False)


def ensure_vectors(store: Store, embedder: Embedder, blobs: Iterable[str], progress: Progress | None = None) -> int:
    """Embed the chunk texts of `blobs` that have no cached vector; returns how many were embedded."""
    missing, held = store.vectors_to_embed(embedder.model_id, blobs)
    # Shortest first: a batch is padded to its longest text, so similar lengths waste the least compute.
    need = sorted(missing, key=lambda item: len(item[1]))
    for start in range(0, len(need), EMBED_BATCH):
        batch = need[start : start + EMBED_BATCH]
        matrix = embedder.embed_documents([text for _, text in batch])
        with store.write():  # commit per batch: a crash keeps the vectors already paid for
            store.put_vectors(embedder.model_id, [h for h, _ in batch], matrix)
        if progress:
            progress("embed", start + len(batch), len(need))
    store.vectors_complete(embedder.model_id, held)
    return len(need)


def git_sources(repo: GitRepo, blobs: Iterable[str]) -> dict[str, Callable[[], bytes]]:
    return {b: functools.partial(repo.read_blob, b) for b in blobs}


def update(
    store: Store,
    repo: GitRepo,
    corpus: CorpusConfig,
    commit: Commit | None,
    embedder: Embedder | None,
    progress: Progress | None = None,
    max_bytes: int = MAX_PAGE_BYTES,
) -> IndexReport:
    """Index `corpus` as of `commit` (None: an unborn HEAD, i.e. no pages) and make it the corpus state."""
    started = time.perf_counter()
    tree = corpus_tree(repo, corpus, commit)
    model = embedder.model_id if embedder else None
    commit_id = commit.id if commit else ""
    # Only a change takes the writer lock: an index that is current says so without waiting for another
    # writer, and in a read-only index dir, where the lock cannot be taken at all.
    state = store.state(corpus.name)
    current = is_current(state, tree, model) and state.commit == commit_id
    with contextlib.nullcontext() if current else store.lock():
        state = store.state(corpus.name)
        if is_current(state, tree, model):
            if state.commit != commit_id:  # same tree, new commit: record which commit the index answers for
                with store.write():
                    store.set_commit(corpus.name, commit_id)
            return IndexReport(
                corpus.name,
                commit_id,
                tree,
                store.page_count(corpus.name),
                0,
                0,
                0,
                0,
                0,
                state.model,
                time.perf_counter() - started,
            )
        old = store.pages(corpus.name) if state else {}
        new = repo.pages(corpus, tree or None)
        parsed = ensure_blobs(store, git_sources(repo, set(new.values())), progress, max_bytes)
        # A state's model had vectors for all its pages: only blobs new to the listing can lack them.
        need = set(new.values()) - (set(old.values()) if state is not None and state.model == model else set())
        embedded = ensure_vectors(store, embedder, need, progress) if embedder else 0
        with store.write():
            store.set_state(corpus.name, commit_id, tree, model, new)
            store.gc()
    added, changed, deleted = diff_counts(old, new)
    return IndexReport(
        corpus.name,
        commit_id,
        tree,
        len(new),
        added,
        changed,
        deleted,
        parsed.parsed,
        embedded,
        model,
        time.perf_counter() - started,
        tuple((path, parsed.skipped[blob]) for path, blob in sorted(new.items()) if blob in parsed.skipped),
        tuple((path, parsed.truncated[blob]) for path, blob in sorted(new.items()) if blob in parsed.truncated),
    )


def diff_counts(old: PageMap, new: PageMap) -> tuple[int, int, int]:
    """(added, changed, deleted) paths between two listings; a rename counts as one add and one delete."""
    added = sum(1 for p in new if p not in old)
    changed = sum(1 for p, b in new.items() if p in old and old[p] != b)
    deleted = sum(1 for p in old if p not in new)
    return added, changed, deleted


class Overlay(NamedTuple):
    pages: PageMap  # the corpus as the user sees it: committed pages overridden by worktree files
    dirty: tuple[str, ...]  # paths whose worktree state differs from HEAD (including deletions)
    digest: str  # identifies `pages` (the corpus tree id when nothing is dirty), for caches


# A file whose timestamps are this much in the past when it is read is known by its stat from then on: a
# later write gets newer ones (within one timestamp tick of a read it might not). A tick is a second on
# filesystems that keep whole seconds (2 s for FAT's mtime); one that keeps sub-second stamps (ext4, xfs,
# btrfs, tmpfs: nanoseconds from a clock that ticks every 1–10 ms; exFAT: 10 ms) needs only its tick. With
# 2 s for every file, a server taking back-to-back memory stores re-read and hashed about half of its
# uncommitted topic pages per store (each was rewritten within 2 s).
SETTLED_NS = 2_000_000_000
SETTLED_FINE_NS = 100_000_000
FileStamp = tuple[int, int, int, int, int]


def file_stamp(st: os.stat_result) -> FileStamp:
    """What says a file still holds the bytes read from it: its inode, size, mtime, and ctime and link count,
    which no write, `touch -d` or new hard link leaves as they were."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink)


def settled(st: os.stat_result, now_ns: int) -> bool:
    """Whether a file's stat read at `now_ns` will tell a later write: its timestamps are older than a tick.
    Sub-second stamps are told by both mtime and ctime having a fraction of a second (a stamp of FAT, with
    its 2 s mtime, never has both)."""
    fine = st.st_mtime_ns % 1_000_000_000 and st.st_ctime_ns % 1_000_000_000
    return max(st.st_mtime_ns, st.st_ctime_ns) < now_ns - (SETTLED_FINE_NS if fine else SETTLED_NS)


def _unchanged(
    store: Store, root: Path, changes: dict[str, bool], read: dict[str, tuple[FileStamp, str]]
) -> dict[str, str]:
    """Path → blob id of the changed pages whose stamp is the one recorded when they were read (safely: a
    page reached through a symlink was never recorded, and is read again once its stamp moves) and whose
    version the index still holds (another process's gc may have dropped it); forgets the others."""
    kept: dict[str, str] = {}
    for path in list(read):
        try:
            same = changes.get(path) and file_stamp(os.lstat(os.path.join(root, path))) == read[path][0]
        except OSError:
            same = False
        if same:
            kept[path] = read[path][1]
        else:
            del read[path]
    known = store.known_blobs(set(kept.values()))
    return {path: blob for path, blob in kept.items() if blob in known}


def worktree_overlay(
    store: Store,
    repo: GitRepo,
    corpus: CorpusConfig,
    committed: PageMap,
    tree: str,
    max_bytes: int = MAX_PAGE_BYTES,
    lock_timeout: float = LOCK_TIMEOUT,
    read: dict[str, tuple[FileStamp, str]] | None = None,
) -> Overlay:
    """Fold uncommitted and untracked pages into `committed` (the listing of corpus tree `tree`), parsing (not
    embedding) new versions. `read` (path → stamp and blob id of the bytes read; kept by the caller between
    calls) spares re-reading a page whose stamp did not change and whose version the index still holds, as
    each memory store in a long-lived server did for every uncommitted topic page
    (docs/research/memory-speed.md)."""
    changes = repo.worktree_changes(corpus)
    if not changes:
        return Overlay(committed, (), tree)
    pages = dict(committed)
    sources: dict[str, Callable[[], bytes]] = {}
    root = repo.root  # a realpath each time it is asked for
    unchanged = _unchanged(store, root, changes, read) if read is not None else {}
    for path, present in changes.items():
        if not present:
            pages.pop(path, None)
            continue
        if path in unchanged:
            pages[path] = unchanged[path]
            continue
        try:
            st = os.lstat(os.path.join(root, path))  # before the read: a stamp never outdates its bytes
            data = read_page_file(root, path)
        except UnsafeFile:  # a hard link may be a file outside the wiki: search the committed version only
            continue
        except OSError:  # deleted between the status call and now
            pages.pop(path, None)
            continue
        blob = blob_id(data)
        pages[path] = blob
        sources[blob] = functools.partial(bytes, data)  # bytes(b) is b itself: no copy
        if read is not None and settled(st, time.time_ns()):
            read[path] = (file_stamp(st), blob)
    if sources:
        with store.lock(lock_timeout):
            ensure_blobs(store, sources, max_bytes=max_bytes)
    # Computed once per overlay: at 20,000 pages this hash costs more than the whole query.
    digest = hashlib.sha1(repr(sorted(pages.items())).encode()).hexdigest()
    return Overlay(pages, tuple(sorted(changes)), digest)
