"""The local index: one SQLite database in the index dir, content-addressed by git blob id.

- `blobs`/`chunks`: a page version's chunks, keyed by its blob id (so renames and reverts cost nothing);
- `fts`: an FTS5 table over pre-tokenized chunk text (BM25), rowid = chunk id;
- `vectors`: the embedding cache, keyed by (model id, sha256 of the embedded text);
- `pages`/`states`: per corpus, the indexed commit, corpus tree id, model and path → blob listing.

SQLite gives atomic transactions and consistent reads for free: a crash mid-update leaves the last
committed state, and readers in WAL mode never see a half-written one. Writers also take a file lock
(`lock`) so that whole index runs, not only single transactions, are serialized.

`Store` is the one class callers use; each of its parts is a module of this package, one concern each, and
this package holds every SQL statement run against the index.
"""

from gitwiki.index.store.connection import IndexBusy, IndexDamaged, IndexLocked, write_failure
from gitwiki.index.store.damage import DAMAGED_MARK, integrity_problem, row_problem, string_list
from gitwiki.index.store.database import DB_NAME, OPTIONAL_OBJECTS, SCHEMA_VERSION, expected_schema_objects
from gitwiki.index.store.fulltext import FullText, lead_description
from gitwiki.index.store.lock import HOLDER_NAME, LOCK_TIMEOUT, writer_lock
from gitwiki.index.store.opening import DAMAGED_SUFFIX, PREVIOUS_SUFFIX, REBUILD_ASKED, Opening
from gitwiki.index.store.pages import BlobInfo, ChunkRow, embed_text, text_hash
from gitwiki.index.store.snapshot import Snapshots, install, snapshot
from gitwiki.index.store.states import State, States
from gitwiki.index.store.vectors import Vectors, vector_matrix


class Store(Opening, FullText, Vectors, States, Snapshots):
    """The index: opened (`Opening`), its full-text rows (`FullText`), vectors (`Vectors`), corpus states (`States`)
    and snapshots for artifacts (`Snapshots`); the page versions and chunks (`Pages`) come as the base that
    `Vectors` and `Snapshots` build on."""


__all__ = [
    "DAMAGED_MARK",
    "DAMAGED_SUFFIX",
    "DB_NAME",
    "HOLDER_NAME",
    "LOCK_TIMEOUT",
    "OPTIONAL_OBJECTS",
    "PREVIOUS_SUFFIX",
    "REBUILD_ASKED",
    "SCHEMA_VERSION",
    "BlobInfo",
    "ChunkRow",
    "IndexBusy",
    "IndexDamaged",
    "IndexLocked",
    "State",
    "Store",
    "embed_text",
    "expected_schema_objects",
    "install",
    "integrity_problem",
    "lead_description",
    "row_problem",
    "snapshot",
    "string_list",
    "text_hash",
    "vector_matrix",
    "write_failure",
    "writer_lock",
]
