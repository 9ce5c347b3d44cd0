"""A memory search's query embedded in a worker thread (gitwiki.memory.query_vector): the vector is the embedder's,
asked once per text while it is remembered, a failure is raised where the search waits for it, and documents are
embedded only once the query's run is over (one model, never two threads in it at once)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gitwiki.memory import query_vector
from gitwiki.search.query_vectors import QUERIES, QueryVectors


class Counting:
    """An embedder that records its calls and the thread each ran on; `gate` holds a query run until set."""

    model_id = "test/counting"
    dim = 3

    def __init__(self, fail: bool = False) -> None:
        self.queries: list[tuple[str, str]] = []
        self.documents: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.running = False
        self.fail = fail

    def embed_query(self, text: str) -> np.ndarray:
        self.running = True
        self.gate.wait(5)
        self.queries.append((text, threading.current_thread().name))
        self.running = False
        if self.fail:
            raise RuntimeError("model went away")
        return np.array([len(text), 1.0, 0.0], dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        assert not self.running, "documents embedded while the query ran"
        self.documents.append(texts)
        return np.ones((len(texts), 3), dtype=np.float32)


@pytest.fixture
def kept():
    return QueryVectors()


def test_the_vector_is_the_embedders_and_is_made_in_the_worker(kept):
    embedder = Counting()
    vector = query_vector.QueryVector(embedder, "deploy rollback", kept)
    assert np.array_equal(vector.embed_query("deploy rollback"), [15, 1, 0])
    assert embedder.queries[0][1].startswith("gitwiki-query-vector")
    assert np.array_equal(vector.embed_query("other words"), [11, 1, 0])  # not the one on its way: asked here
    assert [q for q, _ in embedder.queries] == ["deploy rollback", "other words"]


def test_a_text_asked_again_is_not_embedded_again(kept):
    embedder = Counting()
    first = query_vector.QueryVector(embedder, "deploy rollback", kept).wait()
    again = query_vector.QueryVector(embedder, "deploy rollback", kept).wait()
    assert again is first and len(embedder.queries) == 1
    assert kept.vector(embedder, "deploy rollback") is first  # one cache with the page search's
    for n in range(QUERIES):  # pushed out by as many other queries
        query_vector.QueryVector(embedder, f"query {n}", kept).wait()
    query_vector.QueryVector(embedder, "deploy rollback", kept).wait()
    assert len(embedder.queries) == QUERIES + 2


def test_a_failed_embedding_is_raised_where_the_search_waits(kept):
    embedder = Counting(fail=True)
    vector = query_vector.QueryVector(embedder, "deploy", kept)
    with pytest.raises(RuntimeError, match="model went away"):
        vector.embed_query("deploy")
    assert kept.kept(embedder, "deploy") is None


def test_documents_wait_for_the_query_run(kept):
    embedder = Counting()
    embedder.gate.clear()
    vector = query_vector.QueryVector(embedder, "deploy", kept)
    threading.Timer(0.05, embedder.gate.set).start()
    assert vector.embed_documents(["a page"]).shape == (1, 3)  # Counting asserts the query run was over
    assert embedder.documents == [["a page"]] and len(embedder.queries) == 1


def test_a_model_still_loading_is_known_by_its_id_and_waited_for_in_the_worker(kept):
    """`QueryVector.loading`: the search goes on with the model's id while the worker waits for the load, then
    embeds the query with the model that loaded."""
    embedder = Counting()
    loaded = threading.Event()

    def load() -> Counting:
        loaded.wait(5)
        return embedder

    vector = query_vector.QueryVector.loading("test/counting", load, "deploy rollback", kept)
    assert vector.model_id == "test/counting" and vector.embedder is None and not vector.swapped()
    loaded.set()
    assert np.array_equal(vector.embed_query("deploy rollback"), [15, 1, 0])
    assert vector.model() is embedder and vector.dim == 3 and not vector.swapped()
    assert embedder.queries[0][1].startswith("gitwiki-query-vector")
    assert vector.embed_documents(["a page"]).shape == (1, 3)


def test_a_model_that_did_not_load_is_unavailable_where_the_search_waits(kept):
    from gitwiki.errors import EmbeddingUnavailable

    vector = query_vector.QueryVector.loading("test/counting", lambda: None, "deploy", kept)
    with pytest.raises(EmbeddingUnavailable):
        vector.embed_query("deploy")
    with pytest.raises(EmbeddingUnavailable):
        vector.model()


def test_a_model_loaded_under_another_id_is_said_swapped(kept):
    """fastembed's float32 stand-in for an int8 model keys its vectors by the plain model's id: what the search
    read by the id it expected is not that model's."""
    vector = query_vector.QueryVector.loading("test/counting@int8", Counting, "deploy", kept)
    vector.wait()
    assert vector.swapped() and vector.model().model_id == "test/counting"
