"""Writing and deleting pages as one step: the file, the index blocks of the folders above it, the
optional commit, the search index and advisory lint. The MCP page tools call this, and so should any
other feature that writes pages, so that every write leaves the wiki consistent.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from gitwiki.config import CorpusConfig
from gitwiki.errors import GitwikiError
from gitwiki.fs import UnsafeFile, read_page_file, write_page_file
from gitwiki.git.gitcli import blob_id
from gitwiki.lint import lint_document
from gitwiki.markdown.document import Document, parse
from gitwiki.pages import index_blocks, pagefacts
from gitwiki.pages.pagefacts import FactsCache
from gitwiki.pages.pages import PageRef, locate, remove_page, write_page
from gitwiki.search.searcher import CorpusView
from gitwiki.wiki import Wiki


class WriteReport(NamedTuple):
    corpus: str
    path: str  # repo-relative, as search and every page tool print it
    absolute_path: str
    action: str  # "created", "overwritten" or "deleted"
    index_files: list[str]  # ancestor index.md files regenerated or scaffolded (repo-relative)
    findings: list[dict[str, Any]]  # advisory lint findings for the written page
    commit: str | None  # the commit made when the caller asked for one
    indexed_commit: str  # the commit the index answers for after the write
    dirty: list[str]  # uncommitted pages now folded into search


def add_page(
    wiki: Wiki,
    corpus: str | None,
    path: str,
    content: str,
    overwrite: bool = False,
    *,
    commit: bool = False,
    scaffold: bool = True,
) -> WriteReport:
    """Write a page, refresh its ancestor index blocks (`scaffold`: the corpus's front index made first if it is
    missing), commit it with them when `commit` (the caller's setting: [mcp] commit_writes, [memory] commit), fold
    it into the index, lint it."""
    c = wiki.corpus(corpus)
    ref = locate(wiki.root, c, path, for_write=True)
    with wiki.store.lock():  # one writer at a time: ancestor index.md files are shared by every page below them
        _check_ancestors(wiki, c, ref)
        if commit:
            wiki.repo.check_committable()  # a write the caller wants committed is refused before it is made
        previous = _old_bytes(ref) if overwrite else None
        created = write_page(ref, content, overwrite=overwrite, max_bytes=wiki.config.mcp.max_page_bytes)
        try:
            same = previous is not None and _listed_the_same(wiki, c, ref, previous, content)
            index_files = [] if same else _refresh_ancestors(wiki, c, ref, scaffold=scaffold, commit=commit)
            made = _commit(wiki, "add_markdown", ref, index_files) if commit else None
        except GitwikiError:
            _undo(wiki, c, ref, None if created else previous)
            raise
    # Parsed for lint before the view indexes it: indexing then reads the outline from the same parse.
    doc = parse(ref.repo_path, content)
    view = wiki.view(c.name)  # parses just the new page versions (the worktree overlay)
    # The page itself is embedded now (in `gitwiki serve`, on its background thread once this returns); the
    # regenerated index.md above it (1,000 links on the front page of a 1,000-page wiki, many chunks) waits for
    # the next hybrid search, as it did before.
    # The page can be gone from the view already (another process deleted or moved it, or swapped its folder
    # for a symlink): then there is nothing of it to embed.
    written = view.pages.get(ref.repo_path)
    if written is not None:
        wiki.local.embed_blobs({written})
    findings = _lint(wiki, doc, set(view.pages))
    return _report(ref, "created" if created else "overwritten", index_files, findings, made, view)


def delete_page(wiki: Wiki, corpus: str | None, path: str, *, commit: bool = False) -> WriteReport:
    """Delete a page, refresh its ancestor index blocks, commit that when `commit`, prune its index rows."""
    c = wiki.corpus(corpus)
    ref = locate(wiki.root, c, path, for_write=True)
    with wiki.store.lock():
        _check_ancestors(wiki, c, ref)
        if commit:
            wiki.repo.check_committable()
        previous = _old_bytes(ref)
        remove_page(ref)
        try:
            index_files = _refresh_ancestors(wiki, c, ref, scaffold=False, commit=commit)
            made = _commit(wiki, "delete_markdown", ref, index_files) if commit else None
        except GitwikiError:
            _undo(wiki, c, ref, previous)
            raise
    view = wiki.view(c.name)
    wiki.prune(keep=set(view.pages.values()))
    return _report(ref, "deleted", index_files, [], made, view)


@functools.lru_cache(maxsize=8)
def _facts(index_dir: Path) -> FactsCache:
    """One page-facts cache per index dir for the life of the process, used under the writer lock: what it
    has read stays in memory (every page's title for the front index.md's listing), sparing each write
    ~1,000 row reads in a 1,000-page wiki."""
    return FactsCache.load(index_dir)


def _check_ancestors(wiki: Wiki, corpus: CorpusConfig, ref: PageRef) -> None:
    """Refuse a write before it touches anything: an ancestor index.md that is a symlink or has a malformed
    block would fail its refresh after the page was written, leaving the page changed but the write refused
    (and, when the caller commits, uncommitted)."""
    index_blocks.check_above(wiki.root, wiki.config, corpus, ref.repo_path)


def _old_bytes(ref: PageRef) -> bytes | None:
    try:
        return read_page_file(ref.root, ref.repo_path)
    except FileNotFoundError:
        return None


def _put_back(ref: PageRef, previous: bytes | None) -> None:
    """Undo the page write of a refused write (an index.md swapped between the check and the refresh):
    the old bytes, or no page (and none of the folders the write made)."""
    if previous is None:
        remove_page(ref)
    else:
        write_page_file(ref.root, ref.repo_path, previous, overwrite=True)


def _undo(wiki: Wiki, corpus: CorpusConfig, ref: PageRef, previous: bytes | None) -> None:
    """Put the page back as it was after a write that failed on its way (an index.md swapped under it, a commit
    the repository could not take): an acknowledged write is never half made, and a refused one leaves
    nothing. The index blocks above it are refreshed again to list what is there; if that fails too, the
    index-blocks hook brings them up to date."""
    _put_back(ref, previous)
    with contextlib.suppress(GitwikiError, OSError):
        _refresh_ancestors(wiki, corpus, ref, scaffold=False)


def _listed_the_same(wiki: Wiki, corpus: CorpusConfig, ref: PageRef, previous: bytes, content: str) -> bool:
    """Whether an overwrite leaves every index block above the page as it is: blocks list pages by path,
    title and summary only, so when the path stays and the title and summary do (a memory store appends
    an entry below them) and the front index exists, there is nothing to refresh. Listing the corpus for a
    refresh asks git three times (docs/research/memory-speed.md). An index file itself is always refreshed
    (its own blocks are in the text written). A listing left stale by a hand edit is the index-blocks hook's to fix."""
    name = wiki.config.index_blocks.filename
    if PurePosixPath(ref.repo_path).name == name or not os.path.lexists(wiki.root / PurePosixPath(corpus.path, name)):
        return False
    facts = _facts(wiki.index_dir)
    old = facts.get("info", blob_id(previous), lambda: pagefacts.decode(previous))
    return old == facts.get("info", blob_id(content.encode("utf-8")), lambda: content)


def _refresh_ancestors(
    wiki: Wiki, corpus: CorpusConfig, ref: PageRef, scaffold: bool, commit: bool = False
) -> list[str]:
    """The index files above the page, refreshed. For a commit they list no page git does not track but this one:
    the block is committed, and a page a killed write left on disk is in no commit (HEAD's index.md linked it)."""
    facts = _facts(wiki.index_dir)
    untracked = frozenset({ref.repo_path}) if commit else None
    result = index_blocks.refresh(
        wiki.root, wiki.config, [ref.repo_path], corpora=[corpus], facts=facts, scaffold=scaffold, untracked=untracked
    )
    facts.save()
    if result.errors:  # a malformed index above the page: say which, as the index-blocks hook would
        raise result.errors[0]
    return result.changed


def _lint(wiki: Wiki, doc: Document, pages: set[str]) -> list[dict[str, Any]]:
    def anchors(repo_path: str) -> list[str] | None:  # other pages' anchors, so `other.md#anchor` links are checked too
        try:
            return pagefacts.anchors(read_page_file(wiki.root, repo_path).decode("utf-8"))
        except (OSError, UnicodeDecodeError, UnsafeFile):
            return None

    return [f._asdict() for f in lint_document(doc, pages, wiki.config, anchors=anchors)]


def _commit(wiki: Wiki, tool: str, ref: PageRef, index_files: list[str]) -> str:
    return wiki.repo.commit_paths([ref.repo_path, *index_files], f"gitwiki: {tool} {ref.repo_path}")


def _report(
    ref: PageRef,
    action: str,
    index_files: list[str],
    findings: list[dict[str, Any]],
    commit: str | None,
    view: CorpusView,
) -> WriteReport:
    return WriteReport(
        ref.corpus, ref.repo_path, str(ref.file), action, index_files, findings, commit, view.commit, list(view.dirty)
    )
