"""The pages of one corpus as they are on disk, with their blob ids and titles cached per page version.

What the index-blocks hook and the write path render listings from: git lists the files (so ignored
ones stay out) and gives the blob id of each one its index has unchanged; the others' `lstat` finds the
regular ones, and the page-facts cache spares re-reading unchanged pages.
"""

from __future__ import annotations

import functools
import os
import posixpath
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.config import Config, CorpusConfig, select
from gitwiki.fs import UnsafeFile, read_page_file
from gitwiki.git import gitcli
from gitwiki.git.gitcli import blob_id
from gitwiki.markdown.chunker import fallback_title
from gitwiki.pages import sites
from gitwiki.pages.pagefacts import FactsCache, decode


class PageInfo(NamedTuple):
    title: str  # front matter title, else the first H1, else the file name
    summary: str | None


class WorktreeCorpus:
    """The pages of one corpus on disk (git-ignored files, symlinks, hard-linked files and dot-folders left
    out), with their blob ids and page info from `facts` (by default a cache that lives as long as this object)."""

    def __init__(
        self,
        root: Path,
        corpus: CorpusConfig,
        config: Config,
        facts: FactsCache | None = None,
        untracked: frozenset[str] | None = None,
    ):
        """`untracked`: the pages git does not track that are listed (None: all of them). A committing write lists
        only its own, so the index block it commits names no page HEAD lacks (one a crash left on disk)."""
        self.root = root
        self.corpus = corpus
        self.config = config
        self.facts = facts if facts is not None else FactsCache()
        self._top = os.path.join(root, "")  # paths are joined to it in loops over every page
        # Pages git's index has as they are on disk, with their blob ids; the others by their `lstat`.
        listed = gitcli.index_listing(self._top, corpus.path)
        self._blobs: dict[str, str] = {p: listed.same[p] for p in _pages(corpus, listed.same)}
        others = listed.others
        if untracked is not None:
            others = [p for p in others if p not in listed.untracked or p in untracked]
        self._stats = _stats(self._top, _pages(corpus, others))
        self._stats_read = False
        self.pages = sorted([*self._blobs, *self._stats])
        self._info: dict[str, PageInfo | None] = {}

    def blob(self, path: str) -> str:
        """The page's blob id: git's when its index has the file unchanged, else from the stat cache while
        its `lstat` is unchanged, else by hashing it."""
        if path not in self._blobs:
            if not self._stats_read:  # a listing needs most pages' ids: their stat rows are read in one query
                self.facts.prefetch_stats(self._top, [self._top + p for p in self._stats])
                self._stats_read = True
            full = self._top + path
            blob = self.facts.blob_of(full, self._stats[path])
            if blob is None:
                blob = blob_id(read_page_file(self.root, path))
                self.facts.remember_blob(full, self._stats[path], blob)
            self._blobs[path] = blob
        return self._blobs[path]

    def prefetch_info(self, paths: Iterable[str]) -> None:
        """Read the cached titles of many pages in one query, before `info` asks for them one by one."""
        self.facts.prefetch("info", [self.blob(p) for p in paths])

    def info(self, path: str) -> PageInfo | None:
        """The page's title and summary; None for a page that is not text (lint reports it, GW012) or,
        when its title is not cached, a file git's index has unchanged that is not safe to read: it was
        not `lstat`-ed when listed, and one hard-linked since it was staged is left out as the listing
        would have left it out (with its title cached it is shown: its text is the staged blob)."""
        if path not in self._info:
            blob, data = self.blob(path), b""
            if not self.facts.known("info", blob):
                # extract from exactly the bytes the key is computed from (the file may have changed since)
                try:
                    data = read_page_file(self.root, path)
                except UnsafeFile:
                    if path in self._stats:  # listed by its lstat: it changed since
                        raise
                    self._info[path] = None
                    return None
                blob = self._blobs[path] = blob_id(data)
            self._info[path] = _page_info(path, self.facts.get("info", blob, lambda: decode(data)), self.nav_titles)
        return self._info[path]

    def shows_as(self, path: str, blob: str) -> bool:
        """Whether page version `blob` (an earlier one of `path`) has its info cached, equal to the page's now."""
        known, found = self.facts.cached("info", blob)
        return known and _page_info(path, found, self.nav_titles) == self.info(path)

    def forget(self, path: str) -> None:
        """`path` was rewritten: what is known about it is stale."""
        self._blobs.pop(path, None)
        self._info.pop(path, None)
        self._stats[path] = os.lstat(self._top + path)

    @functools.cached_property
    def nav_titles(self) -> dict[str, str]:
        """Path → the title the docs site's navigation gives a page (gitwiki.pages.sites): a page's title when it
        has none of its own. Applied over the cached info, which is keyed by the page's blob alone."""
        return sites.nav_titles(self.root, self.corpus.site, self.corpus.path) if self.corpus.site != "github" else {}

    def index_files(self) -> list[str]:
        """Every index file of the corpus, deepest first (a parent's listing may show a child's title)."""
        name = self.config.index_blocks.filename
        found = [p for p in self.pages if posixpath.basename(p) == name]
        return sorted(found, key=lambda p: (-p.count("/"), p))


def _page_info(path: str, found: list[Any] | None, nav: Mapping[str, str]) -> PageInfo | None:
    return None if found is None else PageInfo(found[0] or nav.get(path) or fallback_title(path), found[1])


def _pages(corpus: CorpusConfig, paths: Iterable[str]) -> list[str]:
    """The corpus's pages among `paths`: matching its globs, not in a dot-folder."""
    start = len(corpus.prefix)
    return [p for p in select(corpus, paths) if "/." not in "/" + p[start : p.rfind("/") + 1]]


def _stats(top: str, paths: Iterable[str]) -> dict[str, os.stat_result]:
    """Path → its `lstat`, for the regular files among `paths` (under `top`) that exist."""
    out = {}
    for path in paths:
        try:
            st = os.lstat(top + path)
        except OSError:  # a tracked file deleted from disk
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # a hard link may be a file outside the wiki
            out[path] = st
    return out
