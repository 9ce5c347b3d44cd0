"""The library's front door: a `Wiki` is a git repo, its config, and its index.

The CLI, the MCP server, the hooks and the Action are thin adapters over this class.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki import config as config_mod
from gitwiki.config import Config, CorpusConfig
from gitwiki.errors import UnknownCorpus, UsageError
from gitwiki.git.gitrepo import Commit, GitRepo
from gitwiki.index.claim import claim
from gitwiki.index.embed import Embedder, load_embedder
from gitwiki.index.indexer import (
    IndexReport,
    Progress,
    corpus_tree,
    is_current,
    update,
)
from gitwiki.index.onnx_embed import model_key
from gitwiki.index.store import IndexDamaged, Store
from gitwiki.search.request import SearchRequest
from gitwiki.search.searcher import CorpusView, Searcher, SearchOptions, SearchResult, check_query
from gitwiki.sources.local import CorpusStatus, LocalCorpora, LocalCorpus
from gitwiki.sources.repositories import Repositories, RepositoryCorpus, for_checkout
from gitwiki.sources.source import CorpusSpec, search_corpora

if TYPE_CHECKING:
    pass


class Wiki:
    def __init__(self, repo: GitRepo, config: Config, default: str | None = None) -> None:
        self.repo = repo
        self.config = config
        self.default = default  # the default corpus when not the first (see repositories.for_checkout)
        self.repositories = Repositories(config.repositories, config.search)
        self.local = LocalCorpora(self)  # this checkout's corpora: views, worktree overlays, query-time embedding
        # A long-lived process (the owner) that searches again and again: its searcher keeps BM25's postings
        # (`Searcher.keep_postings`), and so does the one an index opened again makes.
        self.resident = False

    @classmethod
    def open(cls, start: str | os.PathLike[str] = ".") -> Wiki:
        repo = GitRepo.discover(start)
        return cls(repo, *for_checkout(config_mod.load(repo.root), repo.root, Path(start)))

    @property
    def root(self) -> Path:
        return self.repo.root

    @property
    def index_dir(self) -> Path:
        common = self.repo.common_dir
        return claim(config_mod.index_dir(self.config, self.root, common), self.root, common)

    @functools.cached_property
    def store(self) -> Store:
        return Store.open(self.index_dir)

    @functools.cached_property
    def searcher(self) -> Searcher:
        searcher = Searcher.configured(self.store, self.config.search)
        if self.resident:
            searcher.keep_postings()
        return searcher

    @property
    def open_index(self) -> Store | None:
        """The index if it is open now (None: the next use of `store` opens it)."""
        return self.__dict__.get("store")

    def watch(self) -> bool:
        """For long-lived processes: watch the corpus folders, so a query asks git for the worktree status only
        after something changed on disk. False when watching is not possible here (each query asks git)."""
        return self.local.watch()

    def corpus(self, name: str | None = None) -> CorpusConfig:
        """A local corpus, or a repository's `repo:NAME:wiki|corpus`; None is the default one."""
        return self.source(name).config

    def source(self, name: str | None = None) -> LocalCorpus | RepositoryCorpus:
        """Where corpus `name` (None: the default one) comes from: this checkout or a synced repository (each a
        `sources.CorpusSource`)."""
        name = name or self.default
        synced = self.config.search.auto_index
        repository = self.repositories.source(name, self.embedder, self.config.embeddings, synced)
        if repository is not None:
            return repository
        if name is not None and name not in (c.name for c in self.config.corpora):
            raise UnknownCorpus(f"no corpus named {name!r}; choose one of: {', '.join(self.corpus_names())}")
        return self.local.corpus(self.config.corpus(name))

    def corpus_names(self) -> list[str]:
        """Every corpus: this checkout's, then each declared repository's two."""
        return [c.name for c in self.config.corpora] + self.repositories.corpus_names()

    def searchable_corpora(self) -> list[str]:
        """What a search of all corpora takes in: this checkout's and those of the repositories allowed and
        synced (searching all never fetches)."""
        return [c.name for c in self.config.corpora] + self.repositories.searchable()

    def embedder(self) -> Embedder | None:
        """The configured model, loaded once per process; None in lexical mode or if it cannot load (said once
        per index)."""
        # The open index's dir when there is one: `index_dir` resolves paths again on every call (0.15 ms, and a
        # warm hybrid query asked twice; 1,000 tldr pages, docs/research/mcp-warm.md)
        store = self.__dict__.get("store")
        return load_embedder(self.config.embeddings, self.index_dir if store is None else store.index_dir)

    def wanted_model(self) -> str | None:
        return model_key(self.config.embeddings) if self.config.embeddings.enabled else None

    # ---- indexing --------------------------------------------------------------------------------

    def index(
        self, corpus: str | None = None, progress: Progress | None = None, lexical: bool = False, rebuild: bool = False
    ) -> list[IndexReport]:
        """Bring each corpus (or the named one) up to HEAD; `lexical` skips embedding. A damaged index (SQLite's
        quick check, 90 ms at 5,000 pages) is moved aside and rebuilt, as is any with `rebuild`, so "up to
        date" is never said over lost pages."""
        if corpus:
            self.source(corpus).check_writable()
        corpora = [self.corpus(corpus)] if corpus else list(self.config.corpora)
        problem = "rebuilding it as asked (--rebuild)" if rebuild else None
        if problem is None and (damage := self.store.check()):
            problem = f"it is damaged ({damage})"
        if problem:
            self.reopen()
            self.__dict__["store"] = Store.open(self.index_dir, rebuild=problem)
        head = self.repo.head()
        reports = []
        for c in corpora:
            # The model loads only when something needs embedding: a fresh corpus costs a tree-id check.
            embedder = None if lexical or self.is_fresh(c, vectors=True) else self.embedder()
            reports.append(
                update(self.store, self.repo, c, head, embedder, progress, self.config.search.max_page_bytes)
            )
        return reports

    def corpus_trees(self) -> dict[str, str]:
        """Each local corpus's tree id at HEAD ("" before the first commit or without its folder)."""
        head = self.repo.head()
        return {c.name: corpus_tree(self.repo, c, head) for c in self.config.corpora}

    def has_no_index_to_start_from(self) -> bool:
        """No corpus indexed here yet and `[artifact] auto_pull` on: the callers then install the published
        index first (`pull.install_published`), as `gitwiki index`, `ground` and `serve` do. A damaged index
        is not "no index": `index` rebuilds it from git and a query names `--rebuild`, as without auto_pull."""
        if not self.config.artifact.auto_pull:
            return False
        try:
            return not self.store.states()
        except IndexDamaged:
            return False

    def is_fresh(self, corpus: CorpusConfig, vectors: bool) -> bool:
        """The cheap check: does the index already hold HEAD's corpus tree? (No model load, no parse.)"""
        tree = corpus_tree(self.repo, corpus, self.repo.head())
        return is_current(self.store.state(corpus.name), tree, self.wanted_model() if vectors else None)

    def prune(self, keep: set[str]) -> int:
        """Drop index rows of page versions no corpus state and no blob in `keep` references."""
        with self.store.lock(), self.store.write():
            return self.store.gc(keep)

    # ---- views -----------------------------------------------------------------------------------

    def view(
        self, corpus: str | None = None, at: str | None = None, worktree: bool = True, vectors: bool = False
    ) -> CorpusView:
        """The pages to search: HEAD's (caught up if stale) plus the worktree, or those of revision `at`."""
        return self.source(corpus).view(at, worktree, vectors)

    # ---- search ----------------------------------------------------------------------------------

    def search(self, request: SearchRequest | str, corpus: CorpusSpec = None, **asked: Any) -> SearchResult:
        """Search one corpus (None: the default one), or several ("a,b", a list, or "all": `searchable_corpora`)
        fused into one ranking whose pages are labelled with their corpus. `request` is a `SearchRequest`, or its
        query with the corpus and the other fields as keywords: `search("deploy", mode="lexical")`."""
        if isinstance(request, str):
            request = SearchRequest(request, corpus, **asked)
        query = request.query
        check_query(query)  # first: a 100 MB query is not even stripped
        if not query or not query.strip():
            raise UsageError('the query is empty; say what to look for, e.g. gitwiki ground "how do we deploy"')
        options = SearchOptions.build(self.config.search, request)
        known = lambda name: name in self.corpus_names()  # noqa: E731 (asked only for a search of several)
        every = self.searchable_corpora
        return search_corpora(
            query.strip(), request.corpus, options, self.source, known, every, request.at, request.worktree
        )

    # ---- status ----------------------------------------------------------------------------------

    def status(self) -> list[CorpusStatus]:
        head = self.repo.head()
        return [self.corpus_status(c, head) for c in self.config.corpora]

    def corpus_status(self, c: CorpusConfig, head: Commit | None) -> CorpusStatus:
        state = self.store.state(c.name)
        pages = self.store.pages(c.name) if state else {}
        tree = corpus_tree(self.repo, c, head)
        return CorpusStatus(
            name=c.name,
            path=c.path,
            pages=len(pages),
            chunks=self.store.chunk_count(set(pages.values())),
            indexed_commit=state.commit if state else None,
            head_commit=head.id if head else None,
            fresh=state is not None and state.tree == tree,
            dirty=tuple(sorted(self.repo.worktree_changes(c))),
            model=state.model if state else None,
            indexed_at=state.indexed_at if state else None,
            submodules=tuple(self.repo.submodules(c, tree)),
        )

    def close(self) -> None:
        self.local.close()
        self.reopen()
        self.repositories.close()

    def reopen(self) -> None:
        """Close the index and forget everything read from it (its file is about to be replaced, e.g. by
        `gitwiki pull`); the next use opens it again."""
        if "store" in self.__dict__:
            self.store.close()
        for name in ("store", "searcher"):  # the cached_property values
            self.__dict__.pop(name, None)
        self.local.forget()


def age(seconds_since_epoch: float | None) -> str:
    if seconds_since_epoch is None:
        return "never"
    delta = max(0, int(time.time() - seconds_since_epoch))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if delta >= size:
            return f"{delta // size}{unit} ago"
    return f"{delta}s ago"
