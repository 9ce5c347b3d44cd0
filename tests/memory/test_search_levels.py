"""Memory search's match levels: the AND pass (entries holding every query word) does not hide an entry the
hybrid ranking scores high that holds only some of them, or none (docs/research/memory-recall-2.md and -3.md)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from tests.helpers import SCALE, SynonymEmbedder

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
QUERY = "attach database to copy a table from one sqlite file into another"
# The note asked for: every strong word of the question, but not "file" or "another".
ANSWER = "Copy tables between SQLite databases: attach database 'blog.db' as blog, then create table blog.til as select from the attached database; sqlite copies the table"
# A long note that happens to hold every word once, about something else.
BYSTANDER = (
    "Backups run nightly and write one file per day; another job prunes them. "
    + "The retention policy keeps thirty days of archives on the storage volume and reports sizes. " * 6
    + "Restoring means you attach the drive, copy the archive, open the sqlite database and check one table."
)
FILLER = ["a config file is read at start", "another worker takes over on failure", "the log file rotates daily"]


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n\nThe wiki.\n"})
    mem = Memory.open(repo.path)
    store_mod.store(mem, "sqlite", ANSWER)
    store_mod.store(mem, "ops", BYSTANDER)
    for text in FILLER:
        store_mod.store(mem, "ops", text)
    return mem


def test_an_entry_missing_a_word_but_ranked_above_every_and_match_is_listed_first(mem):
    found = search_mod.search(mem, QUERY)
    refs = [h.entry.ref for h in found.hits]
    assert found.matched == "and" and refs[:2] == ["sqlite:1", "ops:1"], refs
    assert found.hits[0].relevance == 1.0 > found.hits[1].relevance


def test_entries_ranked_below_half_the_best_stay_out(mem):
    # "copies the archive" holds every word of this question; the sqlite note scores below half of it, so AND
    # alone answers.
    found = search_mod.search(mem, "nightly backups retention archive")
    assert found.matched == "and" and [h.entry.ref for h in found.hits] == ["ops:1"]


def test_or_mode_is_unchanged(mem):
    found = search_mod.search(mem, search_mod.MemoryQuery(QUERY, mode="or"))
    assert found.matched == "or" and {"sqlite:1", "ops:1"} <= {h.entry.ref for h in found.hits}


# ---- entries the ranking scores high are listed whatever words they hold -----------------------------------


@pytest.fixture
def synonyms(repo, monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    config = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nprovider = "synonyms"\n'
    repo.commit("init", {".gitwiki.toml": config, "wiki/index.md": "# Home\n\nThe wiki.\n"})
    mem = Memory.open(repo.path)
    store_mod.store(mem, "words", "zeta omega: the rotation runbook says zeta then omega")
    store_mod.store(mem, "meaning", "kappa kappa kappa: how the signing key is rotated")
    store_mod.store(mem, "noise", "zeta" + " filler" * 30)
    for i in range(6):
        store_mod.store(mem, "pad", f"pad {i} holds nothing of either")
    return mem


def test_an_entry_holding_no_query_word_that_the_ranking_scores_high_is_listed(synonyms):
    found = search_mod.search(synonyms, "zeta omega")
    by_ref = {h.entry.ref: h for h in found.hits}
    assert found.matched == "and" and found.ranking == "hybrid"
    assert found.hits[0].entry.ref == "words:1"
    # The AND pass alone lists only words:1: meaning:1 holds neither word and scores below it.
    meaning = by_ref["meaning:1"]
    assert search_mod.RANKED_SHARE <= meaning.relevance < found.hits[0].relevance and meaning.ranked
    # Holding one word, ranked above half the best: listed too. The pads, ranked far below (the dense ranker
    # reaches every entry of so small a memory), are not.
    assert search_mod.RANKED_SHARE <= by_ref["noise:1"].relevance < meaning.relevance
    assert set(by_ref) == {"words:1", "meaning:1", "noise:1"} and found.total == 3


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(
        st.one_of(
            st.sampled_from(["zeta", "omega", "kappa", "rotation", "runbook", "pad", "the", "tag:x", "topic:pad"]),
            st.text(max_size=12),
        ),
        max_size=6,
    ),
    mode=st.sampled_from(search_mod.MODES),
    limit=st.integers(min_value=1, max_value=12),
)
def test_any_query_lists_word_matches_and_highly_ranked_entries_in_score_order(synonyms, words, mode, limit):
    found = search_mod.search(synonyms, search_mod.MemoryQuery(" ".join(words), limit=limit, mode=mode))
    hits = found.hits
    assert len(hits) <= limit and found.total >= len(hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(n <= search_mod.PER_TOPIC for n in Counter(h.entry.topic for h in hits).values())
    needed = search_mod.query_terms(found.query)
    if found.matched in ("and", "or"):
        from gitwiki.memory.entry import entry_terms

        for h in hits:  # a word match of its pass, or ranked at least half as high as the best
            held = entry_terms(h.entry)
            matches = needed <= held if found.matched == "and" else bool(needed & held)
            assert matches or (h.ranked and h.relevance >= search_mod.RANKED_SHARE), (h.entry.ref, found.query)
