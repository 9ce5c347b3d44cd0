"""The session briefing (`handlers.session_start`), kept in the index dir for the next session to answer with.

A briefing is made of the config, HEAD and the worktree's status, the index and the memory pages, which rarely
change between two sessions; making it loads SQLite, the store and the ranking, a third of the hook's CPU
(docs/research/sessions.md). So its text is kept under a key of everything it is made of: the config as loaded,
gitwiki's version, the worktree status stamp (`status.key`: HEAD and every file under the corpus folders, the
memory pages among them) and the index file's and its write-ahead log's stamps; and it holds only until the
first memory entry leaves the memory brief's 7-day window. The checkpoint's age is rendered at each answer.
Where the key cannot be trusted (a file changed in the last status.SETTLED_NS, too many files, a personal memory
repository, whose pages it does not cover) the briefing is made anew every time, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki.agent_hooks import cache, status

if TYPE_CHECKING:
    from gitwiki.config import Config

CACHE = "agent-briefing.json"
VERSION = 1  # of the briefing's text: a kept one of another version is made again
# The index and its write-ahead log: every write to the index changes one of them.
INDEX_FILES = (cache.INDEX, cache.INDEX + "-wal")


def key(root: Path, git_dir: Path, config: Config, index_dir: Path) -> list[Any] | None:
    """What the briefing of the checkout at `root` is made of, stamped, as JSON holds it (`worktree` its fourth
    item: `status.key`'s answer); None when it cannot be trusted or there is no index (the briefing then says how
    to build one)."""
    from gitwiki import __version__

    if config.memory.repository or any(r.memory for r in config.repositories):
        return None
    recent = time.time_ns() - status.SETTLED_NS
    stamps: list[list[int] | None] = []
    for name in INDEX_FILES:
        try:
            st = os.stat(index_dir / name)
        except FileNotFoundError:
            stamps.append(None)
            continue
        except OSError:
            return None
        if name != INDEX_FILES[0] and not st.st_size:  # an empty log (a reader's open makes one) holds no write
            stamps.append(None)
            continue
        if st.st_mtime_ns > recent:  # written just now: another write may follow within the same mtime tick
            return None
        stamps.append(cache.stamp(st))
    if stamps[0] is None:
        return None
    worktree = status.key(root, git_dir, [c.path for c in config.corpora])  # the walk last: the dearest part
    if worktree is None:
        return None
    made: list[Any] = json.loads(json.dumps([VERSION, __version__, repr(config), worktree, stamps]))
    return made


def cached(index_dir: Path, made_of: list[Any]) -> str | None:
    """The kept briefing's text, its checkpoint rendered now, when it was made of `made_of` and still holds."""
    data = cache.load(index_dir / CACHE)
    text, found = data.get("text"), data.get("checkpoint")
    try:
        if data.get("key") != made_of or not time.time() < data["until"] or not isinstance(text, str):
            return None
        lines = checkpoint_lines(None if found is None else (str(found[0]), str(found[1]), found[2]))
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return "\n".join([text, *lines])


def keep(index_dir: Path, made_of: list[Any], text: str, checkpoint: Any, until: float) -> None:
    """Keep a briefing: its `text` but for the checkpoint, the checkpoint's (path, text, saved at), and the time
    until which it holds."""
    with contextlib.suppress(OSError):  # an index dir that cannot be written to: the briefing is only not kept
        cache.save(index_dir / CACHE, {"key": made_of, "text": text, "checkpoint": checkpoint, "until": until})


def checkpoint_lines(found: tuple[str, str, float | None] | None) -> list[str]:
    """The briefing's lines for the newest checkpoint, (path, text, saved at), with its age now."""
    if found is None:
        return []
    path, text, saved = found
    age = max(time.time() - saved, 0.0) if saved is not None else 0.0
    return [f"Checkpoint ({_age(age)} ago, {path}):", text]


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
