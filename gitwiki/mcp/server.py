"""The MCP server: the wiki's tools over stdio, a thin adapter over `Wiki`, `gitwiki.pages.pages`
and `gitwiki.operations.writes`.

One `Wiki` per process, so the store connection, the dense matrices and the embedding model (loaded
on the first hybrid search) stay warm between calls. Tool calls run one at a time on worker threads:
they share that one SQLite connection. Refusals (`UsageError`, `NotFoundError`) become JSON-RPC
-32602 with the message; anything unexpected becomes -32603 with a short message, the traceback goes
to stderr. stdout carries the protocol only.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import IO, Annotated, Any, Literal, NamedTuple, Protocol, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from gitwiki import __version__
from gitwiki.errors import GitwikiError, NotFoundError, UsageError
from gitwiki.markdown.footnotes import footnote
from gitwiki.mcp.early import (
    ACKNOWLEDGED,
    EARLY_ANSWERS,
    EARLY_METHODS,
    HANDSHAKE,
    LATEST_HANDSHAKE_VERSION,
    LISTEN,
    LISTENED,
    SERVER_NAME,
    STATELESS_METHODS,
    STATELESS_VERSION,
    SUBSCRIPTION,
    EarlyStdio,
    instructions,
    read_lines,
    write_all,
)
from gitwiki.operations import writes
from gitwiki.operations.ground import footer_notes
from gitwiki.pages import page_outline, pages
from gitwiki.search.outline import outline
from gitwiki.search.request import SearchRequest
from gitwiki.search.searcher import CorpusView, SearchResult
from gitwiki.sources.source import ALL, Page
from gitwiki.wiki import Wiki

log = logging.getLogger("gitwiki.mcp")


READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Corpus = Annotated[
    str | None,
    Field(description="Corpus name from list_corpora; omit for the repo's default corpus."),
]
Corpora = Annotated[
    str | list[str] | None,
    Field(
        description=f"Corpus name from list_corpora, a list of names, or '{ALL}' for every corpus: one ranking, each "
        "page labelled with its corpus. Omit for the repo's default corpus."
    ),
]
PagePath = Annotated[
    str,
    Field(
        description="Page path as ground and list_files print it, e.g. 'wiki/guides/deploy.md' (relative to the "
        "corpus folder works too: 'guides/deploy.md'); .md or .markdown."
    ),
]


class Answer(NamedTuple):
    """What a tool body returns: the text written for the model, and the JSON contract for programs."""

    text: str
    data: dict[str, Any]


def result(text: str, data: dict[str, Any]) -> Answer:
    return Answer(text, data)


class Searchable(Protocol):
    """What the `ground` tool searches: a `Wiki`, or the shared LanceDB index (`sources.shared_index.SharedIndex`)."""

    def search(self, request: SearchRequest) -> SearchResult: ...


Notes = Callable[[str | None, SearchResult], dict[str, Any]]


class GroundTool:
    """The `ground` tool over anything `Searchable`; `notes` gives the outline's footer notes for a result searched
    with a mode (`ground.footer_notes` for a checkout; the shared index has none to give)."""

    def __init__(self, corpora: Searchable, notes: Notes = lambda mode, found: {}) -> None:
        self.corpora = corpora
        self.notes = notes

    def ground(
        self,
        query: Annotated[str, Field(description="What to look for, in words: a question or keywords.")],
        corpus: Corpora = None,
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
            Field(
                description="Ranking: hybrid (default) fuses BM25 and embeddings; lexical is BM25 only;"
                " dense is embeddings only."
            ),
        ] = None,
        explain: Annotated[
            bool,
            Field(
                description="Also give each page's ranking numbers (lexical and dense ranks and scores, their"
                " normalization, fused and page scores, what the weak flag saw): after its sections, and in"
                " format json as the page's `explain` object."
            ),
        ] = False,
    ) -> Answer:
        """Search the wiki. Text: a ripgrep-style outline (path:start-end, heading breadcrumb, snippet) per page,
        best first (format json: the `gitwiki ground --json` document). Read the hits with read_markdown and their
        line ranges."""
        found = self.corpora.search(
            SearchRequest(
                query,
                corpus,
                mode=mode,
                top_files=top_files,
                chunks_per_file=chunks_per_file,
                limit=limit,
                snippet_chars=snippet_chars,
                explain=explain,
            )
        )
        return result(outline(found, **self.notes(mode, found)), found.to_json())


class WikiTools(GroundTool):
    """The tool bodies. Each returns an Answer; `guarded` makes it the tool result the client asked for (`format`).
    Each corpus is reached through its source (`Wiki.source`), whatever kind it is."""

    def __init__(self, wiki: Wiki) -> None:
        super().__init__(wiki, functools.partial(footer_notes, wiki))
        self.wiki = wiki

    def _corpus_for_page(self, corpus: str | None) -> str:
        """Page tools must not guess between corpora: a write to the wrong wiki is worse than an error."""
        names = [c.name for c in self.wiki.config.corpora]
        if corpus is None and self.wiki.default is None and len(names) > 1:
            raise UsageError(f"this repo has {len(names)} corpora; pass corpus as one of: {', '.join(names)}")
        return self.wiki.corpus(corpus).name

    def _writable(self, corpus: str | None) -> str:
        name = self._corpus_for_page(corpus)
        self.wiki.source(name).check_writable()
        return name

    def list_corpora(self) -> Answer:
        """List every corpus (a folder of markdown pages): name, path, page count, indexed commit, fresh or stale."""
        rows = [self.wiki.source(name).status() for name in self.wiki.corpus_names()]
        text = "\n".join(
            f"{r['name']}  {r['path'] or '.'}/  {r['pages']} pages  indexed {(r['indexed_commit'] or '-')[:12]} "
            f"({r['state']})" + (f"  {len(r['dirty'])} uncommitted" if r["dirty"] else "")
            for r in rows
        )
        return result(text, {"corpora": rows})

    def list_files(
        self,
        corpus: Corpus = None,
        glob: Annotated[
            str | None,
            Field(
                description="fnmatch pattern on the page path, repo- or corpus-relative, e.g. 'wiki/guides/*.md', "
                "'guides/*.md' or '**/deploy*'."
            ),
        ] = None,
    ) -> Answer:
        """List the corpus's pages as searched (HEAD plus uncommitted and untracked pages): [{path, absolute_path}],
        paths repo-relative as ground prints them."""
        view, listed = self.wiki.source(corpus).files(glob)
        prefix = self.wiki.corpus(view.corpus).prefix
        files = [f._replace(path=prefix + f.path) for f in listed]
        text = "\n".join(f.path for f in files) + "\n" + _footer(len(files), "pages", view)
        return result(text, {**_freshness(view), "files": [f._asdict() for f in files]})

    def list_tree(
        self,
        corpus: Corpus = None,
        path: Annotated[
            str | None,
            Field(description="Folder to start from, repo- or corpus-relative; omit for the corpus root."),
        ] = None,
        depth: Annotated[
            int | None, Field(ge=1, description="Folder levels to expand; deeper folders show only their page count.")
        ] = None,
    ) -> Answer:
        """The corpus's pages as a folder tree {path, absolute_path, pages, summary, files, subdirs}: summary is the
        folder's index.md description or first paragraph. Folders without pages are left out."""
        view, node = self.wiki.source(corpus).tree(path or "", depth)
        _repo_paths(node, self.wiki.corpus(view.corpus).path)
        text = "\n".join(_tree_lines(node, 0)) + "\n" + _footer(node["pages"], "pages", view)
        return result(text, {**_freshness(view), "tree": node})

    def _page(self, corpus: str | None, path: str) -> Page:
        """One page as it is now: on disk (uncommitted edits included) or in a synced repository; its `path`
        repo-relative, as every tool prints it."""
        page = self.wiki.source(self._corpus_for_page(corpus)).read(path)
        return page._replace(path=self._repo_path(page.corpus, page.path))

    def _repo_path(self, corpus: str, path: str) -> str:
        """A corpus-relative page path as ground prints it."""
        return self.wiki.corpus(corpus).prefix + path

    def outline_markdown(self, path: PagePath, corpus: Corpus = None) -> Answer:
        """A page's map before the page: its H1–H3 sections with line ranges and sizes in bytes. Read one with
        read_markdown and 'page.md#section/subsection' or 'page.md:START-END'."""
        page = self._page(corpus, path)
        entries = page_outline.outline(page.text)
        data = {"corpus": page.corpus, "path": page.path, "sections": [e._asdict() for e in entries], **page.state}
        return result(page_outline.render(page.path, entries), data)

    def read_markdown(
        self,
        path: Annotated[
            str,
            Field(
                description="Page path as ground prints it, e.g. 'wiki/guides/deploy.md' (or relative to the corpus "
                "folder); add '#setup/linux' (heading slugs or texts, outermost first) for one section or ':10-40' "
                "for a line range."
            ),
        ],
        corpus: Corpus = None,
        start_line: Annotated[
            int | None, Field(ge=1, description="First line to return (1-based); omit for the start.")
        ] = None,
        end_line: Annotated[
            int | None, Field(ge=1, description="Last line to return (inclusive); omit for the end.")
        ] = None,
    ) -> Answer:
        """Read a page (or a section or line range of it) verbatim, as it is on disk now, uncommitted edits
        included."""
        address = page_outline.parse_address(path)
        if address.path != path and (start_line is not None or end_line is not None):
            raise UsageError(f"{path!r} already names the lines to read; drop start_line/end_line or the address")
        page = self._page(corpus, address.path)
        if address.section is not None:
            found = page_outline.find_section(page.path, page_outline.outline(page.text), address.section)
            start_line, end_line = found.start_line, found.end_line
        elif address.start_line is not None:
            start_line, end_line = address.start_line, address.end_line
        lines = pages.page_lines(
            page.path, page.absolute_path, page.text, start_line, end_line, self.wiki.config.mcp.max_page_bytes
        )
        return result(lines.text, {"corpus": page.corpus, **lines._asdict(), **page.state})

    def read_many(
        self,
        paths: Annotated[
            list[str],
            Field(
                description="Pages, sections ('page.md#setup', 'page.md:10-40') or globs ('guides/*.md'), "
                "read in this order."
            ),
        ],
        corpus: Corpus = None,
        max_bytes: Annotated[
            int, Field(ge=1, description="Stop before the part that would pass this many bytes in all (default 20000).")
        ] = 20_000,
    ) -> Answer:
        """Read several pages or sections in one call, in order, up to max_bytes in all; the parts left out are
        listed with their sizes, to read by section or in another call."""
        name = self.wiki.corpus(self._corpus_for_page(corpus)).name
        parts: list[dict[str, Any]] = []
        left_out: list[dict[str, Any]] = []
        used = 0
        for address in self._expand(name, paths):
            read = self.read_markdown(address, name)
            text = read.text
            size = len(text.encode("utf-8"))
            if left_out or used + size > max_bytes:
                left_out.append({"path": address, "bytes": size})
                continue
            used += size
            parts.append(read.data)
        shown = [f"==> {p['path']}:{p['start_line']}-{p['end_line']} <==\n{p['text']}" for p in parts]
        if left_out:
            listed = ", ".join(f"{p['path']} ({p['bytes']} bytes)" for p in left_out)
            shown.append(f"[left out past max_bytes {max_bytes}: {listed}; read them by section or in another call]")
        data = {"corpus": name, "parts": parts, "bytes": used, "left_out": left_out}
        return result("\n".join(shown), data)

    def _expand(self, corpus: str, paths: list[str]) -> list[str]:
        """Page addresses in order, each glob replaced by the pages it matches (sorted); an empty glob is refused."""
        out: list[str] = []
        for path in paths:
            if not any(ch in path for ch in "*?["):
                out.append(path)
                continue
            found = self.wiki.source(corpus).files(path)[1]
            if not found:
                raise NotFoundError(f"no page matches {path!r} in corpus {corpus!r}; list_files shows the pages there")
            out += [self._repo_path(corpus, f.path) for f in found]
        return out

    def add_markdown(
        self,
        path: PagePath,
        content: Annotated[str, Field(description="The whole page as markdown (UTF-8); front matter allowed.")],
        corpus: Corpus = None,
        overwrite: Annotated[
            bool, Field(description="Replace the page if it exists (otherwise an existing page is refused).")
        ] = False,
    ) -> Answer:
        """Create or replace a page atomically, update the index.md blocks of its folders, index it, and return
        lint findings as advisory warnings (the write is kept either way)."""
        report = writes.add_page(
            self.wiki, self._writable(corpus), path, content, overwrite, commit=self.wiki.config.mcp.commit_writes
        )
        return result(_write_text(report), report._asdict())

    def delete_markdown(self, path: PagePath, corpus: Corpus = None) -> Answer:
        """Delete a page, update the index.md blocks of its folders and drop it from the index."""
        report = writes.delete_page(self.wiki, self._writable(corpus), path, commit=self.wiki.config.mcp.commit_writes)
        return result(_write_text(report), report._asdict())

    def index(
        self,
        corpus: Annotated[str | None, Field(description="Only this corpus; omit for all.")] = None,
    ) -> Answer:
        """Bring the search index up to HEAD incrementally (only changed pages are parsed and embedded).
        Searches do this by themselves; call it to pay the cost up front. Returns counts and duration."""
        reports = self.wiki.index(corpus)
        return result("\n".join(r.summary() for r in reports), {"reports": [r.to_json() for r in reports]})

    def get_footnote(
        self,
        page: PagePath,
        footnote_number: Annotated[int | str, Field(description="The footnote label: 3 for [^3], or a named label.")],
        corpus: Corpus = None,
    ) -> Answer:
        """The text of footnote [^n] in a page (its definition `[^n]: ...`, continuation lines included)."""
        label = str(footnote_number).strip().removeprefix("[^").removesuffix("]")
        found = self.wiki.source(corpus).read(page)
        found = found._replace(path=self._repo_path(found.corpus, found.path))
        line, text = footnote(found.text, label, found.path)
        return result(text, {"corpus": found.corpus, "path": found.path, "label": label, "line": line, "text": text})

    def page_history(
        self,
        path: PagePath,
        corpus: Corpus = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most recent commits to return (default 20).")] = 20,
    ) -> Answer:
        """Commits on HEAD that changed a page, newest first: id, author, date, subject (from git log)."""
        source = self.wiki.source(corpus)
        shown, entries = source.history(path, limit)
        shown = self._repo_path(source.name, shown)
        text = "\n".join(f"{e.commit[:12]}  {e.date[:10]}  {e.author}  {e.subject}" for e in entries) or (
            f"{shown} has no commits yet (new, uncommitted page)"
        )
        return result(text, {"corpus": source.name, "path": shown, "commits": [e._asdict() for e in entries]})


TOOLS: dict[str, ToolAnnotations] = {
    "list_corpora": READ,
    "list_files": READ,
    "list_tree": READ,
    "ground": READ,
    "read_markdown": READ,
    "outline_markdown": READ,
    "read_many": READ,
    "get_footnote": READ,
    "page_history": READ,
    "add_markdown": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
    "delete_markdown": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "index": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
}


class StrictServer(MCPServer[Any]):
    """The SDK's server, but a tool argument the tool does not take is refused (-32602, naming the ones it
    takes), as an action's parameter it does not read is (memory.actions): the SDK's argument models drop
    unknown keys, so helix's `compact` with `log` or `mode` ran as a plain compact, and a misspelt option
    (`limt`) was silently its default."""

    _takes: dict[str, frozenset[str]] | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._takes is None:
            self._takes = {t.name: frozenset(t.input_schema.get("properties", {})) for t in await self.list_tools()}
        takes = self._takes.get(name)
        unknown = sorted(set(arguments) - takes) if takes is not None and isinstance(arguments, dict) else []
        if unknown:
            log.info("%s refused: unknown arguments %s", name, unknown)
            raise MCPError(
                INVALID_PARAMS, f"{name} does not take {', '.join(unknown)}; it takes: {', '.join(sorted(takes or ()))}"
            )
        return await super().call_tool(name, arguments, context)


def build_server(wiki: Wiki, serial: threading.Lock, note: str | None = None) -> MCPServer:
    """`note`: the instructions' last line (what `mcp.early` answered with, so the SDK says the same)."""
    from gitwiki.mcp import memory as mcp_memory

    app = StrictServer(SERVER_NAME, instructions=instructions(note), version=__version__, log_level="WARNING")
    tools = WikiTools(wiki)
    for name, hints in TOOLS.items():
        app.add_tool(guarded(getattr(tools, name), serial), name=name, annotations=hints)
    mcp_memory.register(app, wiki, lambda method: guarded(method, serial))  # memory_* tools, docs/memory-tools.md
    return app


# Every tool takes `format`. Claude Code shows the model a tool's structuredContent instead of its text when there
# is one (a recorded request: 3,953 characters of ground JSON in place of the 3,208-character outline), so the
# text is all a tool returns by default and no tool declares an outputSchema (which would oblige it to return
# structuredContent); programs ask for the JSON contract with format json.
FORMAT = inspect.Parameter(
    "format",
    inspect.Parameter.KEYWORD_ONLY,
    default="text",
    annotation=Annotated[
        Literal["text", "json"],
        Field(
            description="text (default): the answer written for you to read. json: the JSON document, for "
            "programs (docs/json-contract.md)."
        ),
    ],
)


class Answered(Protocol):
    """What a tool body returns: an Answer, or the memory tools' `replies.Reply` (the same two fields)."""

    @property
    def text(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...


def guarded(method: Callable[..., Answered], serial: threading.Lock) -> Callable[..., CallToolResult]:
    """The tool as the SDK sees it: `method`'s parameters plus `format`; calls serialized; gitwiki errors turned
    into JSON-RPC errors the client can act on."""
    name = method.__name__

    @functools.wraps(method)
    def call(*args: Any, format: str = "text", **kwargs: Any) -> CallToolResult:
        with serial:
            started = time.perf_counter()
            try:
                answer = method(*args, **kwargs)
            except (UsageError, NotFoundError) as e:
                log.info("%s refused: %s", name, e)
                raise MCPError(INVALID_PARAMS, str(e)) from None
            except GitwikiError as e:  # the index is busy or unusable, the model cannot load: not the caller's fault
                log.warning("%s failed: %s", name, e)
                raise MCPError(INTERNAL_ERROR, str(e)) from None
            except Exception as e:
                log.exception("%s crashed", name)
                raise MCPError(
                    INTERNAL_ERROR,
                    f"internal error in {name} ({type(e).__name__}); details are in the server log on stderr",
                ) from None
            finally:
                log.debug("%s took %.1f ms", name, (time.perf_counter() - started) * 1000)
        if format == "json":  # the serialized JSON as text too, as the MCP specification asks of structured results
            text = json.dumps(answer.data, ensure_ascii=False)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer.data)
        return CallToolResult(content=[TextContent(type="text", text=answer.text)])

    signature = inspect.signature(method, eval_str=True)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), FORMAT], return_annotation=CallToolResult
    )
    return call


def sdk_early_answers(client: str = "-") -> dict[str, dict[str, Any]]:
    """What the SDK answers to `mcp.early.EARLY_METHODS` for this server, per protocol era (era → method →
    result; methods it refuses in an era left out), asked over the SDK's own stdio transport in this process: the
    same objects, serialized the same way, as on the wire. `client` names the client asking."""
    info = {"name": client, "version": "1"}
    hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": info}
    meta = {
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientInfo": info,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    handshake = _ask(
        [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": m, "method": m} for m in EARLY_METHODS),
        ]
    )
    listen = {"jsonrpc": "2.0", "id": LISTEN, "method": LISTEN, "params": {"_meta": meta, "notifications": LISTENED}}
    stateless = _ask(
        [*({"jsonrpc": "2.0", "id": m, "method": m, "params": {"_meta": meta}} for m in STATELESS_METHODS), listen]
    )
    acknowledged = stateless[ACKNOWLEDGED]["params"]
    assert acknowledged["_meta"] == {SUBSCRIPTION: LISTEN}, acknowledged  # what acknowledge() sends in its place
    return {  # one connection serves one era: a session each
        HANDSHAKE: {m: handshake[m]["result"] for m in EARLY_METHODS if "result" in handshake[m]},
        STATELESS_VERSION: {m: stateless[m]["result"] for m in STATELESS_METHODS if "result" in stateless[m]}
        | {LISTEN: {"notifications": LISTENED, "acknowledged": acknowledged["notifications"]}},
    }


def _ask(requests: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The SDK's answers (by id) to `requests`, sent on one connection to a server with gitwiki's tools."""
    app = build_server(cast(Wiki, None), threading.Lock())  # listing tools calls none of them
    wire = _Wire([json.dumps(r) + "\n" for r in requests], answers=sum("id" in r for r in requests))

    async def talk() -> None:
        async with stdio_server(wire, wire) as (read, write):  # type: ignore[arg-type]
            lowlevel = app._lowlevel_server  # MCPServer.run_stdio_async's own server, without claiming fd 0 and 1
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(talk)
    # Answers by id; a subscription's acknowledgement (a notification) under the method's name.
    return {m.get("id", m.get("method")): m for m in map(json.loads, wire.written)}


def write_early_answers() -> None:
    """Write `mcp.early.EARLY_ANSWERS` for the installed SDK; tests/mcp/test_early.py says when it is due."""
    from importlib.metadata import version

    shipped = {"gitwiki": __version__, "mcp": version("mcp"), "eras": sdk_early_answers()}
    EARLY_ANSWERS.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


class _Wire:
    """An SDK stdio transport's stdin and stdout in memory: the requests, then open until all answers are out."""

    def __init__(self, lines: list[str], answers: int) -> None:
        self.lines, self.answers = lines, answers
        self.written: list[str] = []
        self.done = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[str]:
        for line in self.lines:
            yield line
        await self.done.wait()

    async def write(self, text: str) -> None:
        self.written.append(text)
        if len(self.written) == self.answers:
            self.done.set()

    async def flush(self) -> None:
        pass


def serve(wiki: Wiki, serial: threading.Lock, stdio: EarlyStdio) -> None:
    """Run the server on stdin/stdout until the client hangs up; `serial` is held by each tool call, `stdio`
    is what `mcp.early.answer_initialize` made of stdin and stdout. Logging is set up by then
    (`mcp.early.log_to_stderr`)."""
    log.info("serving %s (index %s)", wiki.root, wiki.index_dir)
    try:
        build_server(wiki, serial, stdio.note).run("stdio")
    finally:
        stdio.close()
        with serial:  # not under a running warm-up
            wiki.close()


def serve_connection(app: MCPServer, conn: socket.socket) -> None:
    """Run one MCP session of `app` on `conn` (a bridge's, `gitwiki.mcp.bridge`) until the bridge hangs up: the
    SDK's own session over the connection's lines, as over stdio, with an event loop of its own on this thread.
    The bridge checked every line (`mcp.framing`) and answered the early methods, as `mcp.early` does.

    A read-only tool's call is answered by `FastCalls` without the SDK's session layer when it can be (see
    there); every other line, and a call it declines, goes to the SDK in the order it came."""
    send = threading.Lock()  # whole lines on the connection, from the SDK and from FastCalls
    fast = FastCalls(app)
    sdk_r, sdk_w = os.pipe()
    reader = io.TextIOWrapper(os.fdopen(sdk_r, "rb"), encoding="utf-8", errors="replace")

    def pump() -> None:
        try:
            for line in read_lines(b"", conn.fileno()):
                answer = fast.answer(line)
                if answer is None:
                    write_all(sdk_w, line)
                else:
                    with send:
                        conn.sendall(answer)
        except OSError:
            pass
        finally:
            os.close(sdk_w)  # the SDK's session sees the end of its input

    async def run() -> None:
        lines = cast(IO[str], _Lines(conn, send))  # all of a file the SDK's writer uses: write and flush
        async with stdio_server(anyio.wrap_file(reader), anyio.wrap_file(lines)) as (read, write):
            lowlevel = app._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    threading.Thread(target=pump, name="gitwiki-session-read", daemon=True).start()
    try:
        anyio.run(run)
    except (OSError, ExceptionGroup) as e:  # the bridge went away mid-answer
        log.info("a session's connection ended: %s", e)
    finally:
        reader.close()


class _Lines:
    """The SDK's stdout for one session: each line it writes goes whole onto the connection."""

    def __init__(self, conn: socket.socket, send: threading.Lock) -> None:
        self._conn, self._send = conn, send

    def write(self, text: str) -> int:
        with self._send:
            self._conn.sendall(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        pass


class FastCalls:
    """Answers a session's call of a read-only tool directly: the SDK's own argument validation
    (`validate_arguments`, and the unknown-argument refusal of StrictServer) and the same tool function, its
    result dumped as the SDK dumps it, without the SDK's per-call layer (its session's streams, request context
    and the thread hops between them). Only the plain case: a `tools/call` after the session's `initialize`,
    with no `_meta`, that validates and returns a result. Anything else (an error, a refusal, another era) is
    declined (None) and the SDK answers it, running the tool again if it ran: it only reads."""

    def __init__(self, app: MCPServer) -> None:
        self._app = app
        self._tools: dict[str, Any] | None = None
        self._opened = False

    def answer(self, line: bytes) -> bytes | None:
        if not self._opened:
            self._opened = b'"initialize"' in line and _method(line) == "initialize"
            return None
        if b'"tools/call"' not in line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        params = message.get("params") if isinstance(message, dict) else None
        if message.get("method") != "tools/call" or "id" not in message or not isinstance(params, dict):
            return None
        if set(params) - {"name", "arguments"}:
            return None
        arguments = params.get("arguments") or {}
        tool = self._read_only().get(params.get("name"))  # type: ignore[arg-type]
        if (
            tool is None
            or not isinstance(arguments, dict)
            or set(arguments) - set(tool.parameters.get("properties", {}))
        ):
            return None
        try:
            result = tool.fn(**tool.fn_metadata.validate_arguments(arguments))
        except Exception:  # a refusal or a bad argument: the SDK's answer, in the SDK's words
            return None
        if not isinstance(result, CallToolResult):
            return None
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if dumped.get("resultType") == "complete":
            del dumped["resultType"]  # the handshake era's wire has none (the SDK's per-version sieve drops it)
        return (
            json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": dumped}, ensure_ascii=False).encode() + b"\n"
        )

    def _read_only(self) -> dict[str, Any]:
        if self._tools is None:
            manager = self._app._tool_manager
            self._tools = {
                t.name: t
                for t in manager.list_tools()
                if t.annotations is not None and t.annotations.read_only_hint
                if not (t.context_kwarg or t.is_async or t.resolved_params)
            }
        return self._tools


def _method(line: bytes) -> object:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


def _freshness(view: CorpusView) -> dict[str, Any]:
    return {"corpus": view.corpus, "commit": view.commit, "dirty": list(view.dirty)}


def _footer(count: int, noun: str, view: CorpusView) -> str:
    line = f"{count} {noun} · corpus {view.corpus} · commit {view.commit[:12] or '(none)'}"
    return line + (f" · {len(view.dirty)} uncommitted page(s) included" if view.dirty else "")


def _tree_lines(node: dict[str, Any], level: int) -> list[str]:
    pad = "  " * level
    gloss = f"  {node['summary']}" if node.get("summary") else ""
    lines = [f"{pad}{node['path'] or '.'}/  ({node['pages']} pages){gloss}"]
    lines += [f"{pad}  {f['path'].rsplit('/', 1)[-1]}" for f in node["files"]]
    for sub in node["subdirs"]:
        lines += _tree_lines(sub, level + 1)
    return lines


def _repo_paths(node: dict[str, Any], folder: str) -> None:
    """A `list_tree` node with repo-relative paths, as ground prints them (`folder`: the corpus folder)."""
    node["path"] = "/".join(p for p in (folder, node["path"]) if p)
    for f in node["files"]:
        f["path"] = f"{folder}/{f['path']}" if folder else f["path"]
    for sub in node["subdirs"]:
        _repo_paths(sub, folder)


def _write_text(report: writes.WriteReport) -> str:
    lines = [f"{report.action} {report.path} in corpus {report.corpus}"]
    if report.index_files:
        lines.append("updated index blocks: " + ", ".join(report.index_files))
    lines.append(
        f"committed as {report.commit[:12]}"
        if report.commit
        else "not committed (worktree change; [mcp] commit_writes is off)"
    )
    if report.findings:
        lines.append(f"{len(report.findings)} lint finding(s), advisory:")
        lines += [
            f"  {f['path']}:{f['line']}:{f['col']} {f['severity']} {f['code']} {f['message']}" for f in report.findings
        ]
    return "\n".join(lines)
