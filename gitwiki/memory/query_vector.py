"""A memory search's query embedded in a worker thread from the moment its words are known, while the search
reads its pages and ranks them by BM25 (onnxruntime and SQLite let go of the GIL): a hybrid search then waits for
the longer of the two, not their sum. The vectors are kept with the page search's (`search.query_vectors`): an
agent asks the same words again.

While the model is still loading on another thread (an owner's warm-up, or a fresh process that could not fork
the model's process and started its load on a thread, `index.embed.load_in_background`), the worker waits for that
load too (`QueryVector.loading`): the search knows the
model by its id meanwhile, so it finds the entries by their words and reads the vectors it will rank instead of
waiting idle (50-60 ms of a cold search at 10,000 entries, docs/research/memory-scale.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from gitwiki.errors import EmbeddingUnavailable
from gitwiki.search.helper_thread import helper_thread

if TYPE_CHECKING:  # concurrent.futures (9 ms with logging) loads with the first worker: a search whose model ranks
    # in a process of its own never starts one
    from concurrent.futures import Future

    import numpy as np

    from gitwiki.index.embed import Embedder
    from gitwiki.search.query_vectors import QueryVectors


class QueryVector:
    """An embedder whose query vector for `text` is on its way (`embed_query` waits for it); documents are
    embedded once it has arrived, so that one model is never run from two threads at once."""

    def __init__(self, embedder: Embedder, text: str, kept: QueryVectors) -> None:
        self.embedder: Embedder | None = embedder
        self.model_id = embedder.model_id
        self.text = text
        self._kept = kept
        self._vector = kept.kept(embedder, text)
        self._future: Future[tuple[Embedder, np.ndarray]] | None = None
        if self._vector is None:
            self._start(lambda: embedder)

    @classmethod
    def loading(cls, model_id: str, load: Callable[[], Embedder | None], text: str, kept: QueryVectors) -> QueryVector:
        """The query vector of a model still loading, known meanwhile by `model_id` (the id its vectors are stored
        under); `load` waits for the load and gives the model, or None when it did not load (it says why)."""
        self = cls.__new__(cls)
        self.embedder, self.model_id, self.text, self._kept, self._vector = None, model_id, text, kept, None
        self._start(load)
        return self

    def _start(self, load: Callable[[], Embedder | None]) -> None:
        def embedded() -> tuple[Embedder, np.ndarray]:
            embedder = load()
            if embedder is None:
                raise EmbeddingUnavailable("the embedding model did not load")  # its load said why, once
            return embedder, embedder.embed_query(self.text)

        self._future = helper_thread("gitwiki-query-vector").submit(embedded)
        time.sleep(0)  # let go of the GIL: the worker starts now, not when the search next waits on I/O

    def model(self) -> Embedder:
        """The model, free once the query's own run is over; EmbeddingUnavailable when it did not load."""
        if self.embedder is None:
            self.wait()
        elif self._future is not None:
            self._future.exception()  # finished, whatever its outcome: `wait` reports a failure
        assert self.embedder is not None  # set by wait
        return self.embedder

    @property
    def dim(self) -> int:
        return self.model().dim

    def swapped(self) -> bool:
        """Whether the model loaded under another id than it was known by (fastembed's float32 stand-in for an
        int8 model): what was read by the id it was known by is not its."""
        return self.embedder is not None and self.embedder.model_id != self.model_id

    def wait(self) -> np.ndarray:
        if self._vector is None:
            assert self._future is not None  # set whenever no vector was remembered
            embedder, vector = self._future.result()
            self.embedder = embedder
            self._vector = self._kept.keep(embedder, self.text, vector)
        return self._vector

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.model().embed_documents(texts)  # after the query's own run: the model is free

    def embed_query(self, text: str) -> np.ndarray:
        return self.wait() if text == self.text else self.model().embed_query(text)
