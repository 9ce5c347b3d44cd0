"""What a warm memory search does again and what it does not (docs/research/memory-store-scale.md): a page's
entries are found by its postings (term → entries), not by a look at every entry's terms, and the topic page
files keep one Path each. The hits are held equal to those of the cache of parsed pages' path (SQL), which does
not use the postings: the same entries in the same order with the same scores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.memory import search as search_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, render_page
from gitwiki.wiki import Wiki
from tests.helpers import GitRepoFixture, isolate

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
NOW = datetime(2026, 3, 1, tzinfo=UTC)
WORDS = ["rebase", "merge", "docker", "volume", "cache", "deploy", "argo", "rollback", "token", "secret"]
QUERIES = ["rebase", "docker volume", "deploy rollback", "cache token secret", "argo", "merge conflict", "nothing"]


def page(topic: str, n: int, offset: int) -> str:
    notes = [
        Entry(
            topic,
            f"2026-01-{1 + i % 28:02d}T00:{i // 60:02d}:{i % 60:02d}Z",
            f"note {i}: {WORDS[(i + offset) % 10]} then {WORDS[(i * 3 + offset) % 10]}",
            ("ops",) if i % 4 == 0 else (),
            confidence=0.5 + (i % 5) / 10,
        )
        for i in range(n)
    ]
    return render_page(topic, notes)


@pytest.fixture(scope="module")
def memories(tmp_path_factory):
    base = tmp_path_factory.mktemp("search-scale")
    with pytest.MonkeyPatch.context() as mp:  # built before any test's isolated_env: isolated here
        isolate(mp, base)
        (base / "repo").mkdir()
        yield from built(GitRepoFixture(base / "repo"))


def built(repo: GitRepoFixture):
    files = {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"}
    files |= {f"wiki/memory/{t}.md": page(t, n, k) for k, (t, n) in enumerate([("git", 40), ("ops", 25), ("k8s", 9)])}
    repo.commit("init", files)
    wiki = Wiki.open(repo.path)
    resident = Memory(wiki)  # as the MCP server holds it: every page parsed once, searched by its postings
    for q in QUERIES:  # parsed, indexed and kept in the cache of parsed pages once
        search_mod.search(resident, search_mod.MemoryQuery(q, now=NOW))

    def cached() -> Memory:
        """As a CLI search: a fresh process's memory, whose entries come from the cache of parsed pages,
        filtered in SQL (a page it parsed itself would be searched by its postings)."""
        mem = Memory(wiki)
        mem.resident = False
        return mem

    yield resident, cached
    wiki.close()


def found(mem: Memory, query: str, **filters: object) -> list[tuple[str, int, float, float]]:
    hits = search_mod.search(mem, search_mod.MemoryQuery(query, now=NOW, limit=50, **filters)).hits  # type: ignore[arg-type]
    return [(h.entry.topic, h.entry.index, h.score, h.relevance) for h in hits]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("mode", ["and", "or"])
def test_a_warm_search_finds_what_the_cached_path_finds(memories, query, mode):
    resident, cached = memories
    fresh = cached()
    assert found(resident, query, mode=mode) == found(fresh, query, mode=mode)
    assert found(resident, query + " tag:ops") == found(fresh, query + " tag:ops")
    assert found(resident, query) != [] or query == "nothing"
    assert not fresh._pages  # the other path indeed: nothing parsed in this process


@settings(max_examples=60, deadline=None)
@given(
    wanted=st.one_of(st.none(), st.frozensets(st.sampled_from([*WORDS, "note", "then", "absent"]))),
    lines=st.sets(st.integers(0, 200), max_size=6),
)
def test_candidates_are_the_entries_holding_a_term_or_starting_at_a_line_named(memories, wanted, lines):
    resident, _ = memories
    from gitwiki.memory.entry import terms as stem

    terms = None if wanted is None else frozenset(stem(" ".join(wanted)))
    versions = resident.versions()
    starts = {"git": set(lines), "ops": set(lines)}
    expected = [
        (e, t)
        for name, tf in resident.topics().items()
        for e, t in zip(tf.page.entries, tf.terms, strict=True)
        if terms is None or not terms.isdisjoint(t) or e.start_line in starts.get(name, set())
    ]
    assert resident.candidates(versions, terms, starts) == expected


class Counted(frozenset[str]):
    """Query terms that count how often an entry's terms are compared with them."""

    calls = 0

    def isdisjoint(self, other):  # type: ignore[override]
        Counted.calls += 1
        return super().isdisjoint(other)


def test_a_warm_search_does_not_compare_every_entry_with_the_query(memories):
    resident, _ = memories
    versions = resident.versions()
    resident.candidates(versions, frozenset({"rebas"}), {})  # parsed, postings built
    Counted.calls = 0
    picked = resident.candidates(versions, Counted({"rebas"}), {})
    assert picked and Counted.calls == 0
    tf = resident.topics()["git"]
    assert resident.postings(versions["git"].file, tf) is resident.postings(versions["git"].file, tf)


def test_a_topic_page_file_is_one_path_object(memories):
    resident, _ = memories
    first, again = resident.topic_files(), resident.topic_files()
    assert first == again and all(first[n] is again[n] for n in first)
