"""BM25 kept warm (gitwiki.memory.bm25) scores what FTS5's `bm25()` scores, to the bit: the same chunks in the same
order with the same doubles, over an index that also holds old page versions (stale rows count in FTS5's
statistics), ties included; and a resident memory's search equals a command's (FTS5) search."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

import pytest

from gitwiki.index.tokens import fts_query, query_terms
from gitwiki.memory import bm25
from gitwiki.memory import search as search_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, render_page
from gitwiki.wiki import Wiki
from tests.helpers import GitRepoFixture, isolate

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
NOW = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = "rebase merge docker volume cache deploy argo rollback token secret kubectl helm".split()


def page(topic: str, rng: random.Random, n: int) -> str:
    notes = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        if i % 7 == 3:  # the same text twice in a page: tied scores
            text = "deploy the argo rollback"
        notes.append(Entry(topic, f"2026-01-{1 + i % 28:02d}T00:00:{i % 60:02d}Z", text, ("ops",) if i % 3 else ()))
    return render_page(topic, notes)


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    base = tmp_path_factory.mktemp("bm25")
    with pytest.MonkeyPatch.context() as mp:
        isolate(mp, base)
        (base / "repo").mkdir()
        repo = GitRepoFixture(base / "repo")
        rng = random.Random(5)
        files = {f"wiki/memory/{t}.md": page(t, rng, n) for t, n in (("git", 30), ("ops", 18), ("k8s", 7))}
        repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n\ndeploy notes\n", **files})
        wiki = Wiki.open(repo.path)
        mem = Memory(wiki)
        search_mod.search(mem, "deploy")  # indexed
        for topic in ("git", "ops"):  # newer versions: the old ones stay in the table, as after memory stores
            repo.write(f"wiki/memory/{topic}.md", page(topic, rng, 25))
            search_mod.search(mem, "deploy")
        yield mem
        wiki.close()


QUERIES = [" ".join(q) for n in (1, 2, 3) for q in itertools.combinations(WORDS[:8], n)] + ["argo nowhere", "zzz"]


def fts5(mem: Memory, query: str, blobs: set[str], depth: int) -> list[tuple[int, float]]:
    """FTS5's ranking of these page versions' chunks, ties by chunk id."""
    match = fts_query(query)
    assert match is not None
    rows = mem.search_index.lexical(match, 10**6)
    return sorted(((cid, s) for cid, blob, s in rows if blob in blobs), key=lambda r: (-r[1], r[0]))[:depth]


@pytest.mark.parametrize("depth", [5, 200])
def test_the_warm_postings_rank_as_fts5_to_the_bit(memory, depth):
    store = memory.search_index
    blobs = {v.blob for v in memory.versions(None).values()}
    lexicon = bm25.Lexicon(store)
    with memory.read():
        total = store.term_stats([])
        assert total.rows > sum(1 for _ in blobs)  # old versions and index.md share the table
        for query in QUERIES:
            terms = query_terms(query)
            ranked, blob_of = lexicon.ranking(blobs, terms, store.term_stats(terms), depth)
            assert ranked == fts5(memory, query, blobs, depth), query
            assert set(blob_of) == {cid for cid, _ in ranked} and set(blob_of.values()) <= blobs


def test_a_resident_search_finds_what_a_command_finds(memory):
    fresh = Memory(memory.wiki)
    fresh.resident = False  # as a CLI search: FTS5 ranks
    for query in QUERIES[::5]:
        asked = search_mod.MemoryQuery(query, now=NOW, limit=50)
        warm, cold = search_mod.search(memory, asked), search_mod.search(fresh, asked)
        assert [(h.entry.ref, h.score, h.relevance) for h in warm.hits] == [
            (h.entry.ref, h.score, h.relevance) for h in cold.hits
        ]
        assert warm.total == cold.total
    assert memory.lexicon is not None and fresh.lexicon is None


def test_only_plain_terms_are_scored_outside_fts5():
    assert bm25.plain(["deploy", "k8s", "v2"])
    assert not bm25.plain([])
    assert not bm25.plain(["déploy"])  # unicode61 folds and splits by its own tables
    assert not bm25.plain(["Deploy"]) and not bm25.plain(["a b"]) and not bm25.plain(["x-y"])


def test_replaced_page_versions_are_forgotten(memory):
    store = memory.search_index
    lexicon = bm25.Lexicon(store)
    blobs = {v.blob for v in memory.versions(None).values()}
    with memory.read():
        old = {r[0] for r in store.conn.execute("SELECT DISTINCT blob FROM chunks")} - blobs
        assert old
        lexicon.ranking(blobs | old, ["deploy"], store.term_stats(["deploy"]), 10)
        assert set(lexicon.blobs) == blobs | old
        lexicon.ranking(blobs, ["deploy"], store.term_stats(["deploy"]), 10)
        assert set(lexicon.blobs) == blobs | old  # kept while they are few
        lexicon.ranking({next(iter(blobs))}, ["deploy"], store.term_stats(["deploy"]), 10)
        assert set(lexicon.blobs) == {next(iter(blobs))}


def test_a_page_version_indexed_again_is_read_again(memory):
    """Stored, then deleted: the page's old version is written again and indexed with new chunk ids."""
    store = memory.search_index
    versions = memory.versions(None)
    blobs = {v.blob for v in versions.values()}
    lexicon = bm25.Lexicon(store)
    with memory.read():
        lexicon.ranking(blobs, ["deploy"], store.term_stats(["deploy"]), 200)
    again = versions["git"]
    with memory.read():
        before = store.blob_spans([again.blob])[again.blob]
    with store.lock():
        memory.drop([again.blob])
    memory.indexed.clear()
    search_mod.memory_view(memory, {"git": again}, None)  # indexed again: new ids
    with memory.read():
        assert store.blob_spans([again.blob])[again.blob] != before
        asked = blobs | {"0" * 40}  # another view than the last (one page more, never indexed)
        ranked, _ = lexicon.ranking(asked, ["deploy"], store.term_stats(["deploy"]), 200)
        assert ranked and ranked == fts5(memory, "deploy", blobs, 200)
