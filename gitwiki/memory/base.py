"""`Memory`: where the topic pages live in the wiki, and reading them (parsed once per file version).

One `Memory` per process: the MCP server keeps it, so a query stats the topic files and re-parses only
those that changed. Nothing heavy is imported here; the `Wiki` it wraps is the caller's.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import Config, normalize_corpus_path
from gitwiki.errors import NotFoundError, RefusedFile, UsageError
from gitwiki.fs import read_bounded, stat_stamp
from gitwiki.git.gitcli import blob_id
from gitwiki.index.claim import claim
from gitwiki.memory.entry import Entry, TopicPage, entry_terms, now_iso, parse_page, topic_name

if TYPE_CHECKING:
    from gitwiki.git.gitcli import Checkout
    from gitwiki.index.store import Store
    from gitwiki.index.store.memory_entries import MemoryEntries
    from gitwiki.search.lexicon import Lexicon
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


class PageVersion(NamedTuple):
    """A topic page as it is on disk, unparsed: what a search needs before it knows which entries it wants."""

    name: str
    repo_path: str
    blob: str
    data: bytes
    file: Path
    stamp: tuple[int, int, int]


class Postings(NamedTuple):
    """A parsed page version's entries by position: those holding each search term, those starting at each line."""

    terms: tuple[frozenset[str], ...]  # the version's `TopicFile.terms`, by identity: which version this indexes
    by_term: dict[str, list[int]]
    by_line: dict[int, list[int]]


class Memory:
    """The memory of one checkout. Reading topic pages needs only the root and the config; the `Wiki`
    (git, the index, the model) is opened on first use, so an agent hook that lists topics or resumes a
    checkpoint does not load pygit2 (importing gitwiki.wiki costs more than a hook's whole budget)."""

    def __init__(
        self,
        wiki: Wiki | None = None,
        *,
        root: Path | None = None,
        settings: Config | None = None,
        label: str = "",
        common_dir: Path | None = None,
        cache: bool | None = None,
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
        self.common_dir = common_dir  # the git dir shared by the worktrees (where the index dir defaults to)
        # Parsed pages are taken from the index dir's cache (gitwiki.memory.parsed) with a `Wiki`, or when
        # asked: an agent hook reading a few pages does without SQLite.
        self.use_cache = wiki is not None if cache is None else cache
        # A process that searches again and again (the MCP server, which passes its `Wiki`) keeps every page
        # parsed once read; a command that searches once builds only the entries a search can show.
        self.resident = wiki is not None
        self.started = now_iso()  # the session: what this process stored since it started
        self._pages: dict[Path, tuple[tuple[int, int, int], TopicFile]] = {}
        self._files: dict[Path, tuple[tuple[int, int, int], str | None]] = {}
        self._versions: dict[Path, PageVersion] = {}  # read and hashed, not parsed
        self._in_cache: set[tuple[str, str]] = set()  # (blob, topic) known held by the cache of parsed pages
        self.indexed: set[tuple[str, str | None]] = set()  # (blob, model) known parsed and embedded
        self.chunk_entries: dict[str, dict[int, tuple[str, int] | None]] = {}  # blob → chunk id → (topic, entry line)
        # A parsed page's entries by search term and by first line (`_postings`), built on a page's first search.
        self._postings: dict[Path, Postings] = {}
        self._paths: dict[str, Path] = {}  # topic page files by name, made once (`topic_files`)
        self.lexicon: Lexicon | None = None  # BM25 postings kept warm when `resident` (gitwiki.search.lexicon)
        self._checkout: Checkout | None = None  # where `open` found the checkout

    @classmethod
    def open(cls, start: str | os.PathLike[str] = ".", *, cache: bool = False) -> Memory:
        from gitwiki import config as config_mod
        from gitwiki.git.gitcli import discover

        checkout = discover(start)
        settings = config_mod.load(checkout.root)
        mem = cls(root=checkout.root, settings=settings, common_dir=checkout.common_dir, cache=cache)
        mem._checkout = checkout
        return mem

    @property
    def wiki(self) -> Wiki:
        if self._wiki is None:
            from gitwiki.git.gitrepo import GitRepo
            from gitwiki.wiki import Wiki

            # git found the checkout once (`open`): its repository is opened in pygit2 only if a git object is read
            self._wiki = Wiki(GitRepo(self._checkout) if self._checkout else GitRepo.discover(self.root), self.settings)
        return self._wiki

    # ---- the search index the topic pages are parsed and embedded into (the wiki's) ----------------

    @property
    def search_index(self) -> Store:
        return self.wiki.store

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The index's writer lock (re-entrant): a change to topic pages reads them, writes them and indexes
        them as one critical section, during which a server's background thread does not start embedding (the
        model beside a store made it a half slower on two cores: gitwiki.index.background_embed)."""
        with self.wiki.local.writing(), self.wiki.store.lock():
            yield

    def read(self) -> AbstractContextManager[None]:
        """One consistent snapshot of the index for several reads (a search's ranking and its chunk lookups)."""
        return self.wiki.store.read()

    def drop(self, blobs: Iterable[str]) -> None:
        """Drop the index rows of page versions a write replaced (unless a corpus state still holds them)."""
        with self.wiki.store.write():
            self.wiki.store.drop(blobs)

    def index_dir(self) -> Path | None:
        """The index dir of this checkout (where parsed topic pages are cached), None when no checkout is found."""
        from gitwiki import config as config_mod
        from gitwiki.git.gitcli import find_checkout

        if self._wiki is not None:
            return self._wiki.index_dir
        if self.common_dir is None:
            found = find_checkout(self.root)
            if found is None:
                return None
            self.common_dir = found.common_dir
        return claim(config_mod.index_dir(self.settings, self.root, self.common_dir), self.root, self.common_dir)

    def parsed_cache(self) -> MemoryEntries | None:
        """The index dir's cache of parsed pages (gitwiki.memory.parsed), opened on first use; None when this
        memory does not use it or it cannot be opened."""
        if not self.use_cache:
            return None
        if "_parsed_store" not in self.__dict__:
            from gitwiki.memory import parsed

            where = self.index_dir()
            self.__dict__["_parsed_store"] = parsed.open_cache(where) if where is not None else None
        found: MemoryEntries | None = self.__dict__["_parsed_store"]
        return found

    def close(self) -> None:
        cached = self.__dict__.pop("_parsed_store", None)
        if cached is not None:
            cached.close()
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
        from gitwiki.git.gitcli import find_checkout
        from gitwiki.memory import personal

        found = None if self.label else personal.location(self.settings, self.root)
        if found is None:
            return None
        if not personal.is_repo(found.path):
            personal.create(found.path)
        checkout = find_checkout(found.path)
        settings = config_mod.load(found.path)
        if checkout is not None:
            settings = personal.own_index(settings, checkout.common_dir)
        made = Memory(root=found.path, settings=settings, label=personal.PREFIX, cache=self.use_cache)
        made.resident = self.resident  # a server searches both again and again
        return made

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
        files = self.topic_files(pattern)
        again = set(files) if fresh is True else set(fresh) if fresh is not False else set()
        read: dict[str, tuple[Path, tuple[int, int, int], bytes]] = {}  # pages to (re)load: not known by their stat
        present = []
        for name, file in files.items():
            try:
                key = stat_stamp(file.stat())
            except OSError:
                continue
            cached = self._pages.get(file)
            if not (cached and cached[0] == key and name not in again):
                try:
                    data = self._read_page(file)
                except OSError:
                    continue
                if cached and cached[1].data == data:  # read again under a writer's lock, unchanged: as parsed
                    self._pages[file] = (key, cached[1])
                else:
                    read[name] = (file, key, data)
            present.append((name, file))
        if read:
            self._load(read)
        return {name: self._pages[file][1] for name, file in present}

    def versions(self, pattern: str | None = None) -> dict[str, PageVersion]:
        """The topic pages on disk by name (as `topics`), read and hashed but not parsed: `candidates` then
        parses (or takes from the cache of parsed pages) only the entries a search can use."""
        out: dict[str, PageVersion] = {}
        for name, file in self.topic_files(pattern).items():
            try:
                key = stat_stamp(file.stat())
            except OSError:
                continue
            parsed = self._pages.get(file)
            known = self._versions.get(file)
            if parsed and parsed[0] == key:
                tf = parsed[1]
                out[name] = PageVersion(tf.name, tf.repo_path, tf.blob, tf.data, file, key)
            elif known and known.stamp == key:
                out[name] = known
            else:
                try:
                    data = self._read_page(file)
                except OSError:
                    continue
                rel = file.relative_to(self.root).as_posix()
                out[name] = self._versions[file] = PageVersion(self.label + name, rel, blob_id(data), data, file, key)
        return out

    def _parsed(self, version: PageVersion) -> TopicFile | None:
        """The page parsed in this process, when it is this version."""
        parsed = self._pages.get(version.file)
        return parsed[1] if parsed and parsed[1].blob == version.blob else None

    def _cached(self, versions: dict[str, PageVersion]) -> set[str]:
        """The names of `versions` the cache of parsed pages holds; the others are parsed now (and cached)."""

        todo = {n: v for n, v in versions.items() if self._parsed(v) is None}
        ask = [(v.blob, v.name) for v in todo.values() if (v.blob, v.name) not in self._in_cache]
        store = self.parsed_cache() if ask else None
        if store is not None:
            self._in_cache |= store.known(ask)
        held = {n for n, v in todo.items() if (v.blob, v.name) in self._in_cache}
        missing = {n: (v.file, v.stamp, v.data) for n, v in todo.items() if n not in held}
        if missing:
            self._load(missing)
        return held

    def candidates(
        self, versions: dict[str, PageVersion], terms: frozenset[str] | None, starts: dict[str, set[int]]
    ) -> list[tuple[Entry, frozenset[str]]]:
        """The entries of these page versions that hold any of `terms` (all of them when None) or start at one
        of the lines `starts` names for their topic, with their search terms, in page order. A page parsed in
        this process is filtered here; one in the cache of parsed pages is filtered by the cache, so a search
        builds only the entries it may show."""
        from gitwiki.memory import parsed

        held = self._cached(versions)
        if held and self.resident:
            self._load({n: (v.file, v.stamp, v.data) for n, v in versions.items() if n in held})
            held = set()
        store = self.parsed_cache() if held else None
        keys = [(v.blob, v.name) for n, v in versions.items() if n in held]
        lines = {(v.blob, v.name): sorted(starts.get(v.name, ())) for n, v in versions.items() if n in held}
        rows = store.matching(keys, sorted(terms) if terms is not None else None, lines) if store and keys else {}
        out: list[tuple[Entry, frozenset[str]]] = []
        for name, v in versions.items():
            if name in held:
                out += [parsed.entry(v.name, i, row) for i, row in rows.get((v.blob, v.name), ())]
                continue
            tf = self._parsed(v)
            if tf is None:  # gone between the reads
                continue
            if terms is None:
                out += zip(tf.page.entries, tf.terms, strict=True)
                continue
            # The entries holding a term or starting at a line named, from the page's postings: a scan of every
            # entry's terms was most of a warm search's CPU at 10,000 entries.
            post = self.postings(v.file, tf)
            chosen = {i for term in terms for i in post.by_term.get(term, ())}
            chosen.update(i for line in starts.get(v.name, ()) for i in post.by_line.get(line, ()))
            out += [(tf.page.entries[i], tf.terms[i]) for i in sorted(chosen)]
        return out

    def postings(self, file: Path, tf: TopicFile) -> Postings:
        """The page's entries (their positions) by search term and by first line, built once per parsed version."""
        held = self._postings.get(file)
        if held is not None and held.terms is tf.terms:
            return held
        by_term: dict[str, list[int]] = {}
        by_line: dict[int, list[int]] = {}
        for i, (entry, its_terms) in enumerate(zip(tf.page.entries, tf.terms, strict=True)):
            for term in its_terms:
                by_term.setdefault(term, []).append(i)
            by_line.setdefault(entry.start_line, []).append(i)
        made = self._postings[file] = Postings(tf.terms, by_term, by_line)
        return made

    def entry_lines(self, name: str, version: PageVersion) -> list[tuple[int, int]]:
        """(first line, last line) of each entry of the page version of topic `name`, in page order."""

        tf = self._parsed(version)
        if tf is None and name in self._cached({name: version}):
            store = self.parsed_cache()
            if store is not None:
                return store.lines(version.blob, version.name)
        tf = tf or self._parsed(version)
        return [(e.start_line, e.end_line) for e in tf.page.entries] if tf is not None else []

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
        # The same Path object for a page each time: the caches keyed by it then match it by identity, where a new
        # Path compared its parts (400 comparisons a search at 100 topics).
        paths = self._paths
        return {
            n: paths[n] if n in paths else paths.setdefault(n, self.folder / f"{n}.md")
            for n in names
            if not pattern or fnmatch.fnmatchcase(n, pattern)
        }

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

    def _load(self, read: dict[str, tuple[Path, tuple[int, int, int], bytes]]) -> None:
        """Parse the pages read (name → file, stat stamp, bytes), or take their entries from the index's
        cache of parsed pages (gitwiki.memory.parsed) when it holds their version."""
        from gitwiki.memory import parsed

        blobs = {name: blob_id(data) for name, (_, _, data) in read.items()}
        known = parsed.lookup(self.parsed_cache(), {self.label + n: b for n, b in blobs.items()})
        made, before_made = {}, {}
        for name, (file, key, data) in read.items():
            shown, blob = self.label + name, blobs[name]
            found = known.get(shown)
            if found is None:
                page = parse_page(data.decode("utf-8", errors="replace"), shown)
                # An entry the version parsed before holds as it is (all an append leaves) has its terms: at
                # 800 entries, stemming them all again was most of a store's re-read of its page.
                before = self._pages.get(file)
                old = before[1].page.entries if before else ()
                # The entries it starts with (an append leaves all) are taken by place, the others by value.
                n = next(
                    (i for i, (a, b) in enumerate(zip(page.entries, old, strict=False)) if not (a is b or a == b)), None
                )
                n = min(len(page.entries), len(old)) if n is None else n
                had = dict(zip(old[n:], before[1].terms[n:], strict=True)) if before else {}
                # A search word matches the topic's own name, not the label every personal topic shares.
                terms = (before[1].terms[:n] if before else ()) + tuple(
                    had[e] if e in had else entry_terms(e._replace(topic=name) if self.label else e)
                    for e in page.entries[n:]
                )
                made[shown] = (blob, page, terms)
                if before:
                    before_made[shown] = (before[1].blob, before[1].page, before[1].terms)
            else:
                page, terms = found
            rel = file.relative_to(self.root).as_posix()
            self._pages[file] = (key, TopicFile(shown, rel, blob, page, data, terms))
        if made:
            parsed.keep(self.parsed_cache(), made, before_made)

    def _read_page(self, file: Path) -> bytes:
        """A topic page's bytes: a file of this repository, not one a committed symlink leads to (/etc/passwd);
        raises OSError (the page is skipped) for anything the bounded reader refuses."""
        try:
            return read_bounded(file, roots=[self.root], what="memory page", fix=PAGE_FIX)
        except RefusedFile as e:
            raise OSError(str(e)) from e

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
