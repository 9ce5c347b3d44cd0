"""The shared LanceDB table (`gitwiki lance export`) as corpus sources, for a reader without a checkout.

The table holds chunks, not whole pages, and only the last exported commit: its corpora search (one at a time
or fused, as a checkout's do) and refuse the page tools, history and writes with an error that says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from gitwiki.config import Config
from gitwiki.errors import UsageError
from gitwiki.git.gitrepo import HistoryEntry
from gitwiki.index.statistics import TermStats
from gitwiki.pages.pages import ListedPage
from gitwiki.search.lance_index import LanceReader
from gitwiki.search.ranking import PageHit, Weighting
from gitwiki.search.relevance import Background
from gitwiki.search.request import SearchRequest
from gitwiki.search.searcher import CorpusView, Pool, SearchOptions, SearchResult
from gitwiki.sources.source import CorpusSpec, Page, search_corpora

NO_AT = "--at needs a checkout: the shared index holds only the last exported commit"


class SharedCorpus:
    """One corpus of the shared table as a `sources.CorpusSource`."""

    def __init__(self, reader: LanceReader, config: Config, name: str) -> None:
        self.reader = reader
        self.config = config  # [search] and [embeddings]: the query settings
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def _no_pages(self) -> NoReturn:
        raise UsageError(
            f"the shared index at {self.reader.uri} holds chunks, not pages: search corpus {self._name!r} with "
            "ground, and read its pages in a checkout"
        )

    def view(self, at: str | None = None, worktree: bool = True, vectors: bool = False) -> CorpusView:
        self._no_pages()

    def search(self, query: str, options: SearchOptions, at: str | None = None, worktree: bool = True) -> SearchResult:
        if at is not None:
            raise UsageError(NO_AT)
        return self.reader.ground(self.config, query, self._name, options)

    def files(self, glob: str | None = None) -> tuple[CorpusView, list[ListedPage]]:
        self._no_pages()

    def tree(self, under: str, depth: int | None) -> tuple[CorpusView, dict[str, Any]]:
        self._no_pages()

    def read(self, path: str) -> Page:
        self._no_pages()

    def history(self, path: str, limit: int) -> tuple[str, list[HistoryEntry]]:
        self._no_pages()

    def status(self) -> dict[str, Any]:
        return {"name": self._name, "indexed_commit": self.reader.corpora().get(self._name, "")}

    def check_writable(self) -> None:
        raise UsageError(f"the shared index at {self.reader.uri} is read-only: change pages in a checkout and export")

    def truncated(self) -> tuple[str, ...]:
        return ()

    def page_key(self, path: str) -> tuple[str, str]:
        return (self.reader.uri, path)

    @property
    def index(self) -> LanceReader:
        return self.reader

    def shard(self, names: Sequence[str], options: SearchOptions, at: str | None = None) -> LanceShard:
        if at is not None:
            raise UsageError(NO_AT)
        return LanceShard(self.reader, self.config, list(names))


class LanceShard:
    """Corpora of the shared table as one `sources.Shard` of a search beside other indexes: BM25 over the terms the
    SQLite index holds (`LanceReader.statistics`, `LanceReader.pool`), so that its pages rank on their scale."""

    def __init__(self, reader: LanceReader, config: Config, names: list[str]) -> None:
        self.reader = reader
        self.config = config
        self.names = names
        self._rows: dict[int, dict[str, Any]] = {}

    @property
    def settings(self) -> tuple[Weighting, int]:
        search = self.config.search
        return Weighting(search.fusion_weight, search.normalization, search.page_share), search.depth

    def statistics(self, query: str) -> TermStats:
        return self.reader.statistics(query)

    def pool(self, query: str, options: SearchOptions, stats: TermStats) -> Pool:
        embedder = self.reader.embedder(self.config, options.mode)
        found, self._rows = self.reader.pool(query, self.names, options, embedder, stats)
        return found

    def page_key(self, path: str) -> tuple[str, str]:
        return (self.reader.uri, path)

    def documents(
        self,
        query: str,
        hits: list[PageHit],
        pool: Pool,
        background: Background | None,
        known: float,
        options: SearchOptions,
    ) -> SearchResult:
        docs = self.reader.documents(query, hits, self._rows, pool.found, background, known, options)
        corpus = {h.path: self._rows[h.chunks[0][0]]["corpus"] for h in hits}
        commits = self.reader.corpora()
        return SearchResult(
            query,
            ",".join(self.names),
            "",
            pool.found.mode,
            [d._replace(corpus=corpus[d.path]) for d in docs],
            corpora=tuple((name, commits.get(name, "")) for name in self.names),
        )


class SharedIndex:
    """The shared table's corpora by name, searched as `Wiki.search` searches a checkout's."""

    def __init__(self, reader: LanceReader, config: Config) -> None:
        self.reader = reader
        self.config = config

    @property
    def uri(self) -> str:
        return self.reader.uri

    def corpus_names(self) -> list[str]:
        return sorted(self.reader.corpora())

    def source(self, name: str | None = None) -> SharedCorpus:
        """Corpus `name`, else the configured default if the table holds it, else its first."""
        return SharedCorpus(self.reader, self.config, self.reader.corpus(name, self.config.corpus().name))

    def search(self, request: SearchRequest | str, corpus: CorpusSpec = None, **asked: Any) -> SearchResult:
        """As `Wiki.search`: a `SearchRequest`, or its query with the other fields as keywords."""
        if isinstance(request, str):
            request = SearchRequest(request, corpus, **asked)
        if request.at is not None:
            raise UsageError(NO_AT)
        options = SearchOptions.build(self.config.search, request)
        known = lambda name: name in self.reader.corpora()  # noqa: E731 (asked only for a search of several)
        return search_corpora(request.query, request.corpus, options, self.source, known, self.corpus_names)
