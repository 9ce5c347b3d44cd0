"""What a process knows of the vectors (`gitwiki.index.store.embedded`): a version that added chunks to one with every
vector is looked at through those chunks alone, and the vectors found missing are always those a look at every
chunk finds; the background thread embeds a run of writes in one call, and a search does not wait for the pause."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.index.background_embed import BackgroundEmbedder
from gitwiki.index.indexer import ensure_vectors
from gitwiki.index.store import Store
from gitwiki.memory.entry import Entry, render_page
from tests.index.versions import index_version

WORDS = ["alpha", "beta", "gamma", "delta", "deploy", "argo", "cache", "merge"]


class FakeEmbedder:
    """Vectors from the text's hash; counts its calls; fails while `broken` is set."""

    model_id = "fake-model"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.broken = False

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if self.broken:
            raise RuntimeError("the model fell over")
        self.calls.append(list(texts))
        return np.array([[b / 255 for b in hashlib.sha256(t.encode()).digest()[:4]] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def topic(entries: list[str]) -> str:
    return render_page(
        "notes", [Entry("notes", f"2026-01-{i % 28 + 1:02d}T00:00:{i % 60:02d}Z", t) for i, t in enumerate(entries)]
    )


def lacking(store: Store, blob: str) -> set[str]:
    """The hashes of `blob`'s chunks with no vector, every chunk looked at (the answer the memo must give)."""
    return {
        row[0]
        for row in store.conn.execute(
            "SELECT c.hash FROM chunks c WHERE c.blob = ? AND NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.model = ? AND v.hash = c.hash)",
            (blob, FakeEmbedder.model_id),
        )
    }


def test_a_version_that_added_to_a_complete_one_is_looked_at_through_what_it_added(tmp_path, monkeypatch):
    store, model = Store.open(tmp_path / "i"), FakeEmbedder()
    first = index_version(store, None, topic(["alpha beta", "gamma delta"]))
    ensure_vectors(store, model, {first})
    second = index_version(store, first, topic(["alpha beta", "gamma delta", "deploy with argo"]))
    scanned = []
    real = Store._scanned
    monkeypatch.setattr(Store, "_scanned", lambda self, *a: scanned.append(a[1]) or real(self, *a))
    need = store.missing_vectors(model.model_id, [second])
    assert {h for h, _ in need} == lacking(store, second) and len(need) == 1
    assert "deploy with argo" in need[0][1] and not any(scanned)  # no chunk of the page read
    ensure_vectors(store, model, {second})
    assert lacking(store, second) == set() and store.missing_vectors(model.model_id, [second]) == []
    assert model.calls[-1] == [need[0][1]]  # only the new entry went to the model


steps = st.lists(
    st.tuples(
        st.sampled_from(["append", "insert", "delete", "revise"]),
        st.integers(0, 20),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        st.sampled_from(["wait", "embed", "fail", "fresh connection"]),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(start=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), steps=steps)
def test_the_vectors_found_missing_are_those_a_look_at_every_chunk_finds(tmp_path_factory, start, steps):
    """Any run of edits, embedded now and then in batches of the versions written since (as the background thread
    does, the earlier ones gone by then), sometimes failing, sometimes through another connection."""
    index_dir = tmp_path_factory.mktemp("index")
    store, model = Store.open(index_dir), FakeEmbedder()
    entries = list(start)
    current = index_version(store, None, topic(entries))
    pending = {current}
    for action, at, words, then in steps:
        where = at % (len(entries) + 1)
        if action == "append":
            entries.append(words)
        elif action == "insert":
            entries.insert(where, words)
        elif action == "delete" and len(entries) > 1:
            entries.pop(where % len(entries))
        elif action == "revise":
            entries[where % len(entries)] = words
        current = index_version(store, current, topic(entries))
        pending.add(current)
        assert {h for h, _ in store.missing_vectors(model.model_id, [current])} == lacking(store, current)
        if then == "wait":
            continue
        other = Store.another(index_dir) if then == "fresh connection" else store
        model.broken = then == "fail"
        try:
            ensure_vectors(other, model, pending)
            pending = set()
        except RuntimeError:
            assert then == "fail"
        finally:
            model.broken = False
            if other is not store:
                other.close()
        assert {h for h, _ in store.missing_vectors(model.model_id, [current])} == lacking(store, current)
    ensure_vectors(store, model, pending | {current})
    assert lacking(store, current) == set()
    assert store.missing_vectors(model.model_id, [current]) == []


def test_a_run_of_writes_goes_to_the_model_in_one_call_and_a_search_does_not_wait_for_the_pause(tmp_path):
    store, model = Store.open(tmp_path / "i"), FakeEmbedder()
    first = index_version(store, None, topic(["alpha beta"]))
    ensure_vectors(store, model, {first})
    model.calls.clear()
    background = BackgroundEmbedder(quiet=1.0, most=30.0)
    try:
        blobs, previous = [], first
        for n in range(2, 5):
            previous = index_version(store, previous, topic(["alpha beta", *WORDS[:n]]))
            assert background.submit(store, model, {previous})
            blobs.append(previous)
        time.sleep(0.2)
        assert model.calls == []  # still in the pause
        time.sleep(1.5)
        background.settle()
        assert len(model.calls) == 1 and len(model.calls[0]) == 4  # one call: the four entries the versions added
        assert lacking(store, blobs[-1]) == set()

        background.close()
        background = BackgroundEmbedder(quiet=60.0, most=600.0)
        latest = index_version(store, previous, topic(["alpha beta", *WORDS]))
        background.submit(store, model, {latest})
        waited = threading.Thread(target=background.settle)
        started = time.monotonic()
        waited.start()
        waited.join(30)
        assert not waited.is_alive() and time.monotonic() - started < 30
        assert lacking(store, latest) == set()
    finally:
        background.close()


def test_nothing_is_embedded_while_a_write_is_under_way(tmp_path):
    """A store slower than the pause (a loaded host) must not find the model running beside the next one: the
    pause lasts while a write is under way."""
    store, model = Store.open(tmp_path / "i"), FakeEmbedder()
    first = index_version(store, None, topic(["alpha beta"]))
    background = BackgroundEmbedder(quiet=0.05, most=30.0)
    try:
        with background.writing():
            assert background.submit(store, model, {first})
            time.sleep(0.5)  # ten pauses
            assert model.calls == []
        deadline = time.monotonic() + 20
        while not model.calls and time.monotonic() < deadline:  # embedded once the write is over, unasked
            time.sleep(0.02)
        assert model.calls and lacking(store, first) == set()
    finally:
        background.close()
