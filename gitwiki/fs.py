"""File writes and page reads that cannot be redirected: atomic replaces, and pages reached one folder
at a time through directory handles.

Checking a path and then opening it is a race: swap a folder for a symlink in between and the write lands
outside the wiki (the old check-then-write code let a page and dozens of temp files out in one run). So
pages are opened component by component, each relative to the folder handle before it with O_NOFOLLOW, and
the temp file is created and renamed inside the folder handle that was checked: the object checked is the
object written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gitwiki.errors import RefusedFile, UsageError

# Temp files live in the folder of the file they replace: os.replace is atomic only within one
# filesystem, and the index dir may sit on another one. A killed write can leave one; the name is never
# a page (no page suffix, a dot file), and the next write into that folder removes those older than
# STALE_TEMP_SECONDS (a live write holds its temp file for milliseconds).
TEMP_PREFIX = ".gitwiki-tmp."
STALE_TEMP_SECONDS = 60.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFile(UsageError):
    """A page that is a symlink, not a regular file, or has other hard links: reading it could read (and
    writing it could change) a file outside the wiki."""


def path_problem(path: str) -> str | None:
    """Why the repo-relative page path `path` is refused, whatever gave it (None: it is acceptable).

    The one rule for every source of page paths: a local corpus's committed trees and the paths a user or
    an agent asks for (`gitwiki.pages.pages.locate`), another repository's trees (`gitwiki.sources.repositories`), an
    index archive's database (`gitwiki.index.artifact`). git refuses to check out `..` or `.git`, but its object
    database holds them (`git mktree` writes them), so a tree can name a page `wiki/../x.md`. `.git` is
    refused in any case, with trailing dots or spaces or HFS+'s ignored code points, before an NTFS stream name
    (`:…`), and as `git~1`: the
    forms a case-insensitive, HFS+ or NTFS filesystem opens as the git dir (git's own
    core.protectHFS/protectNTFS rule). Callers normalize
    what a person may write loosely (`./`, `//`, backslashes) first; the rule sees the canonical form.
    """
    if _PLAIN.fullmatch(path):  # most paths: one regex (0.3 against 2.4 µs per path; the indexer lists every page)
        return None
    if not path:
        return "is empty"
    if any(ord(ch) < 32 or ch == "\x7f" for ch in path):
        return "contains a control character"
    if "\\" in path:
        return "contains a backslash"
    if path.startswith("/") or _DRIVE.match(path):
        return "is absolute"
    parts = path.split("/")
    if "" in parts or "." in parts:
        return "has an empty or '.' component"
    if ".." in parts:
        return "contains '..'"
    # NTFS reads what follows a ':' as a data stream of the name before it (`.git::$INDEX_ALLOCATION`)
    if any(p.translate(_IGNORED_IN_NAMES).casefold().split(":", 1)[0].rstrip(". ") in (".git", "git~1") for p in parts):
        return "points into .git"
    return None


# Code points HFS+ ignores in file names: `.g\u200cit` is `.git` there (git's own verify_path knows them).
_IGNORED_IN_NAMES = dict.fromkeys([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])


_DRIVE = re.compile(r"^[A-Za-z]:")
# Components that start with neither a dot nor "git~", hold no backslash, control character or code point
# HFS+ ignores (`\u200c.git` is `.git` there) and are not empty; the first holds no ":".
_PLAIN = re.compile(
    r"(?!\.|git~)[^/\\\x00-\x1f\x7f:\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]+"
    r"(?:/(?!\.|git~)[^/\\\x00-\x1f\x7f\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]+)*",
    re.IGNORECASE,
)


# What `read_bounded` reads when the caller names no cap: more than any question file, memory source or
# template gitwiki is meant to read, far less than a /dev/zero or a runaway log would feed it.
READ_CAP = 16 * 1024 * 1024
MAX_PATH_CHARS = 4096  # PATH_MAX: a longer name is no file the system opens
# Folders of files that are not files: /proc's report size 0 and never end (/proc/self/fd/0 reads stdin).
_PSEUDO = ("/proc", "/sys", "/dev")
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def read_bounded(
    path: str | os.PathLike[str],
    *,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    cap: int = READ_CAP,
    what: str = "file",
    fix: str = "point gitwiki at a regular file",
) -> bytes:
    """The bytes of a file gitwiki reads because a checkout, a page, a config value or an import named it.

    Refused with one `RefusedFile` (its message: `what`, the path, why, then `fix`) unless it is a regular
    file (no FIFO, device, socket, folder, nothing under /proc, /sys or /dev), inside one of `roots` once
    `..` and symlinks are resolved (None: anywhere, for a path the user typed), and at most `cap` bytes.
    Checked on the path, then on the open file (opened without blocking and without following a symlink
    swapped in meanwhile): the object checked is the object read. A missing file raises FileNotFoundError,
    which callers read as "gone" or turn into their own message."""
    shown = os.fspath(path)
    real = resolved(shown, roots, what=what, fix=fix)
    try:
        before = os.stat(real)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise _refused(what, shown, f"cannot be read ({e.strerror})", fix) from None
    _check_regular(before, what, shown, cap, fix)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        swapped = e.errno == errno.ELOOP
        why = "was swapped for a symlink while being read" if swapped else f"cannot be read ({e.strerror})"
        raise _refused(what, shown, why, fix) from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise _refused(what, shown, "was replaced while being read", fix)
        _check_regular(now, what, shown, cap, fix)
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise _refused(what, shown, f"cannot be read ({e.strerror})", fix) from None
    finally:
        os.close(fd)
    if size > cap:  # it grew while being read
        raise _refused(what, shown, f"is larger than the {cap:,} bytes gitwiki reads for it", fix)
    return b"".join(chunks)


def resolved(
    path: str | os.PathLike[str],
    roots: Sequence[str | os.PathLike[str]] | None,
    *,
    what: str = "file",
    fix: str = "point gitwiki at a regular file",
) -> str:
    """The real path of `path` (`..` and symlinks resolved), refused with `RefusedFile` when it is outside
    every one of `roots` (None: no confinement) or among the system's pseudo-files (/proc, /sys, /dev)."""
    shown = os.fspath(path)
    if "\0" in shown or len(shown) > MAX_PATH_CHARS:
        raise _refused(what, shown, "is no file name (a NUL, or longer than any path)", fix)
    try:
        real = os.path.realpath(shown)
    except (OSError, ValueError) as e:
        raise _refused(what, shown, f"cannot be resolved ({e})", fix) from None
    if roots is not None and not any(within(real, os.path.realpath(root)) for root in roots):
        where = " or ".join(os.fspath(root) for root in roots) or "no folder"
        raise _refused(what, shown, f"is outside {where} (resolved: {real})", fix)
    if any(within(real, pseudo) for pseudo in _PSEUDO):
        raise _refused(what, shown, f"is a system pseudo-file ({real}), not a regular file", fix)
    return real


def within(real: str, folder: str) -> bool:
    """Whether the resolved path `real` is `folder` or inside it (both resolved)."""
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def _check_regular(st: os.stat_result, what: str, shown: str, cap: int, fix: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise _refused(what, shown, f"is {kind}, not a regular file", fix)
    if st.st_size > cap:
        raise _refused(what, shown, f"is {st.st_size:,} bytes, over the {cap:,} bytes gitwiki reads for it", fix)


def _refused(what: str, shown: str, why: str, fix: str) -> RefusedFile:
    name = shown if len(shown) <= 200 else shown[:200] + "…"
    return RefusedFile(f"{what} {name!r} {why}; {fix}")


def atomic_write(path: Path, data: str | bytes, sync: bool = True) -> None:
    """Replace `path` (a file gitwiki owns: a hook, a cache, the config) atomically. `sync=False` skips the
    fsync (~10 ms on a busy disk) for files that are caches: a crash may lose the new content, never leave
    a torn file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _remove_stale_temps(folder, path.name)
        _replace_in(folder, path.name, data, sync=sync)
    finally:
        os.close(folder)


def read_page_file(root: Path, rel: str) -> bytes:
    """The bytes of the page at repo-relative `rel`, reached without following any symlink."""
    with _folders(root, rel, create=False) as fds:
        name = rel.rsplit("/", 1)[-1]
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fds[-1])
        except OSError as e:
            if e.errno == errno.ELOOP:  # O_NOFOLLOW on the last component
                raise UnsafeFile(f"{rel!r} is a symlink; gitwiki reads and writes regular files only") from None
            raise _refusal(e, rel) from None
        # checked before the file object is made: os.fdopen of a folder raises IsADirectoryError itself
        try:
            _check_page(os.fstat(fd), rel)
        except UnsafeFile:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as f:
            return f.read()


def write_page_file(root: Path, rel: str, data: str | bytes, *, overwrite: bool, sync: bool = True) -> bool:
    """Write the page at repo-relative `rel` atomically, creating its folders; True when it was created.
    Raises FileExistsError when it exists and not `overwrite`. `sync=False` skips the fsync, for text gitwiki
    can generate again (see `atomic_write`)."""
    with _folders(root, rel, create=True) as fds:
        name = rel.rsplit("/", 1)[-1]
        existing = _lstat(name, fds[-1])
        if existing is not None:
            _check_page(existing, rel)
            if not overwrite:
                raise FileExistsError(rel)
        _remove_stale_temps(fds[-1])
        _replace_in(fds[-1], name, data, existing, sync=sync)
        return existing is None


def remove_page_file(root: Path, rel: str, keep: str) -> bool:
    """Delete the page at repo-relative `rel`, then the folders it leaves empty up to (not including) the
    folder `keep` (the corpus root). False when there was no such page."""
    with _folders(root, rel, create=False) as fds:
        parts = rel.split("/")
        existing = _lstat(parts[-1], fds[-1])
        if existing is None:
            return False
        _check_page(existing, rel)
        os.unlink(parts[-1], dir_fd=fds[-1])
        depth = len(keep.split("/")) if keep else 0
        for level in range(len(parts) - 2, depth - 1, -1):  # fds[level] holds parts[level]
            try:
                os.rmdir(parts[level], dir_fd=fds[level])
            except OSError:  # not empty (ENOTEMPTY), or someone else's: stop there
                break
        return True


@contextmanager
def _folders(root: Path, rel: str, *, create: bool) -> Iterator[list[int]]:
    """Handles of `root` and of every folder on the way to `rel`'s file, each opened relative to the one
    before with O_NOFOLLOW (and created when missing, if `create`)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    try:
        for part in rel.split("/")[:-1]:
            try:
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fds[-1])
                except FileExistsError:  # made meanwhile; the open below checks what it is
                    pass
                try:
                    fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
                except FileNotFoundError:
                    raise UsageError(f"a folder on the way to {rel!r} was moved while writing; try again") from None
                except OSError as e:
                    raise _refusal(e, rel) from None
            except OSError as e:
                raise _refusal(e, rel) from None
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists: what tells a killed run's leftovers from a running one's."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such pid at all)
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _refusal(e: OSError, rel: str) -> Exception:
    if e.errno in (errno.ELOOP, errno.ENOTDIR):
        return UnsafeFile(f"{rel!r} leads through a symlink or a file; gitwiki reads and writes regular files only")
    if e.errno == errno.ENAMETOOLONG:
        return UsageError(f"{rel!r} is too long for the filesystem; use a shorter path")
    return e


def _lstat(name: str, folder: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_page(st: os.stat_result, rel: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFile(f"{rel!r} is a symlink; gitwiki reads and writes regular files only")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{rel!r} is not a regular file; gitwiki reads and writes regular files only")
    if st.st_nlink > 1:
        raise UnsafeFile(
            f"{rel!r} has {st.st_nlink} hard links, so it may be a file outside the wiki; replace it with a copy"
        )


def _replace_in(
    folder: int, name: str, data: str | bytes, existing: os.stat_result | None = None, sync: bool = True
) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if existing is None:
        existing = _lstat(name, folder)
    tmp = f"{TEMP_PREFIX}{name[:64]}.{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            if existing is not None:  # a new file gets 0o666 less the umask from os.open
                os.fchmod(fd, existing.st_mode & 0o777)
            if sync:
                os.fsync(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise


def stat_stamp(st: os.stat_result) -> tuple[int, int, int]:
    """What says a file is unchanged since it was last read, for the caches keyed by a file: inode (an atomic
    write renames a new inode into place, even within one mtime tick), mtime and size. Page facts key by more
    (ctime too): they outlive the process and must also catch a same-size rewrite in place."""
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _remove_stale_temps(folder: int, name: str = "") -> None:
    """Remove the temp files killed writes left in `folder` (those of the file `name` only, when given); a folder
    that cannot be listed is left as it is (the write itself then says what is wrong)."""
    cutoff, prefix = time.time() - STALE_TEMP_SECONDS, f"{TEMP_PREFIX}{name[:64]}." if name else TEMP_PREFIX
    try:
        with os.scandir(folder) as entries:
            stale = [e.name for e in entries if e.name.startswith(prefix) and _older(e, cutoff)]
    except OSError:
        return
    for name in stale:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=folder)


def _older(entry: os.DirEntry[str], cutoff: float) -> bool:
    try:
        return entry.stat(follow_symlinks=False).st_mtime < cutoff
    except OSError:
        return False
