"""gitwiki.search.query_vectors: a query's vector embedded once per model and kept for the next searches."""

import threading

import numpy as np
import pytest

from gitwiki.search.query_vectors import PENDING, QueryVectors


class CountingEmbedder:
    def __init__(self, model_id: str = "m") -> None:
        self.model_id = model_id
        self.dim = 3
        self.asked: list[str] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        self.asked.append(text)
        if text == "fails":
            raise RuntimeError("the model broke")
        vector = np.array([len(text), 1.0, 0.0], dtype=np.float32)
        return vector / np.linalg.norm(vector)


def test_a_query_asked_again_is_embedded_once_and_is_the_embedders_vector():
    embedder, kept = CountingEmbedder(), QueryVectors()
    first = kept.vector(embedder, "deploy")
    again = kept.vector(embedder, "deploy")
    assert embedder.asked == ["deploy"]
    assert again is first
    np.testing.assert_array_equal(first, CountingEmbedder().embed_query("deploy"))
    assert not first.flags.writeable  # shared by every search of the query: nobody may change it


def test_another_model_or_another_instance_of_it_embeds_again():
    kept = QueryVectors()
    one, other, reloaded = CountingEmbedder("a"), CountingEmbedder("b"), CountingEmbedder("a")
    for embedder in (one, other, reloaded, reloaded, other):
        kept.vector(embedder, "q")
    assert (one.asked, other.asked, reloaded.asked) == (["q"], ["q"], ["q"])


def test_the_least_recently_asked_query_goes_first():
    embedder, kept = CountingEmbedder(), QueryVectors(size=2)
    for query in ("a", "b", "a", "c", "a", "b"):
        kept.vector(embedder, query)
    # "b" was the oldest when "c" came; "a", asked again in between, stayed
    assert embedder.asked == ["a", "b", "c", "b"]


def test_a_failed_embedding_is_raised_and_not_kept():
    embedder, kept = CountingEmbedder(), QueryVectors()
    for _ in range(2):
        with pytest.raises(RuntimeError):
            kept.vector(embedder, "fails")
    assert embedder.asked == ["fails", "fails"]


class ThreadNoting(CountingEmbedder):
    """Notes the thread each query is embedded on; `gate` holds an embedding back until it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def embed_query(self, text: str) -> np.ndarray:
        self.gate.wait(5)
        self.threads.append(threading.current_thread().name)
        return super().embed_query(text)


def test_a_query_embedded_ahead_is_embedded_once_on_the_worker_and_waited_for():
    embedder, kept = ThreadNoting(), QueryVectors()
    embedder.gate.clear()
    kept.ahead(embedder, "deploy")
    kept.ahead(embedder, "deploy")  # on its way already
    assert embedder.asked == []  # held back: the search goes on meanwhile
    embedder.gate.set()
    vector = kept.vector(embedder, "deploy")
    np.testing.assert_array_equal(vector, CountingEmbedder().embed_query("deploy"))
    assert kept.vector(embedder, "deploy") is vector and not vector.flags.writeable
    kept.ahead(embedder, "deploy")  # kept: nothing to start
    assert embedder.asked == ["deploy"] and embedder.threads[0].startswith("gitwiki-query-vector")


def test_a_failed_embedding_ahead_is_raised_by_the_search_that_waits_for_it_and_not_kept():
    embedder, kept = CountingEmbedder(), QueryVectors()
    kept.ahead(embedder, "fails")
    with pytest.raises(RuntimeError, match="the model broke"):
        kept.vector(embedder, "fails")
    with pytest.raises(RuntimeError):
        kept.vector(embedder, "fails")  # embedded again, in line
    assert embedder.asked == ["fails", "fails"]


def test_vectors_ahead_of_another_instance_or_never_asked_for_are_not_taken_and_let_go():
    one, reloaded, kept = CountingEmbedder("a"), CountingEmbedder("a"), QueryVectors()
    kept.ahead(one, "q")
    kept.vector(reloaded, "q")  # another instance of the model: its own vector, in line, and the other's dropped
    assert reloaded.asked == ["q"] and not kept._pending
    many = ThreadNoting()
    many.gate.clear()
    for i in range(PENDING + 3):
        kept.ahead(many, f"q{i}")
    assert len(kept._pending) == PENDING  # the oldest let go
    many.gate.set()
    kept.settle()
    assert len(many.asked) == PENDING + 3  # every one started ran (one worker, in turn); settle waited for the last
    kept.vector(many, "q0")
    assert many.asked.count("q0") == 2  # let go: embedded again when asked
