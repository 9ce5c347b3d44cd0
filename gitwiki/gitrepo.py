"""What gitwiki asks of git through pygit2: revisions, corpus trees, blobs, worktree status, history. (The
pre-commit hooks, fetch, push and the status of a folder in a big repo use the git command: `gitwiki.gitcli`.)"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

import pygit2

from gitwiki import gitcli
from gitwiki.config import CorpusConfig, matches
from gitwiki.errors import NotFoundError
from gitwiki.gitcli import blob_id

# pygit2 can only check the whole worktree (about 3 ms per 1,000 tracked files); `git status -- FOLDER`
# costs a subprocess (4–5 ms) but only the folder's share. Past this many tracked files, a corpus in a folder
# of a bigger repo asks git: a 100-page wiki in a 20,000-file repo, 9 ms instead of 58 ms per query.
FOLDER_STATUS_FROM = 2000

# A path → blob id listing of one corpus state, paths relative to the repo root.
PageMap = dict[str, str]


class Commit(NamedTuple):
    id: str
    tree: str  # the root tree id


class HistoryEntry(NamedTuple):
    commit: str
    author: str
    email: str
    date: str  # ISO 8601
    subject: str


class GitRepo:
    def __init__(self, repo: pygit2.Repository):
        self._repo = repo

    @classmethod
    def discover(cls, start: str | os.PathLike = ".") -> GitRepo:
        """The checkout containing `start`. Found by `gitcli.discover` (the hooks cannot import pygit2), so
        both agree on every set-up git itself understands; the subprocess costs about 3.5 ms once per command."""
        return cls(pygit2.Repository(str(gitcli.discover(start).root)))

    @property
    def root(self) -> Path:
        return Path(self._repo.workdir).resolve()

    @property
    def common_dir(self) -> Path:
        """The .git dir shared by all worktrees (a linked worktree's own gitdir names it in `commondir`)."""
        gitdir = Path(self._repo.path)
        commondir = gitdir / "commondir"
        if commondir.is_file():
            return (gitdir / commondir.read_text().strip()).resolve()
        return gitdir.resolve()

    def head(self) -> Commit | None:
        if self._repo.head_is_unborn:
            return None
        commit = self._repo.head.peel(pygit2.Commit)
        return Commit(str(commit.id), str(commit.tree_id))

    def rev_parse(self, rev: str) -> Commit:
        try:
            commit = self._repo.revparse_single(rev).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise NotFoundError(f"unknown revision {rev!r}; try a commit id, branch or tag (see `git log`)") from None
        return Commit(str(commit.id), str(commit.tree_id))

    def committed_blob(self, path: str) -> str | None:
        """The blob id of the repo-relative `path` at HEAD, or None (unborn HEAD, or not committed)."""
        head = self.head()
        if head is None:
            return None
        try:
            return str(self._tree(head.tree)[path].id)
        except KeyError:
            return None

    def is_dirty(self, path: str) -> bool:
        """Whether the file at the repo-relative `path` differs from HEAD (untracked, modified or deleted)."""
        file = self.root / path
        on_disk = blob_id(file.read_bytes()) if file.is_file() else None
        return on_disk != self.committed_blob(path)

    def config_value(self, key: str) -> str | None:
        """A git config value (`core.hooksPath`), or None when it is not set."""
        try:
            return self._repo.config[key]
        except KeyError:
            return None

    def subtree(self, tree_id: str, path: str) -> str | None:
        """The id of the tree at `path` inside `tree_id` ("" is the tree itself), or None if absent."""
        tree = self._tree(tree_id)
        if not path:
            return str(tree.id)
        try:
            entry = tree[path]
        except KeyError:
            return None
        return str(entry.id) if entry.type_str == "tree" else None

    def pages(self, corpus: CorpusConfig, tree_id: str | None) -> PageMap:
        """Every page of `corpus` in the corpus tree `tree_id` (as returned by `subtree`)."""
        if tree_id is None:
            return {}
        out: PageMap = {}
        stack = [(self._tree(tree_id), corpus.prefix)]
        while stack:
            tree, base = stack.pop()
            for entry in tree:
                path = f"{base}{entry.name}"  # a tree entry always has a name (pygit2's stubs allow None)
                if entry.type_str == "tree":
                    stack.append((self._tree(entry.id), path + "/"))
                elif entry.type_str == "blob" and entry.filemode != pygit2.GIT_FILEMODE_LINK and matches(corpus, path):
                    out[path] = str(entry.id)
        return out

    def read_blob(self, blob: str) -> bytes:
        return self._repo[blob].peel(pygit2.Blob).data  # a unique prefix of the id works too

    def write_blob(self, data: bytes) -> str:
        """Put `data` in the object database (loose, unreferenced until committed) and return its id."""
        return str(self._repo.create_blob(data))

    def worktree_changes(self, corpus: CorpusConfig) -> dict[str, bool]:
        """Pages whose worktree state differs from HEAD: path → whether the file exists on disk.

        Untracked pages count; files git ignores never do.
        """
        if corpus.path and len(self._repo.index) > FOLDER_STATUS_FROM:
            paths = gitcli.changed_files(self.root, corpus.path)
        else:
            paths = [
                p
                for p, flags in self._repo.status(untracked_files="all").items()
                if not flags & pygit2.GIT_STATUS_IGNORED
            ]
        changed: dict[str, bool] = {}
        for path in paths:
            if matches(corpus, path):
                full = self.root / path
                changed[path] = full.is_file() and not full.is_symlink()
        return changed

    def commit_paths(self, paths: list[str], message: str) -> str:
        """Commit the worktree state of exactly `paths` (added, changed or deleted) on HEAD; returns the commit id.

        Other staged or unstaged changes stay out of the commit and keep their state in the index.
        """
        repo = self._repo
        head = self.head()
        isolated = pygit2.Index()
        if head is not None:
            isolated.read_tree(self._tree(head.tree))
        staging = repo.index
        staging.read()
        for path in paths:
            full = self.root / path
            if full.is_file():
                entry = pygit2.IndexEntry(path, repo.create_blob_fromworkdir(path), pygit2.enums.FileMode.BLOB)
                isolated.add(entry)
                staging.add(entry)
            else:
                for index in (isolated, staging):
                    if path in index:
                        index.remove(path)
        tree = isolated.write_tree(repo)
        try:
            signature = repo.default_signature
        except (KeyError, pygit2.GitError):  # no user.name/user.email configured
            signature = pygit2.Signature("gitwiki", "gitwiki@localhost")
        commit = repo.create_commit("HEAD", signature, signature, message, tree, [head.id] if head else [])
        staging.write()
        return str(commit)

    def _tree(self, oid: str | pygit2.Oid) -> pygit2.Tree:
        return self._repo[oid].peel(pygit2.Tree)

    def history(self, path: str, limit: int = 20, start: str | None = None) -> list[HistoryEntry]:
        """Commits on HEAD (or from the commit `start`) that changed `path`, newest first."""
        head = self.head() if start is None else self.rev_parse(start)
        if head is None:
            return []
        out: list[HistoryEntry] = []
        for commit in self._repo.walk(head.id, pygit2.enums.SortMode.TIME):
            blob = _blob_at(commit.tree, path)
            parents = commit.parents
            if parents:
                if all(_blob_at(p.tree, path) == blob for p in parents):
                    continue
            elif blob is None:
                continue
            out.append(_history_entry(commit))
            if len(out) >= limit:
                break
        return out


def _blob_at(tree: pygit2.Tree, path: str):
    try:
        return tree[path].id
    except KeyError:
        return None


def _history_entry(commit: pygit2.Commit) -> HistoryEntry:
    tz = timezone(timedelta(minutes=commit.author.offset))
    return HistoryEntry(
        commit=str(commit.id),
        author=commit.author.name,
        email=commit.author.email,
        date=datetime.fromtimestamp(commit.author.time, tz).isoformat(),
        subject=commit.message.splitlines()[0] if commit.message else "",
    )
