"""`gitwiki serve` for a reader without a checkout: `ground` and `list_corpora` answered from the LanceDB table
at `[storage] uri` (or `--uri`), a thin adapter over `sources.shared_index.SharedIndex`.

The table holds chunks, not whole pages, so the page tools (read, outline, list, write) are not offered. The
reader moves to each newer export by itself (it checks the table's tags before each call).
"""

from __future__ import annotations

import logging
import threading

from mcp.server.mcpserver import MCPServer

from gitwiki import __version__
from gitwiki.config import Config
from gitwiki.mcp.early import SERVER_NAME
from gitwiki.mcp.server import READ, Answer, GroundTool, StrictServer, guarded, result
from gitwiki.search.lance_index import LanceReader
from gitwiki.sources.shared_index import SharedIndex

log = logging.getLogger("gitwiki.mcp")

INSTRUCTIONS = """\
gitwiki serves a shared, read-only copy of a markdown wiki (the last exported commit).

- Find things with `ground` (hybrid BM25 + embedding search). Results come per page, each with the
  best sections: heading breadcrumb, line range (`path:start-end`) and a snippet.
- `list_corpora` names the corpora the index holds and the commit each reflects.
- There is no checkout behind this server: pages cannot be read whole or changed here.
"""


class SharedTools(GroundTool):
    """`ground` and `list_corpora` over the shared table: the same tool, schema and answer as a checkout's."""

    def __init__(self, shared: SharedIndex) -> None:
        super().__init__(shared)
        self.shared = shared

    def list_corpora(self) -> Answer:
        """List the corpora in the shared index and the commit each reflects."""
        rows = [self.shared.source(name).status() for name in self.shared.corpus_names()]
        text = "\n".join(f"{r['name']}  indexed {r['indexed_commit'][:12]}" for r in rows)
        return result(text, {"corpora": rows, "uri": self.shared.uri})


def build_server(reader: LanceReader, config: Config, serial: threading.Lock) -> MCPServer:
    app = StrictServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    tools = SharedTools(SharedIndex(reader, config))
    app.add_tool(guarded(tools.ground, serial), name="ground", annotations=READ)
    app.add_tool(guarded(tools.list_corpora, serial), name="list_corpora", annotations=READ)
    return app


def serve(uri: str, config: Config) -> None:
    """Serve the table at `uri` on stdin/stdout until the client hangs up (logging set up by the caller)."""
    reader = LanceReader(uri)  # a missing table is the user's to fix before any client connects
    log.info("serving the shared index at %s", uri)
    build_server(reader, config, threading.Lock()).run("stdio")
