"""The pages of one corpus as they are on disk, with their blob ids and titles cached per page version.

What the index-blocks hook and the write path render listings from: git lists the files (so ignored
ones stay out), `lstat` finds the regular ones, and the page-facts cache spares re-reading unchanged pages.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from gitwiki import gitcli
from gitwiki.config import Config, CorpusConfig, matches
from gitwiki.fs import read_page_file
from gitwiki.gitcli import blob_id
from gitwiki.markdown.chunker import fallback_title
from gitwiki.pagefacts import FactsCache, decode


class PageInfo(NamedTuple):
    title: str  # front matter title, else the first H1, else the file name
    summary: str | None


class WorktreeCorpus:
    """The pages of one corpus on disk (git-ignored files, symlinks, hard-linked files and dot-folders left
    out), with their blob ids and page info from `facts` (by default a cache that lives as long as this object)."""

    def __init__(self, root: Path, corpus: CorpusConfig, config: Config, facts: FactsCache | None = None):
        self.root = root
        self.corpus = corpus
        self.config = config
        self.facts = facts if facts is not None else FactsCache()
        self._top = os.path.join(root, "")  # paths are joined to it in loops over every page
        self._stats = _listing(self._top, corpus)
        self.pages = sorted(self._stats)
        self._blobs: dict[str, str] = {}
        self._info: dict[str, PageInfo | None] = {}

    def blob(self, path: str) -> str:
        """The page's blob id, from the stat cache while its `lstat` is unchanged, else by hashing it."""
        if not self._blobs:  # a listing needs most pages' ids: their stat rows are read in one query
            self.facts.prefetch_stats(self._top, [self._top + p for p in self.pages])
        if path not in self._blobs:
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
        """The page's title and summary; None for a page that is not text (lint reports it, GW012)."""
        if path not in self._info:
            blob, data = self.blob(path), b""
            if not self.facts.known("info", blob):
                # extract from exactly the bytes the key is computed from (the file may have changed since)
                data = read_page_file(self.root, path)
                blob = self._blobs[path] = blob_id(data)
            found = self.facts.get("info", blob, lambda: decode(data))
            self._info[path] = None if found is None else PageInfo(found[0] or fallback_title(path), found[1])
        return self._info[path]

    def forget(self, path: str) -> None:
        """`path` was rewritten: what is known about it is stale."""
        self._blobs.pop(path, None)
        self._info.pop(path, None)
        self._stats[path] = os.lstat(self._top + path)

    def index_files(self) -> list[str]:
        """Every index file of the corpus, deepest first (a parent's listing may show a child's title)."""
        name = self.config.index_blocks.filename
        found = [p for p in self.pages if posixpath.basename(p) == name]
        return sorted(found, key=lambda p: (-p.count("/"), p))


def _listing(top: str, corpus: CorpusConfig) -> dict[str, os.stat_result]:
    """Page path → its `lstat`, for the regular files among the corpus files git lists under `top`."""
    out = {}
    for path in gitcli.worktree_files(top, corpus.path):
        folders = "/" + path[len(corpus.prefix) : path.rfind("/") + 1]
        if "/." not in folders and matches(corpus, path):
            try:
                st = os.lstat(top + path)
            except OSError:  # a tracked file deleted from disk
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # a hard link may be a file outside the wiki
                out[path] = st
    return out
