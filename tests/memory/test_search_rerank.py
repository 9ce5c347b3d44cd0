"""Memory search with `[search] reranker` set: the cross-encoder judges the first `rerank_depth` hits again, in one
memory and across the project's and the personal memory (real git repos; a fake cross-encoder in
`rerank.LOADER`, as the page search's tests have it)."""

from __future__ import annotations

import json

import pytest

from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory import stores
from gitwiki.memory.base import Memory
from gitwiki.search import rerank
from tests.helpers import FakeCrossEncoder, GitRepoFixture
from tests.memory.helpers import project, user_config

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
SEARCH = '[search]\nreranker = "fake/cross-encoder"\n'
RERANKED = LEXICAL + SEARCH
PLAIN = "Deploy the service with the deploy script, deploy often, deploy on fridays."
ZEBRA = "How to deploy: ask the zebra team, zebra approves."  # the fake cross-encoder's favourite
OTHER = "Roll back a deploy by its tag."


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(rerank, "LOADER", FakeCrossEncoder)
    monkeypatch.setattr(rerank, "_cache", {})
    FakeCrossEncoder.calls.clear()
    return FakeCrossEncoder


def opened(repo: GitRepoFixture, config: str) -> Memory:
    repo.commit("config", {".gitwiki.toml": config, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


def stored(mem: Memory) -> Memory:
    for topic, text in (("deploy", PLAIN), ("ops", ZEBRA), ("release", OTHER)):
        store_mod.store(mem, topic, text)
    return mem


def test_the_cross_encoder_reorders_the_hits_and_its_judgement_is_their_relevance(repo, fake):
    plain = search_mod.search(stored(opened(repo, LEXICAL)), "deploy")
    assert [h.entry.ref for h in plain.hits][0] == "deploy:1" and plain.ranking == "lexical" and not fake.calls

    found = search_mod.search(opened(repo, RERANKED), "deploy")
    assert found.ranking == "lexical, reranked"
    refs = [h.entry.ref for h in found.hits]  # the other two judged alike: the newer first (stores a second apart?)
    assert refs[0] == "ops:1" and sorted(refs[1:]) == ["deploy:1", "release:1"]
    assert found.hits[0].relevance == pytest.approx(rerank.judged(6.0))  # 2 × 4 − 2
    assert found.hits[1].relevance == pytest.approx(rerank.judged(-2.0))
    assert [h.score for h in found.hits] == [h.relevance for h in found.hits]  # confidence 1, nothing stale
    assert fake.calls == [("deploy", 3)]


def test_only_the_first_rerank_depth_hits_are_judged_and_the_rest_stay_below(repo, fake):
    mem = stored(opened(repo, LEXICAL))
    before = [h.entry.ref for h in search_mod.search(mem, "deploy").hits]
    found = search_mod.search(opened(repo, RERANKED + "rerank_depth = 1\n"), "deploy")
    assert fake.calls == [("deploy", 1)]
    assert [h.entry.ref for h in found.hits] == before  # the zebra note was not among the judged
    first, *rest = found.hits
    assert first.relevance == pytest.approx(rerank.judged(-2.0))
    assert all(h.relevance < first.relevance for h in rest)


def test_a_rerank_depth_of_0_leaves_memory_search_as_it_was(repo, fake):
    mem = stored(opened(repo, LEXICAL))
    before = [(h.entry.ref, h.relevance) for h in search_mod.search(mem, "deploy").hits]
    found = search_mod.search(opened(repo, RERANKED + "rerank_depth = 0\n"), "deploy")
    assert [(h.entry.ref, h.relevance) for h in found.hits] == before
    assert found.ranking == "lexical" and not fake.calls


def test_a_search_with_no_words_is_not_reranked(repo, fake):
    found = search_mod.search(stored(opened(repo, RERANKED)), "tag:none")
    assert found.matched == "recent" and found.ranking == "recency" and not fake.calls


def test_cli_lists_the_reranked_order_and_an_unloadable_reranker_keeps_the_fused_one(repo, cli, fake, monkeypatch):
    stored(opened(repo, RERANKED))
    code, out, err = cli("memory", "search", "deploy", "--json", cwd=repo.path)
    data = json.loads(out)
    assert code == 0 and data["ranking"] == "lexical, reranked", err
    topics = [h["topic"] for h in data["hits"]]
    assert topics[0] == "ops" and sorted(topics[1:]) == ["deploy", "release"]  # judged alike: the newer first

    def broken(model):
        from gitwiki.errors import EmbeddingUnavailable

        raise EmbeddingUnavailable(f"cannot load reranker {model!r}")

    monkeypatch.setattr(rerank, "LOADER", broken)
    monkeypatch.setattr(rerank, "_cache", {})
    code, out, err = cli("memory", "search", "deploy", "--json", cwd=repo.path)
    data = json.loads(out)
    assert code == 0 and data["ranking"] == "lexical" and data["hits"][0]["topic"] == "deploy"
    assert "cannot load reranker 'fake/cross-encoder'" in err and "results keep the fused order" in err


def test_judgements_compare_across_the_project_and_the_personal_memory(tmp_path, home, fake):
    # The project's best lexical match would be 1 on its own; the personal memory's zebra note, which the
    # cross-encoder prefers, comes first because both memories' hits are judged on one scale.
    user_config(tmp_path, "project", SEARCH)
    mem = Memory.open(project(tmp_path, "a", {".gitwiki.toml": RERANKED}).path)
    personal = mem.personal
    assert personal is not None
    store_mod.store(mem, "deploy", PLAIN)
    store_mod.store(mem, "release", OTHER)
    store_mod.store(personal, "ops", ZEBRA)
    found = stores.search(mem, "deploy")
    # the other two are judged alike: the newer first, and the store's second may have ticked over between them
    topics = [h.entry.topic for h in found.hits]
    assert topics[0] == "~personal/ops" and sorted(topics[1:]) == ["deploy", "release"]
    assert found.hits[0].relevance == pytest.approx(rerank.judged(6.0))
    mem.close()
