"""BM25 kept warm (gitwiki.search.lexicon) scores what FTS5's `bm25()` scores, to the bit: the same chunks in the same
order with the same doubles, over an index that also holds old page versions (stale rows count in FTS5's
statistics), ties included; and a resident memory's search equals a command's (FTS5) search."""

from __future__ import annotations

import itertools
import json
import random
from datetime import UTC, datetime

import pytest

from gitwiki.index.tokens import fts_query, query_terms
from gitwiki.memory import search as search_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, render_page
from gitwiki.search import lexicon as lexicon_mod
from gitwiki.search.lexicon import Lexicon, plain
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
    lexicon = Lexicon(store)
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
    assert plain(["deploy", "k8s", "v2"])
    assert not plain([])
    assert not plain(["déploy"])  # unicode61 folds and splits by its own tables
    assert not plain(["Deploy"]) and not plain(["a b"]) and not plain(["x-y"])


def test_replaced_page_versions_are_forgotten(memory, monkeypatch):
    monkeypatch.setattr(lexicon_mod, "VIEWS_KEPT", 1)  # the page set searched last alone
    store = memory.search_index
    lexicon = Lexicon(store)
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
    lexicon = Lexicon(store)
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


# ---- a wiki's searcher (`Searcher.keep_postings`, the owner's)

TWO_CORPORA = (
    '[[corpus]]\nname = "wiki"\npath = "wiki"\n[[corpus]]\nname = "notes"\npath = "notes"\n'
    "[embeddings]\nenabled = false\n"
)
WIKI_QUERIES = [
    "deploy",
    "rollback the argo deploy",
    "helm secret token",
    "how do I rotate a kubectl token",
    "docker volume cache rebase",
    "nothing matches zzz",
    "déploiement argo",  # a term FTS5's unicode61 folds: FTS5 ranks it
    "the",  # stop words only: the stemmed words are searched
]


def wiki_pages(rng: random.Random, prefix: str, n: int) -> dict[str, str]:
    pages = {}
    for i in range(n):
        sections = "\n\n".join(
            f"## {rng.choice(WORDS).title()} {j}\n\n" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
            for j in range(rng.randint(1, 4))
        )
        pages[f"{prefix}/p{i:02d}.md"] = f"# Page {i} {rng.choice(WORDS)}\n\n{sections}\n"
    pages[f"{prefix}/same.md"] = "# Same\n\ndeploy the argo rollback\n"  # tied with its copy below
    pages[f"{prefix}/copy.md"] = "# Same\n\ndeploy the argo rollback\n"
    return pages


def answers(wiki: Wiki, corpus: str) -> list[str]:
    return [
        json.dumps(wiki.search(q, corpus, mode="lexical", top_files=8, explain=True).to_json()) for q in WIKI_QUERIES
    ]


def test_a_resident_wiki_search_answers_as_fts5_does(repo):
    rng = random.Random(7)
    repo.commit("init", {".gitwiki.toml": TWO_CORPORA, **wiki_pages(rng, "wiki", 30), **wiki_pages(rng, "notes", 12)})
    repo.commit("v2", wiki_pages(rng, "wiki", 20))  # old versions of 20 pages stay in the table
    cold, warm = Wiki.open(repo.path), Wiki.open(repo.path)
    warm.resident = True
    for corpus in ("wiki", "notes"):
        assert answers(warm, corpus) == answers(cold, corpus)
    kept = warm.searcher._lexicon
    assert kept is not None and kept.view is not None and kept.view.postings is not None
    assert cold.searcher._lexicon is None
    both = [view for _, view in kept.views.values()]
    assert len(both) == 2
    for corpus in ("wiki", "notes"):  # searched in turn, each corpus's view is kept, not gathered again
        warm.search("deploy", corpus, mode="lexical")
    again = [view for _, view in kept.views.values()]
    assert len(again) == 2 and all(a is b for a, b in zip(again, both, strict=True))
    # the worktree changes the view: a page edited, one added, one deleted
    repo.write("wiki/p03.md", "# Three\n\nkubectl rollback of the helm secret\n")
    repo.write("wiki/new.md", "# New\n\nthe zebracorn docker volume\n")
    (repo.path / "wiki/p04.md").unlink()
    assert answers(warm, "wiki") == answers(cold, "wiki")
    assert [d.path for d in warm.search("zebracorn", mode="lexical").docs] == ["wiki/new.md"]
    cold.close()
    warm.close()


def test_an_index_past_what_is_kept_is_ranked_by_fts5(repo, monkeypatch):
    from gitwiki.search import searcher as searcher_mod

    repo.commit("init", {".gitwiki.toml": TWO_CORPORA, **wiki_pages(random.Random(3), "wiki", 10)})
    warm = Wiki.open(repo.path)
    warm.resident = True
    first = answers(warm, "wiki")
    assert warm.searcher._lexicon is not None and warm.searcher._lexicon.blobs
    monkeypatch.setattr(searcher_mod, "KEEP_TOKENS", 10)
    assert answers(warm, "wiki") == first
    assert not warm.searcher._lexicon.blobs  # forgotten: FTS5 ranked
    warm.close()


def test_an_index_opened_again_keeps_its_postings(repo):
    repo.commit("init", {".gitwiki.toml": TWO_CORPORA, **wiki_pages(random.Random(4), "wiki", 5)})
    warm = Wiki.open(repo.path)
    warm.resident = True
    warm.search("deploy", mode="lexical")
    warm.reopen()  # as after `gitwiki pull`
    warm.search("deploy", mode="lexical")
    assert warm.searcher._lexicon is not None and warm.searcher._lexicon.store is warm.store
    warm.close()


def test_a_write_elsewhere_in_the_index_keeps_the_gathered_view(repo):
    rng = random.Random(9)
    repo.commit("init", {".gitwiki.toml": TWO_CORPORA, **wiki_pages(rng, "wiki", 8), **wiki_pages(rng, "notes", 4)})
    warm = Wiki.open(repo.path)
    warm.resident = True
    answers(warm, "wiki")
    kept = warm.searcher._lexicon
    assert kept is not None
    view = kept.view
    assert view is not None
    generation = kept.views[view.key][0]
    repo.commit("notes only", {"notes/extra.md": "# Extra\n\nhelm token\n"})
    warm.search("helm", "notes", mode="lexical")  # indexes the new page: the database's generation moves
    cold = Wiki.open(repo.path)
    assert answers(warm, "wiki") == answers(cold, "wiki")  # scored with the new statistics
    assert kept.views[view.key][0] != generation and kept.view is view  # its rows were not read or gathered again
    cold.close()
    warm.close()


def test_the_kept_statistics_are_the_indexs_own_when_many_terms_were_asked(memory, monkeypatch):
    monkeypatch.setattr(lexicon_mod, "TERMS_KEPT", 3)  # every few queries the terms kept are dropped
    lexicon = Lexicon(memory.search_index)
    with memory.read():
        for query in QUERIES:
            terms = query_terms(query)
            assert lexicon.term_stats(terms) == memory.search_index.term_stats(terms), query
