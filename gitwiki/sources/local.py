"""The checkout's own corpora as sources, beside the synced repositories (`sources.repositories`) and the shared
index (`sources.shared_index`): what a query of this checkout searches is HEAD's indexed pages (caught up when
stale) with the worktree folded in (the overlay), the uncommitted pages embedded as far as the query budget goes,
or a revision's pages; each corpus is a `LocalCorpus`, a `sources.CorpusSource`.

`LocalCorpora` keeps what a long-lived process reuses between queries (the page listing per tree, the overlay per
worktree state, what was embedded, the docs-site nav); the `Wiki` holds one and asks nothing back of it but the
`Checkout` it is.
"""

from __future__ import annotations

import contextlib
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from gitwiki.config import Config, CorpusConfig
from gitwiki.errors import NotFoundError, StoreError
from gitwiki.fs import UnsafeFile, read_page_file
from gitwiki.git.gitrepo import Commit, GitRepo, HistoryEntry
from gitwiki.index.embed import Embedder, loading
from gitwiki.index.indexer import (
    FileStamp,
    Overlay,
    corpus_tree,
    ensure_blobs,
    ensure_vectors,
    git_sources,
    truncated,
    truncated_pages,
    update,
    worktree_overlay,
)
from gitwiki.index.store import LOCK_TIMEOUT, IndexDamaged, Store
from gitwiki.pages import pages as pages_mod
from gitwiki.pages import sites
from gitwiki.search.searcher import CorpusView, Searcher, SearchOptions, SearchResult
from gitwiki.sources.source import Page, Scope, search_view

# How long a query waits for the writer lock to fold in uncommitted pages: enough for another query doing
# the same (milliseconds), far less than an index run (which used to hold a query for 45 s); past it the
# query answers without them and says so.
OVERLAY_WAIT = 2.0

if TYPE_CHECKING:
    from gitwiki.index.background_embed import BackgroundEmbedder
    from gitwiki.pages.watch import Watch


class CorpusStatus(NamedTuple):
    name: str
    path: str
    pages: int  # in the indexed state
    chunks: int
    indexed_commit: str | None
    head_commit: str | None
    fresh: bool  # the indexed corpus tree is HEAD's
    dirty: tuple[str, ...]  # worktree pages that differ from HEAD
    model: str | None
    indexed_at: float | None
    submodules: tuple[str, ...]  # inside the corpus at HEAD; their pages are not indexed


class Checkout(Protocol):
    """What the local corpora need of the `Wiki` that holds them: the repository, its config, its index and model."""

    repo: GitRepo
    config: Config

    @property
    def root(self) -> Path: ...

    @property
    def index_dir(self) -> Path: ...

    @property
    def store(self) -> Store: ...

    @property
    def open_index(self) -> Store | None: ...

    @property
    def searcher(self) -> Searcher: ...

    def embedder(self) -> Embedder | None: ...

    def wanted_model(self) -> str | None: ...

    def is_fresh(self, corpus: CorpusConfig, vectors: bool) -> bool: ...

    def reopen(self) -> None: ...

    def corpus_status(self, c: CorpusConfig, head: Commit | None) -> CorpusStatus: ...


class LocalCorpora:
    """This checkout's corpora: their views, worktree overlays, query-time embedding and docs-site navigation, with
    what a long-lived process keeps of them between queries."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._pages: dict[str, tuple[str, dict[str, str]]] = {}  # corpus → (tree, indexed listing)
        self._watcher: Watch | None = None
        self._overlays: dict[str, tuple[tuple[object, ...], Overlay]] = {}  # corpus → (what it depends on, overlay)
        # corpus → ((overlay key, model, budget), pages past the budget): what the last embedding step left
        self._embedded: dict[str, tuple[tuple[object, ...], tuple[str, ...]]] = {}
        self._background: BackgroundEmbedder | None = None  # see embed_in_background
        self._read: dict[str, dict[str, tuple[FileStamp, str]]] = {}  # corpus → worktree_overlay's `read`
        # corpus → ((nav file, its text), (titles, order)): see _nav_file
        self._nav: dict[str, tuple[tuple[str, str], tuple[dict[str, str], list[str]]]] = {}

    @property
    def max_bytes(self) -> int:
        return self.config.search.max_page_bytes

    # The checkout's parts the views are made of, named as they were when this code was the Wiki's own.
    @property
    def repo(self) -> GitRepo:
        return self.checkout.repo

    @property
    def config(self) -> Config:
        return self.checkout.config

    @property
    def root(self) -> Path:
        return self.checkout.root

    @property
    def store(self) -> Store:
        return self.checkout.store

    def corpus(self, config: CorpusConfig) -> LocalCorpus:
        return LocalCorpus(self, config)

    def watch(self) -> bool:
        """For long-lived processes: watch the corpus folders, so a query asks git for the worktree status only
        after something changed on disk. False when watching is not possible here (each query asks git)."""
        if self._watcher is None:
            from gitwiki.pages.watch import start

            folders = [self.root / c.path for c in self.config.corpora]
            self._watcher = start(folders, self.checkout.index_dir, ignored=(self.repo.common_dir, self.repo.git_dir))
        return self._watcher is not None

    def view(self, c: CorpusConfig, at: str | None, worktree: bool, vectors: bool) -> CorpusView:
        """Corpus `c`'s pages to search: HEAD's (caught up if stale) plus the worktree, or those of revision `at`."""
        return self._view(c, at, worktree, vectors)._replace(titles=self.nav_titles(c))

    def nav_titles(self, corpus: CorpusConfig) -> dict[str, str]:
        """Path → the title the corpus's docs-site navigation (mkdocs `nav`, mdBook SUMMARY.md) gives a page: a
        search shows it for a page without a title of its own."""
        return self._nav_file(corpus)[0]

    def nav_order(self, corpus: CorpusConfig) -> list[str]:
        """The pages the corpus's docs-site navigation lists, in its order ([] without one): listings follow it."""
        return self._nav_file(corpus)[1]

    def _nav_file(self, corpus: CorpusConfig) -> tuple[dict[str, str], list[str]]:
        """The nav's titles and order, read from the worktree on each call and parsed again only when its text
        changed."""
        if corpus.site not in ("mkdocs", "mdbook"):
            return {}, []
        path = sites.nav_file(self.root, corpus.site, corpus.path)
        text = (sites.read_small(path) if path else None) or ""
        key = (str(path), text)
        cached = self._nav.get(corpus.name)
        if cached is None or cached[0] != key:
            parsed = (
                sites.titles_from_nav(corpus.site, corpus.path, text),
                sites.order_from_nav(corpus.site, corpus.path, text),
            )
            cached = self._nav[corpus.name] = (key, parsed)
        return cached[1]

    def _view(self, c: CorpusConfig, at: str | None, worktree: bool, vectors: bool) -> CorpusView:
        if vectors and at is None and loading(self.config.embeddings):
            self._read_ahead(c)
        embedder = self.checkout.embedder() if vectors else None
        if self.checkout.open_index is not None and self.store.replaced():  # e.g. `gitwiki pull` in another process
            self.checkout.reopen()
        if at is not None:
            return self._view_at(c, at, embedder)
        state = self.store.state(c.name)
        # With auto_index off, a stale index answers as it is (`gitwiki status` shows it stale).
        if state is None or (
            self.config.search.auto_index and not self.checkout.is_fresh(c, vectors=embedder is not None)
        ):
            try:
                # A reader never waits for another writer when there is a committed state to answer from.
                with self.store.lock(LOCK_TIMEOUT if state is None else 0):
                    report = update(
                        self.store,
                        self.repo,
                        c,
                        self.repo.head(),
                        embedder,
                        max_bytes=self.max_bytes,
                    )
                commit, tree = report.commit, report.tree  # the state update() just wrote
            except StoreError as e:
                if state is None or isinstance(e, IndexDamaged):
                    raise
                _warn(f"answering from the index as of commit {state.commit[:12]}, not HEAD: {e}")
                commit, tree = state.commit, state.tree
        else:
            commit, tree = state.commit, state.tree
        committed = self._committed_pages(c.name, tree)
        if not worktree:
            return _tree_view(c.name, commit, committed, tree)
        try:
            overlay, _, lexical_only = self._overlay(
                c,
                tree,
                committed,
                embedder is not None,
                self.config.search.embed_budget,
                lock_timeout=OVERLAY_WAIT,
            )
        except StoreError as e:
            if isinstance(e, IndexDamaged):
                raise
            _warn(f"answering from commit {commit[:12]} without uncommitted pages: {e}")
            return _tree_view(c.name, commit, committed, tree)
        return CorpusView(c.name, commit, overlay.pages, overlay.dirty, f"{c.name}:{overlay.digest}", lexical_only)

    def _overlay(
        self,
        corpus: CorpusConfig,
        tree: str,
        committed: dict[str, str],
        vectors: bool,
        budget: int | None = None,
        lock_timeout: float = LOCK_TIMEOUT,
    ) -> tuple[Overlay, int, tuple[str, ...]]:
        """Fold the worktree into `committed` (the indexed state of `tree`); with `vectors`, embed what that
        changed (loading the model only then), uncommitted pages whole and in path order until `budget`
        chunks. Returns the overlay, the chunks embedded and the pages left past the budget, which are
        searched lexically only. (One untracked 5 MB page used to make a query embed 10,000 sections: over
        9.5 minutes without a word.)"""
        overlay, key = self._worktree(corpus, tree, committed, lock_timeout)
        embedder = self.checkout.embedder() if vectors and overlay.dirty else None
        if embedder is None:
            return overlay, 0, ()
        asked = (key, embedder.model_id, budget)
        done = self._embedded.get(corpus.name)
        if key is not None and done is not None and done[0] == asked:
            return overlay, 0, done[1]  # this overlay was embedded as far as the budget goes: nothing to look up
        self.settle_embedding()
        over = []
        for path in overlay.dirty:
            if budget is not None and path in overlay.pages:
                need = len(self.store.missing_vectors(embedder.model_id, [overlay.pages[path]]))
                if need > budget:
                    over.append(path)
                else:
                    budget -= need
        skip = {overlay.pages[p] for p in over}
        with self.store.lock(lock_timeout):
            embedded = ensure_vectors(self.store, embedder, {b for b in overlay.pages.values() if b not in skip})
        if key is not None:  # the next query over the same overlay need not look for missing vectors again
            self._embedded[corpus.name] = (asked, tuple(over))
        return overlay, embedded, tuple(over)

    def _worktree(
        self, corpus: CorpusConfig, tree: str, committed: dict[str, str], lock_timeout: float = LOCK_TIMEOUT
    ) -> tuple[Overlay, tuple[object, ...] | None]:
        """The worktree overlay and what it depends on (None: not known, so not kept). It is taken again only
        when one of those moved: a watched file, git's index file, the indexed tree, or the database (another
        process's gc may drop the drafts' chunks)."""
        generation = self._watcher.sync() if self._watcher else None
        read = self._read.setdefault(corpus.name, {})
        if generation is None:
            overlay = worktree_overlay(
                self.store, self.repo, corpus, committed, tree, self.max_bytes, lock_timeout, read
            )
            return overlay, None
        key = (generation, tree, self.repo.status_stamp(), self.store.data_version())
        cached = self._overlays.get(corpus.name)
        if cached is None or cached[0] != key:
            overlay = worktree_overlay(
                self.store, self.repo, corpus, committed, tree, self.max_bytes, lock_timeout, read
            )
            cached = self._overlays[corpus.name] = (key, overlay)
        return cached[1], key

    def embed_in_background(self) -> None:
        """For long-lived processes: from now on `embed_blobs` hands its work to a thread and returns at once
        (gitwiki.index.background_embed); `close` waits for that thread to finish."""
        from gitwiki.index.background_embed import BackgroundEmbedder

        if self._background is None:
            self._background = BackgroundEmbedder()

    def embed_blobs(self, blobs: set[str]) -> bool:
        """Embed the chunks of these page versions (parsed into the index) that have no vector yet, none in
        lexical mode: now, or on the background thread of a process that has one. True when done now."""
        embedder = self.checkout.embedder()
        if embedder is None:
            return True
        if self._background is not None and self._background.submit(self.store, embedder, blobs):
            return False
        with self.store.lock():
            ensure_vectors(self.store, embedder, blobs)
        return True

    def writing(self) -> AbstractContextManager[None]:
        """Around a write of pages: the background thread (if any) does not start embedding during it."""
        return self._background.writing() if self._background is not None else contextlib.nullcontext()

    def settle_embedding(self) -> None:
        """Wait for the background thread to embed what was handed to it, before looking for vectors that are
        missing: what it is embedding would be embedded twice."""
        if self._background is not None:
            self._background.settle()

    def embed_worktree(self) -> int:
        """Parse and embed every corpus's uncommitted pages now, so the next search pays nothing for them;
        returns the chunks embedded. Corpora not indexed yet are skipped (indexing comes first)."""
        embedded = 0
        for c in self.config.corpora:
            state = self.store.state(c.name)
            if state is not None:
                embedded += self._overlay(c, state.tree, self._committed_pages(c.name, state.tree), vectors=True)[1]
        return embedded

    def _read_ahead(self, c: CorpusConfig) -> None:
        """While the model loads (a first query of an owner that has just started), read the vectors of the
        indexed pages: the search that then waits for the model reuses the rows (`Searcher.read_ahead`). Only of a
        state indexed with that model, whose pages have every vector: rows kept of a page missing some would
        stay missing from the matrices built on them."""
        model = self.checkout.wanted_model()
        state = self.store.state(c.name)
        if model is None or state is None or state.model != model:
            return
        committed = self._committed_pages(c.name, state.tree)
        self.checkout.searcher.read_ahead(_tree_view(c.name, state.commit, committed, state.tree), model)

    def _committed_pages(self, corpus: str, tree: str) -> dict[str, str]:
        """The indexed page listing, read once per corpus tree: a long-lived server asks on every query."""
        cached = self._pages.get(corpus)
        if cached is None or cached[0] != tree:
            cached = self._pages[corpus] = (tree, self.store.pages(corpus))
        return cached[1]

    def _view_at(self, corpus: CorpusConfig, rev: str, embedder: Embedder | None) -> CorpusView:
        commit = self.repo.rev_parse(rev)
        tree = corpus_tree(self.repo, corpus, commit)
        pages = self.repo.pages(corpus, tree or None)
        with self.store.lock():
            ensure_blobs(self.store, git_sources(self.repo, set(pages.values())), max_bytes=self.max_bytes)
            if embedder is not None:
                ensure_vectors(self.store, embedder, set(pages.values()))
        return _tree_view(corpus.name, commit.id, pages, tree)

    def forget(self) -> None:
        """Forget everything read from the index (it is closed or about to be replaced)."""
        self._pages.clear()
        self._overlays.clear()
        self._embedded.clear()
        self._read.clear()

    def close(self) -> None:
        if self._background is not None:
            self._background.close()
        self.forget()
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None


class LocalCorpus:
    """A corpus of this checkout as a `sources.CorpusSource`: HEAD plus the worktree (or a revision), pages read
    from disk as they are now, writable."""

    def __init__(self, corpora: LocalCorpora, config: CorpusConfig) -> None:
        self.corpora = corpora
        self.wiki = corpora.checkout
        self.config = config

    @property
    def name(self) -> str:
        return self.config.name

    def view(self, at: str | None = None, worktree: bool = True, vectors: bool = False) -> CorpusView:
        return self.corpora.view(self.config, at, worktree, vectors)

    def search(self, query: str, options: SearchOptions, at: str | None = None, worktree: bool = True) -> SearchResult:
        return search_view(self.scope(options, at, worktree), query, options)

    def scope(self, options: SearchOptions, at: str | None = None, worktree: bool = True) -> Scope:
        view = self.view(at, worktree, vectors=options.mode != "lexical")
        embedder = self.wiki.embedder() if options.mode != "lexical" else None
        repo, root = self.wiki.repo, self.wiki.root

        def read(path: str) -> str:
            if path in view.dirty:  # the worktree version has no git object
                with contextlib.suppress(UnsafeFile, OSError):  # the view kept the committed one then
                    return read_page_file(root, path).decode("utf-8", errors="replace")
            return repo.read_blob(view.pages[path]).decode("utf-8", errors="replace")

        fix = "add markdown there or fix [[corpus]] path in .gitwiki.toml"
        return Scope(self.wiki.searcher, view, embedder, read, self.config, fix)

    def files(self, glob: str | None = None) -> tuple[CorpusView, list[pages_mod.ListedPage]]:
        view = self.view()
        order = self.corpora.nav_order(self.config)
        return view, pages_mod.list_files(self.wiki.root, self.config, view.pages, glob, order)

    def tree(self, under: str, depth: int | None) -> tuple[CorpusView, dict[str, Any]]:
        view, files = self.files()
        node = pages_mod.tree(self.wiki.root, self.config, files, under, depth)
        root, c = self.wiki.root, self.config
        pages_mod.add_folder_summaries(
            node, {f.path for f in files}, lambda p: pages_mod.read_page(pages_mod.locate(root, c, p)).text
        )
        return view, node

    def read(self, path: str) -> Page:
        ref = pages_mod.locate(self.wiki.root, self.config, path)
        head = self.wiki.repo.head()
        state = {"commit": head.id if head else "", "dirty": self.wiki.repo.is_dirty(ref.repo_path)}
        return Page(self.name, ref.path, str(ref.file), pages_mod.read_page(ref).text, state)

    def history(self, path: str, limit: int) -> tuple[str, list[HistoryEntry]]:
        ref = pages_mod.locate(self.wiki.root, self.config, path)
        entries = self.wiki.repo.history(ref.repo_path, limit)
        if not entries and not ref.file.exists():
            raise NotFoundError(f"no page {ref.path!r} in corpus {self.name!r}, now or in the history of HEAD")
        return ref.path, entries

    def status(self) -> dict[str, Any]:
        s = self.wiki.corpus_status(self.config, self.wiki.repo.head())
        return {
            "name": s.name,
            "path": s.path,
            "absolute_path": str(pages_mod.corpus_dir(self.wiki.root, self.config)),
            "pages": s.pages,
            "chunks": s.chunks,
            "indexed_commit": s.indexed_commit,
            "head_commit": s.head_commit,
            "state": "fresh" if s.fresh else ("not indexed" if s.indexed_commit is None else "stale"),
            "dirty": list(s.dirty),
            "model": s.model,
        }

    def check_writable(self) -> None:
        return None  # this checkout's pages are the ones gitwiki writes

    def truncated(self) -> tuple[str, ...]:
        index_dir = self.wiki.store.index_dir  # not `wiki.index_dir`: it resolves the path again (70 µs a query)
        if not truncated(index_dir):  # one small file read when no page was cut
            return ()
        return tuple(path for path, _ in truncated_pages(index_dir, self.wiki.store.pages(self.name)))

    def page_key(self, path: str) -> tuple[str, str]:
        return (str(self.wiki.root), path)


def _tree_view(corpus: str, commit: str, pages: dict[str, str], tree: str) -> CorpusView:
    """A corpus tree's pages, without the worktree: keyed by the tree (as a worktree overlay with nothing dirty is),
    so every search of one tree shares the searcher's matrices, the read-ahead's included."""
    return CorpusView(corpus, commit, pages, (), f"{corpus}:{tree}")


def _warn(message: str) -> None:
    print(f"gitwiki: warning: {message}", file=sys.stderr)
