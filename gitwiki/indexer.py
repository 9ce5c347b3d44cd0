"""Bring a corpus's index to a git tree (and the worktree) doing only the work that changed.

Same corpus tree id as indexed → nothing at all. Otherwise only blobs the store has never seen are
parsed, and only chunk texts without a cached vector for the model are embedded; the new state (path →
blob listing, commit, tree, model) is switched in one transaction at the end.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeGuard

from gitwiki.config import CorpusConfig
from gitwiki.embed import Embedder
from gitwiki.fs import UnsafeFile, read_page_file
from gitwiki.gitcli import blob_id
from gitwiki.gitrepo import Commit, GitRepo, PageMap
from gitwiki.markdown.chunker import parse_page
from gitwiki.store import State, Store

# progress(stage, done, total): stage is "parse" or "embed"
Progress = Callable[[str, int, int], None]
EMBED_BATCH = 256


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

    @property
    def up_to_date(self) -> bool:
        return self.added == self.changed == self.deleted == self.parsed == self.embedded == 0

    def to_json(self) -> dict[str, object]:
        """The `gitwiki index --json` record (also the MCP `index` tool's)."""
        return {**self._asdict(), "up_to_date": self.up_to_date}

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


def ensure_blobs(store: Store, sources: dict[str, Callable[[], bytes]], progress: Progress | None = None) -> int:
    """Parse and store every blob in `sources` the store lacks; returns how many were parsed."""
    known = store.known_blobs(sources)  # one query for all, not one per blob
    missing = [b for b in sources if b not in known]
    with store.write():
        for i, blob in enumerate(missing, 1):
            text = sources[blob]().decode("utf-8", errors="replace")
            store.add_blob(blob, parse_page(text))
            if progress:
                progress("parse", i, len(missing))
    return len(missing)


def ensure_vectors(store: Store, embedder: Embedder, blobs: Iterable[str], progress: Progress | None = None) -> int:
    """Embed the chunk texts of `blobs` that have no cached vector; returns how many were embedded."""
    # Shortest first: a batch is padded to its longest text, so similar lengths waste the least compute.
    need = sorted(store.missing_vectors(embedder.model_id, blobs), key=lambda item: len(item[1]))
    for start in range(0, len(need), EMBED_BATCH):
        batch = need[start : start + EMBED_BATCH]
        matrix = embedder.embed_documents([text for _, text in batch])
        with store.write():  # commit per batch: a crash keeps the vectors already paid for
            store.put_vectors(embedder.model_id, [h for h, _ in batch], matrix)
        if progress:
            progress("embed", start + len(batch), len(need))
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
) -> IndexReport:
    """Index `corpus` as of `commit` (None: an unborn HEAD, i.e. no pages) and make it the corpus state."""
    started = time.perf_counter()
    tree = corpus_tree(repo, corpus, commit)
    model = embedder.model_id if embedder else None
    commit_id = commit.id if commit else ""
    with store.lock():
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
        parsed = ensure_blobs(store, git_sources(repo, set(new.values())), progress)
        # A state's model had vectors for all its pages: only blobs new to the listing can lack them
        # (a 1,000-page corpus with one changed page: 58 ms of vector lookups saved per corpus).
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
        parsed,
        embedded,
        model,
        time.perf_counter() - started,
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


def worktree_overlay(store: Store, repo: GitRepo, corpus: CorpusConfig, committed: PageMap) -> Overlay:
    """Fold uncommitted and untracked pages into `committed`, parsing (not embedding) new versions."""
    changes = repo.worktree_changes(corpus)
    if not changes:
        return Overlay(committed, ())
    pages = dict(committed)
    sources: dict[str, Callable[[], bytes]] = {}
    for path, present in changes.items():
        if not present:
            pages.pop(path, None)
            continue
        try:
            data = read_page_file(repo.root, path)
        except UnsafeFile:  # a hard link may be a file outside the wiki: search the committed version only
            continue
        except OSError:  # deleted between the status call and now
            pages.pop(path, None)
            continue
        blob = blob_id(data)
        pages[path] = blob
        sources[blob] = functools.partial(bytes, data)  # bytes(b) is b itself: no copy
    if sources:
        with store.lock():
            ensure_blobs(store, sources)
    return Overlay(pages, tuple(sorted(changes)))
