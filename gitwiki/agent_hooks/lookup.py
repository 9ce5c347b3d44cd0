"""The hooks' search path: the index as it is, read with sqlite3 (BM25 over FTS5), in a few milliseconds.

Nothing here catches the index up, loads a model or opens the repository with pygit2: a hook that had to
would blow its budget on every tool call. It searches the committed pages the index holds for each corpus,
with the memory folder overlaid from disk (a topic page stored during this session counts as soon as its
new version is in the index), and leaves freshness to the session briefing, which reports it.
"""

from __future__ import annotations

import functools
import math
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki import config as config_mod
from gitwiki.agent_hooks import cache
from gitwiki.config import Config, normalize_corpus_path
from gitwiki.git import gitcli
from gitwiki.index.claim import IndexDirInUse, claim
from gitwiki.index.tokens import STOP_WORDS, code_like, fts_any, fts_phrase, tokenize, words
from gitwiki.memory.personal import PREFIX
from gitwiki.search.ranking import Candidates, rank_pages, snippet

if TYPE_CHECKING:
    from gitwiki.index.store import Store
    from gitwiki.memory.base import Memory

BLOB_CACHE = "agent-blobs.json"
CANDIDATES = 400  # FTS rows read per query: other corpora and old page versions share the table
KEPT = 40  # of those, the best live sections whose text is read (a hook shows 3 per search)
# A prompt term in more than this share of all chunks is left out of the MATCH (the rarest one always stays):
# BM25 weighs it little, and scoring every row that holds it was most of a query's time.
COMMON = 0.25


class Note(NamedTuple):
    chunk: int  # the index's chunk id
    key: str  # stable across re-indexing: the page and the section's heading path (path#heading > path)
    path: str  # repo-relative
    breadcrumb: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    score: float

    @property
    def topic(self) -> str:
        return posixpath.splitext(posixpath.basename(self.path))[0]


class Lookup:
    def __init__(
        self,
        root: Path,
        git_dir: Path,
        config: Config,
        index_dir: Path,
        store: Store | None,
        label: str = "",
        *,
        opened: bool = True,
    ):
        """`opened=False`: `store` is left out and the index opened at the first use of `.store`."""
        self.root = root
        self.git_dir = git_dir  # this worktree's
        self.config = config
        self.settings = config.agent_hooks
        self.index_dir = index_dir
        if opened:
            self.store = store
        self.label = label  # "~personal/" for the personal memory repository: its notes' paths start with it

    @classmethod
    def from_checkout(cls, checkout: gitcli.Checkout, label: str = "") -> Lookup:
        """The checkout's lookup, its index opened when first searched: a hook the owner answers (owner.py) loads
        neither SQLite nor the store."""
        config = config_mod.load(checkout.root, read=cache.config_reader(checkout.common_dir / "gitwiki"))
        if label:  # the personal memory repository keeps its index in its own git dir, as the library does
            from gitwiki.memory import personal

            config = personal.own_index(config, checkout.common_dir)
        index_dir = config_mod.index_dir(config, checkout.root, checkout.common_dir)
        try:
            claim(index_dir, checkout.root, checkout.common_dir)
        except IndexDirInUse:  # another repository's index: no notes from it (the CLI and tools say why)
            return cls(checkout.root, checkout.git_dir, config, index_dir, None, label)
        return cls(checkout.root, checkout.git_dir, config, index_dir, None, label, opened=False)

    @functools.cached_property
    def store(self) -> Store | None:
        """The index as it is; None when there is no usable one."""
        from gitwiki.index.store import Store

        return Store.open_existing(self.index_dir)

    @property
    def indexed(self) -> bool:
        """Whether there is an index, seen without opening it (it may still turn out unusable: `.store` is None)."""
        return (self.index_dir / cache.INDEX).is_file()

    def close(self) -> None:
        store = self.__dict__.get("store")  # not opened: nothing to close
        if store is not None:
            store.close()
        found = self.__dict__.get("personal")
        if found is not None:
            found.close()

    @functools.cached_property
    def personal(self) -> Lookup | None:
        """The personal memory repository (gitwiki.memory.personal) as the hooks read it: only when it exists
        (the library creates it) and is a plain checkout (`.git` a folder: no git process to find it). A
        misconfigured one is left out; the memory tools say what is wrong with it."""
        from gitwiki.errors import GitwikiError
        from gitwiki.memory import personal

        if self.label:
            return None
        try:
            found = personal.location(self.config, self.root)
            if found is None or not (found.path / ".git").is_dir():
                return None
            git_dir = found.path / ".git"
            return Lookup.from_checkout(gitcli.Checkout(found.path, git_dir, git_dir), personal.PREFIX)
        except (GitwikiError, OSError):
            return None

    # ---- what is searched ------------------------------------------------------------------------

    @functools.cached_property
    def memory(self) -> Memory:
        """The memory library on this checkout, without a `Wiki`: it reads and parses the topic pages only."""
        from gitwiki.memory.base import Memory  # only the hooks that read topics pay for it

        return Memory(root=self.root, settings=self.config, label=self.label)

    @functools.cached_property
    def memory_prefix(self) -> str:
        """The memory folder ([memory] corpus and dir, normalized as the memory library does), repo-relative,
        with a trailing slash: every search marks and overlays memory pages, and most need no `Memory`."""
        memory = self.config.memory
        return self.config.corpus(memory.corpus).prefix + normalize_corpus_path(memory.dir, "[memory] dir") + "/"

    def is_memory(self, path: str) -> bool:
        return path.startswith(self.memory_prefix)

    def memory_files(self) -> dict[str, str]:
        """Repo-relative path → absolute path of the memory folder's pages on disk. Plain strings and os.walk:
        pathlib (rglob, relative_to, read_bytes) was most of this call's cost."""
        root = str(self.root)
        found = {}
        for folder, _, names in os.walk(os.path.join(root, self.memory_prefix)):
            for name in names:
                if name.endswith(".md"):
                    full = os.path.join(folder, name)
                    found[os.path.relpath(full, root).replace(os.sep, "/")] = full
        return found

    def memory_blobs(self) -> dict[str, str]:
        """Repo-relative path → blob id of the memory pages on disk. The ids are cached in the index dir by
        each file's inode, mtime and size (as agent-memory.json caches its entries): hashing 50 pages, and
        loading OpenSSL's sha1 for it, cost every search ~3 ms though memory pages rarely change."""
        known = cache.load(self.index_dir / BLOB_CACHE)
        found, fresh = {}, {}
        for path, full in self.memory_files().items():
            try:
                now = cache.stamp(os.stat(full))
                hit = known.get(path)
                if not (isinstance(hit, list) and hit[:3] == now):
                    with open(full, "rb") as f:
                        hit = [*now, gitcli.blob_id(f.read())]
            except OSError:
                continue
            found[path] = hit[3]
            fresh[path] = hit
        if fresh != known:
            cache.save(self.index_dir / BLOB_CACHE, fresh)
        return found

    @functools.cached_property
    def paths(self) -> dict[str, str]:
        """Blob id → repo-relative path of every page searched."""
        if self.store is None:
            return {}
        pages: dict[str, str] = {}
        for corpus in self.config.corpora:
            pages.update(self.store.pages(corpus.name))
        on_disk = self.memory_blobs()
        known = self.store.known_blobs(on_disk.values())
        pages.update((path, blob) for path, blob in on_disk.items() if blob in known)
        return {blob: path for path, blob in sorted(pages.items(), reverse=True)}

    # ---- queries ---------------------------------------------------------------------------------

    def ranked(self, match: str | None) -> list[Note]:
        """Sections matching an FTS5 expression, best first."""
        if self.store is None or match is None or not self.paths:
            return []
        with self.store.read():
            found = [(cid, s) for cid, blob, s in self.store.lexical(match, CANDIDATES) if blob in self.paths][:KEPT]
            rows = self.store.chunks_by_id(cid for cid, _ in found)
        notes = []
        for cid, score in found:
            row = rows[cid]
            path = self.label + self.paths[row.blob]
            key = f"{path}#{' > '.join(row.breadcrumb)}"
            notes.append(Note(cid, key, path, row.breadcrumb, row.start_line, row.end_line, row.text, score))
        return notes

    def search_all(self, query: str) -> list[Note]:
        """`search` here and in the personal memory repository, best first. Each index scores BM25 by its own
        statistics; both are sections of markdown scored alike, so the scores are merged as they are."""
        found = self.search(query)
        if self.personal is not None:
            found = sorted(found + self.personal.search(query), key=lambda n: -n.score)
        return found

    def search(self, query: str) -> list[Note]:
        """Sections holding enough of what `query` says, best first: the query's terms the index knows, each
        weighted by its IDF, must be covered to [agent_hooks] min_coverage percent of the weight of the six
        weightiest. Matching only common words ("make", "index") is not enough where rare ones ("CI") exist."""
        if self.store is None:
            return []
        rows = self.store.term_chunks(set(tokenize(query)))
        if not rows:
            return []
        total = self.store.chunk_total()
        weight = {t: math.log((total + 1) / (n + 0.5)) for t, n in rows.items()}
        need = self.settings.min_coverage / 100 * sum(sorted(weight.values(), reverse=True)[:6])
        by_rarity = sorted(rows, key=lambda t: (rows[t], t))
        notes = self.ranked(fts_any(by_rarity[:1] + [t for t in by_rarity[1:] if rows[t] <= COMMON * total]))
        held = self.store.indexed_terms(n.chunk for n in notes) if notes else {}
        return [n for n in notes if sum(weight[t] for t in held.get(n.chunk, set()) & weight.keys()) >= need]

    def mentions(self, text: str) -> list[Note]:
        """Sections whose text holds `text` as it is (a path), best first."""
        return [n for n in self.ranked(fts_phrase(text)) if text in n.text]

    def naming(self, names: list[str]) -> list[Note]:
        """Sections that name one of `names`: a code-like one (`rotate_key`, `KeyRing`) as a whole identifier
        anywhere, a plain word (`close`, `Store`) only inside a `code span`, where it means the symbol."""
        phrases = [p for p in map(fts_phrase, names) if p]
        if not phrases:
            return []
        code = _whole_words([n for n in names if code_like(n)])
        plain = _whole_words([n for n in names if not code_like(n)])

        def names_one(text: str) -> bool:
            return bool(code and code.search(text)) or bool(
                plain and any(plain.search(span) for span in _CODE_SPAN.findall(text))
            )

        return [n for n in self.ranked(" OR ".join(phrases)) if names_one(n.text)]

    def headed(self, name: str) -> list[Note]:
        """Sections of a page called `name`, or under a heading with `name` as a word, best first."""
        phrase = fts_phrase(name)
        lowered = name.lower()
        return [
            n
            for n in self.ranked(f"head : {phrase}" if phrase else None)
            if n.topic.lower() == lowered or lowered in (w.lower() for w in words(" ".join(n.breadcrumb)))
        ]

    def pick(self, notes: Iterable[Note], seen: Callable[[str], bool]) -> list[Note]:
        """The first [agent_hooks] results pages of `notes` (one ranking, best first), each as its best section
        not `seen`: the pages in the order the ranking pipeline gives any search's lexical candidates."""
        fresh = {n.chunk: n for n in notes if not seen(n.key)}
        found = Candidates(
            {"lexical": [(c, n.score) for c, n in fresh.items()]}, {c: n.path for c, n in fresh.items()}, "lexical"
        )
        results = self.settings.results
        hits = rank_pages(found, fusion="score", top_files=results, chunks_per_file=1, limit=results)
        return [fresh[hit.chunks[0][0]] for hit in hits]

    def render(self, notes: list[Note], query: str = "") -> str:
        """Notes as markdown: where each one is, then a snippet around the query's words."""
        terms = {w.lower() for w in words(query) if w.lower() not in STOP_WORDS}
        lines = []
        for note in notes:
            where = " › ".join(note.breadcrumb) or note.topic
            kind = (
                "personal memory" if note.path.startswith(PREFIX) else "memory" if self.is_memory(note.path) else "wiki"
            )
            lines.append(f"- [{kind}] {note.path}:{note.start_line}-{note.end_line} {where}")
            lines.append("  " + snippet(note.text, terms, self.settings.snippet_chars))
        return "\n".join(lines)


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _whole_words(names: list[str]) -> re.Pattern[str] | None:
    return re.compile(r"(?<![\w$])(?:" + "|".join(map(re.escape, names)) + r")(?![\w$])") if names else None
