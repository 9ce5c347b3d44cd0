"""Writes in a long-lived process hand their embedding to a background thread: the entry is searchable at once,
the vectors follow, a search waits for them rather than embedding twice, and an exit or a crash loses nothing."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from gitwiki.index.store import Store
from gitwiki.index.tokens import fts_query
from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from gitwiki.wiki import Wiki
from tests.helpers import needs_model

TEXT = "the deploy pipeline promotes images from staging to production"


@pytest.fixture
def served(repo):
    """A Memory over a wiki that embeds in the background, as `gitwiki serve` has it."""
    repo.commit("init", {"wiki/index.md": "# Home\n"})
    wiki = Wiki.open(repo.path)
    wiki.local.embed_in_background()
    mem = Memory(wiki)
    yield mem
    wiki.close()


def gate(monkeypatch, mem: Memory) -> threading.Event:
    """Hold the model's document embedding until the returned event is set (a slow model, on cue)."""
    embedder = mem.wiki.embedder()
    assert embedder is not None
    opened = threading.Event()
    embed = embedder.embed_documents

    def held(texts):
        assert opened.wait(60)
        return embed(texts)

    monkeypatch.setattr(embedder, "embed_documents", held)
    return opened


def missing(mem: Memory, store: Store | None = None) -> list:
    blob = mem.topics()["t"].blob
    return (store or mem.wiki.store).missing_vectors(mem.wiki.embedder().model_id, [blob])


@needs_model
def test_a_store_answers_before_the_model_and_is_found_lexically_at_once(served, monkeypatch):
    opened = gate(monkeypatch, served)
    answered = threading.Event()
    worker = threading.Thread(target=lambda: (store_mod.store(served, "t", TEXT), answered.set()))
    worker.start()
    try:
        assert answered.wait(30), "the store waited for the model"
        assert missing(served), "embedded before the store answered"
        blob = served.topics()["t"].blob
        hits = served.wiki.store.lexical(fts_query("promotes images from staging"), 10)
        assert blob in {row[1] for row in hits}
    finally:
        opened.set()
        worker.join()


@needs_model
def test_a_search_right_after_a_store_waits_for_the_vectors_and_finds_the_entry(served):
    store_mod.store(served, "t", TEXT)
    found = search_mod.search(served, "how do releases reach prod")
    assert found.ranking == "hybrid" and found.matched == "semantic" and found.hits[0].entry.ref == "t:1"
    assert missing(served) == []


@needs_model
def test_closing_the_wiki_embeds_what_is_queued_first(served, monkeypatch):
    opened = gate(monkeypatch, served)
    store_mod.store(served, "t", TEXT)
    closing = threading.Thread(target=served.wiki.close)
    closing.start()
    opened.set()
    closing.join(60)
    assert not closing.is_alive()
    assert not any(t.name == "gitwiki-embed" and t.is_alive() for t in threading.enumerate())
    reopened = Store.open(served.wiki.index_dir)
    try:
        assert missing(served, reopened) == []
    finally:
        reopened.close()


@needs_model
def test_a_failed_background_embedding_is_done_by_the_next_search(served, monkeypatch):
    embedder = served.wiki.embedder()
    embed = embedder.embed_documents
    failures = []

    def failing(texts):
        if broken.is_set():
            failures.append(texts)
            raise RuntimeError("the model fell over")
        return embed(texts)

    broken = threading.Event()
    broken.set()
    monkeypatch.setattr(embedder, "embed_documents", failing)
    store_mod.store(served, "t", TEXT)
    served.wiki.local.settle_embedding()
    broken.clear()
    assert failures and missing(served)
    found = search_mod.search(served, "how do releases reach prod")
    assert found.ranking == "hybrid" and found.hits[0].entry.ref == "t:1"
    assert missing(served) == []


CRASH = """
import os, sys, threading
from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from gitwiki.wiki import Wiki

wiki = Wiki.open(sys.argv[1])
wiki.local.embed_in_background()
mem = Memory(wiki)
embedder = wiki.embedder()
embedder.embed_documents = lambda texts: threading.Event().wait()  # the model never answers
store_mod.store(mem, "t", sys.argv[2])
os._exit(9)  # killed with the vectors still queued
"""


@needs_model
@pytest.mark.slow
def test_a_crash_before_the_vectors_are_written_leaves_a_usable_index(repo):
    repo.commit("init", {"wiki/index.md": "# Home\n"})
    crashed = subprocess.run([sys.executable, "-c", CRASH, str(repo.path), TEXT], capture_output=True, text=True)
    assert crashed.returncode == 9, crashed.stderr
    mem = Memory.open(repo.path)
    try:
        assert mem.wiki.store.check(full=True) is None
        assert missing(mem), "the crash was meant to come before the vectors"
        found = search_mod.search(mem, "how do releases reach prod")
        assert found.ranking == "hybrid" and found.hits[0].entry.ref == "t:1"
        assert missing(mem) == []
    finally:
        mem.close()
