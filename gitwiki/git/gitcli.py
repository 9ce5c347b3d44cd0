"""The git CLI, for the paths where importing pygit2 would cost more than the work: the pre-commit hooks
(`gitwiki lint`, `gitwiki index-blocks`), and fetch and push, which must use the user's own auth set-up.

One subprocess per question: where the checkout is, what the index git is committing holds, which files
the worktree has, the text of a batch of blobs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from gitwiki.errors import GitwikiError, NotFoundError, UsageError
from gitwiki.fs import pid_alive

if TYPE_CHECKING:
    import subprocess

# Regular files in a `git ls-files -s` listing; symlinks (120000) and submodules (160000) are not pages.
FILE_MODES = ("100644", "100755")
# Paths git reads from the environment. Relative ones mean relative to our cwd, but `git -C root` would
# read them relative to root; hooks get GIT_INDEX_FILE this way for `git commit -a` and `git commit FILE`.
_PATH_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


class GitRun(NamedTuple):
    ok: bool
    data: bytes  # stdout (b"" when it was sent to a file)
    error: str  # git's first fatal or error line on stderr (else its last line), or its exit status

    @property
    def out(self) -> str:
        return self.data.decode()

    def checked(self, failure: str, hint: str, error: type[GitwikiError] = GitwikiError) -> GitRun:
        """This run if git succeeded, else `error("<failure> (<git's complaint>); <hint>")`: the one
        way a failed git command becomes a gitwiki error, each caller saying what failed and what to do."""
        if not self.ok:
            raise error(f"{failure} ({self.error}); {hint}")
        return self


class Checkout(NamedTuple):
    root: Path  # the worktree's top folder
    common_dir: Path  # the .git dir shared by all worktrees
    git_dir: Path  # this worktree's own git dir (GIT_DIR when set; .git/worktrees/NAME in a linked worktree)


def run_git(
    root: str | os.PathLike[str],
    *args: str,
    stdin: str | bytes | None = None,
    env: dict[str, str] | None = None,
    stdout: IO[bytes] | int | None = None,
) -> GitRun:
    """Run `git -C root ARGS`, its output captured (or written to `stdout`). Callers turn a failed run into
    the error that fits them."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return _finish(_start(root, args, env, stdout, data is not None), data)


def _side_by_side(root: str | os.PathLike[str], *commands: tuple[str, ...]) -> list[GitRun]:
    """`run_git` of each command, all started at once: listings that each read the whole index take, on two
    cores, the time of the longest rather than their sum."""
    return [_finish(proc) for proc in [_start(root, args) for args in commands]]


def _start(
    root: str | os.PathLike[str],
    args: tuple[str, ...],
    env: dict[str, str] | None = None,
    stdout: IO[bytes] | int | None = None,
    stdin: bool = False,
) -> subprocess.Popen[bytes]:
    import subprocess  # 3-8 ms to import, and most agent hooks never start git (find_checkout)

    base = dict(os.environ)
    for name in _PATH_VARS:
        if base.get(name):
            base[name] = os.path.abspath(base[name])
    try:
        return subprocess.Popen(
            ["git", "-C", str(root), *args],
            stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            env={**base, **(env or {})},
        )
    except FileNotFoundError:
        raise UsageError(
            "the git command is not installed; install git (gitwiki runs it to find the repository, for the hooks, "
            "pull and publish)"
        ) from None


def _finish(proc: subprocess.Popen[bytes], stdin: bytes | None = None) -> GitRun:
    out, err = proc.communicate(stdin)
    lines = err.decode(errors="replace").strip().splitlines()
    # git's own first complaint: its advice comes after ("…and the repository exists." was all a user was told)
    said = next((line.partition(": ")[2] for line in lines if line.startswith(("fatal: ", "error: "))), None)
    return GitRun(
        proc.returncode == 0,
        out if isinstance(out, bytes) else b"",
        said or (lines[-1] if lines else f"git exit {proc.returncode}"),
    )


def blob_id(data: bytes) -> str:
    """The id git gives a file with this content (`git hash-object`), computed here rather than by pygit2,
    which the hooks must not import."""
    import hashlib  # loading OpenSSL: ~2.5 ms that an agent hook on unchanged pages does without

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _not_a_repo(start: str | os.PathLike[str]) -> NotFoundError:
    if not os.path.isdir(start):  # `-C /typo`: git would only say it is not a repository
        return NotFoundError(
            f"{os.path.abspath(start)} does not exist, so it is not inside a git repository; run `git init` or "
            "cd into your repo, and check the path given to -C"
        )
    return NotFoundError(
        f"{os.path.abspath(start)} is not inside a git repository; run `git init` or cd into your repo"
    )


def _bare_repo(where: str | os.PathLike[str]) -> NotFoundError:
    return NotFoundError(f"{where} is a bare repository; run gitwiki in a checkout")


def discover(start: str | os.PathLike[str] = ".") -> Checkout:
    """The checkout containing `start`, as git finds it (GIT_DIR and the other variables git reads count).
    The one discovery: `GitRepo.discover` opens what this finds."""
    run = run_git(
        start, "rev-parse", "--is-bare-repository", "--git-common-dir", "--absolute-git-dir", "--show-toplevel"
    )
    lines = run.data.decode(errors="surrogateescape").splitlines()
    if run.ok and len(lines) == 4:
        return Checkout(Path(lines[3]).resolve(), (Path(start) / lines[1]).resolve(), Path(lines[2]).resolve())
    if lines[:1] == ["true"]:
        raise _bare_repo((Path(start) / lines[1]).resolve() if len(lines) > 1 else os.path.abspath(start))
    if lines:  # a repository, but `start` is not in its worktree (inside .git, say)
        raise NotFoundError(f"{os.path.abspath(start)} is not in a git worktree ({run.error}); cd into your checkout")
    raise _not_a_repo(start)


def find_checkout(start: str | os.PathLike[str]) -> Checkout | None:
    """What `discover` answers, read from the filesystem without starting git (a hook's budget), or None when
    git must be asked: GIT_DIR and friends are set, or the layout is not a plain `.git` folder or file."""
    if any(os.environ.get(name) for name in (*_PATH_VARS, "GIT_CEILING_DIRECTORIES")):
        return None
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return Checkout(folder, dot, dot) if (dot / "HEAD").is_file() else None
        if dot.is_file():  # a linked worktree or submodule: "gitdir: <path>"
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (folder / text[len("gitdir:") :].strip()).resolve()
            common = git_dir / "commondir"
            if common.is_file():
                return Checkout(folder, (git_dir / common.read_text(encoding="utf-8").strip()).resolve(), git_dir)
            return Checkout(folder, git_dir, git_dir)
    return None


def update_ref(root: str | os.PathLike[str], ref: str, new: str, old: str | None, message: str) -> GitRun:
    """Move `ref` to `new` only if it still points at `old` (None: only if it does not exist yet), under
    git's ref lock: a compare-and-swap that fails when someone else moved it first."""
    return run_git(root, "update-ref", "-m", message, ref, new, old or "0" * len(new))


# What gitwiki writes into the index.lock it holds, with its pid: a lock left by a killed gitwiki is taken over.
LOCK_MARK = "gitwiki pid "


class HeldIndex:
    """git's own index.lock, held by gitwiki (see `index_lock`), and the index file it guards."""

    def __init__(self, root: str | os.PathLike[str], index: Path):
        self.root = root
        self.index = index
        self.lock = index.with_name(index.name + ".lock")

    def stage(self, entries: Mapping[str, tuple[int, str] | None]) -> GitRun:
        """Set path → (mode, blob) entries (None removes the path), every other entry as it is. The new
        index replaces the old one at once (a rename), while the lock stays held: killed at any point
        after this, the index already has what HEAD may get (installing it after moving HEAD, a kill -9
        in between left a staged deletion in 1 of 24 committing kill trials)."""
        zero = "0" * 40
        info = "".join(
            f"{entry[0]:o} {entry[1]}\t{path}\0" if entry else f"0 {zero}\t{path}\0" for path, entry in entries.items()
        )
        scratch = self.index.with_name(f"{self.index.name}.gitwiki-{os.getpid()}")
        if self.index.exists():
            scratch.write_bytes(self.index.read_bytes())
        run = run_git(
            self.root,
            "update-index",
            "-z",
            "--index-info",
            stdin=info.encode(errors="surrogateescape"),
            env={"GIT_INDEX_FILE": str(scratch)},
        )
        if run.ok:
            os.replace(scratch, self.index)
        else:
            scratch.unlink(missing_ok=True)
        return run


@contextmanager
def index_lock(root: str | os.PathLike[str], wait: float) -> Iterator[HeldIndex | None]:
    """Hold git's index.lock, waiting up to `wait` seconds for another git to let go (None if it does
    not).

    Holding it from staging until HEAD has moved keeps a concurrent `git commit` from undoing the
    staging: git commit reads the index before it takes the lock and writes that copy back, so an
    entry set in between is lost; the committed page then shows as a staged deletion, and the user's
    next commit deletes it (the likely cause of an acknowledged page missing from HEAD once in seven
    fault-injection runs beside a user's commit loop)."""
    held = HeldIndex(root, _index_file(root))
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(held.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            if _orphaned(held.lock):
                held.lock.unlink(missing_ok=True)
                continue
            if time.monotonic() > deadline:
                yield None
                return
            time.sleep(0.05)
            continue
        os.write(fd, f"{LOCK_MARK}{os.getpid()}\n".encode())  # git never reads a lock's content
        os.close(fd)
        break
    try:
        yield held
    finally:
        held.lock.unlink(missing_ok=True)


def drop_orphaned_index_lock(root: str | os.PathLike[str]) -> bool:
    """Remove git's index.lock when gitwiki took it and its process is gone (a kill -9 mid-commit): the user's own
    `git add` failed on it until gitwiki's next write. Whether one was removed."""
    lock = HeldIndex(root, _index_file(root)).lock
    if not _orphaned(lock):
        return False
    lock.unlink(missing_ok=True)
    return True


def _index_file(root: str | os.PathLike[str]) -> Path:
    """git's index file (honours GIT_INDEX_FILE)."""
    return Path(root, run_git(root, "rev-parse", "--git-path", "index").out.strip())


def _orphaned(lock: Path) -> bool:
    """A lock gitwiki took whose process is gone: a kill -9 mid-commit leaves one (7 of 24 committing
    serve kills did), and git would refuse to run until it was removed by hand."""
    try:
        text = lock.read_text(errors="replace")
    except OSError:
        return False
    return (
        text.startswith(LOCK_MARK)
        and text[len(LOCK_MARK) :].strip().isdigit()
        and not pid_alive(int(text[len(LOCK_MARK) :]))
    )


def read_head(root: str | os.PathLike[str]) -> str | None:
    """HEAD's commit id read from git's files without starting git (a `git rev-parse HEAD` process is a large
    share of an agent hook's budget): the worktree's HEAD, then the loose ref or `packed-refs` line it names.
    None when that cannot tell (reftable, GIT_DIR and friends set, an unborn branch): ask git then."""
    if any(os.environ.get(name) for name in _PATH_VARS):
        return None
    dot = Path(root) / ".git"
    try:
        git_dir = dot
        if dot.is_file():  # a linked worktree: "gitdir: <path>"
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (Path(root) / text[len("gitdir:") :].strip()).resolve()
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref: "):
            return head if _is_object_id(head) else None
        ref = head[len("ref: ") :].strip()
        common = git_dir / "commondir"
        common_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve() if common.is_file() else git_dir
        loose = common_dir / ref
        if loose.is_file():
            oid = loose.read_text(encoding="utf-8", errors="replace").strip()
            return oid if _is_object_id(oid) else None
        with open(common_dir / "packed-refs", encoding="utf-8", errors="replace") as packed:
            for line in packed:
                oid, _, name = line.rstrip("\n").partition(" ")
                if name == ref and _is_object_id(oid):
                    return oid
    except OSError:
        return None
    return None


def staged_files(root: str | os.PathLike[str], folders: Iterable[str] = ("",)) -> dict[str, str]:
    """Path → blob id of every regular file under `folders` ("" is the whole tree) in the index git is
    committing (GIT_INDEX_FILE, when a hook runs for `git commit -a` or `git commit FILE`)."""
    out = {}
    for record in _paths(root, "ls-files", "-s", "-z", *_pathspec(folders)):
        meta, _, path = record.partition("\t")
        mode, blob, _stage = meta.split(" ")
        if mode in FILE_MODES:
            out[path] = blob
    return out


class IndexListing(NamedTuple):
    """The files under a folder as git's index and worktree have them (see `index_listing`)."""

    same: dict[str, str]  # path → blob id of each regular file whose worktree file git finds equal to its entry
    others: list[str]  # paths to look at on disk: changed (deleted too), unmerged or assume-unchanged, untracked
    untracked: frozenset[str] = frozenset()  # those of `others` git's index has no entry for


def index_listing(root: str | os.PathLike[str], folder: str) -> IndexListing:
    """The files under `folder` ("" is the whole worktree) that are tracked or untracked and not ignored,
    split by what git's index says about each: its entries, those `git diff-files` finds changed (stat data,
    or a racy entry's content) and the untracked files, three listings run side by side. An entry git finds
    unchanged needs neither a Python `lstat` nor a hash: at 20,000 pages those were 100 and 30 ms of a hook.
    The index's symlinks and submodules are left out."""
    where = _pathspec([folder])
    # -v tags each entry: H cached, M unmerged, S skip-worktree; lowercase marks an entry assume-unchanged,
    # which diff-files does not compare with the file. `ls-files -m -d` would lstat every file twice.
    runs = _side_by_side(
        root,
        ("ls-files", "-v", "-s", "-z", *where),
        ("diff-files", "--name-only", "-z", *where),
        ("ls-files", "-o", "--exclude-standard", "-z", *where),
    )
    tracked, changed, untracked = (_split(_checked(run).data) for run in runs)
    same: dict[str, str] = {}
    others = {*changed, *untracked}
    for record in tracked:
        meta, _, path = record.partition("\t")
        tag, mode, blob, _stage = meta.split(" ")
        if tag != "H":
            others.add(path)
        elif mode in FILE_MODES:  # not a symlink or submodule
            same[path] = blob
    for path in others:
        same.pop(path, None)
    return IndexListing(same, sorted(others), frozenset(untracked))


def changed_files(root: str | os.PathLike[str], folder: str) -> list[str]:
    """Repo-relative paths under `folder` whose worktree state differs from HEAD: changed, staged, deleted or
    untracked, never ignored. Asking git for just the folder keeps a wiki inside a big code repo cheap (a
    fifth of a status of the whole worktree at 20,000 files), and `--no-optional-locks`
    keeps git from writing its index while it looks."""
    where = _pathspec([folder])
    records = _paths(
        root, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", *where
    )
    return [record[3:] for record in records]


def worktree_status(root: str | os.PathLike[str], folders: Iterable[str]) -> tuple[str | None, list[str]]:
    """HEAD's commit id (None before the first commit) and what `changed_files` lists, for several folders in
    one `git status` (porcelain v2 names HEAD too): the agent hooks' session briefing starts no other git
    when the index is current."""
    where = _pathspec(folders)
    args = ("--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
    head, changed = None, []
    for record in _paths(root, *args, "--no-renames", *where):
        kind = record[:2]
        if record.startswith("# branch.oid "):
            oid = record[len("# branch.oid ") :]
            head = oid if _is_object_id(oid) else None
        elif kind == "1 ":
            changed.append(record.split(" ", 8)[8])
        elif kind == "u ":
            changed.append(record.split(" ", 10)[10])
        elif kind == "? ":
            changed.append(record[2:])
    return head, changed


def head_trees(root: str | os.PathLike[str], folders: Iterable[str]) -> tuple[str | None, dict[str, str]]:
    """HEAD's commit id and, per folder ("" is the whole tree), its tree id at HEAD ("" when absent), in one
    `git rev-parse`; (None, {}) before the first commit. What the agent hooks compare with the index."""
    folders = list(dict.fromkeys(folders))
    run = run_git(root, "rev-parse", "HEAD", *(f"HEAD:{f}" if f else "HEAD^{tree}" for f in folders))
    lines = run.out.splitlines()
    if not lines or not _is_object_id(lines[0]):
        return None, {}
    trees = {f: line if _is_object_id(line) else "" for f, line in zip(folders, lines[1:], strict=False)}
    return lines[0], trees


def changed_together(root: str | os.PathLike[str], commits: int) -> list[list[str]]:
    """The files each of HEAD's last `commits` commits changed (merges left out), newest first: what the
    agent hooks' coupling notes count."""
    run = run_git(root, "log", f"-n{commits}", "--no-merges", "--no-renames", "--name-only", "-z", "--format=%x01")
    out = []
    for record in run.out.split("\x01")[1:]:
        files = [f.strip("\n") for f in record.split("\0")]
        out.append([f for f in files if f])
    return out


def changed_together_since(root: str | os.PathLike[str], old: str, commits: int) -> list[list[str]] | None:
    """What `changed_together` lists for the commits HEAD has and `old` has not, newest first: the agent hooks
    add them to the lists they cached at `old` instead of reading 200 commits again. None when
    that is not a continuation: `old` is not an ancestor of HEAD (history rewritten), or is gone, or more
    than `commits` commits are new. `--boundary` names the excluded parents, so `old` is among them exactly
    when it is an ancestor."""
    run = run_git(
        root, "log", "--boundary", "--no-renames", "--name-only", "-z", "--format=%x01%m%H%x00%P", f"{old}..HEAD"
    )
    if not run.ok:
        return None
    out, continues = [], False
    for record in run.out.split("\x01")[1:]:
        commit, _, rest = record.partition("\0")
        parents, _, files = rest.partition("\0")
        if commit.startswith("-"):  # a boundary commit: outside the range
            continues = continues or commit[1:] == old
        elif len(parents.split()) == 1:  # merges left out, as changed_together's --no-merges does
            out.append([f for f in (f.strip("\n") for f in files.split("\0")) if f])
    return out if continues and len(out) <= commits else None


def _is_object_id(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def skip_worktree(root: str | os.PathLike[str], paths: Iterable[str]) -> set[str]:
    """Which of `paths` the index marks skip-worktree (outside a sparse checkout): absent from disk by
    design, not deleted. pygit2 neither reports the flag nor honours it in its status."""
    where = [f":(literal){p}" for p in paths]
    return {r[2:] for r in _paths(root, "ls-files", "-t", "-z", "--", *where) if r.startswith("S ")} if where else set()


def read_blobs(root: str | os.PathLike[str], blobs: Iterable[str]) -> dict[str, bytes]:
    """The content of each blob, in one `git cat-file --batch`; a missing one is an error."""
    wanted = list(dict.fromkeys(blobs))
    if not wanted:
        return {}
    run = _checked(run_git(root, "cat-file", "--batch", "--buffer", stdin="".join(f"{b}\n" for b in wanted)))
    data, pos, out = run.data, 0, {}
    for blob in wanted:
        end = data.index(b"\n", pos)
        header = data[pos:end].split(b" ")
        if len(header) != 3:
            raise GitwikiError(
                f"git cannot read blob {blob} ({data[pos:end].decode(errors='replace')}); run `git fsck`"
            )
        size = int(header[2])
        out[blob] = data[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1  # the content is followed by a newline
    return out


def _pathspec(folders: Iterable[str]) -> tuple[str, ...]:
    """The arguments that limit a git listing to `folders` ("" is the whole tree), taken literally."""
    folders = list(dict.fromkeys(folders))
    return ("--", *(f":(literal){f}" for f in folders)) if "" not in folders else ()


def _paths(root: str | os.PathLike[str], *args: str) -> list[str]:
    return _split(_checked(run_git(root, *args)).data)


def _split(data: bytes) -> list[str]:
    return [p for p in data.decode(errors="surrogateescape").split("\0") if p]


def _checked(run: GitRun) -> GitRun:
    return run.checked("git failed", "check that the repository is readable, e.g. with `git status`")
