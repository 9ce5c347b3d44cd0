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
import os
import re
import shutil
import sqlite3
import tarfile
import tempfile
import time
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, NamedTuple

from gitwiki import __version__
from gitwiki.errors import StoreError, UsageError
from gitwiki.store import DB_NAME, SCHEMA_VERSION, IndexDamaged, Store, integrity_problem, writer_lock

FORMAT = "gitwiki-index"
FORMAT_VERSION = 1
ARCHIVE_NAME = "gitwiki-index.tar.gz"
MANIFEST_NAME = "manifest.json"
MAX_BYTES = 4 << 30  # default cap on the uncompressed size of an archive
MAX_MANIFEST_BYTES = 1 << 20
COPY_CHUNK = 1 << 20


class CorpusEntry(NamedTuple):
    name: str
    commit: str
    tree: str
    pages: int
    chunks: int


class FileEntry(NamedTuple):
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
    files: tuple[FileEntry, ...]
    created_at: float

    def to_json(self) -> dict:
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
    def from_json(cls, data) -> Manifest:
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
                    FileEntry(_typed(f["path"], str), _typed(f["size"], int), _typed(f["sha256"], str))
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


def _typed(value, kind, optional: bool = False):
    if (value is None and optional) or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise TypeError(f"unexpected value {value!r}")


# ---- pack ------------------------------------------------------------------------------------------


def pack(index_dir: Path, out: Path) -> Manifest:
    """Write the index in `index_dir` as an archive at `out` (atomically); returns its manifest."""
    db = index_dir / DB_NAME
    if not db.is_file():
        raise StoreError(f"no index at {index_dir}; run `gitwiki index` first")
    with tempfile.TemporaryDirectory(prefix=".pack-", dir=index_dir) as tmp:
        snapshot = Path(tmp) / DB_NAME
        with writer_lock(index_dir):
            conn = sqlite3.connect(db)
            try:
                problem = integrity_problem(conn, full=True)  # never ship damage to every CI job that pulls
                if problem:
                    raise IndexDamaged(index_dir, problem)
                conn.execute("VACUUM INTO ?", (str(snapshot),))
            finally:
                conn.close()
        model, dim, corpora = _compact(snapshot)
        files = (FileEntry(DB_NAME, snapshot.stat().st_size, _sha256_file(snapshot)),)
        manifest = Manifest(FORMAT_VERSION, __version__, SCHEMA_VERSION, model, dim, corpora, files, time.time())
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        try:
            with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                _add_bytes(tar, MANIFEST_NAME, json.dumps(manifest.to_json(), indent=2).encode())
                with snapshot.open("rb") as f:
                    tar.addfile(_member(DB_NAME, files[0].size), f)
            os.replace(partial, out)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return manifest


def _compact(snapshot: Path) -> tuple[str | None, int | None, tuple[CorpusEntry, ...]]:
    """Drop what the receiver must not or cannot use; read the counts."""
    conn = sqlite3.connect(snapshot, isolation_level=None)
    try:
        states = conn.execute("SELECT corpus, commit_id, tree, model FROM states ORDER BY corpus").fetchall()
        if not states:
            raise StoreError("the index holds no corpus yet; run `gitwiki index` first")
        models = {m for *_, m in states if m is not None}
        if len(models) > 1:
            raise StoreError(
                f"corpora were indexed with different models ({', '.join(sorted(models))}); run `gitwiki index`"
            )
        model = next(iter(models), None)
        # Pages parsed from the worktree (uncommitted drafts) are in the store but in no state: not shipped.
        Store(snapshot.parent, conn).gc()
        conn.execute("DELETE FROM vectors WHERE model IS NOT ? OR hash NOT IN (SELECT hash FROM chunks)", (model,))
        conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        conn.execute("VACUUM")
        row = conn.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
        dim = row[0] // 4 if row else None
        corpora = tuple(CorpusEntry(name, commit, tree, *_counts(conn, name)) for name, commit, tree, _ in states)
    finally:
        conn.close()
    return model, dim, corpora


def _counts(conn: sqlite3.Connection, corpus: str) -> tuple[int, int]:
    pages = conn.execute("SELECT count(*) FROM pages WHERE corpus = ?", (corpus,)).fetchone()[0]
    chunks = conn.execute(
        "SELECT count(*) FROM pages p JOIN chunks c ON c.blob = p.blob WHERE p.corpus = ?", (corpus,)
    ).fetchone()[0]
    return pages, chunks


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


def cache_keys(wiki) -> tuple[str, str]:
    """(exact key, restore prefix) for a CI cache of the index: schema, model, then every corpus tree.

    An unchanged wiki hits the exact key and indexing is a no-op; a changed one restores the newest
    index with the same schema and model and embeds only what changed.
    """
    from gitwiki.indexer import corpus_tree

    head = wiki.repo.head()
    trees = ",".join(f"{c.name}={corpus_tree(wiki.repo, c, head)}" for c in wiki.config.corpora)
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", wiki.wanted_model() or "lexical")
    prefix = f"gitwiki-s{SCHEMA_VERSION}-{model}-"
    return prefix + hashlib.sha256(trees.encode()).hexdigest()[:20], prefix


# ---- extract and verify ------------------------------------------------------------------------------


def extract(archive: Path, dest: Path, max_bytes: int = MAX_BYTES) -> Manifest:
    """Check `archive` member by member while writing it into the empty dir `dest`; returns its manifest.

    Raises StoreError on the first thing `pack` would not have written, before reading further.
    """
    name = archive.name
    try:
        with archive.open("rb") as raw, tarfile.open(fileobj=raw, mode="r|gz") as tar:
            manifest = _read_manifest(tar, name, max_bytes)
            expected = {f.path: f for f in manifest.files}
            seen: set[str] = set()
            while (member := tar.next()) is not None:
                entry = _check_member(member, expected, seen, name)
                seen.add(member.name)
                _copy_checked(tar.extractfile(member), dest / member.name, entry, name)
    except FileNotFoundError:
        raise StoreError(f"{archive}: no such file") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise StoreError(f"{name} is not a readable {FORMAT} archive ({e}); download it again") from None
    missing = sorted(set(expected) - seen)
    if missing:
        raise StoreError(f"{name} is truncated: {', '.join(missing)} listed in the manifest but absent")
    _check_database(dest / DB_NAME, manifest, name)
    return manifest


def _read_manifest(tar: tarfile.TarFile, name: str, max_bytes: int) -> Manifest:
    first = tar.next()
    if first is None or first.name != MANIFEST_NAME or not first.isreg():
        raise StoreError(f"{name} is not a {FORMAT} archive: its first member must be {MANIFEST_NAME}")
    if first.size > MAX_MANIFEST_BYTES:
        raise StoreError(f"{name}: {MANIFEST_NAME} is {first.size} bytes, more than a manifest can be")
    try:
        manifest = Manifest.from_json(json.loads(tar.extractfile(first).read()))
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
    if manifest.size > max_bytes:
        raise StoreError(
            f"{name} unpacks to {manifest.size} bytes, over the limit of {max_bytes}; raise it with --max-bytes "
            "if you trust it"
        )
    for entry in manifest.files:
        _check_path(entry.path, name)
    return manifest


def _check_path(path: str, name: str) -> None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or "\\" in path or (pure.parts and ":" in pure.parts[0]):
        raise StoreError(f"{name}: refusing absolute path {path!r}")
    if ".." in pure.parts or not pure.parts or path != str(pure):
        raise StoreError(f"{name}: refusing path {path!r} (parent references and unnormalized paths are not allowed)")


def _check_member(member: tarfile.TarInfo, expected: dict[str, FileEntry], seen: set[str], name: str) -> FileEntry:
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


def _copy_checked(source: IO[bytes], target: Path, entry: FileEntry, name: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with target.open("xb") as out:
        while block := source.read(COPY_CHUNK):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != entry.sha256:
        raise StoreError(
            f"{name}: sha256 of {entry.path!r} does not match the manifest; the archive is corrupt or altered"
        )


def _check_database(db: Path, manifest: Manifest, name: str) -> None:
    """The database must be the index the manifest describes: same schema, states and counts."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise StoreError(f"{name}: {DB_NAME} cannot be opened ({e})") from None
    try:
        schema = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if schema is None or int(schema[0]) != manifest.schema_version:
            raise StoreError(
                f"{name}: {DB_NAME} has schema {schema and schema[0]}, the manifest says {manifest.schema_version}"
            )
        states = {r[0]: r[1:] for r in conn.execute("SELECT corpus, commit_id, tree, model FROM states")}
        for c in manifest.corpora:
            if (
                c.name not in states
                or states[c.name][:2] != (c.commit, c.tree)
                or (c.pages, c.chunks) != _counts(conn, c.name)
            ):
                raise StoreError(f"{name}: corpus {c.name!r} in {DB_NAME} does not match the manifest")
        if set(states) != {c.name for c in manifest.corpora}:
            raise StoreError(f"{name}: the corpora in {DB_NAME} do not match the manifest")
        if manifest.dim is not None:
            row = conn.execute(
                "SELECT count(*), min(length(vec)), max(length(vec)) FROM vectors WHERE model = ?", (manifest.model,)
            ).fetchone()
            if row[0] == 0 or row[1] != row[2] or row[1] != 4 * (manifest.dim or 0):
                raise StoreError(
                    f"{name}: the vectors in {DB_NAME} are not {manifest.dim}-dimensional {manifest.model} vectors"
                )
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{name}: {DB_NAME} is not a readable gitwiki index ({e})") from None
    finally:
        conn.close()


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
    archive: Path, index_dir: Path, wanted_model: str | None, accept_model: bool = False, max_bytes: int = MAX_BYTES
) -> Manifest:
    """Install `archive` as the index in `index_dir`; on any refusal the existing index is untouched."""
    index_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=index_dir))  # same filesystem: the rename is atomic
    try:
        manifest = extract(archive, tmp, max_bytes)
        check_model(manifest, wanted_model, accept_model, archive.name)
        with writer_lock(index_dir):
            target = index_dir / DB_NAME
            # A leftover WAL would be replayed onto the new database: drop it with the old one.
            for suffix in ("-wal", "-shm"):
                Path(str(target) + suffix).unlink(missing_ok=True)
            os.replace(tmp / DB_NAME, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest
