"""What gitwiki asks of git through pygit2: revisions, corpus trees, blobs, worktree status, history. (The
pre-commit hooks, fetch, push and the status of a folder in a big repo use the git command: `gitwiki.git.gitcli`.)"""

from __future__ import annotations

import functools
import os
import random
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import CorpusConfig, matches
from gitwiki.errors import GitwikiError, MissingObject, NotFoundError, StoreError
from gitwiki.fs import path_problem, stat_stamp
from gitwiki.git import gitcli
from gitwiki.git.gitcli import Checkout, blob_id

if TYPE_CHECKING:
    import pygit2
else:  # imported on first use: a memory search reads worktree files and the index, no git object
    from gitwiki.native import Deferred

    pygit2 = Deferred("pygit2", globals())

# pygit2 can only check the whole worktree; `git status -- FOLDER` costs a subprocess but only the folder's
# share. Past this many tracked files, a corpus in a folder of a bigger repo asks git (a 100-page wiki in a
# 20,000-file repo: 12 ms instead of 60 ms per query, docs/research/index-and-query.md).
FOLDER_STATUS_FROM = 2000

# commit_paths rebuilds its commit on a HEAD that moved meanwhile this many times, after a random pause
# growing by 20 ms each time (about 4 s at most). While it holds index.lock no `git commit` of this
# checkout can move HEAD; another worktree's index, `git update-ref` or a script can.
COMMIT_ATTEMPTS = 20
# git holds index.lock for one command (`git add`, `git commit`: milliseconds); a lock held longer is
# stale (a killed git), and the user is told what to run once it is gone.
INDEX_LOCK_WAIT = 5.0

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
    def __init__(self, repo: pygit2.Repository | Checkout):
        # A `Checkout` (git already found it) is opened in pygit2 on first use: root and git dirs are known.
        self._checkout = repo if isinstance(repo, Checkout) else None
        if self._checkout is None:
            self.__dict__["_repo"] = repo
        # commit id → HEAD as `head` gives it: a commit's tree never changes, and reading the commit object was
        # most of a server's HEAD check before every query
        self._heads: dict[pygit2.Oid | str, Commit] = {}

    @classmethod
    def discover(cls, start: str | os.PathLike[str] = ".") -> GitRepo:
        """The checkout containing `start`. Found by `gitcli.discover` (the hooks cannot import pygit2), so
        both agree on every set-up git itself understands; the subprocess costs about 3.5 ms once per command.
        pygit2 opens the git dir git found, not the worktree: its own discovery ignores GIT_DIR and
        GIT_WORK_TREE (a checkout whose git dir lives elsewhere was a traceback, or another repo's pages)."""
        repo = cls(gitcli.discover(start))
        _ = repo._repo  # opened now: a git dir pygit2 cannot open is said here, as before
        return repo

    @functools.cached_property
    def _repo(self) -> pygit2.Repository:
        checkout = self._checkout
        assert checkout is not None  # set whenever no repository was given
        repo = pygit2.Repository(str(checkout.git_dir))
        if repo.workdir is None or Path(repo.workdir).resolve() != checkout.root:
            repo.workdir = str(checkout.root)
        return repo

    # The three paths are resolved once: a realpath each was a tenth of a warm lexical `ground`'s own work (5 a
    # query, 20 µs each), and a checkout's place does not change under a process that has it open.
    @functools.cached_property
    def root(self) -> Path:
        return self._checkout.root if self._checkout else Path(self._repo.workdir).resolve()

    @functools.cached_property
    def git_dir(self) -> Path:
        """This worktree's own .git dir (for a linked worktree, not the shared one)."""
        return self._checkout.git_dir if self._checkout else Path(self._repo.path).resolve()

    @functools.cached_property
    def common_dir(self) -> Path:
        """The .git dir shared by all worktrees (a linked worktree's own gitdir names it in `commondir`)."""
        if self._checkout:
            return self._checkout.common_dir
        gitdir = Path(self._repo.path)
        commondir = gitdir / "commondir"
        if commondir.is_file():
            return (gitdir / commondir.read_text().strip()).resolve()
        return gitdir.resolve()

    def head(self) -> Commit | None:
        try:
            if self._repo.head_is_unborn:
                return None
            ref = self._repo.head
            known = self._heads.get(ref.target)
            if known is None:
                commit = ref.peel(pygit2.Commit)
                if len(self._heads) >= 64:
                    self._heads.clear()
                known = self._heads[ref.target] = Commit(str(commit.id), str(commit.tree_id))
        except (KeyError, pygit2.GitError) as e:  # HEAD names a commit whose objects are gone
            raise MissingObject(
                f"the git repository {self.root} is damaged: HEAD cannot be read ({e}), its objects are gone (an "
                "interrupted gc or a disk clean-up?); repair it (`git fsck`) or restore it from a copy"
            ) from None
        return known

    def check_committable(self) -> None:
        """MissingObject unless a commit can be made on HEAD: HEAD and its tree are there (or HEAD is unborn)."""
        head = self.head()
        if head is not None:
            self._tree(head.tree)

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

    def status_stamp(self) -> tuple[int, int, int]:
        """Identifies the state of git's index file (staging, its stat cache), which the worktree status
        depends on besides the files: `git add`, a commit or a checkout change it."""
        try:
            st = os.stat(self.git_dir / "index")
        except FileNotFoundError:
            return (0, 0, 0)
        return stat_stamp(st)

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
        return {
            path: str(entry.id)
            for path, entry in self._entries(corpus, tree_id)
            if entry.type_str == "blob" and entry.filemode != pygit2.GIT_FILEMODE_LINK and matches(corpus, path)
        }

    def submodules(self, corpus: CorpusConfig, tree_id: str | None) -> list[str]:
        """The submodules inside the corpus tree `tree_id`: their pages are in another repository, not indexed."""
        return sorted(path for path, entry in self._entries(corpus, tree_id) if entry.type_str == "commit")

    def refused_paths(self, corpus: CorpusConfig, tree_id: str | None) -> list[str]:
        """Entries of the corpus tree `tree_id` whose path `gitwiki.fs.path_problem` refuses (`..`, `.git`, …):
        never pages, listed so that whoever indexes the tree can say what it left out."""
        refused: list[str] = []
        for _ in self._entries(corpus, tree_id, refused):
            pass
        return sorted(refused)

    def _entries(
        self, corpus: CorpusConfig, tree_id: str | None, refused: list[str] | None = None
    ) -> Iterator[tuple[str, pygit2.Object]]:
        """(repo-relative path, entry) of every non-tree entry below the corpus tree `tree_id`. An entry whose
        path is refused (a tree can hold `..` or `.git`, see `path_problem`) is skipped with all below it,
        and appended to `refused`."""
        if not tree_id:  # "": no commit yet, or no corpus folder at HEAD
            return
        stack = [(self._tree(tree_id), corpus.prefix)]
        while stack:
            tree, base = stack.pop()
            for entry in tree:
                path = f"{base}{entry.name}"  # a tree entry always has a name (pygit2's stubs allow None)
                if path_problem(path) is not None:
                    if refused is not None:
                        refused.append(path)
                elif entry.type_str == "tree":
                    stack.append((self._tree(entry.id), path + "/"))
                else:
                    yield path, entry

    def read_blob(self, blob: str) -> bytes:
        try:
            return self._repo[blob].peel(pygit2.Blob).data  # a unique prefix of the id works too
        except KeyError:
            raise MissingObject(f"git object {blob[:12]} is missing from {self.git_dir}") from None

    def has(self, object_id: str) -> bool:
        """Whether the object is in the database (looked up, not read)."""
        try:
            return object_id in self._repo
        except (ValueError, pygit2.GitError):
            return False

    def holds(self, commit_id: str) -> bool:
        """Whether the commit and every tree and blob under it are in the object database: refs can outlive the
        objects they point at (an interrupted gc, a disk clean-up under objects/). Existence is looked up, no
        object is read: tens of ms for 10,000 files."""
        repo = self._repo
        try:
            commit = repo[commit_id]
        except (KeyError, ValueError, pygit2.GitError):
            return False
        if not isinstance(commit, pygit2.Commit):
            return False
        stack = [commit.tree_id]
        while stack:
            try:
                tree = repo[stack.pop()]
            except (KeyError, pygit2.GitError):
                return False
            for entry in tree.peel(pygit2.Tree):
                if entry.type_str == "tree":
                    stack.append(entry.id)
                elif entry.type_str == "blob" and entry.id not in repo:
                    return False
        return True

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
            try:
                paths = [p for p, flags in self._status().items() if not flags & pygit2.GIT_STATUS_IGNORED]
            except pygit2.GitError:  # libgit2's own limits ("directory nesting too deep (100)"): git's status then
                paths = gitcli.changed_files(self.root, corpus.path)
        changed: dict[str, bool] = {}
        root = self.root  # a realpath each time it is asked for
        for path in paths:
            if matches(corpus, path) and path_problem(path) is None:  # wiki/.GIT/ on disk, as in a tree
                full = root / path
                changed[path] = full.is_file() and not full.is_symlink()
        gone = [path for path, present in changed.items() if not present]
        for path in gitcli.skip_worktree(root, gone):
            del changed[path]  # left out by a sparse checkout: the committed page is still the page
        return changed

    def _status(self, attempts: int = 5) -> dict[str, int]:
        """The worktree status. libgit2 lists the files and then hashes them: a file another writer removes
        in between (an atomic write's temp file, a page deleted) fails the whole scan with "error reading file
        for hashing", so the scan is taken again; seen with two servers writing one repository at once."""
        for attempt in range(1, attempts):
            try:
                return dict(self._repo.status(untracked_files="all"))
            except OSError:
                time.sleep(0.01 * attempt)
        return dict(self._repo.status(untracked_files="all"))  # the last try's error is the caller's

    def commit_paths(self, paths: list[str], message: str) -> str:
        """Commit the worktree state of exactly `paths` (added, changed or deleted) on HEAD; returns the commit id.

        Safe beside other git processes: the commit is built in a private index from HEAD's tree, so what
        the user staged stays out of it; HEAD moves by compare-and-swap, so a commit made meanwhile is kept
        and ours is rebuilt on it. The user's index learns exactly `paths`, staged before HEAD moves and
        under git's own index.lock held until it has (`gitcli.index_lock`): a committed page the index
        lacked would show as a staged deletion that the user's next commit makes.
        """
        try:
            return self._commit_paths(paths, message)
        except GitwikiError:
            raise
        except (KeyError, pygit2.GitError) as e:  # an object the commit builds on is gone, a ref that cannot move
            raise StoreError(
                f"could not commit {', '.join(paths)} in {self.root} ({e}); repair the repository (`git fsck`)"
            ) from None

    def _commit_paths(self, paths: list[str], message: str) -> str:
        repo = self._repo
        head = self.head()
        staged: dict[str, tuple[pygit2.enums.FileMode, str] | None] = {}
        for path in paths:
            if (self.root / path).is_file():
                known = self._entry(head, path)
                mode = known.filemode if known is not None else pygit2.enums.FileMode.BLOB
                staged[path] = (mode, str(repo.create_blob_fromworkdir(path)))
            else:
                staged[path] = None
        with gitcli.index_lock(self.root, INDEX_LOCK_WAIT) as held:
            staging = held.stage(staged) if held is not None else None
            if staging is None or not staging.ok:
                why = staging.error if staging else f"index.lock taken for {INDEX_LOCK_WAIT:.0f} s by another git"
                print(
                    f"gitwiki: warning: could not update the git index ({why}); once that is fixed run "
                    f"`git reset -q -- {' '.join(paths)}`, or git will see them as deleted",
                    file=sys.stderr,
                )
            return self._advance_head(head, staged, message)

    def _advance_head(
        self, head: Commit | None, staged: dict[str, tuple[pygit2.enums.FileMode, str] | None], message: str
    ) -> str:
        """Commit `staged` on HEAD by compare-and-swap, rebuilt on a HEAD that moved meanwhile."""
        repo = self._repo
        try:
            signature = repo.default_signature
        except (KeyError, pygit2.GitError):  # no user.name/user.email configured
            signature = pygit2.Signature("gitwiki", "gitwiki@localhost")
        moved = ""
        for attempt in range(COMMIT_ATTEMPTS):
            isolated = pygit2.Index()
            if head is not None:
                isolated.read_tree(self._tree(head.tree))
            for path, entry in staged.items():
                if entry is not None:
                    isolated.add(pygit2.IndexEntry(path, pygit2.Oid(hex=entry[1]), entry[0]))
                elif path in isolated:
                    isolated.remove(path)
            tree = isolated.write_tree(repo)
            if head is not None and str(tree) == head.tree:
                return head.id  # HEAD holds these versions already (the user committed what was staged)
            commit = str(repo.create_commit(None, signature, signature, message, tree, [head.id] if head else []))
            run = gitcli.update_ref(self.root, "HEAD", commit, head.id if head else None, message)
            if run.ok:
                return commit
            moved = run.error
            time.sleep(random.uniform(0, 0.02 * (attempt + 1)))  # de-synchronise from the other committer
            head = self.head()
        raise GitwikiError(
            f"HEAD kept moving while gitwiki committed ({moved}); the files are written and staged: commit them "
            "with `git commit`"
        )

    def _entry(self, head: Commit | None, path: str) -> pygit2.Object | None:
        if head is None:
            return None
        try:
            return self._tree(head.tree)[path]
        except KeyError:
            return None

    def _tree(self, oid: str | pygit2.Oid) -> pygit2.Tree:
        try:
            return self._repo[oid].peel(pygit2.Tree)
        except KeyError:  # still a KeyError for the callers that look a path up in it
            raise MissingObject(
                f"git tree {str(oid)[:12]} is missing from {self.git_dir} (an interrupted gc or a disk clean-up?); "
                "repair the repository (`git fsck`) or restore it from a copy"
            ) from None

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


def _blob_at(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
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
