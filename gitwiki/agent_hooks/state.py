"""Per-session state under the index dir: what was injected (never twice), focus topics, phase, edits.

One JSON file per Claude Code `session_id` in `<index dir>/agent-sessions/`, read and written under an
exclusive `flock` (Claude Code runs the hooks of parallel tool calls at once). A state untouched for
`EXPIRY` seconds starts over, and expired files are removed when a new state is started.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitwiki.fs import atomic_write

SESSION_DIR = "agent-sessions"
EXPIRY = 4 * 3600
PRUNE_EVERY = 600
PRUNED = ".pruned"  # its mtime: when expired sessions were last removed
# Claude Code runs a command registered both by the plugin and in the settings once per source, at the
# same time, on byte-identical stdin (anthropics/claude-code#76297): the copy that takes the session lock
# second, within this many seconds (its hook timeout: the first copy is done or killed by then), says nothing.
# The transcript's size is part of what makes two events the same: a later event with the same JSON (a
# Stop after another short turn, a prompt typed again) comes after the transcript grew.
DUPLICATE_WINDOW = 10


class Session:
    def __init__(self, data: dict[str, Any]):
        now = time.time()
        self.data = {
            "started": now,
            "injected": [],  # note keys
            "focus": {},  # topic → times a note of it was injected
            "phase": "Research",
            "edited": [],  # repo-relative paths an Edit or Write was about to change
            "reminded": False,
            "answered": {},  # digest of a hook type and its event → when it was answered
            **data,
            "updated": now,
        }

    @property
    def started(self) -> float:
        return self.data["started"]

    def first_to_answer(self, hook: str, raw: bytes, transcript: object) -> bool:
        """Whether no other process answered this very event (its stdin `raw`, with the `transcript` file
        at its present size) for this hook type in the last DUPLICATE_WINDOW seconds: the plugin's copy of
        a hook and the settings' one both get it. Records the answer."""
        now = time.time()
        answered = {k: t for k, t in self.data["answered"].items() if now - t < DUPLICATE_WINDOW}
        size = -1
        if isinstance(transcript, str) and transcript:
            with contextlib.suppress(OSError, ValueError):  # ValueError: a NUL or a lone surrogate in the path
                size = os.stat(transcript).st_size
        digest = f"{hook}:{len(raw)}:{zlib.crc32(raw):08x}:{size}"
        first = digest not in answered
        answered.setdefault(digest, now)
        self.data["answered"] = answered
        return first

    def seen(self, key: str) -> bool:
        return key in self.data["injected"]

    def injected(self, key: str, topic: str = "") -> None:
        """`key` was shown; `topic` (a page's name, none for a note that is no page's) counts towards focus."""
        if key not in self.data["injected"]:
            self.data["injected"].append(key)
        if topic:
            self.data["focus"][topic] = self.data["focus"].get(topic, 0) + 1

    def forget_injected(self) -> None:
        """After a compaction the injected text is gone from the context: it may be injected again."""
        self.data["injected"] = []

    def focus(self, n: int) -> list[str]:
        return sorted(self.data["focus"], key=lambda t: -self.data["focus"][t])[:n]

    @property
    def phase(self) -> str:
        return self.data["phase"]

    @phase.setter
    def phase(self, value: str) -> None:
        self.data["phase"] = value

    def edited(self, path: str) -> None:
        if path not in self.data["edited"]:
            self.data["edited"].append(path)

    @property
    def edits(self) -> list[str]:
        return self.data["edited"]


def _file_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120] + ".json"


@contextlib.contextmanager
def open_session(index_dir: Path, session_id: str) -> Iterator[Session]:
    """The session's state, saved on a clean exit; a fresh unsaved one when there is no session id."""
    if not session_id:
        yield Session({})
        return
    folder = index_dir / SESSION_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _file_name(session_id)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        session = Session(_load(path))
        yield session
        atomic_write(path, json.dumps(session.data), sync=False)


def peek(index_dir: Path, session_id: str) -> dict[str, Any]:
    """The session's state as last saved, read without its lock (a save replaces the file whole); {} for none or
    an expired one. For a hook that only decides whether it has anything to do."""
    try:
        data = json.loads((index_dir / SESSION_DIR / _file_name(session_id)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    updated = data.get("updated") if isinstance(data, dict) else None
    return data if isinstance(updated, int | float) and time.time() - updated < EXPIRY else {}


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and time.time() - data.get("updated", 0) < EXPIRY:
            return data
    except (OSError, ValueError):
        pass
    _prune(path)
    return {}


def _prune(current: Path) -> None:
    """Remove other sessions' expired files (not this one's lock, which we hold), at most every PRUNE_EVERY
    seconds: a folder of 150 sessions took a new session ~2 ms to look through, and a busy machine starts
    many more than it has expired."""
    now = time.time()
    mark = current.parent / PRUNED
    try:
        if now - mark.stat().st_mtime < PRUNE_EVERY:
            return
    except OSError:
        pass
    mark.touch()
    cutoff = now - EXPIRY
    for entry in current.parent.iterdir():
        with contextlib.suppress(OSError):
            if entry.stem != current.stem and entry.name != PRUNED and entry.stat().st_mtime < cutoff:
                entry.unlink()
