"""The vectors a fresh process last read for a model, kept beside the index in one file: a cold search reads them
whole instead of row by row.

A fresh CLI search of 10,000 memory entries read their 10,000 vectors from SQLite, 1.5 KB a row and two rows to
a page: 50-100 ms of a ~0.35 s search (docs/research/memory-scale.md). This file holds the vectors that read
wanted, as one float32 array after their chunk hashes: read in a few ms. A vector is the model's for the text its
hash names, so a row of the file is never stale; a hash the file lacks is read from the index, and the file is
written again with every vector that read wanted (and those it held, up to as many again). It is a cache:
damaged, missing or another model's, it is read as empty and written anew; a crash leaves the old one or the new
one (`fs.atomic_write`).

The layout: `MAGIC`, one JSON line {"model", "dim", "rows"}, then `rows` hashes of `HASH_CHARS` ASCII characters
each, then `rows` × `dim` little-endian float32; the header line is padded with spaces to a multiple of `ALIGN`.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"gitwiki vectors 1\n"
HASH_CHARS = 64  # a chunk text's sha256, hex (`pages.text_hash`)
HEADER_CAP = 4096
ALIGN = 64  # the header line is padded to this, and so are the hashes: the vectors start aligned


class VectorFile:
    """The file of `model`'s vectors in `index_dir` (one per model)."""

    def __init__(self, index_dir: Path, model: str) -> None:
        import hashlib  # OpenSSL, ~2.5 ms: not for the agent hooks, which import the store

        self.model = model
        self.path = index_dir / f"vectors-{hashlib.sha1(model.encode()).hexdigest()[:16]}.bin"

    def read(self) -> tuple[dict[str, int], np.ndarray] | None:
        """(hash → row, the rows as a read-only float32 matrix mapped from the file), or None when there is no
        usable file. Mapped, not read: its pages are the page cache's (a 15 MB read into a new array was 3-25 ms
        of page faults; the mapping ~1 ms). The file is only ever replaced, never changed in place."""
        import mmap

        np = numpy()

        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(len(MAGIC) + HEADER_CAP)
                line_end = head.find(b"\n", len(MAGIC))
                if not head.startswith(MAGIC) or line_end < 0:
                    return None
                header = json.loads(head[len(MAGIC) : line_end])
                rows, dim = header["rows"], header["dim"]
                start = line_end + 1
                if header["model"] != self.model or not _counts(rows, dim) or start % ALIGN:
                    return None
                if size != start + rows * (HASH_CHARS + 4 * dim):
                    return None
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            hashes = mapped[start : start + rows * HASH_CHARS].decode("ascii")
            matrix = np.frombuffer(mapped, dtype="<f4", count=rows * dim, offset=start + rows * HASH_CHARS)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None
        keys = {hashes[i * HASH_CHARS : (i + 1) * HASH_CHARS]: i for i in range(rows)}
        return keys, matrix.reshape(rows, dim)

    def write(self, hashes: list[str], matrix: np.ndarray) -> None:
        """Replace the file with these rows (`matrix` row i is the vector of `hashes[i]`); a failure leaves the
        cache as it was."""
        from gitwiki.fs import atomic_write

        np = numpy()

        if not hashes or any(len(h) != HASH_CHARS or not h.isascii() for h in hashes):
            return
        header = json.dumps({"model": self.model, "dim": int(matrix.shape[1]), "rows": len(hashes)}).encode()
        header += b" " * (-(len(MAGIC) + len(header) + 1) % ALIGN)  # the vectors start aligned for numpy
        data = b"".join([MAGIC, header, b"\n", "".join(hashes).encode("ascii"), np.ascontiguousarray(matrix, "<f4")])
        with contextlib.suppress(OSError):
            atomic_write(self.path, data, sync=False)


def _counts(rows: object, dim: object) -> bool:
    return (
        isinstance(rows, int) and isinstance(dim, int) and not isinstance(rows, bool) and rows > 0 and 0 < dim <= 65536
    )
