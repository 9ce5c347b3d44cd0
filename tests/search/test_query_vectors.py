"""gitwiki.search.query_vectors: a query's vector embedded once per model and kept for the next searches."""

import numpy as np
import pytest

from gitwiki.search.query_vectors import QueryVectors


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
