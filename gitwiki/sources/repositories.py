"""`[[repository]]` entries as corpora: where each lives in the user cache, how it syncs, how it is searched.

A repository derives two corpora, `repo:NAME:wiki` (its wiki folder) and `repo:NAME:corpus` (all its
markdown). One with a url is fetched into a bare cache, one with a path is read in place; either way pages
come from git objects at the configured ref, never from a checkout, into an index of its own under
`$XDG_CACHE_HOME/gitwiki/repositories/NAME-HASH/`, shared by every checkout that declares it. A path
repository that is the current checkout is not external: its two corpora become local ones (worktree included).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.config import (
    REPO_CONFIG_NAME,
    Config,
    CorpusConfig,
    EmbeddingsConfig,
    RepositoryConfig,
    SearchConfig,
    user_cache_dir,
    user_config_path,
)
from gitwiki.errors import GitwikiError, MissingObject, NotFoundError, StoreError, UsageError
from gitwiki.fs import atomic_write, path_problem
from gitwiki.git.gitrepo import Commit, GitRepo, HistoryEntry
from gitwiki.index import artifact
from gitwiki.index.embed import Embedder, load_embedder
from gitwiki.index.indexer import IndexReport, Progress, corpus_tree, ensure_vectors, is_current, update
from gitwiki.index.onnx_embed import model_key
from gitwiki.index.store import Store
from gitwiki.pages import pages
from gitwiki.search.searcher import CorpusView, Searcher, SearchOptions, SearchResult
from gitwiki.sources.consents import ConsentRequired, Consents, consent_message
from gitwiki.sources.source import Page, Scope, search_view

if TYPE_CHECKING:
    from gitwiki.git import remote
else:  # pygit2's fetch machinery, imported when a synced repository is read (not by a search of this checkout)
    from gitwiki.native import Deferred

    remote = Deferred("gitwiki.git.remote", globals())

DEFAULT_WIKI = "wiki"
STATE_FILE = "sync.json"
KINDS = ("wiki", "corpus")


def cache_home() -> Path:
    return user_cache_dir("repositories")


def corpus_names(name: str) -> tuple[str, str]:
    return f"repo:{name}:wiki", f"repo:{name}:corpus"


def derived_corpora(repo: RepositoryConfig, wiki: str) -> tuple[CorpusConfig, CorpusConfig]:
    wiki_name, all_name = corpus_names(repo.name)
    return (
        CorpusConfig(wiki_name, wiki, repo.include, repo.exclude, source=repo.source),
        CorpusConfig(all_name, "", repo.include, repo.exclude, source=repo.source),
    )


def for_checkout(config: Config, root: Path, start: Path) -> tuple[Config, str | None]:
    """`config` as seen from a checkout at `root` (cwd `start`), and the default corpus there.

    A path repository that is this checkout becomes two local corpora. The default corpus is the wiki of the
    deepest declared path repository containing `start` (None: the first corpus, as without repositories).
    """
    root, start = root.resolve(), start.resolve()
    own = next((r for r in config.repositories if r.path and Path(r.path) == root), None)
    if own is not None:
        wiki = own.wiki if own.wiki is not None else config.corpora[0].path
        config = config._replace(
            corpora=config.corpora + derived_corpora(own, wiki),
            repositories=tuple(r for r in config.repositories if r is not own),
        )
    declared = (own,) if own is not None else ()
    containing = [
        r
        for r in (*declared, *config.repositories)
        if r.path and (Path(r.path) == start or Path(r.path) in start.parents)
    ]
    deepest = max(containing, key=lambda r: len(Path(r.path or "").parts), default=None)
    return config, corpus_names(deepest.name)[0] if deepest is not None else None


class SyncState(NamedTuple):
    """What the last sync left, kept in sync.json next to the cache."""

    commit: str | None = None  # the commit indexed
    ref: str | None = None  # the remote ref followed
    wiki: str | None = None  # the wiki folder at that commit
    synced_at: float | None = None  # the last successful sync
    error: str | None = None  # the last failure, cleared by a success
    failed_at: float | None = None


class SyncReport(NamedTuple):
    repository: str
    commit: str
    previous: str | None  # the commit indexed before (None: first sync)
    downloaded: bool  # objects were fetched (False: the remote had not moved, or a local path)
    rewritten: bool  # the new commit does not contain the previous one (a force-push or another ref)
    artifact: bool  # installed from the remote's refs/gitwiki/index before catching up
    error: str | None  # the fetch failed: the last index stays in use
    notes: tuple[str, ...]
    reports: list[IndexReport]
    seconds: float


class RepositoryStatus(NamedTuple):
    name: str
    location: str  # the url or path
    ref: str | None  # the ref followed ("refs/heads/main"); None before the first sync
    commit: str | None
    wiki: str
    corpora: dict[str, int]  # corpus name → pages indexed
    chunks: dict[str, int]  # corpus name → chunks of those pages
    model: str | None  # the embedding model of the indexed vectors (None: lexical only)
    synced_at: float | None
    error: str | None
    failed_at: float | None
    remote_commit: str | None  # what the ref points at now (only when asked to check)
    allowed: bool  # False: declared by the checkout and not allowed yet (`gitwiki repo allow NAME`)

    @property
    def state(self) -> str:
        if not self.allowed:
            return "not allowed"
        if self.commit is None:
            return "not synced"
        if self.error is not None:
            return "fetch failed"
        if self.remote_commit is not None and self.remote_commit != self.commit:
            return "behind"
        return "synced"


class Repository:
    def __init__(self, config: RepositoryConfig, search: SearchConfig, consents: Consents):
        self.config = config
        self.search_config = search  # for the reranker; queries bring their own SearchOptions
        self.consents = consents
        key = hashlib.sha1((config.url or config.path or "").encode()).hexdigest()[:12]
        self.cache_dir = cache_home() / f"{config.name}-{key}"
        self._damaged = False  # objects found missing: the next sync clones again

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def location(self) -> str:
        return self.config.url or self.config.path or ""

    def allowed(self) -> bool:
        return self.consents.allowed(self.config)

    def require_consent(self) -> None:
        """Refuse to fetch, read or search a repository the user has not allowed (see `Consents`)."""
        if not self.allowed():
            raise ConsentRequired(consent_message(self.config))

    @functools.cached_property
    def objects(self) -> remote.Objects:
        if self.config.path:
            return remote.Objects.local(self.config.path)
        return remote.Objects.cache(self.cache_dir / "git")

    @property
    def git(self) -> GitRepo:
        return self.objects.git

    @functools.cached_property
    def store(self) -> Store:
        return Store.open(self.cache_dir / "index")

    @functools.cached_property
    def searcher(self) -> Searcher:
        return Searcher.configured(self.store, self.search_config)

    def state(self) -> SyncState:
        try:
            data = json.loads((self.cache_dir / STATE_FILE).read_text(encoding="utf-8"))
            return SyncState(**{k: data.get(k) for k in SyncState._fields})
        except (OSError, ValueError):
            return SyncState()

    def _save(self, state: SyncState) -> None:
        atomic_write(self.cache_dir / STATE_FILE, json.dumps(state._asdict(), indent=2) + "\n")

    def corpora(self, state: SyncState | None = None) -> tuple[CorpusConfig, CorpusConfig]:
        wiki = self.config.wiki if self.config.wiki is not None else (state or self.state()).wiki
        return derived_corpora(self.config, DEFAULT_WIKI if wiki is None else wiki)

    def corpus(self, name: str) -> CorpusConfig:
        return next(c for c in self.corpora() if c.name == name)

    # ---- syncing ---------------------------------------------------------------------------------

    def sync(
        self, embeddings: EmbeddingsConfig, *, lexical: bool = False, progress: Progress | None = None
    ) -> SyncReport:
        """Fetch the ref (a url) or read it (a path), then index both corpora incrementally.

        A failed fetch keeps the last index and reports the error; with no index yet it raises.
        """
        self.require_consent()
        started = time.perf_counter()
        before = self.state()
        notes: list[str] = []
        if self.config.url and (self._damaged or (before.commit is not None and not self.git.holds(before.commit))):
            notes.append(self._set_cache_aside())
        try:
            fetched = self._fetch(want_artifact=before.commit is None, progress=progress)
        except GitwikiError as e:
            if before.commit is None:
                raise
            self._save(before._replace(error=str(e), failed_at=time.time()))
            return SyncReport(
                self.name, before.commit, before.commit, False, False, False, str(e), tuple(notes), [], _since(started)
            )
        commit = fetched.commit
        rewritten = before.commit is not None and not self.objects.is_ancestor(before.commit, commit.id)
        wiki = self.config.wiki if self.config.wiki is not None else own_wiki(self.objects, commit)
        installed = fetched.artifact is not None and self._install_artifact(embeddings, notes)
        model = model_key(embeddings) if embeddings.enabled else None
        reports = []
        corpora = derived_corpora(self.config, wiki)
        for c in corpora:
            fresh = is_current(self.store.state(c.name), corpus_tree(self.git, c, commit), model)
            embedder = None if lexical or fresh else load_embedder(embeddings)
            reports.append(
                update(self.store, self.git, c, commit, embedder, progress, self.search_config.max_page_bytes)
            )
        if any(not r.up_to_date for r in reports):
            refused = self.git.refused_paths(corpora[1], commit.tree)
            if refused:
                shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
                notes.append(f"left out {len(refused)} path(s) that leave the repository or point into .git: {shown}")
        if installed:  # the artifact's own corpora served to seed the blob and vector caches
            with self.store.lock(), self.store.write():
                self.store.drop_states(keep={c.name for c in corpora})
                self.store.gc()
        self._save(SyncState(commit.id, fetched.ref, wiki, time.time(), None, None))
        return SyncReport(
            self.name,
            commit.id,
            before.commit,
            fetched.downloaded,
            rewritten,
            installed,
            None,
            tuple(notes),
            reports,
            _since(started),
        )

    def _set_cache_aside(self) -> str:
        """Remove the bare cache of a url repository whose objects are gone (an interrupted gc, a disk clean-up
        under objects/): its refs then point at nothing and every read of a page failed. The cache is gitwiki's own
        copy, so the fetch that follows clones the repository again; the index is kept (its rows are keyed by
        blob id: pages that did not change are not parsed again). Returns the note saying so."""
        self.__dict__.pop("objects", None)
        self._damaged = False
        cache = self.cache_dir / "git"
        aside = self.cache_dir / f"git.damaged-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            os.replace(cache, aside)  # first, so that no reader opens it half deleted
        shutil.rmtree(aside, ignore_errors=True)
        return "the cached git objects were missing (an interrupted gc or a disk clean-up?): cloned again"

    def repair(self, embeddings: EmbeddingsConfig) -> None:
        """After a read found an object missing: clone a url repository's cache again and sync (lexically: the
        vectors are the index's, kept), saying so on stderr. A path repository is its owner's to repair."""
        if self.config.path:
            raise StoreError(
                f"repository {self.name} at {self.config.path} is missing git objects its last sync pointed at; "
                f"repair it there (`git fsck`), then run `gitwiki repo sync {self.name}`"
            )
        self._damaged = True
        report = self.sync(embeddings, lexical=True)
        for note in report.notes:
            print(f"gitwiki: {self.name}: {note}", file=sys.stderr)
        if report.error:
            raise StoreError(
                f"repository {self.name}'s cache lost git objects and could not be fetched again ({report.error}); "
                f"run `gitwiki repo sync {self.name}` when {self.location} is reachable"
            )

    def _fetch(self, *, want_artifact: bool, progress: Progress | None) -> remote.Fetched:
        if self.config.path:
            rev = self.config.ref or "HEAD"
            return remote.Fetched(self.git.rev_parse(rev), rev, False, None)
        assert self.config.url is not None  # config validation: exactly one of url and path
        on_objects = (lambda done, total: progress("fetch", done, total)) if progress else None
        return self.objects.fetch(self.config.url, self.config.ref, want_artifact=want_artifact, progress=on_objects)

    def _install_artifact(self, embeddings: EmbeddingsConfig, notes: list[str]) -> bool:
        """Install the remote's published index (first sync only), so catching up embeds only what changed."""
        tip = self.objects.ref_commit(remote.ARTIFACT_REF)
        data = self.objects.file_at(tip, artifact.ARCHIVE_NAME) if tip else None
        if data is None:
            notes.append(f"{remote.ARTIFACT_REF} holds no {artifact.ARCHIVE_NAME}; indexed from scratch")
            return False
        self.close()  # the database file is about to be replaced
        index_dir = self.cache_dir / "index"
        index_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".artifact-", dir=self.cache_dir) as tmp:
            archive = Path(tmp) / artifact.ARCHIVE_NAME
            archive.write_bytes(data)
            try:
                artifact.unpack(archive, index_dir, model_key(embeddings) if embeddings.enabled else None)
            except GitwikiError as e:
                notes.append(f"published index not used ({e})")
                return False
        notes.append(f"installed the published index from {remote.ARTIFACT_REF} ({tip.id[:12] if tip else ''})")
        return True

    # ---- reading ---------------------------------------------------------------------------------

    def view(self, name: str, embedder: Embedder | None, embeddings: EmbeddingsConfig, auto_sync: bool) -> CorpusView:
        """The synced pages of corpus `name` (syncing first if it never was and `auto_sync`)."""
        self.require_consent()
        state = self.store.state(name)
        if state is not None and self.config.url and not self.git.has(state.commit):
            self.repair(embeddings)  # the cache lost its objects: every page read would fail
            state = self.store.state(name)
        if state is None:
            if not auto_sync:
                raise NotFoundError(f"repository {self.name} is not synced yet; run `gitwiki repo sync {self.name}`")
            self.sync(embeddings, lexical=embedder is None)
            state = self.store.state(name)
            assert state is not None  # sync indexes both corpora or raises
        pages = self._pages(name)
        if embedder is not None and state.model != embedder.model_id:  # synced lexically: embed now
            with self.store.lock():
                ensure_vectors(self.store, embedder, set(pages.values()))
        return CorpusView(name, state.commit, pages, (), f"{name}:{state.tree}")

    def _pages(self, name: str) -> dict[str, str]:
        """The synced pages of corpus `name`. A cache synced before paths were checked may hold refused
        ones (`wiki/../x.md`): they stay out until the next change re-indexes the repository."""
        return {p: blob for p, blob in self.store.pages(name).items() if path_problem(p) is None}

    def _page(self, name: str, path: str) -> tuple[str, str]:
        """(repo-relative path, blob) of a synced page of corpus `name`, given corpus- or repo-relative."""
        self.require_consent()
        pages = self._pages(name)
        prefix = self.corpus(name).prefix
        rel = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
        problem = path_problem(rel) if rel else "is empty"
        if problem is not None:  # the rule a local corpus's paths follow (gitwiki.pages.pages.locate)
            raise UsageError(f"{path!r} {problem}; paths must stay inside corpus {name!r}, out of .git")
        found = next((p for p in (prefix + rel, rel) if p in pages and p.startswith(prefix)), None)
        if found is None:
            raise NotFoundError(f"no page {path!r} in corpus {name!r} (as synced); list_files shows its pages")
        return found, pages[found]

    def read(self, name: str, path: str) -> tuple[str, str]:
        """(corpus-relative path, text) of a synced page."""
        found, blob = self._page(name, path)
        return found[len(self.corpus(name).prefix) :], self.git.read_blob(blob).decode("utf-8", errors="replace")

    def history(self, name: str, path: str, limit: int) -> tuple[str, list[HistoryEntry]]:
        """(corpus-relative path, commits that changed it up to the synced commit, newest first)."""
        found, _ = self._page(name, path)
        state = self.store.state(name)
        commits = self.git.history(found, limit, start=state.commit) if state else []
        return found[len(self.corpus(name).prefix) :], commits

    def status(self, check: bool = False) -> RepositoryStatus:
        state = self.state()
        corpora = self.corpora(state)
        listings = {c.name: self.store.pages(c.name) for c in corpora} if state.commit else {}
        indexed = self.store.state(corpora[0].name) if state.commit else None
        now = None
        allowed = self.allowed()
        if check and allowed:
            try:
                now = self._remote_commit()
            except GitwikiError as e:
                state = state._replace(error=str(e), failed_at=time.time())
        return RepositoryStatus(
            self.name,
            self.location,
            state.ref,
            state.commit,
            corpora[0].path,
            {name: len(pages) for name, pages in listings.items()},
            {name: self.store.chunk_count(set(pages.values())) for name, pages in listings.items()},
            indexed.model if indexed else None,
            state.synced_at,
            state.error,
            state.failed_at,
            now,
            allowed,
        )

    def _remote_commit(self) -> str:
        if self.config.path:
            return self.git.rev_parse(self.config.ref or "HEAD").id
        assert self.config.url is not None
        return self.objects.advertised(self.config.url, self.config.ref) or self.config.ref or ""

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()
        for name in ("store", "searcher"):
            self.__dict__.pop(name, None)


class RepositoryCorpus:
    """One corpus of a synced repository as a `sources.CorpusSource`: read-only, as of the last sync; its pages
    are git objects, not files here, so they have no absolute path."""

    def __init__(
        self,
        repository: Repository,
        name: str,
        embedder: Callable[[], Embedder | None],
        embeddings: EmbeddingsConfig,
        auto_sync: bool,
    ) -> None:
        self.repository = repository
        self._name = name
        self._embedder = embedder  # the checkout's model, loaded once per process
        self._embeddings = embeddings
        self._auto_sync = auto_sync

    @property
    def name(self) -> str:
        return self._name

    @property
    def config(self) -> CorpusConfig:
        return self.repository.corpus(self._name)

    def view(self, at: str | None = None, worktree: bool = True, vectors: bool = False) -> CorpusView:
        if at is not None:
            raise UsageError(f"--at reads this checkout's history; {self._name} is searched as last synced")
        embedder = self._embedder() if vectors else None
        return self.repository.view(self._name, embedder, self._embeddings, self._auto_sync)

    def search(self, query: str, options: SearchOptions, at: str | None = None, worktree: bool = True) -> SearchResult:
        return search_view(self.scope(options, at, worktree), query, options)

    def scope(self, options: SearchOptions, at: str | None = None, worktree: bool = True) -> Scope:
        view = self.view(at, worktree, vectors=options.mode != "lexical")
        embedder = self._embedder() if options.mode != "lexical" else None
        fix = "set wiki in its [[repository]] in .gitwiki.toml"
        return Scope(self.repository.searcher, view, embedder, self._read_text, self.config, fix)

    def _read_text(self, path: str) -> str:
        return self._read(path)[1]

    def _read(self, path: str) -> tuple[str, str]:
        """`Repository.read`, once more after the cache is cloned again when the page's object was gone."""
        try:
            return self.repository.read(self._name, path)
        except MissingObject:
            self.repository.repair(self._embeddings)
            return self.repository.read(self._name, path)

    def files(self, glob: str | None = None) -> tuple[CorpusView, list[pages.ListedPage]]:
        view = self.view()
        listed = pages.list_files(Path(), self.config, view.pages, glob)
        return view, [f._replace(absolute_path="") for f in listed]

    def tree(self, under: str, depth: int | None) -> tuple[CorpusView, dict[str, Any]]:
        view, files = self.files()
        node = pages.tree(Path(), self.config, files, under, depth)
        _drop_absolute(node)
        pages.add_folder_summaries(node, {f.path for f in files}, self._read_text)
        return view, node

    def read(self, path: str) -> Page:
        shown, text = self._read(path)
        return Page(self._name, shown, "", text, {"commit": self.repository.state().commit, "dirty": False})

    def history(self, path: str, limit: int) -> tuple[str, list[HistoryEntry]]:
        return self.repository.history(self._name, path, limit)  # up to the synced commit

    def status(self) -> dict[str, Any]:
        s = self.repository.status()
        return {
            "name": self._name,
            "path": s.wiki if self._name.endswith(":wiki") else "",
            "absolute_path": "",
            "pages": s.corpora.get(self._name, 0),
            "chunks": s.chunks.get(self._name, 0),
            "indexed_commit": s.commit,
            "head_commit": s.commit,
            "state": {"not synced": "not indexed", "synced": "fresh"}.get(s.state, s.state),
            "dirty": [],
            "model": s.model,
            "repository": s.name,
            "location": s.location,
            "ref": s.ref,
            "synced_at": s.synced_at,
            "error": s.error,
        }

    def check_writable(self) -> None:
        raise UsageError(
            f"{self._name} is another repository, synced read-only: `gitwiki repo sync` fetches and indexes it, "
            "and its pages change in its own checkout"
        )

    def truncated(self) -> tuple[str, ...]:
        return ()  # a synced repository keeps no record of pages cut at max_page_bytes

    def page_key(self, path: str) -> tuple[str, str]:
        return (self.repository.location, path)


def _drop_absolute(node: dict[str, Any]) -> None:
    node["absolute_path"] = ""
    for f in node["files"]:
        f["absolute_path"] = ""
    for sub in node["subdirs"]:
        _drop_absolute(sub)


def own_wiki(objects: remote.Objects, commit: Commit) -> str:
    """The repo's own wiki folder: the path of the first [[corpus]] in its .gitwiki.toml at `commit`, else wiki/."""
    data = objects.file_at(commit, REPO_CONFIG_NAME)
    try:
        corpora = tomllib.loads(data.decode("utf-8")).get("corpus") if data else None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return DEFAULT_WIKI
    first = corpora[0] if isinstance(corpora, list) and corpora and isinstance(corpora[0], dict) else {}
    path = first.get("path")
    if not isinstance(path, str):
        return DEFAULT_WIKI
    folder = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
    return DEFAULT_WIKI if path.startswith("/") or (folder and path_problem(folder)) else folder


def _since(started: float) -> float:
    return time.perf_counter() - started


class Repositories:
    """The declared repositories of one configuration, by name."""

    def __init__(self, configs: tuple[RepositoryConfig, ...], search: SearchConfig, consents: Consents | None = None):
        self.consents = consents or Consents()
        self._by_name = {r.name: Repository(r, search, self.consents) for r in configs}

    def __iter__(self) -> Iterator[Repository]:
        return iter(self._by_name.values())

    def get(self, name: str) -> Repository:
        if name not in self._by_name:
            known = ", ".join(self._by_name) or "none are declared"
            raise NotFoundError(f"no [[repository]] named {name!r} ({known}); add it to .gitwiki.toml or the baseline")
        return self._by_name[name]

    def _owner(self, corpus: str | None) -> Repository | None:
        """The repository a `repo:NAME:wiki|corpus` corpus name belongs to, if it is one of ours."""
        parts = corpus.split(":") if corpus else []
        if len(parts) == 3 and parts[0] == "repo" and parts[2] in KINDS:
            return self._by_name.get(parts[1])
        return None

    def source(
        self, corpus: str | None, embedder: Callable[[], Embedder | None], embeddings: EmbeddingsConfig, auto_sync: bool
    ) -> RepositoryCorpus | None:
        """Corpus `corpus` as a source, if it is one of a declared repository's (None: not a repository's)."""
        owner = self._owner(corpus)
        if owner is None or corpus is None:
            return None
        return RepositoryCorpus(owner, corpus, embedder, embeddings, auto_sync)

    def corpus_names(self) -> list[str]:
        return [name for r in self for name in corpus_names(r.name)]

    def searchable(self) -> list[str]:
        """The corpora a search of all takes in: those of the repositories allowed and synced (never a fetch)."""
        return [name for r in self if r.allowed() and r.state().commit for name in corpus_names(r.name)]

    def sync(
        self,
        name: str | None,
        embeddings: EmbeddingsConfig,
        *,
        lexical: bool = False,
        progress: Progress | None = None,
    ) -> list[SyncReport]:
        if name is None and not self._by_name:
            raise UsageError("no [[repository]] is declared; see docs/configuration-repositories.md#repositories")
        chosen = [self.get(name)] if name else list(self)
        refused = [r for r in chosen if not r.allowed()]
        if refused:  # before any fetch: a sync of all is not half done
            raise ConsentRequired("; ".join(consent_message(r.config) for r in refused))
        return [r.sync(embeddings, lexical=lexical, progress=progress) for r in chosen]

    def allow(self, names: list[str], allow: bool = True) -> list[RepositoryConfig]:
        """Allow (or withdraw) the named entries of the checkout's .gitwiki.toml, or all of them; returns them."""
        chosen = [self.get(n) for n in names] if names else [r for r in self if r.config.from_checkout]
        mine = [r.name for r in chosen if not r.config.from_checkout]
        if mine:
            raise UsageError(
                f"{', '.join(mine)}: declared in your own {user_config_path()}, which needs no consent; "
                "name the checkout's entries only"
            )
        entries = [r.config for r in chosen]
        if entries:
            self.consents.set(entries, allow)
        return entries

    def close(self) -> None:
        for r in self:
            r.close()
