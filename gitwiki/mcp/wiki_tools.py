"""The wiki's tool bodies, for both ways a session is answered: the MCP SDK's (`mcp.server.build_server`
registers them, reading their parameters' types from `mcp.schema`) and the owner's lean path (`mcp.lean`, which
validates a call against tools.json's schemas and calls them directly). Nothing here imports the SDK or pydantic:
the annotations stay strings until the SDK's registration evaluates them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, Protocol

from gitwiki.errors import NotFoundError, UsageError
from gitwiki.markdown.footnotes import footnote
from gitwiki.operations.ground import footer_notes
from gitwiki.pages import page_outline, pages
from gitwiki.search.outline import outline
from gitwiki.search.request import SearchRequest
from gitwiki.search.searcher import CorpusView, SearchResult
from gitwiki.sources.source import Page
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from pydantic import Field

    from gitwiki.mcp.schema import Corpora, Corpus, PagePath
    from gitwiki.operations import writes

__all__ = ["Annotated", "Literal"]  # what the string annotations name, evaluated by `mcp.schema.namespace`


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
        from gitwiki.operations import writes  # 20 ms of imports (lint) a session that only reads does without

        report = writes.add_page(
            self.wiki, self._writable(corpus), path, content, overwrite, commit=self.wiki.config.mcp.commit_writes
        )
        return result(_write_text(report), report._asdict())

    def delete_markdown(self, path: PagePath, corpus: Corpus = None) -> Answer:
        """Delete a page, update the index.md blocks of its folders and drop it from the index."""
        from gitwiki.operations import writes

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
