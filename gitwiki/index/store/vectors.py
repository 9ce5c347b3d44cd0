"""The embedding cache: one vector per (model id, sha256 of the embedded text), so a chunk that did not change
is never embedded again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from gitwiki.index.store.damage import string_list
from gitwiki.index.store.pages import Pages, embed_text
from gitwiki.index.store.vector_file import VectorFile
from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np


class Vectors(Pages):
    def missing_vectors(self, model: str, blobs: Iterable[str]) -> list[tuple[str, str]]:
        """(hash, text to embed) for chunks of `blobs` that have no vector for `model`, deduplicated."""
        return self.vectors_to_embed(model, blobs)[0]

    def vectors_to_embed(self, model: str, blobs: Iterable[str]) -> tuple[list[tuple[str, str]], set[str]]:
        """`missing_vectors`, and the versions of `blobs` the index holds, which have every vector once those are
        written (`vectors_complete`). A version this process knows has every vector is not looked at, and one that
        added chunks to such a version (a memory store's topic page), or to one of `blobs` that will have every
        vector, only at those (`gitwiki.index.store.embedded`)."""
        memo = self.embedded
        asked = set(blobs)
        covered = {b for b in asked if memo.complete(model, b)}  # every vector, or every missing one found here
        added: dict[str, dict[str, str]] = {}
        records = {b: r for b in asked - covered if (r := memo.added(model, b)) is not None}
        grew = True
        while grew:  # a chain of stores: each version adds to the one before, the first to a complete one
            grew = False
            for blob, (old, texts, complete) in records.items():
                if blob not in covered and (complete or old in covered):
                    covered.add(blob)
                    added[blob] = texts
                    grew = True
        scan = [b for b in asked if b not in covered]
        done = covered - set(added)
        need: dict[str, str] = {}
        if not scan and not added:
            return [], done
        # One snapshot: a version the writer drops between two reads would read as having no chunks to embed.
        with contextlib.nullcontext() if self.conn.in_transaction else self.read():
            # A version gone already (replaced by the next store) has no title: none of its chunks is looked at,
            # but what it added is in `added`, and the version that replaced it holds it.
            titles = {b: info.title for b, info in self.blob_info([*scan, *added]).items()}
            texts = {h: text for only in added.values() for h, text in only.items()}
            if texts:
                q = f"SELECT hash FROM vectors{self.vector_keys} WHERE model = ? AND hash IN ({{marks}})"
                have = {row[0] for row in self._select_in(q, texts, before=(model,))}
                need.update((h, text) for h, text in texts.items() if h not in have)
            for h, text in self._scanned(model, scan, titles):
                need.setdefault(h, text)
        return list(need.items()), done | set(titles)

    def _scanned(self, model: str, blobs: Iterable[str], titles: dict[str, str]) -> list[tuple[str, str]]:
        """Every chunk of `blobs` (those in `titles`) without a vector for `model`: (hash, text to embed)."""
        need: dict[str, str] = {}
        q = (
            "SELECT c.blob, c.hash, c.breadcrumb, c.text FROM chunks c WHERE c.blob IN ({marks}) "
            f"AND NOT EXISTS (SELECT 1 FROM vectors v{self.vector_keys} WHERE v.model = ? AND v.hash = c.hash)"
        )
        for blob, h, crumb, text in self._select_in(q, [b for b in blobs if b in titles], after=(model,)):
            if h not in need:
                need[h] = embed_text(string_list(crumb, self.index_dir), text, titles[blob])
        return list(need.items())

    def vectors_complete(self, model: str, blobs: Iterable[str]) -> None:
        """Every chunk of `blobs` (held by the index when their missing vectors were found) now has a vector for
        `model`: remembered, so that `missing_vectors` need not look at them again."""
        self.embedded.mark_complete(model, blobs)

    def put_vectors(self, model: str, hashes: list[str], matrix: np.ndarray) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
            [(model, h, row.astype("<f4").tobytes()) for h, row in zip(hashes, matrix, strict=False)],
        )

    def vectors(self, model: str, blobs: Iterable[str]) -> tuple[list[tuple[int, str]], bytes]:
        """((chunk id, blob) per row, concatenated float32 vectors) for the chunks of `blobs` that have one."""
        keys = list(blobs)
        rows: list[tuple[int, str]] = []
        parts: list[bytes] = []
        # The vectors probed in the order of their keys (an IN list of a subquery is sorted) and joined to the
        # chunks here: the table's rows hold the vectors, and a join probing them chunk by chunk read twice the pages
        # (memory's 10,000 chunks: 52 + 6 ms against 108 ms).
        q = (
            "SELECT hash, vec FROM vectors WHERE model = ? AND hash IN "
            "(SELECT hash FROM chunks WHERE blob IN ({marks}))"
        )
        with contextlib.nullcontext() if self.conn.in_transaction else self.read():  # one snapshot for both reads
            found: dict[str, bytes] = dict(self._select_in(q, keys, before=(model,)))
            for cid, blob, h in self._chunk_hashes(keys):
                vec = found.get(h)
                if vec is not None:
                    rows.append((cid, blob))
                    parts.append(vec)
        return rows, b"".join(parts)

    def vector_rows(self, model: str, blobs: Iterable[str]) -> tuple[list[tuple[int, str]], np.ndarray]:
        """`vectors` as a float32 matrix, read through the model's vector file (`vector_file`): the vectors it holds
        come from it, the others from the index, and when it lacked some it is written again with every vector read
        here and as many of its others at most."""
        np = numpy()

        file = VectorFile(self.index_dir, model)
        held = file.read()
        with contextlib.nullcontext() if self.conn.in_transaction else self.read():  # one snapshot for both reads
            chunks = list(self._chunk_hashes(blobs))
            have, stored = held or ({}, None)
            found = self._vectors_of(model, [h for _, _, h in chunks if h not in have])
            if stored is not None and found and len(next(iter(found.values()))) != 4 * stored.shape[1]:
                held, have, stored = None, {}, None  # not the index's dimension (damaged, foreign): not used
                found = self._vectors_of(model, [h for _, _, h in chunks])
        fresh = vector_matrix(b"".join(found.values()), len(found))
        place = {**have, **{h: len(have) + i for i, h in enumerate(found)}}
        rows = [(cid, blob) for cid, blob, h in chunks if h in place]
        if not rows:
            return [], np.zeros((0, 0), np.float32)
        picked = np.fromiter((place[h] for _, _, h in chunks if h in place), np.int64, len(rows))
        wanted = list(dict.fromkeys(h for _, _, h in chunks if h in place))
        # Written again when it lacked a share of the rows: a memory store adds a row or two, read from the index
        # until some hundreds are (rewriting 15 MB after each store cost the next search more than it saved).
        if held is None or len(found) * REWRITE_SHARE > len(wanted):
            known = set(wanted)
            written = wanted + [h for h in have if h not in known][: len(wanted)]
            order = np.fromiter((place[h] for h in written), np.int64, len(written))
            file.write(written, _gather(stored, fresh, order))
        if stored is not None and not found and len(picked) == len(stored) and (picked == np.arange(len(picked))).all():
            return rows, stored  # the file this view's last read wrote holds its rows in this order
        return rows, _gather(stored, fresh, picked)

    def _chunk_hashes(self, blobs: Iterable[str]) -> Iterator[tuple[int, str, str]]:
        """(chunk id, blob, text hash) of every chunk of `blobs`."""
        return self._select_in("SELECT id, blob, hash FROM chunks WHERE blob IN ({marks})", blobs)

    def _vectors_of(self, model: str, hashes: list[str]) -> dict[str, bytes]:
        """hash → vector bytes of `model` for those of `hashes` that have one."""
        q = "SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})"
        return dict(self._select_in(q, dict.fromkeys(hashes), before=(model,))) if hashes else {}

    def vector_bytes(self, model: str | None) -> tuple[int, int | None, int | None]:
        """(count, shortest, longest) of the vectors stored for `model`, lengths in bytes."""
        row = self.conn.execute(
            "SELECT count(*), min(length(vec)), max(length(vec)) FROM vectors WHERE model = ?", (model,)
        ).fetchone()
        return row[0], row[1], row[2]


REWRITE_SHARE = 32  # the vector file is written again when it lacked more than 1/32 of a read's rows


def _gather(stored: np.ndarray | None, fresh: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Rows `picked` of `stored` then `fresh` stacked, without stacking them (a copy of the whole file)."""
    np = numpy()

    if stored is None or not len(stored):
        return fresh[picked]
    if not len(fresh):
        return stored[picked]
    out = np.empty((len(picked), stored.shape[1]), np.float32)
    old = picked < len(stored)
    out[old] = stored[picked[old]]
    out[~old] = fresh[picked[~old] - len(stored)]
    return out


def vector_matrix(raw: bytes, count: int) -> np.ndarray:
    """`Store.vectors` bytes as a writable float32 matrix, one row per chunk.

    An owned copy: matmul over a read-only view of the bytes measured ~20x slower.
    """
    np = numpy()

    if not count:
        return np.zeros((0, 0), np.float32)
    return np.frombuffer(raw, dtype="<f4").reshape(count, -1).astype(np.float32)
