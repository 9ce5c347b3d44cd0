"""The watch of the corpus folders on Linux: an inotify instance of this process's own, read when a query asks.

The kernel queues a file's event before the write that caused it returns, so a query that reads the queue (a
non-blocking read, ~3 µs when it is empty) sees every change made before it: no fence file, no watcher thread to
wait for (`pages.watch`, whose Rust thread takes the events off the queue, needs both: 0.18-0.23 ms a query at
10 ms apart, one in ten waiting out its 1 ms spin on a loaded host).

Every directory under the folders is watched (not the ignored ones: .git, the index dir); a directory made or moved
in later is watched as its event is read, and anything under it is counted as a change then. Any event moves the
generation: the caller takes the worktree status again, which finds what changed. A full queue (events lost) moves
it too and watches every directory again. A watched folder deleted or moved away, or any error: None from then on,
and the caller asks git on every query, as without a watch.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import threading
from pathlib import Path

log = logging.getLogger("gitwiki.pages.inotify")

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
WATCHED = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
) | (IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the name, NUL-padded to len
READ_SIZE = 1 << 16


class Inotify:
    def __init__(self, fd: int, roots: list[str], ignored: tuple[str, ...]) -> None:
        self._fd = fd
        self._roots = roots
        self._ignored = ignored  # path prefixes not watched (each ends with a separator)
        self._paths: dict[int, str] = {}  # watch descriptor → its directory
        self._root_wds: set[int] = set()
        self._generation = 0
        self._lock = threading.Lock()
        self._broken = False

    @classmethod
    def start(cls, folders: list[Path], ignored: tuple[Path, ...] = ()) -> Inotify | None:
        """Watch `folders` and every directory under them; None when that is not possible here (not Linux, no
        inotify, the watch limit reached, a folder missing)."""
        try:
            libc = _libc()
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                raise _error("inotify_init1")
        except (OSError, AttributeError) as e:
            log.info("no inotify here (%s)", e)
            return None
        roots = [str(f.resolve()) for f in folders]
        watcher = cls(fd, roots, tuple(f"{p.resolve()}{os.sep}" for p in ignored))
        try:
            for root in roots:
                watcher._root_wds.add(watcher._add(root))
                watcher._add_below(root)
        except OSError as e:
            log.info("not watching %s (%s); each query asks git for the worktree status", folders, e)
            os.close(fd)
            return None
        return watcher

    def sync(self) -> int | None:
        """The current generation, counting every change that happened before this call; None when the watch
        broke (from then on: ask git)."""
        with self._lock:
            if self._broken:
                return None
            try:
                if self._read():
                    self._generation += 1
            except OSError as e:
                log.warning("file watch failed (%s); each query asks git for the worktree status from now on", e)
                self._stop()
                return None
            return None if self._broken else self._generation

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if not self._broken:
            self._broken = True
            os.close(self._fd)

    def _read(self) -> bool:
        """Take every event queued; whether any says something changed."""
        changed = False
        while not self._broken:
            try:
                data = os.read(self._fd, READ_SIZE)
            except BlockingIOError:
                return changed
            at = 0
            while at + EVENT.size <= len(data):
                wd, mask, _, size = EVENT.unpack_from(data, at)
                name = data[at + EVENT.size : at + EVENT.size + size].rstrip(b"\0")
                at += EVENT.size + size
                changed = self._event(wd, mask, os.fsdecode(name)) or changed
        return changed

    def _event(self, wd: int, mask: int, name: str) -> bool:
        if mask & IN_Q_OVERFLOW:  # events were lost: every directory watched again, in case one was made
            for root in self._roots:
                self._add_below(root)
            return True
        if mask & IN_IGNORED or mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
            if wd in self._root_wds:  # a watched folder itself is gone: nothing under its path is seen any more
                log.info("watched folder %s went away; each query asks git for the worktree status", self._paths[wd])
                self._stop()
            elif mask & IN_IGNORED:
                self._paths.pop(wd, None)
            return True
        folder = self._paths.get(wd)
        if folder is None:
            return False  # a directory dropped above, its last events
        path = os.path.join(folder, name) if name else folder
        if self._skipped(path):  # .git or the index dir itself (made, its mode changed): no page moved
            return False
        if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
            self._add(path)  # what was made in it before this is found by the status the change asks for
            self._add_below(path)
        return True

    def _skipped(self, path: str) -> bool:
        return f"{path}{os.sep}".startswith(self._ignored)

    def _add(self, path: str) -> int:
        wd = _libc().inotify_add_watch(self._fd, os.fsencode(path), WATCHED)
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES) and path not in self._roots:
                return -1  # gone again already, a symlink, or not readable (nor by git): its parent's event said so
            raise _error(f"watching {path}")
        self._paths[wd] = path
        return wd

    def _add_below(self, top: str) -> None:
        for folder, dirs, _ in os.walk(top):
            dirs[:] = [d for d in dirs if not self._skipped(os.path.join(folder, d))]
            for d in dirs:
                self._add(os.path.join(folder, d))


def _error(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        _LIBC.append(libc)
    return _LIBC[0]
