"""The config layers the hooks read, cached as JSON in the default index dir.

tomllib, with the datetime and string modules it loads, cost every hook process ~3 ms (-X importtime, min of
7 runs) to parse files that rarely change. A layer's tables are kept by the file's inode, mtime and size,
the key agent-memory.json uses for topic pages; a changed file is parsed again, and a layer JSON cannot
hold (a TOML date) is parsed every time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitwiki.config import read_toml
from gitwiki.fs import atomic_write

CACHE = "agent-config.json"


def reader(folder: Path) -> Callable[[Path], dict[str, Any]]:
    """`config.load`'s `read` for a hook: each layer from the cache in `folder` while its file is unchanged
    (no cache where `folder` does not exist: the index lives elsewhere, or nowhere yet)."""
    cache = folder / CACHE
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}

    def read(path: Path) -> dict[str, Any]:
        try:
            st = path.stat()
        except OSError:
            return read_toml(path)  # which says what is wrong with it
        stamp = [st.st_ino, st.st_mtime_ns, st.st_size]
        hit = known.get(str(path))
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == stamp and isinstance(hit[1], dict):
            return hit[1]
        tables = read_toml(path)
        known[str(path)] = [stamp, tables]
        try:
            text = json.dumps(known)
        except (TypeError, ValueError):
            del known[str(path)]
            return tables
        if folder.is_dir():
            atomic_write(cache, text, sync=False)
        return tables

    return read
