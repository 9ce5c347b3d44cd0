"""The index artifact: one tar.gz holding a consistent copy of the SQLite index and a manifest.

`pack` snapshots the index (VACUUM INTO under the writer lock, so a live WAL database is never copied
raw), drops vectors no indexed chunk uses, and writes `manifest.json` first, then `index.sqlite`.
`extract` reads the archive as a stream and refuses anything that is not exactly what `pack` writes;
`unpack` extracts into a temp dir inside the index dir, checks it, and renames the database into place
under the writer lock. A refusal raises before the live index is touched.

The `pages` table travels inside the database: each corpus's path → blob listing lets the receiving
side catch up against any local tree, whether or not the artifact's commit is in its history.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import shutil
import sqlite3
import tarfile
import tempfile
import time
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, Any, NamedTuple

from gitwiki import __version__
from gitwiki.errors import StoreError, UsageError
from gitwiki.fs import path_problem, pid_alive
from gitwiki.index import store
from gitwiki.index.store import DB_NAME, SCHEMA_VERSION, Store
from gitwiki.markdown import PAGE_SUFFIXES

FORMAT = "gitwiki-index"
FORMAT_VERSION = 1
ARCHIVE_NAME = "gitwiki-index.tar.gz"
MANIFEST_NAME = "manifest.json"
MAX_BYTES = 4 << 30  # default cap on the uncompressed size of an archive
MAX_MANIFEST_BYTES = 1 << 20
# pack writes no pax or GNU long-name headers (its two names are short); tarfile reads one whole into
# memory before we see the member, so a 1 MB archive declaring a 1 GiB pax header cost 2-3 GB. This is
# far above any real one and far below harm.
MAX_HEADER_BYTES = 64 << 10
_EXTENDED_HEADERS = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)
SQLITE_MAGIC = b"SQLite format 3\x00"
COPY_CHUNK = 1 << 20


class CorpusEntry(NamedTuple):
    name: str
    commit: str
    tree: str
    pages: int
    chunks: int


class ArchiveMember(NamedTuple):
    path: str
    size: int
    sha256: str


class Manifest(NamedTuple):
    format_version: int
    gitwiki_version: str
    schema_version: int
    model: str | None  # None: a lexical-only index
    dim: int | None
    corpora: tuple[CorpusEntry, ...]
    files: tuple[ArchiveMember, ...]
    created_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "gitwiki_version": self.gitwiki_version,
            "schema_version": self.schema_version,
            "model": self.model,
            "dim": self.dim,
            "corpora": [c._asdict() for c in self.corpora],
            "files": [f._asdict() for f in self.files],
            "created_at": self.created_at,
        }

    @classmethod
    def from_json(cls, data: object) -> Manifest:
        """Validate the manifest's shape; versions are checked by the caller, which names the archive."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StoreError(f"{MANIFEST_NAME} does not describe a {FORMAT} archive")
        try:
            manifest = cls(
                format_version=_typed(data["format_version"], int),
                gitwiki_version=_typed(data["gitwiki_version"], str),
                schema_version=_typed(data["schema_version"], int),
                model=_typed(data["model"], str, optional=True),
                dim=_typed(data["dim"], int, optional=True),
                corpora=tuple(
                    CorpusEntry(
                        _typed(c["name"], str),
                        _typed(c["commit"], str),
                        _typed(c["tree"], str),
                        _typed(c["pages"], int),
                        _typed(c["chunks"], int),
                    )
                    for c in data["corpora"]
                ),
                files=tuple(
                    ArchiveMember(_typed(f["path"], str), _typed(f["size"], int), _typed(f["sha256"], str))
                    for f in data["files"]
                ),
                created_at=float(_typed(data["created_at"], (int, float))),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise StoreError(f"{MANIFEST_NAME} is malformed ({type(e).__name__}: {e})") from None
        return manifest

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def describe(self) -> str:
        """For people: versions and model, then one line per corpus."""
        model = f"{self.model} ({self.dim} dims)" if self.model else "no vectors (lexical only)"
        lines = [f"gitwiki {self.gitwiki_version}, schema {self.schema_version}, model {model}"]
        lines += [
            f"  {c.name}: {c.pages} pages, {c.chunks} chunks at commit {c.commit[:12]} (tree {c.tree[:12]})"
            for c in self.corpora
        ]
        return "\n".join(lines)


def _typed(value: Any, kind: type | tuple[type, ...], optional: bool = False) -> Any:
    if (value is None and optional) or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise TypeError(f"unexpected value {value!r}")


# ---- temp dirs in the index dir ------------------------------------------------------------------------


def temp_prefix(kind: str) -> str:
    """The name prefix of a pack, unpack or pull temp dir in the index dir: it carries our pid, so a later
    run can tell what a killed one left (8 of 48 pulls killed at random left one, up to an index's size)."""
    return f".{kind}-{os.getpid()}-"


def remove_orphans(index_dir: Path) -> None:
    """Remove the temp dirs of pack, unpack and pull runs whose process is gone."""
    for entry in index_dir.glob(".*-*-*"):
        match = re.fullmatch(r"\.(?:pack|unpack|pull)-(\d+)-.+", entry.name)
        if match and entry.is_dir() and not pid_alive(int(match[1])):
            shutil.rmtree(entry, ignore_errors=True)


# ---- pack ------------------------------------------------------------------------------------------


def pack(index_dir: Path, out: Path) -> Manifest:
    """Write the index in `index_dir` as an archive at `out` (atomically); returns its manifest."""
    db = index_dir / DB_NAME
    if not db.is_file():
        raise StoreError(f"no index at {index_dir}; run `gitwiki index` first")
    remove_orphans(index_dir)
    with tempfile.TemporaryDirectory(prefix=temp_prefix("pack"), dir=index_dir) as tmp:
        snapshot = Path(tmp) / DB_NAME
        store.snapshot(index_dir, snapshot)
        try:
            model, dim, corpora = _compact(snapshot)
        except sqlite3.Error as e:  # VACUUM rewrites the snapshot: a full disk or a file size limit
            raise store.write_failure(e, snapshot) from e
        files = (ArchiveMember(DB_NAME, snapshot.stat().st_size, _sha256_file(snapshot)),)
        manifest = Manifest(FORMAT_VERSION, __version__, SCHEMA_VERSION, model, dim, corpora, files, time.time())
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        try:
            with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                _add_bytes(tar, MANIFEST_NAME, json.dumps(manifest.to_json(), indent=2).encode())
                with snapshot.open("rb") as f:
                    tar.addfile(_member(DB_NAME, files[0].size), f)
            os.replace(partial, out)
        except OSError as e:
            Path(partial).unlink(missing_ok=True)
            raise store.write_failure(e, out) from e
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return manifest


def _compact(snapshot: Path) -> tuple[str | None, int | None, tuple[CorpusEntry, ...]]:
    """Drop what the receiver must not or cannot use; read the counts."""
    db = Store.open_file(snapshot)
    try:
        states = sorted(db.states())
        if not states:
            raise StoreError("the index holds no corpus yet; run `gitwiki index` first")
        models = {s.model for s in states if s.model is not None}
        if len(models) > 1:
            raise StoreError(
                f"corpora were indexed with different models ({', '.join(sorted(models))}); run `gitwiki index`"
            )
        model = next(iter(models), None)
        db.strip_for_export(model)
        count, width, _ = db.vector_bytes(model)
        dim = width // 4 if count and width else None
        corpora = tuple(CorpusEntry(s.corpus, s.commit, s.tree, *db.corpus_counts(s.corpus)) for s in states)
    finally:
        db.close()
    return model, dim, corpora


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, int(time.time())
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_member(name, len(data)), io.BytesIO(data))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(COPY_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def cache_keys(trees: dict[str, str], model: str | None) -> tuple[str, str]:
    """(exact key, restore prefix) for a CI cache of the index: schema, model, then every corpus tree
    (`trees`: corpus name → tree id at HEAD, see `Wiki.corpus_trees`).

    An unchanged wiki hits the exact key and indexing is a no-op; a changed one restores the newest
    index with the same schema and model and embeds only what changed.
    """
    joined = ",".join(f"{name}={tree}" for name, tree in trees.items())
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model or "lexical")
    prefix = f"gitwiki-s{SCHEMA_VERSION}-{safe}-"
    return prefix + hashlib.sha256(joined.encode()).hexdigest()[:20], prefix


# ---- extract and verify ------------------------------------------------------------------------------


def extract(
    archive: Path, dest: Path, max_bytes: int = MAX_BYTES, corpus_paths: dict[str, str] | None = None
) -> Manifest:
    """Check `archive` member by member while writing it into the empty dir `dest`; returns its manifest.
    `corpus_paths` (corpus name → its folder, "" for the repo root), when given, are the receiver's corpora:
    a page the archive lists for one of them must lie in its folder.

    Raises StoreError on the first thing `pack` would not have written, before reading further.
    """
    name = archive.name
    try:
        with archive.open("rb") as raw, tarfile.open(fileobj=raw, mode="r|gz", tarinfo=_BoundedTarInfo) as tar:
            manifest = _read_manifest(tar, name, max_bytes)
            expected = {f.path: f for f in manifest.files}
            seen: set[str] = set()
            while (member := tar.next()) is not None:
                entry = _check_member(member, expected, seen, name)
                seen.add(member.name)
                _copy_checked(_reader(tar, member, name), dest / member.name, entry, name)
    except FileNotFoundError:
        raise StoreError(f"{archive}: no such file") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise StoreError(f"{name} is not a readable {FORMAT} archive ({e}); download it again") from None
    except _HeaderTooLarge as e:
        raise StoreError(f"{name}: refusing a {e.args[0]}-byte tar header; {FORMAT} archives have none") from None
    missing = sorted(set(expected) - seen)
    if missing:
        raise StoreError(f"{name} is truncated: {', '.join(missing)} listed in the manifest but absent")
    _check_database(dest / DB_NAME, manifest, name, corpus_paths or {})
    return manifest


class _HeaderTooLarge(Exception):
    pass


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses a pax or GNU long-name header over MAX_HEADER_BYTES, and GNU sparse members, before
    tarfile reads them."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise _HeaderTooLarge(self.size)
        if self.type in _EXTENDED_HEADERS and self.size > MAX_HEADER_BYTES:
            raise _HeaderTooLarge(self.size)
        return super()._proc_member(tarfile_)  # type: ignore[misc]


def _read_manifest(tar: tarfile.TarFile, name: str, max_bytes: int) -> Manifest:
    first = tar.next()
    if first is None or first.name != MANIFEST_NAME or not first.isreg():
        raise StoreError(f"{name} is not a {FORMAT} archive: its first member must be {MANIFEST_NAME}")
    if first.size > MAX_MANIFEST_BYTES:
        raise StoreError(f"{name}: {MANIFEST_NAME} is {first.size} bytes, more than a manifest can be")
    try:
        manifest = Manifest.from_json(json.loads(_reader(tar, first, name).read()))
    except RecursionError:
        raise StoreError(f"{name}: {MANIFEST_NAME} nests too deep to be a manifest") from None
    except ValueError as e:
        raise StoreError(f"{name}: {MANIFEST_NAME} is not valid JSON ({e})") from None
    if manifest.format_version != FORMAT_VERSION:
        raise StoreError(
            f"{name} has archive format {manifest.format_version}; this gitwiki reads format {FORMAT_VERSION}: "
            "upgrade gitwiki, or rebuild the artifact with this version"
        )
    if manifest.schema_version != SCHEMA_VERSION:
        raise StoreError(
            f"{name} holds index schema {manifest.schema_version}; this gitwiki {__version__} uses schema "
            f"{SCHEMA_VERSION}: use the same gitwiki version as the CI that built it, or run `gitwiki index`"
        )
    # What `pack` writes: one database. Another member was copied whole before its sha256 was checked (a 1 MB
    # archive wrote 1 GiB), and a negative size let the declared total pass --max-bytes.
    if [f.path for f in manifest.files] != [DB_NAME] or manifest.size < 0 or not math.isfinite(manifest.created_at):
        raise StoreError(f"{name}: {MANIFEST_NAME} must list {DB_NAME} alone, with its size; the archive is altered")
    if manifest.size > max_bytes:
        raise StoreError(
            f"{name} unpacks to {manifest.size} bytes, over the limit of {max_bytes}; raise it with --max-bytes "
            "if you trust it"
        )
    return manifest


def _reader(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str) -> IO[bytes]:
    reader = tar.extractfile(member)
    if reader is None:  # tarfile has no reader for links and devices; the callers let only regular files here
        raise StoreError(f"{name}: refusing {member.name!r}, which is not a regular file")
    return reader


def _check_path(path: str, name: str) -> None:
    """Refuse a path that could leave the folder it is joined to, or that is not written the one way."""
    if "\x00" in path or any(ord(ch) < 32 for ch in path):
        raise StoreError(f"{name}: refusing path {path!r} (control characters are not allowed)")
    pure = PurePosixPath(path)
    if pure.is_absolute() or "\\" in path or (pure.parts and ":" in pure.parts[0]):
        raise StoreError(f"{name}: refusing absolute path {path!r}")
    if ".." in pure.parts or not pure.parts or path != str(pure):
        raise StoreError(f"{name}: refusing path {path!r} (parent references and unnormalized paths are not allowed)")


def check_page_path(path: str, corpus_folder: str | None, name: str) -> None:
    """The rules a local page path meets (`fs.path_problem`, as `pages.locate` applies it), for a page path that
    came from elsewhere: a markdown page, and inside `corpus_folder` when it is known ("" is the repo root)."""
    _check_path(path, name)
    if problem := path_problem(path):
        raise StoreError(f"{name}: refusing page path {path!r}, which {problem}")
    if PurePosixPath(path).suffix.lower() not in PAGE_SUFFIXES:
        raise StoreError(f"{name}: refusing page path {path!r}, which is not a markdown page")
    if corpus_folder and not path.startswith(corpus_folder.rstrip("/") + "/"):
        raise StoreError(f"{name}: refusing page path {path!r}, which lies outside its corpus folder {corpus_folder!r}")


def _check_member(
    member: tarfile.TarInfo, expected: dict[str, ArchiveMember], seen: set[str], name: str
) -> ArchiveMember:
    _check_path(member.name, name)
    if member.issym() or member.islnk():
        raise StoreError(
            f"{name}: refusing link {member.name!r} → {member.linkname!r}; an index archive holds only files"
        )
    if member.isdev():
        raise StoreError(f"{name}: refusing device or fifo {member.name!r}; an index archive holds only files")
    if not member.isreg():
        raise StoreError(f"{name}: refusing {member.name!r}, which is not a regular file")
    entry = expected.get(member.name)
    if entry is None:
        raise StoreError(f"{name}: refusing {member.name!r}, which the manifest does not list")
    if member.name in seen:
        raise StoreError(f"{name}: refusing a second copy of {member.name!r}")
    if member.size != entry.size:
        raise StoreError(f"{name}: {member.name!r} is {member.size} bytes but the manifest says {entry.size}")
    return entry


def _copy_checked(source: IO[bytes], target: Path, entry: ArchiveMember, name: str) -> None:
    """Stream one member to disk, refusing before the damage: a database that does not fit on the disk, or
    whose first block is not a SQLite header declaring exactly the size the manifest does (a compressed
    bomb of zeros stops after one block instead of filling the disk before the sha256 check)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if entry.size > free:
        raise StoreError(f"{name}: {entry.path!r} needs {entry.size} bytes, but only {free} are free there")
    digest = hashlib.sha256()
    with target.open("xb") as out:
        first = True
        while block := source.read(COPY_CHUNK):
            if first and entry.path == DB_NAME:
                _check_sqlite_header(block, entry.size, name)
            first = False
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != entry.sha256:
        raise StoreError(
            f"{name}: sha256 of {entry.path!r} does not match the manifest; the archive is corrupt or altered"
        )


def _check_sqlite_header(block: bytes, size: int, name: str) -> None:
    """SQLite's 100-byte header: the magic, then page size (offset 16; 1 means 65536) and page count
    (offset 28), whose product is the file size for any database SQLite wrote, as VACUUM INTO does."""
    if len(block) < 100 or not block.startswith(SQLITE_MAGIC):
        raise StoreError(f"{name}: {DB_NAME} is not a SQLite database; the archive is corrupt or altered")
    page_size = int.from_bytes(block[16:18], "big")
    pages = int.from_bytes(block[28:32], "big")
    if (65536 if page_size == 1 else page_size) * pages != size:
        raise StoreError(f"{name}: {DB_NAME}'s header does not declare its {size} bytes; the archive is corrupt")


def _check_database(db: Path, manifest: Manifest, name: str, corpus_paths: dict[str, str]) -> None:
    """The database must be the index the manifest describes: exactly the schema objects this gitwiki
    creates (a trigger or view would run our own statements against us), rows this gitwiki can read back
    (a breadcrumb that is not JSON would fail every query), the same states and counts, and page paths
    that are pages inside their corpus."""
    try:
        index = Store.open_file(db, readonly=True)
    except sqlite3.Error as e:
        raise StoreError(f"{name}: {DB_NAME} cannot be opened ({e})") from None
    try:
        objects, expected = index.schema_objects(), store.expected_schema_objects()
        # One built before an index this gitwiki adds has it not; that is all that may differ.
        older = [o for o in expected if o[:2] not in store.OPTIONAL_OBJECTS]
        if objects not in (expected, older):
            extra = sorted({f"{o[0]} {o[1]}" for o in objects} - {f"{o[0]} {o[1]}" for o in expected})
            raise StoreError(
                f"{name}: {DB_NAME} defines other schema objects than a gitwiki index "
                f"({', '.join(extra) or 'changed definitions'}); refusing it"
            )
        problem = store.row_problem(index.conn, db.parent)
        if problem:
            raise StoreError(f"{name}: {DB_NAME} holds rows this gitwiki cannot read ({problem}); refusing it")
        for corpus, path in index.page_paths():
            check_page_path(path, corpus_paths.get(corpus), name)
        schema = index.schema_version()
        if schema != manifest.schema_version:
            raise StoreError(f"{name}: {DB_NAME} has schema {schema}, the manifest says {manifest.schema_version}")
        states = {s.corpus: s for s in index.states()}
        for c in manifest.corpora:
            if (
                c.name not in states
                or (states[c.name].commit, states[c.name].tree) != (c.commit, c.tree)
                or (c.pages, c.chunks) != index.corpus_counts(c.name)
            ):
                raise StoreError(f"{name}: corpus {c.name!r} in {DB_NAME} does not match the manifest")
        if set(states) != {c.name for c in manifest.corpora}:
            raise StoreError(f"{name}: the corpora in {DB_NAME} do not match the manifest")
        if manifest.dim is not None:
            count, shortest, longest = index.vector_bytes(manifest.model)
            if count == 0 or shortest != longest or shortest != 4 * manifest.dim:
                raise StoreError(
                    f"{name}: the vectors in {DB_NAME} are not {manifest.dim}-dimensional {manifest.model} vectors"
                )
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{name}: {DB_NAME} is not a readable gitwiki index ({e})") from None
    finally:
        index.close()
    # The FTS5 index against its table, as `pack` checked it: SQLite's own checks pass a full-text index whose
    # blocks or version were altered, and every query failed after the install. Its check is a write statement
    # (rolled back), so on this copy, once the schema above is known to hold no trigger.
    checked = Store.open_file(db)
    try:
        problem = checked.check(full=True)
    finally:
        checked.close()
    if problem:
        raise StoreError(f"{name}: {DB_NAME} fails SQLite's integrity check ({problem}); refusing it")


def verify(archive: Path, max_bytes: int = MAX_BYTES) -> Manifest:
    """Check everything `extract` checks, keeping nothing."""
    with tempfile.TemporaryDirectory(prefix="gitwiki-verify-") as tmp:
        return extract(archive, Path(tmp), max_bytes)


# ---- unpack ------------------------------------------------------------------------------------------


def check_model(manifest: Manifest, wanted: str | None, accept_model: bool, name: str) -> None:
    """An index built with another model would be re-embedded on first use: say so before installing."""
    if wanted is None or manifest.model == wanted or accept_model:
        return
    built = f"model {manifest.model}" if manifest.model else "no model (lexical only)"
    raise UsageError(
        f"{name} was built with {built}, but your config uses {wanted}; set [embeddings] model "
        f"(or GITWIKI_MODEL) to match, or pass --accept-model to install it and re-embed with {wanted}"
    )


def unpack(
    archive: Path,
    index_dir: Path,
    wanted_model: str | None,
    accept_model: bool = False,
    max_bytes: int = MAX_BYTES,
    corpus_paths: dict[str, str] | None = None,
) -> Manifest:
    """Install `archive` as the index in `index_dir`; on any refusal the existing index is untouched.
    `corpus_paths`: see `extract`."""
    index_dir.mkdir(parents=True, exist_ok=True)
    remove_orphans(index_dir)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix("unpack"), dir=index_dir))  # same filesystem: atomic rename
    try:
        manifest = extract(archive, tmp, max_bytes, corpus_paths)
        check_model(manifest, wanted_model, accept_model, archive.name)
        store.install(index_dir, tmp / DB_NAME)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest
