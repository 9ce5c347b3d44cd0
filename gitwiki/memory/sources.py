"""Sources pinned to git blobs: `[source: path:line@blob]` says which version of a file an entry was about.

Staleness is a blob comparison, not an mtime check: the entry is stale when the file on disk no longer
hashes to the pinned blob (or is gone). The pinned version is written into the object database when the
entry is stored, so `refresh` can diff it against the file as it is now even if it was never committed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.errors import UsageError

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory
    from gitwiki.memory.entry import Entry

BLOB_CHARS = 12  # short ids keep the page readable; 12 hex digits are unique in any real repo
STALE_FACTOR = 0.7
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
    return SourceRef(path[2:] if path.startswith("./") else path, start, end, match["blob"] or "")


def pin(mem: Memory, raw: str | None) -> tuple[str, list[str]]:
    """`path:line` → `path:line@blob` for the file on disk now; returns the source and any warnings."""
    if not raw or not str(raw).strip():
        return "", []
    ref = parse_source(str(raw))
    if ref is None or ref.path.startswith("/") or ".." in ref.path.split("/"):
        raise UsageError(
            f"source {raw!r} must be a repo-relative path, optionally :line or :start-end, e.g. src/app.py:42"
        )
    lines = f":{ref.start}" + (f"-{ref.end}" if ref.end and ref.end != ref.start else "") if ref.start else ""
    if ref.blob:
        return f"{ref.path}{lines}@{ref.blob}", []
    file = mem.root / ref.path
    if file.is_file() and mem.root.resolve() not in file.resolve().parents:
        raise UsageError(f"source {ref.path!r} leads outside the repository through a symlink; refusing it")
    if not file.is_file():
        return f"{ref.path}{lines}", [
            f"source {ref.path} is not a file in the repo; stored without a blob id (no staleness check)"
        ]
    blob = mem.wiki.repo.write_blob(file.read_bytes())
    return f"{ref.path}{lines}@{blob[:BLOB_CHARS]}", []


def stale(mem: Memory, entry: Entry) -> Staleness | None:
    ref = parse_source(entry.source)
    if ref is None or not ref.blob:
        return None
    current = mem.file_blob(ref.path)
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
    file = mem.root / ref.path
    new = file.read_text(encoding="utf-8", errors="replace").splitlines() if file.is_file() else []
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
