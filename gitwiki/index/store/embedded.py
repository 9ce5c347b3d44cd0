"""What this process knows of the embedding cache: page versions with a vector for every chunk, and the chunks a
version added to the one it replaced (`Pages.replace_blob`), so that embedding a memory store's new topic page
version looks at the one or two chunks the store added, not at all ~1,200 of the page.

Finding a version's missing vectors otherwise joins every chunk of it with the vectors table: 10 ms for a
794-entry page and 30 ms for a 1,198-entry one at 10,000 entries, done twice per store on the server's
background thread, beside the next store (docs/research/memory-store-scale.md).

Only facts this process saw are kept, and only while they hold: vectors are never deleted from a live index (a
vector is a content-addressed cache row: only a snapshot being packed drops any, in its own file), a version whose
rows are written again (`_put_blob`) or dropped is forgotten, and a database file replaced under the process
(`gitwiki pull`, a rebuild) has a memo of its own: keyed by the file's inode, and held only by the open
connections to it (whose open file keeps that inode from being reused). Bounded: the oldest are forgotten first,
which costs a later look-up its shortcut, never a wrong answer.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping

_COMPLETE_MAX = 4096  # versions; a store adds one
_ADDED_MAX = 256  # versions whose added chunks are known


class EmbeddedMemo:
    """For one database file: which versions have every vector, and which chunks a version added to the one it
    replaced. Shared by the connections of every thread of the process (a lock keeps it whole)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._complete: OrderedDict[str, set[str]] = OrderedDict()  # version → the models it has every vector of
        # version → (the version it replaced, {hash: text to embed} of the chunks it added, the models the one
        # it replaced had every vector of)
        self._added: OrderedDict[str, tuple[str, dict[str, str], frozenset[str]]] = OrderedDict()

    def complete(self, model: str, blob: str) -> bool:
        with self._lock:
            return model in self._complete.get(blob, ())

    def mark_complete(self, model: str, blobs: Iterable[str]) -> None:
        with self._lock:
            for blob in blobs:
                self._complete.setdefault(blob, set()).add(model)
                self._complete.move_to_end(blob)
            while len(self._complete) > _COMPLETE_MAX:
                self._complete.popitem(last=False)

    def record_added(self, blob: str, old: str, added: Mapping[str, str]) -> None:
        """`blob` holds the chunks of `old` it kept and `added` (hash → text to embed) besides; what is known of
        `old`'s vectors now is kept with it (`old` is about to be dropped)."""
        with self._lock:
            self._added[blob] = (old, dict(added), frozenset(self._complete.get(old, ())))
            self._added.move_to_end(blob)
            while len(self._added) > _ADDED_MAX:
                self._added.popitem(last=False)

    def added(self, model: str, blob: str) -> tuple[str, dict[str, str], bool] | None:
        """(the version `blob` replaced, {hash: text to embed} of the chunks it added to it, whether that version
        has every vector for `model`), when known."""
        with self._lock:
            found = self._added.get(blob)
            if found is None:
                return None
            old, texts, models = found
            return old, texts, model in models or model in self._complete.get(old, ())

    def forget(self, blobs: Iterable[str]) -> None:
        """`blobs` were written again or dropped: what was known of them may no longer hold."""
        with self._lock:
            for blob in blobs:
                self._added.pop(blob, None)
                self._complete.pop(blob, None)


_MEMOS: weakref.WeakValueDictionary[tuple[str, int], EmbeddedMemo] = weakref.WeakValueDictionary()
_MEMOS_LOCK = threading.Lock()


def memo_for(path: str, inode: int | None) -> EmbeddedMemo:
    """The memo of the database file `path` whose inode is `inode`, shared while a connection holds it; one of its
    own for a file not known by an inode (in memory, or gone)."""
    if not path or inode is None:
        return EmbeddedMemo()
    with _MEMOS_LOCK:
        memo = _MEMOS.get((path, inode))
        if memo is None:
            memo = EmbeddedMemo()
            _MEMOS[(path, inode)] = memo
        return memo
