"""Where a corpus's pages come from, behind one interface: the local checkout (`sources.local.LocalCorpus`), a synced
[[repository]] (`repositories.RepositoryCorpus`) and the shared LanceDB table (`sources.shared_index.SharedCorpus`).

`Wiki.source(name)` resolves a corpus name to its source, so the MCP server, the CLI and the hooks never ask which
kind a corpus is; a source that cannot do something (write to another repository, read a page from a table of
chunks) refuses with an error that says why and what to do instead. A query over several corpora searches the
corpora of one index as one view (`search_union`: one scale) and separate indexes as `Shard`s of one search
(`search_shards`: BM25 with the statistics of all of them, one fusion), so that it ranks as one corpus would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from gitwiki.config import CorpusConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.git.gitrepo import HistoryEntry
from gitwiki.index.embed import Embedder
from gitwiki.index.statistics import TermStats, union
from gitwiki.index.tokens import tokenize
from gitwiki.pages.pages import ListedPage, folder_summary
from gitwiki.search.ranking import PageHit, Weighting, dbsf, rank_pages
from gitwiki.search.relevance import Background, known_share
from gitwiki.search.searcher import CorpusView, DocResult, Pool, Searcher, SearchOptions, SearchResult
from gitwiki.search.shards import kept, merge, split

if TYPE_CHECKING:
    import numpy as np

# The corpora a query names: None (the default one), one name, "a,b", ALL, or a list of names.
CorpusSpec = str | Sequence[str] | None
ALL = "all"
# Each index of a search over several indexes (the checkout beside a synced repository) is asked for at least POOL
# pages, so that the normalization of its page scores sees more than the few pages shown. Measured when every corpus
# was fused this way: wiki-dev split across two corpora (bench/cross_corpus_eval.py,
# docs/research/cross-corpus.md), hybrid MRR@10: 0.855 asking each for the 10 pages shown, 0.873 for 20, 0.880 for
# 40, 0.895 for 100 (all of them); the same pages in one corpus 0.925.
POOL = 50


class Page(NamedTuple):
    """One whole page as a source holds it now."""

    corpus: str
    path: str  # corpus-relative
    absolute_path: str  # '' when the page is not a file on this machine (a synced repository's)
    text: str
    state: dict[str, Any]  # freshness: commit and dirty


class CorpusSource(Protocol):
    """One corpus and what can be done with it. Every method that a source cannot honour raises a `GitwikiError`
    naming the reason (e.g. a read-only repository refuses writes), never a silent empty answer."""

    @property
    def name(self) -> str: ...

    def view(self, at: str | None = None, worktree: bool = True, vectors: bool = False) -> CorpusView:
        """The pages to search: path → blob, with the commit they reflect."""
        ...

    def search(
        self, query: str, options: SearchOptions, at: str | None = None, worktree: bool = True
    ) -> SearchResult: ...

    def files(self, glob: str | None = None) -> tuple[CorpusView, list[ListedPage]]:
        """The corpus's pages as searched, corpus-relative and sorted, with the view they come from."""
        ...

    def tree(self, under: str, depth: int | None) -> tuple[CorpusView, dict[str, Any]]:
        """The pages as a folder tree (`pages.tree`'s nodes, each with its index.md summary)."""
        ...

    def read(self, path: str) -> Page:
        """A corpus-relative page, whole, as it is now."""
        ...

    def history(self, path: str, limit: int) -> tuple[str, list[HistoryEntry]]:
        """(corpus-relative path, the commits that changed the page, newest first)."""
        ...

    def status(self) -> dict[str, Any]:
        """The corpus's `list_corpora` row (docs/json-contract.md)."""
        ...

    def check_writable(self) -> None:
        """Raise a UsageError saying where to change the pages if this source cannot be written or indexed."""
        ...

    def truncated(self) -> tuple[str, ...]:
        """The pages indexed only up to [search] max_page_bytes."""
        ...

    def page_key(self, path: str) -> tuple[str, str]:
        """Who holds the page at repo-relative `path` (as search results give it): the same page reached through two
        overlapping corpora has one key, so a search over both shows it once."""
        ...


class Scope(NamedTuple):
    """What one corpus of an index searches for a query: corpora whose scopes share a searcher (one index, one set
    of BM25 statistics) are searched as one view, so their pages are scored on one scale (`search_corpora`)."""

    searcher: Searcher
    view: CorpusView
    embedder: Embedder | None
    read: Callable[[str], str]  # a repo-relative page's text as the view has it
    config: CorpusConfig
    fix: str  # how to give an empty corpus pages


@runtime_checkable
class Scoped(Protocol):
    """A source searched through a view of an index it may share with other corpora (a checkout's corpora, the two
    corpora of one synced repository)."""

    @property
    def name(self) -> str: ...

    def scope(self, options: SearchOptions, at: str | None = None, worktree: bool = True) -> Scope: ...


@runtime_checkable
class Sharded(Protocol):
    """A source searched without a `Scope` (the shared LanceDB table) that can still take part in a search over
    several indexes, as a `Shard` of its own index for the corpora of that index named."""

    @property
    def name(self) -> str: ...

    @property
    def index(self) -> object:
        """What its corpora are searched in: sources of the same index make one shard."""
        ...

    def shard(self, names: Sequence[str], options: SearchOptions, at: str | None = None) -> Shard: ...


def search_view(scope: Scope, query: str, options: SearchOptions) -> SearchResult:
    """Search a source's view with its own searcher, with the index.md summary of each result's folder."""
    view = _check_pages(scope)
    found = scope.searcher.search(view, query, options, scope.embedder)
    return found._replace(folders=_folders(found.docs, view, scope.read))


def _check_pages(scope: Scope) -> CorpusView:
    if not scope.view.pages:
        corpus = scope.config
        where = corpus.prefix or "the repo root"
        raise NotFoundError(
            f"corpus {corpus.name!r} has no pages under {where} matching {', '.join(corpus.include)}; {scope.fix}"
        )
    return scope.view


def _folders(docs: Sequence[DocResult], view: CorpusView, read: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    folders: dict[str, str] = {}
    for folder in dict.fromkeys(d.path.rpartition("/")[0] for d in docs):
        summary = folder_summary(folder, view.pages, read)
        if summary:
            folders[folder] = summary
    return tuple(folders.items())


def requested(spec: CorpusSpec, known: Callable[[str], bool], every: Callable[[], list[str]]) -> list[str] | None:
    """The corpora `spec` names, in order without repeats; None when it names the default one or a single corpus
    (`known`: a corpus of that exact name exists, so a name holding a comma is still one name)."""
    if spec is None or (isinstance(spec, str) and known(spec)):
        return None
    if isinstance(spec, str):
        parts = every() if spec.strip() == ALL else spec.split(",")
    else:
        parts = list(spec)
    if not all(isinstance(p, str) for p in parts):
        raise UsageError(f"corpus must be a name, a list of names or {ALL!r}, not {spec!r}")
    names = list(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not names:
        raise UsageError(f"no corpus named in {spec!r}; give one name, several as a,b, or {ALL}")
    return names


def search_corpora(
    query: str,
    corpus: CorpusSpec,
    options: SearchOptions,
    source: Callable[[str | None], CorpusSource],
    known: Callable[[str], bool],
    every: Callable[[], list[str]],
    at: str | None = None,
    worktree: bool = True,
) -> SearchResult:
    """The search of one corpus, or of several as one ranking labelled by corpus; every name is checked
    (`requested`, `source`) before any is searched.

    Corpora of one index (`Scoped` sources sharing a searcher) are searched as one view, the union of their pages:
    one BM25 over one candidate set, one normalization, so they rank exactly as one corpus holding their pages
    would. Separate indexes (a synced repository beside the checkout, the shared table) are `Shard`s of one search
    (`search_shards`), on the same scale. Only a source that can do neither would be searched alone and its list
    fused by `fuse`, normalized on its own."""
    names = requested(corpus, known, every)
    if names is None:
        return source(None if corpus is None else str(corpus)).search(query, options, at, worktree)
    sources = [source(name) for name in names]
    # Views are built (and an index brought up to date) only once every name is known to exist.
    groups: dict[int, list[tuple[CorpusSource, Scope | None]]] = {}
    for s in sources:
        scope = s.scope(options, at, worktree) if isinstance(s, Scoped) else None
        index = scope.searcher if scope is not None else s.index if isinstance(s, Sharded) else s
        groups.setdefault(id(index), []).append((s, scope))
    # Searches to merge if nothing shared statistics: one per index of scoped sources, one per other source.
    parts = sum(1 if group[0][1] is not None else len(group) for group in groups.values())
    if parts > 1 and all(scope is not None or isinstance(s, Sharded) for g in groups.values() for s, scope in g):
        embedders: dict[int, Embedder] = {}
        return search_shards(query, [_shard(group, options, at, embedders) for group in groups.values()], options)
    # One index, or a source that cannot share statistics: each searched on its own and the lists fused.
    each = pooled(options) if parts > 1 else options
    results = []
    for group in groups.values():
        first, scope = group[0]
        if scope is None:
            results += [(s, labelled(s.name, s.search(query, each, at, worktree))) for s, _ in group]
        else:
            results.append((first, search_union(query, [(s.name, sc) for s, sc in group if sc is not None], each)))
    return fuse(results, options) if parts > 1 else results[0][1]


def _shard(
    group: Sequence[tuple[CorpusSource, Scope | None]],
    options: SearchOptions,
    at: str | None,
    embedders: dict[int, Embedder],
) -> Shard:
    """The corpora of one index as a `Shard`: a view of their scopes, or the index's own (`Sharded`). Indexes
    with the same embedder share it through `embedders`, so the query is embedded once."""
    first = group[0][0]
    if isinstance(first, Sharded):
        return first.shard([s.name for s, _ in group], options, at)
    scopes = [(s, scope) for s, scope in group if scope is not None]
    embedder = scopes[0][1].embedder
    if embedder is not None:
        shared = embedders.setdefault(id(embedder), OneQuery(embedder))
        scopes = [(s, scope._replace(embedder=shared)) for s, scope in scopes]
    return ViewShard(scopes)


class OneQuery:
    """An embedder that embeds the query of one search once for all the indexes it spans: eight repositories
    embedded it eight times, 55 % of such a search (wiki-dev dealt into 8, hybrid)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self._last: tuple[str, np.ndarray] | None = None

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if self._last is None or self._last[0] != text:
            self._last = (text, self.embedder.embed_query(text))
        return self._last[1]


def search_union(query: str, scopes: Sequence[tuple[str, Scope]], options: SearchOptions) -> SearchResult:
    """Corpora of one index, (name, scope) each, searched as one view (the union of their pages), each page
    labelled with the first corpus that holds it; the result has the shape of a search over several (`labelled`)."""
    union = Union(scopes)
    first = union.first
    found = first.searcher.search(union.view, query, options, first.embedder)
    return union.label(found, found.docs)


class Union:
    """The corpora of one index, (name, scope) each, as one view: the union of their pages, each page owned by the
    first corpus that holds it."""

    def __init__(self, scopes: Sequence[tuple[str, Scope]]) -> None:
        self.views = [(name, _check_pages(scope)) for name, scope in scopes]
        pages: dict[str, str] = {}
        self.owner: dict[str, str] = {}
        for name, view in self.views:
            for path, blob in view.pages.items():
                pages.setdefault(path, blob)
                self.owner.setdefault(path, name)
        self.first = scopes[0][1]
        views = self.views
        self.view = CorpusView(
            ",".join(name for name, _ in views),
            self.first.view.commit,
            pages,
            tuple(dict.fromkeys(p for _, v in views for p in v.dirty)),
            "+".join(v.key for _, v in views),
            tuple(dict.fromkeys(p for _, v in views for p in v.lexical_only)),
        )
        self.reads = {name: scope.read for name, scope in scopes}

    def label(self, found: SearchResult, docs: Sequence[DocResult]) -> SearchResult:
        """`found` (a search of this view) with `docs` as its pages, in the shape of a search over several."""
        owner, views = self.owner, self.views
        folders = _folders(docs, self.view, lambda path: self.reads[owner[path]](path))
        where = {d.path.rpartition("/")[0]: owner[d.path] for d in reversed(docs)}
        return found._replace(
            corpus=self.view.corpus,
            commit="",
            docs=[d._replace(corpus=owner[d.path]) for d in docs],
            dirty=tuple(f"{name}:{p}" for name, v in views for p in v.dirty),
            lexical_only=tuple(f"{name}:{p}" for name, v in views for p in v.lexical_only if found.lexical_only),
            folders=tuple((f"{where[folder]}:{folder}", text) for folder, text in folders),
            corpora=tuple((name, v.commit) for name, v in views),
        )


class Shard(Protocol):
    """One index's part of a search over several separate indexes (`search_shards`): its BM25 statistics for the
    query, its candidates scored with the statistics of all of them, and its pages once they are ranked."""

    @property
    def settings(self) -> tuple[Weighting, int]:
        """How it fuses (`[search] fusion_weight`, normalization, page_share) and how deep each ranker looks."""
        ...

    def statistics(self, query: str) -> TermStats: ...

    def pool(self, query: str, options: SearchOptions, stats: TermStats) -> Pool: ...

    def page_key(self, path: str) -> tuple[str, str]: ...

    def documents(
        self,
        query: str,
        hits: list[PageHit],
        pool: Pool,
        background: Background | None,
        known: float,
        options: SearchOptions,
    ) -> SearchResult:
        """Its ranked pages `hits` as shown, in the shape of a search over several (each page labelled)."""
        ...


class ViewShard:
    """The corpora of one index (`Scoped` sources sharing a searcher) as one view, and that as a `Shard`."""

    def __init__(self, sources: Sequence[tuple[CorpusSource, Scope]]) -> None:
        self.union = Union([(s.name, scope) for s, scope in sources])
        self.source = sources[0][0]
        self.searcher = self.union.first.searcher

    @property
    def settings(self) -> tuple[Weighting, int]:
        return self.searcher.weighting, self.searcher.depth

    def statistics(self, query: str) -> TermStats:
        return self.searcher.statistics(query)

    def pool(self, query: str, options: SearchOptions, stats: TermStats) -> Pool:
        return self.searcher.pool(self.union.view, query, options, self.union.first.embedder, stats)

    def page_key(self, path: str) -> tuple[str, str]:
        return self.source.page_key(path)

    def documents(
        self,
        query: str,
        hits: list[PageHit],
        pool: Pool,
        background: Background | None,
        known: float,
        options: SearchOptions,
    ) -> SearchResult:
        view = self.union.view
        docs = self.searcher.documents(view, query, hits, pool.found, background, known, options)
        lexical_only = view.lexical_only if pool.found.mode != "lexical" else ()
        return self.union.label(SearchResult(query, view.corpus, "", pool.found.mode, [], (), lexical_only), docs)


def search_shards(query: str, shards: Sequence[Shard], options: SearchOptions) -> SearchResult:
    """Separate indexes searched as one would be that held all their pages: each gives its BM25 statistics for
    the query's terms, their sum scores every index's chunks (`index.statistics.bm25`: FTS5's formula, dense
    cosines compare as they are), the candidates are merged (`shards.merge`) and fused, normalized and rolled up
    once (`ranking.rank_pages`); each index then shows its own pages."""
    stats = union(shard.statistics(query) for shard in shards)
    pools = [shard.pool(query, options, stats) for shard in shards]
    weighting, depth = shards[0].settings
    merged = merge(pools, [shard.page_key for shard in shards], depth, options.top_files)
    hits = rank_pages(
        merged.found,
        fusion=options.fusion,
        top_files=options.top_files,
        chunks_per_file=options.chunks_per_file,
        limit=options.limit,
        explain=options.explain,
        weighting=weighting,
    )
    content = set(tokenize(query))
    known = known_share(content, stats.holding) if merged.background is not None else 1.0
    shown = [
        shard.documents(query, mine, kept(merged, i, pool), merged.background, known, options)
        for i, (shard, pool, mine) in enumerate(zip(shards, pools, split(hits, merged, len(shards)), strict=True))
    ]
    by_page = {(i, d.path): d for i, found in enumerate(shown) for d in found.docs}
    docs = [by_page[merged.pages[hit.path]] for hit in hits]
    return SearchResult(
        query=query,
        corpus=",".join(found.corpus for found in shown),
        commit="",
        mode=merged.found.mode,
        docs=docs,
        dirty=tuple(p for r in shown for p in r.dirty),
        lexical_only=tuple(p for r in shown for p in r.lexical_only),
        folders=tuple(f for r in shown for f in r.folders),
        corpora=tuple(c for r in shown for c in r.corpora),
    )


def labelled(name: str, found: SearchResult) -> SearchResult:
    """One corpus's result in the shape of a search over several: pages, dirty pages and folders named by corpus."""
    return found._replace(
        docs=[d._replace(corpus=name) for d in found.docs],
        dirty=tuple(f"{found.corpus}:{p}" for p in found.dirty),
        lexical_only=tuple(f"{found.corpus}:{p}" for p in found.lexical_only),
        folders=tuple((f"{found.corpus}:{folder}", text) for folder, text in found.folders),
        corpora=((found.corpus, found.commit),),
    )


def pooled(options: SearchOptions) -> SearchOptions:
    """The options each corpus of a search over several is searched with (see POOL)."""
    depth = max(options.top_files, POOL)
    return options._replace(top_files=depth, limit=max(options.limit, depth * options.chunks_per_file))


def fuse(results: Sequence[tuple[CorpusSource, SearchResult]], options: SearchOptions) -> SearchResult:
    """One ranking over the results of different indexes (each `labelled`, or a `search_union`), with the source
    that gave each (for `page_key`).

    Each result's page scores are put on a common scale with `ranking.dbsf` before they are merged: a result's
    scores depend on its mode (BM25 alone is unbounded, fused scores lie near 0–1) and on its own index's statistics
    and candidates. On wiki-dev split in two, hybrid MRR@10 0.895 against 0.870 merging the raw scores
    (docs/research/cross-corpus.md). A page reached through two overlapping corpora (a wiki folder and the whole
    repository) appears once, at its better place. The first `options.top_files` pages are kept, with
    `options.limit` chunks in all.
    """
    scored: list[tuple[float, int, tuple[tuple[str, str], DocResult]]] = []
    for order, (source, found) in enumerate(results):
        normalized = dict(dbsf([(i, d.score) for i, d in enumerate(found.docs)]))
        for i, doc in enumerate(found.docs):
            scored.append((normalized[i], order, (source.page_key(doc.path), doc)))
    docs: list[DocResult] = []
    seen, budget = set(), options.limit
    for score, _, (key, doc) in sorted(scored, key=lambda s: (-s[0], s[1])):
        if key in seen:
            continue
        if len(docs) == options.top_files or budget <= 0:
            break
        seen.add(key)
        docs.append(doc._replace(score=score, chunks=doc.chunks[:budget]))
        budget -= len(docs[-1].chunks)
    modes = sorted({found.mode for _, found in results})
    return SearchResult(
        query=results[0][1].query,
        corpus=",".join(found.corpus for _, found in results),
        commit="",
        mode=modes[0] if len(modes) == 1 else "+".join(modes),
        docs=docs,
        dirty=tuple(p for _, r in results for p in r.dirty),
        lexical_only=tuple(p for _, r in results for p in r.lexical_only),
        folders=tuple(f for _, r in results for f in r.folders),
        corpora=tuple(c for _, r in results for c in r.corpora),
    )
