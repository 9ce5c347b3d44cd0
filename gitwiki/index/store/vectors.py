"""The embedding cache: one vector per (model id, sha256 of the embedded text), so a chunk that did not change
is never embedded again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gitwiki.index.store.damage import string_list
from gitwiki.index.store.pages import Pages, embed_text

if TYPE_CHECKING:
    import numpy as np


class Vectors(Pages):
    def missing_vectors(self, model: str, blobs: Iterable[str]) -> list[tuple[str, str]]:
        """(hash, text to embed) for chunks of `blobs` that have no vector for `model`, deduplicated."""
        need: dict[str, str] = {}
        titles = {b: info.title for b, info in self.blob_info(blobs).items()}
        q = (
            "SELECT c.blob, c.hash, c.breadcrumb, c.text FROM chunks c WHERE c.blob IN ({marks}) "
            "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model = ? AND v.hash = c.hash)"
        )
        for blob, h, crumb, text in self._select_in(q, titles, after=(model,)):
            if h not in need:
                need[h] = embed_text(string_list(crumb, self.index_dir), text, titles[blob])
        return list(need.items())

    def put_vectors(self, model: str, hashes: list[str], matrix: np.ndarray) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
            [(model, h, row.astype("<f4").tobytes()) for h, row in zip(hashes, matrix, strict=False)],
        )

    def vectors(self, model: str, blobs: Iterable[str]) -> tuple[list[tuple[int, str]], bytes]:
        """((chunk id, blob) per row, concatenated float32 vectors) for the chunks of `blobs` that have one."""
        rows: list[tuple[int, str]] = []
        parts: list[bytes] = []
        q = (
            "SELECT c.id, c.blob, v.vec FROM chunks c JOIN vectors v ON v.model = ? AND v.hash = c.hash"
            " WHERE c.blob IN ({marks})"
        )
        for cid, blob, vec in self._select_in(q, blobs, before=(model,)):
            rows.append((cid, blob))
            parts.append(vec)
        return rows, b"".join(parts)

    def vector_bytes(self, model: str | None) -> tuple[int, int | None, int | None]:
        """(count, shortest, longest) of the vectors stored for `model`, lengths in bytes."""
        row = self.conn.execute(
            "SELECT count(*), min(length(vec)), max(length(vec)) FROM vectors WHERE model = ?", (model,)
        ).fetchone()
        return row[0], row[1], row[2]


def vector_matrix(raw: bytes, count: int) -> np.ndarray:
    """`Store.vectors` bytes as a writable float32 matrix, one row per chunk.

    An owned copy: matmul over a read-only view of the bytes measured ~20x slower.
    """
    import numpy as np

    if not count:
        return np.zeros((0, 0), np.float32)
    return np.frombuffer(raw, dtype="<f4").reshape(count, -1).astype(np.float32)
