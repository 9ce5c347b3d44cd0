"""gitwiki.index.store.vector_file: the vectors a fresh process last read for a model, kept in one file beside the
index; `Vectors.vector_rows` reads through it and answers as the index does, whatever the file holds."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.index.store.vector_file import MAGIC, VectorFile
from gitwiki.wiki import Wiki

PAGES = {
    ".gitwiki.toml": "[embeddings]\nenabled = false\n",
    "wiki/a.md": "# Alpha\n\n## One\n\nApples.\n\n## Two\n\nApricots.\n",
    "wiki/b.md": "# Beta\n\n## One\n\nBananas.\n\n## Two\n\nBlueberries.\n",
}
MODEL = "test/model"


def hashes(n: int) -> list[str]:
    return [f"{i:064x}" for i in range(n)]


def test_a_file_reads_back_what_was_written_and_only_for_its_model(tmp_path):
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    VectorFile(tmp_path, MODEL).write(hashes(3), matrix)
    keys, read = VectorFile(tmp_path, MODEL).read()  # type: ignore[misc]
    assert keys == {h: i for i, h in enumerate(hashes(3))} and np.array_equal(read, matrix)
    assert VectorFile(tmp_path, "other/model").read() is None  # its own file, not there
    other = VectorFile(tmp_path, "other/model")
    other.path.write_bytes(VectorFile(tmp_path, MODEL).path.read_bytes())  # another model's file under its name
    assert other.read() is None


def test_a_damaged_or_lying_file_reads_as_none(tmp_path):
    vf = VectorFile(tmp_path, MODEL)
    vf.write(hashes(2), np.ones((2, 3), np.float32))
    whole = vf.path.read_bytes()
    for damaged in (
        whole[:-1],  # cut short
        whole + b"\0",  # longer than it says
        b"x" + whole[1:],  # not the magic
        MAGIC + b'{"model": "test/model", "dim": 3, "rows": 99}\n' + whole.split(b"\n", 2)[2],  # rows it has not
        MAGIC + b'{"model": "test/model", "dim": true, "rows": 2}\n' + whole.split(b"\n", 2)[2],
        MAGIC + b"not json\n",
        b"",
    ):
        vf.path.write_bytes(damaged)
        assert vf.read() is None


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2000), st.booleans())
def test_any_bytes_read_as_none_or_as_rows_of_the_declared_shape(tmp_path, data, with_magic):
    vf = VectorFile(tmp_path, MODEL)
    vf.path.write_bytes((MAGIC if with_magic else b"") + data)
    got = vf.read()
    if got is not None:
        keys, matrix = got
        assert matrix.dtype == np.float32 and matrix.shape[0] == len(keys) == len(set(keys.values()))


def test_rows_read_through_the_file_are_the_indexs_and_it_is_written_again_when_it_lacked_some(repo):
    repo.commit("pages", PAGES)
    wiki = Wiki.open(repo.path)
    wiki.index()
    store = wiki.store
    chunk_hashes = [row[0] for row in store.conn.execute("SELECT hash FROM chunks ORDER BY id")]
    rng = np.random.default_rng(3)
    store.put_vectors(MODEL, chunk_hashes[:-1], rng.random((len(chunk_hashes) - 1, 4), np.float32))  # one without
    blobs = [row[0] for row in store.conn.execute("SELECT DISTINCT blob FROM chunks")]
    vf = VectorFile(store.index_dir, MODEL)

    def plain() -> tuple[list[tuple[int, str]], np.ndarray]:
        rows, raw = store.vectors(MODEL, blobs)
        return rows, np.frombuffer(raw, "<f4").reshape(len(rows), -1)

    expected = plain()
    assert not vf.path.exists()
    for _ in range(2):  # the first read writes the file, the second reads from it alone
        rows, matrix = store.vector_rows(MODEL, blobs)
        assert rows == expected[0] and np.array_equal(matrix, expected[1])
        assert sorted(vf.read()[0]) == sorted(set(chunk_hashes[:-1]))  # type: ignore[index]
    store.put_vectors(MODEL, chunk_hashes[-1:], np.full((1, 4), 7, np.float32))  # the last one gets its vector
    rows, matrix = store.vector_rows(MODEL, blobs)
    assert (rows, matrix.tolist()) == (plain()[0], plain()[1].tolist()) and len(rows) == len(chunk_hashes)
    assert sorted(vf.read()[0]) == sorted(set(chunk_hashes))  # type: ignore[index]

    # A file of another dimension (damaged, or written by something else) is not used, and is written anew.
    vf.write(chunk_hashes[:1], np.zeros((1, 9), np.float32))
    rows, matrix = store.vector_rows(MODEL, blobs)
    assert (rows, matrix.tolist()) == (plain()[0], plain()[1].tolist())
    assert vf.read()[1].shape == (len(set(chunk_hashes)), 4)  # type: ignore[index]
    # A file holding wrong numbers under right hashes would be believed: it is a cache of content-addressed rows,
    # written only by this code. One holding other hashes adds nothing, and its rows are kept up to as many again.
    vf.write(hashes(3), np.zeros((3, 4), np.float32))
    rows, matrix = store.vector_rows(MODEL, blobs)
    assert rows == plain()[0] and sorted(vf.read()[0]) == sorted(set(chunk_hashes) | set(hashes(3)))  # type: ignore[index]


def test_a_row_or_two_the_file_lacks_are_read_from_the_index_and_it_is_not_written_for_them(repo):
    """A memory store adds a row or two: the next reads take those from the index, and the file is written again
    only once it lacks more than 1/REWRITE_SHARE of a read's rows."""
    from gitwiki.index.store.vectors import REWRITE_SHARE

    pages = {
        f"wiki/p{i}.md": f"# Page {i}\n\n" + "".join(f"## S{j}\n\nword{i}x{j}\n\n" for j in range(20)) for i in range(5)
    }
    repo.commit("pages", {**PAGES, **pages})
    wiki = Wiki.open(repo.path)
    wiki.index()
    store = wiki.store
    chunk_hashes = list(dict.fromkeys(row[0] for row in store.conn.execute("SELECT hash FROM chunks ORDER BY id")))
    assert len(chunk_hashes) > 2 * REWRITE_SHARE
    rng = np.random.default_rng(5)
    store.put_vectors(MODEL, chunk_hashes[:-2], rng.random((len(chunk_hashes) - 2, 4), np.float32))
    blobs = [row[0] for row in store.conn.execute("SELECT DISTINCT blob FROM chunks")]
    vf = VectorFile(store.index_dir, MODEL)
    store.vector_rows(MODEL, blobs)
    before = vf.path.read_bytes()
    store.put_vectors(MODEL, chunk_hashes[-2:], rng.random((2, 4), np.float32))
    rows, matrix = store.vector_rows(MODEL, blobs)
    plain_rows, raw = store.vectors(MODEL, blobs)
    assert rows == plain_rows and np.array_equal(matrix, np.frombuffer(raw, "<f4").reshape(len(rows), 4))
    assert vf.path.read_bytes() == before  # two rows of a hundred: not written for them
