"""One helper thread per kind of work a search hands off beside the query's embedding (onnxruntime and SQLite let
go of the GIL, so the two run at once): BM25 beside a page search's model run (`Searcher`), a memory search's query
vector beside its reads (`memory.query_vector`). Each is made on first use; a forked child makes its own, as it has
none of its parent's threads."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # concurrent.futures loads with the first hand-off: the lexical CLI path never pays for it
    from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_threads: dict[str, ThreadPoolExecutor] = {}


def helper_thread(name: str) -> ThreadPoolExecutor:
    """The single thread named `name`, as an executor (made now if this process has none yet)."""
    with _lock:
        if name not in _threads:
            from concurrent.futures import ThreadPoolExecutor

            _threads[name] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        return _threads[name]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_threads.clear)
