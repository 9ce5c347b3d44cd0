"""Sources pinned to git blobs: `[source: path:line@blob]` says which version of a file an entry was about.

Staleness is a blob comparison, not an mtime check: the entry is stale when the file on disk no longer
hashes to the pinned blob (or is gone). The pinned version is written into the object database when the
entry is stored, so `refresh` can diff it against the file as it is now even if it was never committed.

A memory page comes with the checkout, and so does every `[source: …]` in it: a source is a file inside the
repository, or nothing. One outside it (absolute, `..`, into `.git`, through a symlink), not a regular file
or too large is refused when an entry is stored, dropped with a note when one is imported, and never read
after: stale, refresh and search name it as ignored instead of showing the file (`source_problem`).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.errors import RefusedFile, UsageError

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory
    from gitwiki.memory.entry import Entry

BLOB_CHARS = 12  # short ids keep the page readable; 12 hex digits are unique in any real repo
STALE_FACTOR = 0.7
MAX_SOURCE_CHARS = 1024  # a `[source: …]` longer than this names no file (PATH_MAX is 4096 bytes, names 255)
SOURCE_CAP = 8 * 1024 * 1024  # bytes of a source file hashed or diffed: far more than any file an entry is about
OUTSIDE_FIX = "a memory source is a regular file inside the repository; fix or remove the entry's [source: …]"
_PLAIN_WHY = {
    "is absolute": "is an absolute path, outside the repository",
    "contains '..'": "contains '..', leading outside the repository",
    "points into .git": "points into .git (git's own files, not the project's)",
}
_SOURCE = re.compile(r"^(?P<path>[^@]+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?(?:@(?P<blob>[0-9a-f]{4,40}))?$")


class SourceRef(NamedTuple):
    path: str
    start: int | None
    end: int | None
    blob: str


class Staleness(NamedTuple):
    entry: Entry
    path: str
    pinned: str
    current: str | None  # None: the file is gone


class Ignored(NamedTuple):
    """An entry whose source gitwiki does not read, and why."""

    entry: Entry
    path: str
    why: str

    def note(self) -> str:
        return f"{self.entry.ref}: source {_shown(self.path)} {self.why}; not read ({OUTSIDE_FIX})"


class Refresh(NamedTuple):
    entry: Entry
    path: str
    pinned: str
    current: str | None
    diff: str  # unified diff of the hunks that touch the referenced lines ("" when unchanged)


def parse_source(raw: str) -> SourceRef | None:
    """`path[:line[-end]][@blob]`, or None; a line break is never part of one (it would end the page's
    `[source: …]` line and start another)."""
    match = _SOURCE.match(raw.strip()) if raw and "\n" not in raw and "\r" not in raw else None
    if not match:
        return None
    start = int(match["start"]) if match["start"] else None
    end = int(match["end"]) if match["end"] else start
    path = match["path"].strip()
    path = path[2:] if path.startswith("./") else path
    return SourceRef(path, start, end, match["blob"] or "") if path else None  # "./" names no file


def source_problem(root: Path, path: str) -> str | None:
    """Why gitwiki reads no file for the source path `path` of a memory entry (None: a regular file inside the
    repository at `root`, a folder, or nothing there now). Resolves `..` and symlinks; stats, never opens.

    Resolving symlinks is one lstat a path component (searched entries check twice),
    so the answer is kept per path and the stat of what it leads to: a link or folder swapped since leads
    to another file (another inode), which is resolved again."""
    from gitwiki.fs import path_problem

    if len(path) > MAX_SOURCE_CHARS:
        return f"is {len(path):,} characters long, longer than any file name"
    why = path_problem(path)
    if why is not None:
        return _PLAIN_WHY.get(why, why)
    try:
        st = os.stat(root / path)
    except FileNotFoundError:
        return None  # gone (or a link to nothing): stale, as a deleted file is, and nothing to read
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    return _resolved_problem(str(root), path, (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=4096)
def _resolved_problem(root: str, path: str, target: tuple[int, int, int, int, int]) -> str | None:
    from gitwiki.fs import resolved

    try:
        real = resolved(os.path.join(root, path), [root])
    except RefusedFile:
        return "leads outside the repository through a symlink"
    inner = os.path.relpath(real, os.path.realpath(root))
    if inner.split(os.sep, 1)[0] == ".git":
        return "leads into .git through a symlink"
    mode, size = target[2], target[3]
    if stat.S_ISDIR(mode):
        return None  # a module's folder: named, never read (it has no blob)
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if size > SOURCE_CAP:
        return f"is {size:,} bytes, over the {SOURCE_CAP:,} gitwiki reads for a source"
    return None


def ignored(mem: Memory, entry: Entry) -> Ignored | None:
    """The entry's source when gitwiki does not read it (see `source_problem`), else None."""
    ref = parse_source(entry.source) if entry.source else None
    if ref is None:
        return None
    why = source_problem(mem.root, ref.path)
    return Ignored(entry, ref.path, why) if why else None


def read_source(root: Path, path: str) -> bytes:
    """The bytes of an entry's source file at repo-relative `path`, through the bounded reader: RefusedFile
    when it is no regular file inside the repository (or over SOURCE_CAP), FileNotFoundError when gone."""
    from gitwiki.fs import read_bounded

    return read_bounded(root / path, roots=[root], cap=SOURCE_CAP, what="memory source", fix=OUTSIDE_FIX)


def pin(mem: Memory, raw: str | None) -> tuple[str, list[str]]:
    """`path:line` → `path:line@blob` for the file on disk now; returns the source and any warnings. A source
    gitwiki would not read (outside the repository, not a regular file: `source_problem`) is refused, with
    or without a blob id."""
    if not raw or not str(raw).strip():
        return "", []
    raw = str(raw)
    if len(raw) > MAX_SOURCE_CHARS:
        raise UsageError(
            f"source is {len(raw):,} characters long (at most {MAX_SOURCE_CHARS:,}); give a repo-relative path, "
            "optionally :line or :start-end, e.g. src/app.py:42"
        )
    ref = parse_source(raw)
    if ref is None or ref.path.startswith("/") or ".." in ref.path.split("/"):
        raise UsageError(
            f"source {raw!r} must be a repo-relative path, optionally :line or :start-end, e.g. src/app.py:42"
        )
    why = source_problem(mem.root, ref.path)
    if why is not None:
        raise UsageError(f"source {ref.path!r} {why}; refusing it ({OUTSIDE_FIX})")
    lines = f":{ref.start}" + (f"-{ref.end}" if ref.end and ref.end != ref.start else "") if ref.start else ""
    if ref.blob:
        return f"{ref.path}{lines}@{ref.blob}", []
    try:
        if (mem.root / ref.path).is_dir():
            raise FileNotFoundError(ref.path)
        data = read_source(mem.root, ref.path)
    except FileNotFoundError:
        return f"{ref.path}{lines}", [
            f"source {ref.path} is not a file in the repo; stored without a blob id (no staleness check)"
        ]
    except RefusedFile as e:
        raise UsageError(f"source {ref.path!r}: {e}") from None
    blob = mem.wiki.repo.write_blob(data)
    return f"{ref.path}{lines}@{blob[:BLOB_CHARS]}", []


def stale(mem: Memory, entry: Entry) -> Staleness | None:
    """Whether the entry's pinned source changed; None too for a source gitwiki does not read (`ignored`)."""
    ref = parse_source(entry.source)
    if ref is None or not ref.blob or source_problem(mem.root, ref.path) is not None:
        return None
    try:
        current = mem.file_blob(ref.path, read_source)
    except RefusedFile:  # swapped for something else since the check above
        return None
    if current is not None and current.startswith(ref.blob):
        return None
    return Staleness(entry, ref.path, ref.blob, current)


def refresh(mem: Memory, entry: Entry, context: int = 3) -> Refresh | None:
    """The diff between the pinned version and the file now, limited to hunks near the referenced lines."""
    found = stale(mem, entry)
    if found is None:
        return None
    ref = parse_source(entry.source)
    assert ref is not None
    try:
        old = mem.wiki.repo.read_blob(ref.blob).decode("utf-8", errors="replace").splitlines()
    except (KeyError, ValueError):
        old = []
    try:
        new = read_source(mem.root, ref.path).decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        new = []
    except RefusedFile:
        return None
    import difflib  # ~1.3 ms with heapq, which the agent hooks parsing [source:] fields do without

    hunks = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context):
        first, last = group[0][1] + 1, group[-1][2]
        if ref.start is None or (first <= (ref.end or ref.start) + context and last >= ref.start - context):
            hunks.append(_hunk(group, old, new))
    header = f"--- {ref.path}@{ref.blob}\n+++ {ref.path} (worktree{'' if found.current else ', deleted'})\n"
    return Refresh(entry, ref.path, ref.blob, found.current, header + "".join(hunks) if hunks else "")


def _hunk(group: Sequence[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> str:
    i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
    lines = [f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@\n"]
    for tag, a1, a2, b1, b2 in group:
        if tag == "equal":
            lines += [f" {line}\n" for line in old[a1:a2]]
            continue
        lines += [f"-{line}\n" for line in old[a1:a2]]
        lines += [f"+{line}\n" for line in new[b1:b2]]
    return "".join(lines)


def _shown(path: str) -> str:
    return repr(path if len(path) <= 120 else path[:120] + "…")
