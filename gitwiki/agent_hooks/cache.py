"""The hooks' caches: small JSON files in the index dir, each keyed by what it was made from (a file's
inode, mtime and size, HEAD), so that a hook on unchanged files reads a cache instead of parsing, hashing or
starting git. A cache that is missing, unreadable or of another shape is made again; writes are atomic and
not synced (a crash may lose a cache, never tear one).

This module also holds the config layers' cache: tomllib, with the datetime and string modules it loads,
cost every hook process ~3 ms to parse files that rarely change. A layer
JSON cannot hold (a TOML date) is parsed every time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gitwiki.config import read_toml
from gitwiki.fs import atomic_write, stat_stamp

CONFIG = "agent-config.json"
INDEX = "index.sqlite"  # the store's DB_NAME: named here so that a hook sees whether there is one without its import


def load(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; {} when there is none (missing, unreadable, not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(data), sync=False)


def stamp(st: os.stat_result) -> list[int]:
    """`fs.stat_stamp` as JSON holds it."""
    return list(stat_stamp(st))


def config_reader(folder: Path) -> Callable[[Path], dict[str, Any]]:
    """`config.load`'s `read` for a hook: each layer from the cache in `folder` while its file is unchanged
    (no cache where `folder` does not exist: the index lives elsewhere, or nowhere yet)."""
    known = load(folder / CONFIG)

    def read(path: Path) -> dict[str, Any]:
        try:
            now = stamp(path.stat())
        except OSError:
            return read_toml(path)  # which says what is wrong with it
        hit = known.get(str(path))
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == now and isinstance(hit[1], dict):
            return hit[1]
        tables = read_toml(path)
        known[str(path)] = [now, tables]
        try:
            text = json.dumps(known)
        except (TypeError, ValueError):
            del known[str(path)]
            return tables
        if folder.is_dir():
            atomic_write(folder / CONFIG, text, sync=False)
        return tables

    return read
