"""One `gitwiki ground`: its options and the text it prints, computed by the one call both the CLI's local path
and a running `gitwiki serve` (over its socket, `serve.server.py`) make, so the two answers are the same bytes.

Light on import (the CLI client builds a `GroundRequest` before it knows whether it needs the library at all):
the search modules are imported by `answer` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitwiki.search.request import SearchRequest

if TYPE_CHECKING:
    from gitwiki.config import Config
    from gitwiki.search.searcher import SearchResult
    from gitwiki.wiki import Wiki

FORMATS = ("outline", "json", "json-pretty")


@dataclass(frozen=True)
class GroundRequest(SearchRequest):
    """A search and how to print it: what `gitwiki ground` asks, here or of a running `gitwiki serve` (whose
    socket carries it field by field, `serve.server._request`)."""

    corpus: str | None = None  # the CLI names one corpus or "a,b": a string on the socket too
    format: str = "outline"
    color: bool = False  # outline only: ANSI styles, when stdout is a terminal


def answer(wiki: Wiki, request: GroundRequest) -> str:
    """What `gitwiki ground` prints on stdout. In a clone without an index the published one is installed first
    (one stderr line says so), as `gitwiki index` does."""
    if request.at is None and wiki.has_no_index_to_start_from():
        from gitwiki.operations.pull import install_published  # fetching and archives: only in a clone without an index

        install_published(wiki, lexical=request.mode == "lexical")
    result = wiki.search(request)
    return render(result, request, **footer_notes(wiki, request.mode, result))


def answer_shared(uri: str, config: Config, request: GroundRequest) -> str:
    """What `gitwiki ground` prints when it answers from the shared LanceDB table at `uri` (no checkout): the
    last exported commit, so neither `--at` nor the worktree applies."""
    from gitwiki.search.lance_index import LanceReader
    from gitwiki.sources.shared_index import SharedIndex

    return render(SharedIndex(LanceReader(uri), config).search(request), request)


def footer_notes(wiki: Wiki, mode: str | None, result: SearchResult) -> dict[str, Any]:
    """`outline`'s footer notes for `result` (searched with `mode`, None: the configured one), the same for the CLI
    and the MCP server's `ground`: why the mode is not the one asked for, and the pages indexed only in part."""
    return {"mode_note": _mode_note(wiki, mode, result), "truncated": _truncated(wiki, result)}


def _mode_note(wiki: Wiki, mode: str | None, result: SearchResult) -> str | None:
    """Hybrid or dense asked, lexical ran because the model does not load: say so and how to fix it, on every
    answer (the stderr warning is said once per index)."""
    from gitwiki.index.embed import model_fix, unavailable

    asked = mode or wiki.config.search.mode
    if result.mode != "lexical" or asked == "lexical":
        return None
    if unavailable(wiki.config.embeddings, wiki.index_dir) is None:
        return None
    return f"no model: {model_fix(wiki.config.embeddings)}"


def _truncated(wiki: Wiki, result: SearchResult) -> tuple[str, ...]:
    """The searched corpora's pages indexed in part (over [search] max_page_bytes): the footer names them, since
    what is past the limit cannot be found. One small file read per query when there are none."""
    if not result.corpora:
        return wiki.source(result.corpus).truncated()
    return tuple(f"{name}:{path}" for name, _ in result.corpora for path in wiki.source(name).truncated())


def render(
    result: SearchResult, request: GroundRequest, mode_note: str | None = None, truncated: tuple[str, ...] = ()
) -> str:
    import json

    from gitwiki.search.outline import outline

    if request.format == "outline":
        return outline(result, color=request.color, mode_note=mode_note, truncated=truncated)
    indent = 2 if request.format == "json-pretty" else None
    return json.dumps(result.to_json(), indent=indent, ensure_ascii=False) + "\n"
