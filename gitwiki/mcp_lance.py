"""`gitwiki serve` for a reader without a checkout: `ground` and `list_corpora` answered from the LanceDB table
at `[storage] uri` (or `--uri`), a thin adapter over `LanceReader`.

The table holds chunks, not whole pages, so the page tools (read, outline, list, write) are not offered. The
reader moves to each newer export by itself (it checks the table's tags before each call).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic import Field

from gitwiki import __version__
from gitwiki.config import Config
from gitwiki.lance_index import LanceReader
from gitwiki.mcp_early import SERVER_NAME
from gitwiki.mcp_server import READ, Corpus, GroundJson, _guarded, result
from gitwiki.outline import outline
from gitwiki.search import SearchOptions

log = logging.getLogger("gitwiki.mcp")

INSTRUCTIONS = """\
gitwiki serves a shared, read-only copy of a markdown wiki (the last exported commit).

- Find things with `ground` (hybrid BM25 + embedding search). Results come per page, each with the
  best sections: heading breadcrumb, line range (`path:start-end`) and a snippet; pass full: true
  for whole sections instead of snippets.
- `list_corpora` names the corpora the index holds and the commit each reflects.
- There is no checkout behind this server: pages cannot be read whole or changed here.
"""


class SharedTools:
    def __init__(self, reader: LanceReader, config: Config) -> None:
        self.reader = reader
        self.config = config

    def list_corpora(self) -> CallToolResult:
        """List the corpora in the shared index and the commit each reflects."""
        rows = [{"name": name, "indexed_commit": commit} for name, commit in sorted(self.reader.corpora().items())]
        text = "\n".join(f"{r['name']}  indexed {r['indexed_commit'][:12]}" for r in rows)
        return result(text, {"corpora": rows, "uri": self.reader.uri})

    def ground(
        self,
        query: Annotated[str, Field(description="What to look for, in words: a question or keywords.")],
        corpus: Corpus = None,
        top_files: Annotated[int | None, Field(ge=1, description="Pages to return (default 5).")] = None,
        chunks_per_file: Annotated[
            int | None, Field(ge=1, description="Best sections shown per page (default 3).")
        ] = None,
        limit: Annotated[int | None, Field(ge=1, description="Cap on sections returned in all (default 50).")] = None,
        snippet_chars: Annotated[
            int | None, Field(ge=1, description="Snippet length in characters (default 240).")
        ] = None,
        mode: Annotated[
            Literal["hybrid", "lexical", "dense"] | None,
            Field(description="Ranking: hybrid (default) fuses BM25 and embeddings; lexical or dense alone."),
        ] = None,
        full: Annotated[bool, Field(description="Whole sections instead of snippets.")] = False,
    ) -> Annotated[CallToolResult, GroundJson]:
        """Search the shared wiki. Text: a ripgrep-style outline per page, best first. Structured: the
        `gitwiki ground --json` document."""
        options = SearchOptions.build(
            self.config.search,
            mode=mode,
            top_files=top_files,
            chunks_per_file=chunks_per_file,
            limit=limit,
            snippet_chars=snippet_chars,
            full=full,
        )
        found = self.reader.ground(self.config, query, corpus, options)
        return result(outline(found), found.to_json())


def build_server(reader: LanceReader, config: Config, serial: threading.Lock) -> MCPServer:
    app = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    tools = SharedTools(reader, config)
    app.add_tool(_guarded(tools.ground, serial), name="ground", annotations=READ, structured_output=True)
    app.add_tool(_guarded(tools.list_corpora, serial), name="list_corpora", annotations=READ)
    return app


def serve(uri: str, config: Config, log_level: str = "WARNING") -> None:
    """Serve the table at `uri` on stdin/stdout until the client hangs up."""
    logging.basicConfig(level=log_level, stream=sys.stderr, format="gitwiki serve: %(levelname)s %(name)s: %(message)s")
    reader = LanceReader(uri)  # a missing table is the user's to fix before any client connects
    log.info("serving the shared index at %s", uri)
    build_server(reader, config, threading.Lock()).run("stdio")
