"""What the hooks need to know about pages they are not checking themselves, cached per page version.

`gitwiki lint` needs every page's outgoing links (the orphan check) and some pages' anchors (`other.md#x`
links); `gitwiki index-blocks` needs every page's title and summary. On a big wiki, extracting those
on each commit would be most of the hooks' time. A page version is a git blob, so facts are cached by
blob id in one file in the index dir; a worktree file is keyed by the id git would give it (`gitcli.blob_id`), so
one entry serves the staged and the worktree copy. Each fact is extracted on first use only: lint never
pays for titles, index-blocks never for links.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeGuard

from gitwiki.fs import atomic_write
from gitwiki.markdown import frontmatter
from gitwiki.markdown.frontmatter import YamlReader
from gitwiki.markdown.links import extract_links, is_external
from gitwiki.markdown.summary import title_and_summary

CACHE_NAME = "pagefacts.json"
# Bump when an extraction below or the rendering of index blocks changes its output: the whole file is
# then ignored and rebuilt.
VERSION = 1


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


# ---- extraction: pure functions of the page text ----------------------------------------------------


def info(text: str, read_yaml: YamlReader | None = None) -> list:
    """[title, summary] as an index block shows them; the title is None when the page has none (the
    block then shows the file name, which is not part of the blob)."""
    return list(title_and_summary(text, read_yaml))


def links(text: str, read_yaml: YamlReader | None = None) -> list[str]:
    """Link targets as written that can point at another page: not external, not only a #fragment.
    (Links are found without reading the front matter.)"""
    out = (link.target for link in extract_links(text))
    return list(dict.fromkeys(t for t in out if not is_external(t) and t.partition("#")[0].partition("?")[0]))


def anchors(text: str, read_yaml: YamlReader | None = None) -> list[str]:
    """Heading slugs and HTML ids a `page.md#fragment` link can name, by the same parse lint uses."""
    # The full parse (8 ms of imports: dataclasses, inspect) only for anchors; the index-blocks hook never needs it.
    from gitwiki.markdown.document import parse

    return sorted(parse("", text, read_yaml).anchors)


# Each takes the page text and the front-matter reader to use.
EXTRACT: dict[str, Callable[[str, YamlReader], list]] = {"info": info, "links": links, "anchors": anchors}


def _strings(value: object) -> TypeGuard[list]:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _info(value: object) -> TypeGuard[list]:
    return isinstance(value, list) and len(value) == 2 and all(s is None or isinstance(s, str) for s in value)


def _yaml(value) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], dict)
        and (value[1] is None or isinstance(value[1], str))
    )


def _json_safe(value) -> bool:
    """Whether JSON gives `value` back as it is (YAML can also give dates, sets, non-string keys)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, list):
        return all(_json_safe(v) for v in value)
    return isinstance(value, dict) and all(isinstance(k, str) and _json_safe(v) for k, v in value.items())


# A hand-edited or half-foreign file must not crash a hook: a value of the wrong shape is re-extracted.
_VALID: dict[str, Callable[[object], TypeGuard[list]]] = {"info": _info, "links": _strings, "anchors": _strings}


# ---- the cache file ---------------------------------------------------------------------------------

_TABLES = ("facts", "renders", "stats", "yaml")
# A file's stat is trusted to stand for its content only once its timestamps are this much in the past:
# a write within the timestamp granularity (2 s on FAT) of the recorded one could otherwise go unseen.
RACY_NS = 2_000_000_000


class FactsCache:
    """Page facts by blob id, in `<index dir>/pagefacts.json`, written back by `save` when they changed.

    More tables ride along: the index blocks' render memo (input digest → output digest, see
    `index_blocks.render_block`); a stat cache (file path → size, times, inode and blob id) that spares
    index-blocks reading every unchanged page to learn its blob id; and front matter read before (digest
    of the YAML → mapping and error), so that a commit that leaves a page's front matter alone does not
    import PyYAML. A missing, corrupt or other-version file counts as empty. Without a path the cache
    lives in memory.
    """

    def __init__(self, path: Path | None = None, tables: dict | None = None):
        self.path = path
        self._tables: dict[str, dict] = {name: {} for name in _TABLES}
        for name in _TABLES:
            if isinstance(table := (tables or {}).get(name), dict):
                self._tables[name] = table
        self._seen: dict[str, set[str]] = {name: set() for name in _TABLES}
        self._changed = False

    @classmethod
    def load(cls, index_dir: Path) -> FactsCache:
        path = index_dir / CACHE_NAME
        try:
            data = json.loads(path.read_bytes())
            tables = data if data["version"] == VERSION else None
        except (OSError, ValueError, LookupError, TypeError):
            tables = None
        return cls(path, tables)

    def get(self, field: str, blob: str, text: Callable[[], str]) -> list:
        """The fact `field` ("info", "links" or "anchors") of page version `blob`; on a miss it is
        extracted from `text()`."""
        entry = self._entry("facts", blob)
        if not isinstance(entry, dict):
            entry = self._tables["facts"][blob] = {}
        value = entry.get(field)
        if not _VALID[field](value):
            value = entry[field] = EXTRACT[field](text(), self.read_yaml)
            self._changed = True
        return value

    def read_yaml(self, raw: str) -> tuple[dict, str | None]:
        """`frontmatter.read_yaml`, remembered by the digest of `raw` when JSON keeps its result intact."""
        key = hashlib.sha1(raw.encode()).hexdigest()
        hit = self._tables["yaml"].pop(key, None)  # re-inserted below: the table is kept in order of use
        if _yaml(hit):
            self._tables["yaml"][key] = hit
            return hit[0], hit[1]
        meta, error = frontmatter.read_yaml(raw)
        if _json_safe(meta):
            self._put("yaml", key, [meta, error])
        return meta, error

    def missing(self, field: str, blobs: Iterable[str]) -> list[str]:
        """The blobs whose `field` would have to be extracted (so callers can fetch their text in one go)."""
        facts = self._tables["facts"]
        return [b for b in blobs if not (isinstance(e := facts.get(b), dict) and _VALID[field](e.get(field)))]

    def rendered(self, key: str) -> str | None:
        """The digest of what the render inputs with digest `key` produced, if they were rendered before."""
        value = self._entry("renders", key)
        return value if isinstance(value, str) else None

    def remember_render(self, key: str, digest: str) -> None:
        self._put("renders", key, digest)

    def blob_of(self, path: str, st: os.stat_result) -> str | None:
        """The blob id of the file at `path` (absolute) if its `lstat` shows it unchanged since it was hashed."""
        entry = self._entry("stats", path)
        if isinstance(entry, list) and len(entry) == 5 and entry[:4] == _stamp(st) and isinstance(entry[4], str):
            return entry[4]
        return None

    def remember_blob(self, path: str, st: os.stat_result, blob: str) -> None:
        if max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS:
            self._put("stats", path, [*_stamp(st), blob])

    def _entry(self, table: str, key: str):
        self._seen[table].add(key)
        return self._tables[table].get(key)

    def _put(self, table: str, key: str, value) -> None:
        self._seen[table].add(key)
        self._tables[table][key] = value
        self._changed = True

    def save(self) -> None:
        """Write the file if anything was added. Entries this run did not use (old page versions, the
        worktree copy of a page lint saw staged) are kept until they outnumber the used ones, so lint and
        index-blocks do not keep evicting each other's entries; a table this run did not use is kept whole."""
        if not self._changed or self.path is None:
            return
        out: dict = {"version": VERSION}
        for name in ("facts", "renders", "stats"):
            table, seen = self._tables[name], self._seen[name]
            keep_all = not seen or len(table.keys() - seen) <= len(seen)
            out[name] = table if keep_all else {k: table[k] for k in seen if k in table}
        # Front matter is looked up only for pages being read, so use says nothing about staleness here:
        # keep the most recently used, about one per page.
        out["yaml"] = dict(list(self._tables["yaml"].items())[-max(len(out["facts"]), 100) :])
        try:
            atomic_write(self.path, json.dumps(out, separators=(",", ":")))
        except OSError:
            pass  # a read-only index dir costs speed, never a hook failure
        self._changed = False


def _stamp(st: os.stat_result) -> list[int]:
    # ctime changes on every write and cannot be set back, so a content change never matches an old stamp
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
