"""Which repository an index dir belongs to.

An index dir holds one repository's index: its rows are keyed to that repository's git objects. The default
(`<git common dir>/gitwiki`) and a relative `index_dir` are per repository by construction; an absolute
`[storage] index_dir` or `$GITWIKI_INDEX_DIR` is one dir for every repository it is set in, where two projects
would undo each other's rows at every run. Such a dir is stamped with the git common dir of the repository that
uses it, and a second repository is refused with the way out, instead of indexing over the first one.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitwiki.errors import UsageError

STAMP = "repository"  # in the index dir: the git common dir of the repository whose index it is
_MOST = 4096  # bytes read of a stamp: a path, not a file to read whole

_claimed: set[tuple[Path, Path]] = set()  # (index dir, common dir) checked in this process


class IndexDirInUse(UsageError):
    """The index dir is another repository's."""


def claim(index_dir: Path, root: Path, common_dir: Path) -> Path:
    """`index_dir`, once it is known to be this repository's: stamped with `common_dir` when it lies outside
    the repository. Raises IndexDirInUse when its stamp names another repository that is still there (a stamp
    of one moved or deleted is taken over)."""
    if (index_dir, common_dir) in _claimed or _within(index_dir, root) or _within(index_dir, common_dir):
        return index_dir
    mine = str(common_dir.resolve())
    named = _stamp(index_dir)
    if named is not None and named != mine and os.path.isfile(os.path.join(named, "HEAD")):
        raise IndexDirInUse(
            f"the index dir {index_dir} holds the index of the repository at {named}: $GITWIKI_INDEX_DIR or an "
            "absolute [storage] index_dir names one dir for every repository, and two would undo each other's "
            "index; give each project its own (unset it, or use a relative index_dir), or delete "
            f"{index_dir / STAMP} if that repository no longer uses this dir"
        )
    if named != mine:
        from gitwiki.fs import atomic_write

        try:
            atomic_write(index_dir / STAMP, mine + "\n", sync=False)
        except OSError:  # a read-only index dir (an installed artifact): nothing is written there either
            pass
    _claimed.add((index_dir, common_dir))
    return index_dir


def _stamp(index_dir: Path) -> str | None:
    try:
        with open(index_dir / STAMP, "rb") as f:
            return f.read(_MOST).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder.resolve()) or path.is_relative_to(folder)
