"""The session briefing's worktree status, without starting git when nothing it looks at has changed.

`git status` over the corpus folders (a process, and the subprocess import) cost the session hook more than
the rest of it, on every session start, though the worktree is usually as the last session left it. So its
answer is cached in the index dir under a stamp: HEAD, git's index file, the ignore files that can apply,
and the path, inode, mtime and size of every file under the folders (one os.scandir walk).
A matching stamp answers from the cache; any change runs git again. Like git's "racily clean" rule, a
stamp holding a file changed in the last SETTLED_NS is not trusted: that file may change again within the
same mtime tick without the stamp seeing it. The user's global excludes file (core.excludesFile) is not in
the stamp: a pattern added there shows in the briefing once anything else under the folders changes.
"""

from __future__ import annotations

import contextlib
import os
import time
import zlib
from pathlib import Path
from typing import Any

from gitwiki.agent_hooks import cache
from gitwiki.fs import stat_stamp
from gitwiki.git import gitcli

CACHE = "agent-status.json"
MAX_FILES = 20_000  # a bigger tree is left to git, which keeps its own stat cache in the index
SETTLED_NS = 2_000_000_000


def worktree_status(
    root: Path, git_dir: Path, index_dir: Path, folders: list[str], known: list[Any] | None = None
) -> tuple[str | None, list[str]]:
    """What `gitcli.worktree_status(root, folders)` answers, from the cache when the stamp still matches; `known`:
    `key`'s answer for the same folders, made just before (the files are not walked again)."""
    made = known if known is not None else key(root, git_dir, folders)
    if made is not None:
        data = cache.load(index_dir / CACHE)
        if data.get("key") == made and isinstance(data.get("changed"), list):
            return made[0], data["changed"]
    found_head, changed = gitcli.worktree_status(root, folders)
    if made is not None and found_head == made[0]:
        cache.save(index_dir / CACHE, {"key": made, "changed": changed})
    return found_head, changed


def key(root: Path, git_dir: Path, folders: list[str]) -> list[Any] | None:
    """What `worktree_status` over `folders` answers from, as its cache keys it: HEAD, the folders and the stamp;
    None when the stamp cannot be trusted (then git runs)."""
    head = gitcli.read_head(root)
    stamp = _stamp(root, git_dir, folders) if head is not None else None
    return None if stamp is None else [head, folders, stamp]


def _stamp(root: Path, git_dir: Path, folders: list[str]) -> int | None:
    """A checksum of what decides `git status` over `folders`, or None when it cannot be trusted."""
    files = _files(root, folders)
    if files is None:
        return None
    common = git_dir  # a linked worktree's own git dir names the shared one, which holds info/exclude
    with contextlib.suppress(OSError):
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    ignores = [git_dir / "index", common / "info" / "exclude"]
    for folder in folders:  # the .gitignore files of the root and of each folder above this one
        steps = folder.split("/") if folder else []
        ignores += [root.joinpath(*steps[:i], ".gitignore") for i in range(len(steps))]
    recent = time.time_ns() - SETTLED_NS
    parts = []
    for path in [*dict.fromkeys(map(str, ignores)), *sorted(files)]:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            parts.append(f"{path}\0-")
            continue
        except OSError:
            return None
        if st.st_mtime_ns > recent:
            return None
        parts.append("\0".join(map(str, (path, *stat_stamp(st)))))
    return zlib.crc32("\n".join(parts).encode("utf-8", "surrogateescape"))


def _files(root: Path, folders: list[str]) -> set[str] | None:
    """Every file and symlink under `folders` (absolute paths), git's own folders left out; None past MAX_FILES."""
    found: set[str] = set()
    stack = [os.path.join(root, *f.split("/")) if f else str(root) for f in folders]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                found.add(entry.path)
        if len(found) > MAX_FILES:
            return None
    return found
