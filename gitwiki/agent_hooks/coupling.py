"""Ambient layer 4's coupling notes: the files that changed together with this one in recent history.

`git log --name-only` over the last COMMITS commits runs once; its file lists are cached as JSON in the index
dir with the HEAD they were read at, so a hook on an unchanged HEAD reads HEAD from git's files (no git
process) and a small JSON, and after HEAD moves on reads only the new commits (`git log OLD..HEAD`); a
rewritten history (OLD no longer an ancestor) is read again in full. New commits go first, so a merged
branch's older commits may take the place in the last COMMITS of commits a full read would keep.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gitwiki.agent_hooks import cache
from gitwiki.git import gitcli

CACHE = "agent-cochange.json"
COMMITS = 200
WIDE = 30  # a commit changing more files is a sweep (a rename, a reformat), not a sign that two files belong together
TOGETHER = 2  # times two files changed in one commit before that is called a coupling
SHOWN = 5


def coupled(root: Path, index_dir: Path, path: str) -> list[tuple[str, int]]:
    """Up to SHOWN other files that changed in the same commits as `path`, most often first, with the count."""
    counts: Counter[str] = Counter()
    for files in _history(root, index_dir):
        if path in files and len(files) <= WIDE:
            counts.update(f for f in files if f != path)
    return [(f, n) for f, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= TOGETHER][:SHOWN]


def render(path: str, found: list[tuple[str, int]]) -> str:
    listed = ", ".join(f"{f} ({n})" for f, n in found)
    return f"files that changed together with {path} (commits, of the last {COMMITS}): {listed}"


def _history(root: Path, index_dir: Path) -> list[list[str]]:
    """The file lists of HEAD's last COMMITS commits, newest first, a sweep (over WIDE files) as an empty list:
    it never counts, but keeps its place among the last COMMITS (and the cache small: a first commit of a
    1,000-page wiki was 48 KB of JSON that every ambient hook parsed)."""
    head = gitcli.read_head(root) or gitcli.head_trees(root, [])[0]
    if head is None:
        return []
    data = cache.load(index_dir / CACHE)
    if data.get("head") == head and isinstance(data.get("commits"), list):
        return data["commits"]
    old, commits = data.get("head"), data.get("commits")
    new = gitcli.changed_together_since(root, old, COMMITS) if isinstance(old, str) and commits else None
    if new is not None and isinstance(commits, list):
        commits = ([f if len(f) <= WIDE else [] for f in new] + commits)[:COMMITS]
    else:
        commits = [f if len(f) <= WIDE else [] for f in gitcli.changed_together(root, COMMITS)]
    cache.save(index_dir / CACHE, {"head": head, "commits": commits})
    return commits
