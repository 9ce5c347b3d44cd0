"""`Memory`: where the topic pages live in the wiki, and reading them (parsed once per file version).

One `Memory` per process: the MCP server keeps it, so a query stats the topic files and re-parses only
those that changed. Nothing heavy is imported here; the `Wiki` it wraps is the caller's.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import Config, normalize_corpus_path
from gitwiki.errors import NotFoundError, RefusedFile, UsageError
from gitwiki.fs import read_bounded, stat_stamp
from gitwiki.git.gitcli import blob_id
from gitwiki.memory.entry import Entry, TopicPage, entry_terms, now_iso, parse_page, topic_name

if TYPE_CHECKING:
    from gitwiki.wiki import Wiki

CHECKPOINTS = "checkpoints"
PAGE_FIX = "a memory page is a regular file inside the repository; replace the link with the page itself"


class TopicFile(NamedTuple):
    name: str
    repo_path: str
    blob: str  # git blob id of the file on disk
    page: TopicPage
    data: bytes  # the file as read, the version `blob` names
    terms: tuple[frozenset[str], ...]  # per entry, what a search word must match (see entry_terms)


class Memory:
    """The memory of one checkout. Reading topic pages needs only the root and the config; the `Wiki`
    (git, the index, the model) is opened on first use, so an agent hook that lists topics or resumes a
    checkpoint does not load pygit2 (importing gitwiki.wiki: ~400 ms on the loaded 2-core reference
    machine, pygit2 ~190 ms of it)."""

    def __init__(
        self, wiki: Wiki | None = None, *, root: Path | None = None, settings: Config | None = None, label: str = ""
    ):
        self._wiki = wiki
        # "" for a project's memory; "~personal/" for the personal memory repository, whose topics and refs
        # read with it (gitwiki.memory.personal): the pages are named without it, the entries with it.
        self.label = label
        self.root: Path = wiki.root if wiki is not None else root  # type: ignore[assignment]
        self.settings: Config = wiki.config if wiki is not None else settings  # type: ignore[assignment]
        self.config = self.settings.memory
        self.corpus = self.settings.corpus(self.config.corpus)
        self.dir = normalize_corpus_path(self.config.dir, "[memory] dir")
        if not self.dir:
            raise UsageError('[memory] dir must name a folder inside the corpus, e.g. dir = "memory"')
        base = self.root / self.corpus.path if self.corpus.path else self.root
        self.folder = base / self.dir
        self.started = now_iso()  # the session: what this process stored since it started
        self._pages: dict[Path, tuple[tuple[int, int, int], TopicFile]] = {}
        self._files: dict[Path, tuple[tuple[int, int, int], str | None]] = {}
        self.indexed: set[tuple[str, str | None]] = set()  # (blob, model) known parsed and embedded
        self.chunk_entries: dict[str, dict[int, tuple[str, int]]] = {}  # blob → chunk id → (topic, entry line)

    @classmethod
    def open(cls, start: str | os.PathLike[str] = ".") -> Memory:
        from gitwiki import config as config_mod
        from gitwiki.git.gitcli import discover

        root = discover(start).root
        return cls(root=root, settings=config_mod.load(root))

    @property
    def wiki(self) -> Wiki:
        if self._wiki is None:
            from gitwiki.git.gitrepo import GitRepo
            from gitwiki.wiki import Wiki

            self._wiki = Wiki(GitRepo.discover(self.root), self.settings)
        return self._wiki

    def close(self) -> None:
        if self._wiki is not None:
            self._wiki.close()
        personal = self.__dict__.get("personal")
        if personal is not None:
            personal.close()

    # ---- the personal memory repository (gitwiki.memory.personal) -----------------------------------

    @functools.cached_property
    def personal(self) -> Memory | None:
        """The personal memory read beside this one (gitwiki.memory.personal), created on first use; None when
        none is configured, and for the personal memory itself."""
        from gitwiki import config as config_mod
        from gitwiki.memory import personal

        found = None if self.label else personal.location(self.settings, self.root)
        if found is None:
            return None
        if not personal.is_repo(found.path):
            personal.create(found.path)
        return Memory(root=found.path, settings=config_mod.load(found.path), label=personal.PREFIX)

    def stores(self) -> list[Memory]:
        """The memories this one reads: itself, then the personal one."""
        return [self] if self.personal is None else [self, self.personal]

    def reader(self, topic: str) -> tuple[Memory, str]:
        """The memory that holds `topic` (a `~personal/` name is the personal one's) and the name it has there."""
        from gitwiki.memory import personal

        label, name = personal.split(topic)
        if not label or label == self.label:
            return self, name
        if self.personal is None:
            raise personal.no_personal()
        return self.personal, name

    # ---- paths -------------------------------------------------------------------------------------

    def rel_path(self, topic: str, folder: str = "") -> str:
        """The page path relative to the corpus (what the page write path takes)."""
        parts = [p for p in (self.dir, folder, f"{topic}.md") if p]
        return "/".join(parts)

    def writable_topic(self, raw: str) -> str:
        """A sanitized topic name that can be written: not the folder's index page."""
        name = topic_name(raw.removeprefix(self.label) if self.label and isinstance(raw, str) else raw)
        if f"{name}.md" == self.settings.index_blocks.filename:
            raise UsageError(f"topic {name!r} would be the folder's {name}.md index page; choose another name")
        return name

    def repo_path(self, rel: str) -> str:
        return f"{self.corpus.path}/{rel}" if self.corpus.path else rel

    # ---- reading -----------------------------------------------------------------------------------

    def topics(self, pattern: str | None = None, fresh: bool | Collection[str] = ()) -> dict[str, TopicFile]:
        """Topic pages on disk (uncommitted ones included), by name; `pattern` is a name or an fnmatch glob.

        `fresh` (True, or topic names) re-reads those pages whatever their stat says: writers do, under the
        lock, for the pages they rewrite, because a page replaced within one filesystem timestamp tick can
        keep its size and mtime, and even its inode number."""
        out: dict[str, TopicFile] = {}
        for name, file in self.topic_files(pattern).items():
            loaded = self._load(file, name, fresh is True or (fresh is not False and name in fresh))
            if loaded is not None:
                out[name] = loaded
        return out

    def topic_files(self, pattern: str | None = None) -> dict[str, Path]:
        """The topic page files by name, unread (the agent hooks keep their own parse cache across processes):
        the folder's `.md` files but its index page; checkpoints live in a subfolder."""
        skip = self.settings.index_blocks.filename
        try:
            with os.scandir(self.folder) as it:
                files = sorted(e.name for e in it if e.name.endswith(".md") and e.name != skip and e.is_file())
        except OSError:
            files = []
        names = (f[:-3] for f in files)
        return {n: self.folder / f"{n}.md" for n in names if not pattern or fnmatch.fnmatchcase(n, pattern)}

    def topic(self, name: str) -> TopicFile:
        """A topic of this memory, or (`~personal/…`) of the personal one."""
        owner, name = self.reader(name)
        if owner is not self:
            return owner.topic(name)
        name = topic_name(name)
        found = self.topics().get(name)
        if found is None:
            known = ", ".join(self.label + t for t in self.topics()) or "none yet"
            raise NotFoundError(f"no memory topic {name!r}; topics: {known} (memory_store creates one)")
        return found

    def entries(self, pattern: str | None = None) -> list[Entry]:
        return [e for t in self.topics(pattern).values() for e in t.page.entries]

    def entry(self, topic: str, index: int) -> Entry:
        entries = self.topic(topic).page.entries
        if not isinstance(index, int) or not 1 <= index <= len(entries):
            raise no_such_entry(topic, len(entries), index)
        return entries[index - 1]

    def _load(self, file: Path, name: str, fresh: bool = False) -> TopicFile | None:
        try:
            st = file.stat()
        except OSError:
            return None
        key = stat_stamp(st)
        cached = self._pages.get(file)
        if cached and cached[0] == key and not fresh:
            return cached[1]
        try:  # a page is a file of this repository: not one a committed symlink leads to (/etc/passwd)
            data = read_bounded(file, roots=[self.root], what="memory page", fix=PAGE_FIX)
        except (OSError, RefusedFile):
            return None
        page = parse_page(data.decode("utf-8", errors="replace"), self.label + name)
        rel = file.relative_to(self.root).as_posix()
        # A search word matches the topic's own name, not the label every personal topic shares.
        terms = tuple(entry_terms(e._replace(topic=name) if self.label else e) for e in page.entries)
        loaded = TopicFile(self.label + name, rel, blob_id(data), page, data, terms)
        self._pages[file] = (key, loaded)
        return loaded

    def file_blob(self, repo_path: str, read: Callable[[Path, str], bytes]) -> str | None:
        """The git blob id of a repo file as it is on disk now (None when missing), cached by its stat; its
        bytes come from `read(root, repo_path)` (the sources' bounded reader, which may raise RefusedFile)."""
        file = self.root / repo_path
        try:
            st = file.stat()
        except OSError:
            return None
        cached = self._files.get(file)
        if cached and cached[0] == stat_stamp(st):
            return cached[1]
        try:
            blob: str | None = blob_id(read(self.root, repo_path))
        except OSError:
            blob = None
        self._files[file] = (stat_stamp(st), blob)
        return blob


def no_such_entry(topic: str, n: int, index: object) -> NotFoundError:
    """The error for an entry number a topic does not have, naming both counts (helix's from 0)."""
    helix = f" (helix's string index '0'..'{n - 1}')" if n else ""
    return NotFoundError(f"topic {topic!r} has {n} entries, 1..{n}{helix}; there is no entry {index!r}")
