"""One search as a caller asks it: `SearchRequest`, built once by an adapter (the CLI's `ground`, the MCP `ground`
tool) or a Python caller and passed whole to `Wiki.search`, which resolves its options against [search]
(`SearchOptions.build`) for the ranking.

A new search option is a field here and a field of `searcher.SearchOptions` (plus the flag or tool parameter that
offers it): nothing between the adapter and the ranking names it. Light on import: the CLI builds one before it
knows whether it needs the library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchRequest:
    """What to look for, where, and the options the caller set (None or False: the [search] default).

    `corpus` is one corpus (None: the default one), several as "a,b" or a list, or "all"; `at` a revision to search
    as of; `worktree` False searches the committed pages only. The option fields are the ones of
    `searcher.SearchOptions` of the same names."""

    query: str
    corpus: str | Sequence[str] | None = None
    mode: str | None = None
    top_files: int | None = None
    chunks_per_file: int | None = None
    limit: int | None = None
    snippet_chars: int | None = None
    full: bool = False
    fusion: str | None = None
    at: str | None = None
    worktree: bool = True
    explain: bool = False  # trace each page's numbers (DocResult.explain)
