"""Where a corpus's pages come from, behind one interface: the local checkout (`wiki.LocalCorpus`), a synced
[[repository]] (`repositories.RepositoryCorpus`) and the shared LanceDB table (`sources.shared_index.SharedCorpus`).

`Wiki.source(name)` resolves a corpus name to its source, so the MCP server, the CLI and the hooks never ask which
kind a corpus is; a source that cannot do something (write to another repository, read a page from a table of
chunks) refuses with an error that says why and what to do instead. A query over several corpora searches each
source and fuses the per-corpus rankings here (`fuse`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from gitwiki.config import CorpusConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.git.gitrepo import HistoryEntry
from gitwiki.index.embed import Embedder
from gitwiki.pages.pages import ListedPage, folder_summary
from gitwiki.search.ranking import dbsf
from gitwiki.search.searcher import CorpusView, DocResult, Searcher, SearchOptions, SearchResult

# The corpora a query names: None (the default one), one name, "a,b", ALL, or a list of names.
CorpusSpec = str | Sequence[str] | None
ALL = "all"
# Each corpus of a search over several is asked for at least POOL pages, so that the normalization of its page
# scores sees more than the few pages shown. wiki-dev split across two corpora (bench/cross_corpus_eval.py,
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


def search_view(
    searcher: Searcher,
    view: CorpusView,
    query: str,
    options: SearchOptions,
    embedder: Embedder | None,
    corpus: CorpusConfig,
    read: Callable[[str], str],
    fix: str,
) -> SearchResult:
    """Search a source's view of `corpus` with its own searcher, with the index.md summary of each result's folder
    (`read`: a repo-relative page's text as the view has it); `fix` says how to give an empty corpus pages."""
    if not view.pages:
        where = corpus.prefix or "the repo root"
        raise NotFoundError(
            f"corpus {corpus.name!r} has no pages under {where} matching {', '.join(corpus.include)}; {fix}"
        )
    found = searcher.search(view, query, options, embedder)
    folders: dict[str, str] = {}
    for folder in dict.fromkeys(d.path.rpartition("/")[0] for d in found.docs):
        summary = folder_summary(folder, view.pages, read)
        if summary:
            folders[folder] = summary
    return found._replace(folders=tuple(folders.items()))


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
    """The search of one corpus, or of several fused into one ranking labelled by corpus; every name is checked
    (`requested`, `source`) before any is searched."""
    names = requested(corpus, known, every)
    if names is None:
        return source(None if corpus is None else str(corpus)).search(query, options, at, worktree)
    sources = [source(name) for name in names]
    each = pooled(options)
    return fuse([(s, s.search(query, each, at, worktree)) for s in sources], options)


def pooled(options: SearchOptions) -> SearchOptions:
    """The options each corpus of a search over several is searched with (see POOL)."""
    depth = max(options.top_files, POOL)
    return options._replace(top_files=depth, limit=max(options.limit, depth * options.chunks_per_file))


def fuse(results: Sequence[tuple[CorpusSource, SearchResult]], options: SearchOptions) -> SearchResult:
    """One ranking over several corpora's results, each page labelled with its corpus.

    Each corpus's page scores are put on a common scale with `ranking.dbsf` before they are merged: a corpus's scores
    depend on its mode (BM25 alone is unbounded, fused scores lie near 0–1) and on its own candidates. On wiki-dev
    split in two, hybrid MRR@10 0.895 against 0.870 merging the raw scores (docs/research/cross-corpus.md). A page
    reached through two overlapping corpora (a wiki folder and the whole repository) appears once, at its better
    place. The first `options.top_files` pages are kept, with `options.limit` chunks in all.
    """
    scored: list[tuple[float, int, tuple[tuple[str, str], DocResult]]] = []
    for order, (source, found) in enumerate(results):
        normalized = dict(dbsf([(i, d.score) for i, d in enumerate(found.docs)]))
        for i, doc in enumerate(found.docs):
            scored.append((normalized[i], order, (source.page_key(doc.path), doc._replace(corpus=source.name))))
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
    names = [found.corpus for _, found in results]
    modes = sorted({found.mode for _, found in results})
    return SearchResult(
        query=results[0][1].query,
        corpus=",".join(names),
        commit="",
        mode=modes[0] if len(modes) == 1 else "+".join(modes),
        docs=docs,
        dirty=tuple(f"{r.corpus}:{p}" for _, r in results for p in r.dirty),
        lexical_only=tuple(f"{r.corpus}:{p}" for _, r in results for p in r.lexical_only),
        folders=tuple((f"{r.corpus}:{folder}", text) for _, r in results for folder, text in r.folders),
        corpora=tuple((r.corpus, r.commit) for _, r in results),
    )
