"""What the hooks need to know about pages they are not checking themselves, cached per page version.

`gitwiki lint` needs every page's outgoing links (the orphan check) and some pages' anchors (`other.md#x`
links); `gitwiki index-blocks` needs every page's title and summary. On a big wiki, extracting those
on each commit would be most of the hooks' time. A page version is a git blob, so facts are cached by
blob id in a small SQLite file in the index dir; a worktree file is keyed by the id git would give it
(`gitcli.blob_id`), so one entry serves the staged and the worktree copy. Each fact is extracted on first
use only: lint never pays for titles, index-blocks never for links.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import unquote

from gitwiki import pagetext
from gitwiki.markdown import frontmatter
from gitwiki.markdown.frontmatter import YamlReader
from gitwiki.markdown.links import extract_links, include_targets, is_external
from gitwiki.markdown.summary import title_and_summary

CACHE_NAME = "pagefacts.sqlite"
LEGACY_NAME = "pagefacts.json"  # the one-file cache before it; removed when the SQLite file is created
# Bump when an extraction below or the rendering of index blocks changes its output: the file's tables
# are then dropped and refilled.
VERSION = 6  # 6: titles without attribute lists, summaries without build directives, more anchors


def decode(data: bytes) -> str:
    """The page text; `pagetext.NotText` for a file that is not one (`FactsCache.get` remembers why)."""
    return pagetext.decode(data)


# ---- extraction: pure functions of the page text ----------------------------------------------------


def info(text: str, read_yaml: YamlReader | None = None) -> list[Any]:
    """[title, summary] as an index block shows them; the title is None when the page has none (the
    block then shows the file name, which is not part of the blob)."""
    return list(title_and_summary(text, read_yaml))


def links(text: str, read_yaml: YamlReader | None = None) -> list[str]:
    """Link targets as written that can point at another page: not external, not only a #fragment; mdBook's
    `{{#include}}` files too. (Links are found without reading the front matter.)"""
    out = [*(link.target for link in extract_links(text)), *include_targets(text)]
    return list(dict.fromkeys(t for t in out if not is_external(t) and t.partition("#")[0].partition("?")[0]))


def anchors(text: str, read_yaml: YamlReader | None = None) -> list[str]:
    """Heading slugs and HTML ids a `page.md#fragment` link can name, by the same parse lint uses."""
    # The full parse (8 ms of imports: dataclasses, inspect) only for anchors; the index-blocks hook never needs it.
    from gitwiki.markdown.document import parse

    return sorted(parse("", text, read_yaml).anchors)


# Each takes the page text and the front-matter reader to use.
EXTRACT: dict[str, Callable[[str, YamlReader], list[Any]]] = {"info": info, "links": links, "anchors": anchors}


def _strings(value: object) -> TypeGuard[list[Any]]:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _info(value: object) -> TypeGuard[list[Any]]:
    return isinstance(value, list) and len(value) == 2 and all(s is None or isinstance(s, str) for s in value)


def _yaml(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], dict)
        and (value[1] is None or isinstance(value[1], str))
    )


def _json_safe(value: object) -> bool:
    """Whether JSON gives `value` back as it is (YAML can also give dates, sets, non-string keys)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, list):
        return all(_json_safe(v) for v in value)
    return isinstance(value, dict) and all(isinstance(k, str) and _json_safe(v) for k, v in value.items())


UNREADABLE = "unreadable"  # the facts entry key saying why a page has no facts

# A hand-edited or half-foreign file must not crash a hook: a value of the wrong shape is re-extracted.
_VALID: dict[str, Callable[[object], TypeGuard[list[Any]]]] = {"info": _info, "links": _strings, "anchors": _strings}


# ---- the cache file ---------------------------------------------------------------------------------

_TABLES = ("facts", "renders", "stats", "yaml")
# A file's stat is trusted to stand for its content only once its timestamps are this much in the past:
# a write within the timestamp granularity (2 s on FAT) of the recorded one could otherwise go unseen.
RACY_NS = 2_000_000_000
# Rows no run has used for this many days are dropped (old page versions, files deleted or moved).
KEEP_DAYS = 30
# Above this many keys a read scans the keys' range instead of looking each one up.
BULK = 1000
# How long a run waits for another hook's write to the file before it goes on without the cache.
BUSY_TIMEOUT = 10.0
_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def today() -> int:
    return int(time.time() // 86400)


class FactsCache:
    """Page facts by blob id, in `<index dir>/pagefacts.sqlite`, read by key as they are asked for and written
    back by `save` (only the rows this run added).

    More tables ride along: the index blocks' render memo (input digest → output digest, see
    `index_blocks.render_block`); a stat cache (file path → size, times, inode and blob id) that spares
    index-blocks reading every unchanged page to learn its blob id; and front matter read before (digest
    of the YAML → mapping and error), so that a commit that leaves a page's front matter alone does not
    import PyYAML. At 20,000 pages the one JSON file this replaces was 10 MB, parsed and rewritten whole
    on each hook run. A damaged file is deleted and started afresh, one of another `VERSION` emptied: it is
    only a cache. Without a path (or when the file cannot be opened) the cache lives in memory.
    """

    def __init__(self, path: Path | None = None):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        # table → key → the stored text (JSON, except the digests of `renders` and the stamps of `stats`);
        # None: not in the file
        self._rows: dict[str, dict[str, str | None]] = {name: {} for name in _TABLES}
        self._new: dict[str, dict[str, str]] = {name: {} for name in _TABLES}
        self._touch: dict[str, set[str]] = {name: set() for name in _TABLES}  # rows read, last used before today
        self._valid: dict[str, list[Any]] = {}  # facts key → its value, decoded and checked by `get`
        self._today = today()
        if path is not None:
            self._conn = _open(path)

    @classmethod
    def load(cls, index_dir: Path) -> FactsCache:
        return cls(index_dir / CACHE_NAME)

    def get(self, field: str, blob: str, text: Callable[[], str]) -> list[Any] | None:
        """The fact `field` ("info", "links" or "anchors") of page version `blob`; on a miss it is
        extracted from `text()`. None for a page that is not text or that extraction fails on: the
        reason is remembered (`unreadable`), so the page is read once, not on every run."""
        key, why_key = _key(blob, field), _key(blob, UNREADABLE)
        facts = self._rows["facts"]
        if key not in facts or why_key not in facts:
            self._fetch("facts", [key, why_key])
        if facts[why_key] is not None and isinstance(_decode(facts[why_key]), str):
            return None
        if key in self._valid:
            return self._valid[key]
        value = _decode(facts[key])
        if not _VALID[field](value):
            value, why = pagetext.attempt(lambda: EXTRACT[field](text(), self.read_yaml))
            if value is None:
                self._put("facts", why_key, json.dumps(why))
                return None
            self._put("facts", key, json.dumps(value, separators=(",", ":")))
        self._valid[key] = value
        return value

    def cached(self, field: str, blob: str) -> tuple[bool, list[Any] | None]:
        """Whether `get` would answer from the cache alone (nothing to extract), and its answer."""
        if self.unreadable(blob) is not None:
            return True, None
        key = _key(blob, field)
        value = self._valid[key] if key in self._valid else _decode(self._value("facts", key))
        return (True, value) if _VALID[field](value) else (False, None)

    def unreadable(self, blob: str) -> str | None:
        """Why page version `blob` has no facts (not text, or extraction failed), when `get` found that."""
        why = _decode(self._value("facts", _key(blob, UNREADABLE)))
        return why if isinstance(why, str) else None

    def read_yaml(self, raw: str) -> tuple[dict[str, Any], str | None]:
        """`frontmatter.read_yaml`, remembered by the digest of `raw` when JSON keeps its result intact."""
        key = hashlib.sha1(raw.encode()).hexdigest()
        hit = _decode(self._value("yaml", key))
        if _yaml(hit):
            return hit[0], hit[1]  # type: ignore[index]
        meta, error = frontmatter.read_yaml(raw)
        if _json_safe(meta):
            self._put("yaml", key, json.dumps([meta, error]))
        return meta, error

    def prefetch(self, field: str, blobs: Iterable[str]) -> None:
        """Read the `field` facts of many page versions in one query (a query per page costs 20,000 round
        trips on a wiki that size)."""
        blobs = list(blobs)
        for name in (field, UNREADABLE):
            self._fetch("facts", [_key(b, name) for b in blobs], prefix=_key("", name))

    def missing(self, field: str, blobs: Iterable[str]) -> list[str]:
        """The blobs whose `field` would have to be extracted (so callers can fetch their text in one go).
        A stored value is trusted to be of the right shape here; `get` checks it when it is used.

        Many blobs are looked up in the keys of the two fields' rows, read in one scan without their values:
        at 20,000 pages reading every value was most of a 5-file lint."""
        blobs = list(dict.fromkeys(blobs))
        if len(blobs) > BULK and self._conn is not None:
            query = "SELECT substr(key, ?), typeof(day) != 'integer' OR day < ? FROM facts WHERE key >= ? AND key < ?"
            stored: dict[str, dict[str, int]] = {}  # field → blob → whether its row was last used before today
            try:
                for name in (field, UNREADABLE):
                    prefix = _key("", name)
                    args = (len(prefix) + 1, self._today, prefix, prefix + "\uffff")
                    stored[name] = dict(self._conn.execute(query, args).fetchall())
            except sqlite3.Error as e:
                self._failed(e)
            else:
                asked = set(blobs)  # their rows are marked used, as reading them would
                for name, rows in stored.items():
                    self._touch["facts"].update(_key(b, name) for b, old in rows.items() if old and b in asked)
                blobs = [b for b in blobs if b not in stored[field] and b not in stored[UNREADABLE]]
                facts = self._rows["facts"]
                for blob in blobs:  # not in the file, so `known` asks no query (20,000 in a first run)
                    for name in (field, UNREADABLE):
                        facts.setdefault(_key(blob, name), None)
        return [b for b in blobs if not self.known(field, b)]

    def known(self, field: str, blob: str) -> bool:
        """Whether page version `blob` has its `field` (or why it has none) cached."""
        key, why_key = _key(blob, field), _key(blob, UNREADABLE)
        facts = self._rows["facts"]
        if key not in facts or why_key not in facts:
            self._fetch("facts", [key, why_key])
        return facts[key] is not None or facts[why_key] is not None

    def linking(self, names: set[str]) -> set[str]:
        """The page versions with a link whose `link_name` is in `names`, among those whose links are
        cached: the orphan check reads the links of these pages only, not of all 20,000."""
        found = set()
        for key, raw in self._new["facts"].items():
            field, _, blob = key.partition(":")
            if field == "links" and any(link_name(t) in names for t in _links(raw)):
                found.add(blob)
        if self._conn is not None:
            query = "SELECT DISTINCT blob FROM linknames WHERE name IN (SELECT value FROM json_each(?))"
            try:
                found.update(b for (b,) in self._conn.execute(query, (json.dumps(sorted(names)),)))
            except sqlite3.Error as e:
                self._failed(e)
        return found

    def rendered(self, key: str) -> str | None:
        """The digest of what the render inputs with digest `key` produced, if they were rendered before."""
        return self._value("renders", key)

    def remember_render(self, key: str, digest: str) -> None:
        self._put("renders", key, digest)

    def preload(self, table: str) -> None:
        """Read a whole table ("yaml": front matter by digest), for a run that will ask for most of it."""
        self._fetch(table, [], scan=True)

    def prefetch_stats(self, folder: str, paths: Iterable[str]) -> None:
        """Read the stat cache rows of many files (absolute paths, all in `folder`) in one query."""
        self._fetch("stats", list(paths), prefix=folder)

    def blob_of(self, path: str, st: os.stat_result) -> str | None:
        """The blob id of the file at `path` (absolute) if its `lstat` shows it unchanged since it was hashed."""
        entry = self._value("stats", path)
        stamp, _, blob = (entry or "").rpartition(" ")
        return blob if blob and stamp == _stamp(st) else None

    def remember_blob(self, path: str, st: os.stat_result, blob: str) -> None:
        if max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS:
            self._put("stats", path, f"{_stamp(st)} {blob}")

    def _value(self, table: str, key: str) -> str | None:
        rows = self._rows[table]
        if key not in rows:
            self._fetch(table, [key])
        return rows[key]

    def _put(self, table: str, key: str, value: str) -> None:
        self._rows[table][key] = self._new[table][key] = value
        self._touch[table].discard(key)

    def _fetch(self, table: str, keys: list[str], prefix: str = "", scan: bool = False) -> None:
        """Read the rows of `keys` not read yet (with `scan`, every row of the table); many keys sharing
        `prefix` are read by scanning the prefix's key range (at 20,000 pages: 30 ms, against 200 ms for as
        many key lookups)."""
        rows = self._rows[table]
        wanted = [k for k in dict.fromkeys(keys) if k not in rows]
        rows.update(dict.fromkeys(wanted))
        if not (wanted or scan) or self._conn is None:
            return
        args: tuple[str, ...]
        if scan or (len(wanted) > BULK and all(k.startswith(prefix) for k in wanted)):
            query, args = f"SELECT key, value, day FROM {table} WHERE key >= ? AND key < ?", (prefix, prefix + "\uffff")
        else:
            query, args = (
                f"SELECT key, value, day FROM {table} WHERE key IN (SELECT value FROM json_each(?))",
                (json.dumps(wanted),),
            )
        try:
            found = self._conn.execute(query, args).fetchall()
        except sqlite3.Error as e:
            self._failed(e)
            return
        touch, asked = self._touch[table], set(wanted)
        for key, value, day in found:
            if scan and key not in rows or key in asked:
                rows[key] = value if isinstance(value, str) else None
                if not isinstance(day, int) or day < self._today:
                    touch.add(key)

    def save(self) -> None:
        """Write the rows this run added, mark the ones it used as used today, and drop those unused for
        `KEEP_DAYS` (on the first run of a day that uses an old row). The cache stays open: a long-lived
        process (`gitwiki serve`'s page writes) keeps what it read, since a row never goes stale (facts are
        about immutable page versions; a stat row is checked against the file)."""
        conn = self._conn
        if conn is None:
            return
        self._today = today()
        try:
            if any(self._new.values()) or any(self._touch.values()):
                with _transaction(conn):
                    self._write(conn)
        except sqlite3.Error as e:
            self._failed(e)
        for table in _TABLES:
            self._new[table].clear()
            self._touch[table].clear()

    def _write(self, conn: sqlite3.Connection) -> None:
        for table in _TABLES:
            new = self._new[table]
            conn.executemany(
                f"INSERT OR REPLACE INTO {table} (key, value, day) VALUES (?,?,?)",
                [(k, v, self._today) for k, v in new.items()],
            )
            conn.execute(
                f"UPDATE {table} SET day = ? WHERE key IN (SELECT value FROM json_each(?))",
                (self._today, json.dumps(sorted(self._touch[table]))),
            )
        names: set[tuple[str, str]] = set()
        for key, raw in self._new["facts"].items():
            field, _, blob = key.partition(":")
            if field == "links":
                names.update((link_name(t), blob) for t in _links(raw))
        conn.executemany("INSERT OR IGNORE INTO linknames (name, blob) VALUES (?,?)", sorted(names))
        if any(self._touch.values()):  # so at most about once a day
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE day < ?", (self._today - KEEP_DAYS,))
            conn.execute("DELETE FROM linknames WHERE 'links:' || blob NOT IN (SELECT key FROM facts)")

    def _failed(self, error: sqlite3.Error) -> None:
        """A read or write failed: a damaged file is started afresh, otherwise (locked, unreadable) this run
        goes on in memory. Either way a hook goes on: the cache costs speed, never a failure."""
        conn, self._conn = self._conn, None
        if conn is not None and _damaged(error) and self.path is not None:
            _discard(conn, self.path)
            self._conn = _open(self.path)
        elif conn is not None:
            conn.close()


def _key(blob: str, field: str) -> str:
    return f"{field}:{blob}"  # field first: one field's rows are a key range, read in one scan


def _decode(raw: str | None) -> object:
    """A stored JSON value; None for a missing or hand-broken one (a miss: re-extracted and replaced)."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _links(raw: str | None) -> list[str]:
    value = _decode(raw)
    return value if _strings(value) else []


def link_name(target: str) -> str:
    """The last path segment of a link target as written ("" for `dir/`): a link can only reach a page
    whose file name (or, for an index or README, folder name) this is, or a folder for "", "." and ".."."""
    return unquote(target.partition("#")[0].partition("?")[0].rstrip("/").rpartition("/")[2])


def _damaged(error: sqlite3.Error) -> bool:
    return getattr(error, "sqlite_errorcode", 0) & 0xFF in _DAMAGED


def _discard(conn: sqlite3.Connection, path: Path | None) -> None:
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(f"{path}{suffix}")


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _open(path: Path, retry: bool = True) -> sqlite3.Connection | None:
    """The cache file, created or emptied when it is not of this `VERSION`; None when it cannot be used
    (a read-only or missing index dir, a lock held past `BUSY_TIMEOUT`)."""
    conn = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        if conn.execute("PRAGMA user_version").fetchone()[0] != VERSION:
            _initialize(conn, path)
        # No fsync, not even when the WAL is copied back on close (~10 ms of each page write): a power cut
        # may damage the file, and a damaged file is discarded and rebuilt.
        conn.execute("PRAGMA synchronous=OFF")
        return conn
    except sqlite3.Error as e:
        if conn is not None and _damaged(e) and retry:
            _discard(conn, path)
            return _open(path, retry=False)
        if conn is not None:
            conn.close()
        return None
    except OSError:
        return None


def _initialize(conn: sqlite3.Connection, path: Path) -> None:
    # WAL, so a hook reading the cache never waits for another one writing it. SQLite answers this pragma
    # with SQLITE_BUSY without calling the busy handler (see store.connection._set_wal): retry it for the timeout.
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as e:
            if e.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    with _transaction(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] == VERSION:  # another process did it meanwhile
            return
        for table in _TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (key TEXT PRIMARY KEY, value TEXT NOT NULL, day INTEGER) WITHOUT ROWID")
        conn.execute("DROP TABLE IF EXISTS linknames")  # the orphan check's index: link_name → page versions
        conn.execute("CREATE TABLE linknames (name TEXT, blob TEXT, PRIMARY KEY (name, blob)) WITHOUT ROWID")
        conn.execute(f"PRAGMA user_version = {VERSION}")
    with contextlib.suppress(OSError):
        os.unlink(path.parent / LEGACY_NAME)


def _stamp(st: os.stat_result) -> str:
    # ctime changes on every write and cannot be set back, so a content change never matches an old stamp
    return f"{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino}"
