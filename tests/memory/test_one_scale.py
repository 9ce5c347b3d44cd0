"""Memory search over the project's and the personal memory ranks on one scale (gitwiki.memory.search.one_scale):
a memory's best hit is not worth 1 unless it is the best of both (real git repos; HOME and the user config in
tmp dirs; lexical, as the user config turns embeddings off)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory import stores
from gitwiki.memory.base import Memory
from tests.helpers import GitRepoFixture

PROJECT = '[[corpus]]\nname = "wiki"\npath = "wiki"\n'
USER = '[memory]\nrepository = "~/kb"\nwrite = "project"\n[embeddings]\nenabled = false\n'
FILLER = (
    "the release train leaves every second tuesday",
    "format the changelog with one line per change",
    "the cache warms in about a minute after a restart",
    "keep secrets out of the repository, in the vault",
)
WEAK = (
    "meeting notes from the quarterly planning: budgets, hiring, the office move, the new laptops, "
    "a long list of vendors to call, lunch options, and in passing someone said deploy and rollback"
)
STRONG = "deploy rollback: a deploy rollback restores the previous deploy; rollback the deploy by its tag"


@pytest.fixture
def mem(tmp_path, monkeypatch) -> Memory:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = tmp_path / "xdg" / "gitwiki" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(USER)
    (tmp_path / "a").mkdir()
    repo = GitRepoFixture(tmp_path / "a")
    repo.commit("init", {".gitwiki.toml": PROJECT, "wiki/index.md": "# Home\n"})
    opened = Memory.open(repo.path)
    yield opened
    opened.close()


def fill(mem: Memory, weak_topic: str, strong_topic: str) -> None:
    """The same filler entries in both memories; the weak match in `mem`, the strong one in its personal."""
    personal = mem.personal
    assert personal is not None
    for owner in (mem, personal):
        store_mod.batch(owner, [store_mod.BatchItem("misc", text) for text in FILLER])
    store_mod.store(mem, weak_topic, WEAK)
    store_mod.store(personal, strong_topic, STRONG)


def test_a_strong_personal_hit_outranks_a_weak_project_hit(mem):
    # "aaa" sorts before "~personal/…": on separate scales both bests score 1 and the project's came first.
    fill(mem, "aaa", "ops")
    found = stores.search(mem, "deploy rollback")
    assert found.matched == "and"
    assert [h.entry.topic for h in found.hits] == ["~personal/ops", "aaa"]
    strong, weak = found.hits
    assert strong.relevance == 1.0 and 0 < weak.relevance < strong.relevance
    assert weak.score < strong.score


def test_a_strong_project_hit_outranks_a_weak_personal_hit(mem):
    personal = mem.personal
    assert personal is not None
    for owner in (mem, personal):
        store_mod.batch(owner, [store_mod.BatchItem("misc", text) for text in FILLER])
    store_mod.store(mem, "zzz", STRONG)
    store_mod.store(personal, "aaa", WEAK)
    assert [h.entry.topic for h in stores.search(mem, "deploy rollback").hits] == ["zzz", "~personal/aaa"]


def test_relevance_is_shared_only_inside_one_scale(mem):
    fill(mem, "aaa", "ops")
    personal = mem.personal
    assert personal is not None
    alone = search_mod.search(mem, "deploy rollback")
    assert [h.relevance for h in alone.hits] == [1.0]  # one memory alone: its best is 1
    with search_mod.one_scale([mem, personal], "deploy rollback"):
        inside = search_mod.search(mem, "deploy rollback")
    assert 0 < inside.hits[0].relevance < 1.0
    assert [h.relevance for h in search_mod.search(mem, "deploy rollback").hits] == [1.0]  # reset after


def test_one_scale_without_query_words_or_a_second_memory_changes_nothing(mem):
    fill(mem, "aaa", "ops")
    with search_mod.one_scale([mem], "deploy rollback"):
        assert search_mod._ONE_SCALE.get() is None
    with search_mod.one_scale([mem, mem.personal], "tag:x"):  # filters only: recency order, no relevance
        assert search_mod._ONE_SCALE.get() is None


def test_joint_relevance_splits_back_by_memory(mem):
    fill(mem, "aaa", "ops")
    personal = mem.personal
    assert personal is not None
    joint = search_mod.joint_relevance([(m, m.versions(None)) for m in (mem, personal)], "deploy rollback")
    assert set(joint) == {Path(mem.root), Path(personal.root)}
    (weak,) = joint[mem.root][0].values()
    (strong,) = joint[personal.root][0].values()
    assert strong == 1.0 and 0 < weak < 1.0 and joint[mem.root][1] == "lexical"


def test_a_query_no_entry_of_either_memory_matches_finds_nothing(mem):
    fill(mem, "aaa", "ops")
    found = stores.search(mem, "kubernetes")
    assert found.hits == [] and found.total == 0


SPLIT = {
    "alpha": ("deploy with argo, then watch the rollout", "the cache warms in a minute", "rollback by tag"),
    "beta": ("a deploy rollback restores the previous deploy", "tokens rotate monthly"),
    "gamma": ("cache keys carry the deploy id", "rollback rollback rollback", "argo syncs every three minutes"),
    "delta": ("the vault holds the deploy token", "nothing about it at all"),
}


def write_topics(mem: Memory, topics: list[str]) -> None:
    from gitwiki.memory.entry import Entry, render_page

    mem.folder.mkdir(parents=True, exist_ok=True)
    for topic in topics:
        notes = [Entry(topic, f"2026-01-0{i + 1}T00:00:00Z", text) for i, text in enumerate(SPLIT[topic])]
        (mem.folder / f"{topic}.md").write_text(render_page(topic, notes))


def lexical_scores(owners: list[Memory], words: str) -> dict[tuple[str, int], float]:
    """Each entry's raw BM25 (its best section) as a search over `owners` together scores it, by bare topic."""
    ranked = search_mod.joint_rankings([(m, m.versions(None)) for m in owners], words)["lexical"]
    return {(topic.removeprefix("~personal/"), line): score for (_, topic, line), score in ranked}


@pytest.mark.parametrize("resident", [False, True], ids=["fts5", "warm"])
@pytest.mark.parametrize("words", ["deploy rollback", "cache argo token", "rollback"])
def test_a_memory_split_across_project_and_personal_scores_as_one_memory(tmp_path, mem, resident, words):
    personal = mem.personal
    assert personal is not None
    (tmp_path / "one").mkdir()
    repo = GitRepoFixture(tmp_path / "one")
    repo.commit("init", {".gitwiki.toml": PROJECT, "wiki/index.md": "# Home\n"})
    one = Memory.open(repo.path)
    write_topics(one, list(SPLIT))  # every topic in one memory
    write_topics(mem, ["alpha", "beta"])  # the same topics split over the project and the personal memory
    write_topics(personal, ["gamma", "delta"])
    for m in (one, mem, personal):
        m.resident = resident
    whole = lexical_scores([one], words)
    split = lexical_scores([mem, personal], words)
    assert whole and set(split) == set(whole)
    for key, score in whole.items():
        assert split[key] == pytest.approx(score, rel=1e-9, abs=1e-12), key
    # Each index on its own statistics (as before): the personal entries' scores are not one memory's.
    alone = lexical_scores([personal], words)
    assert any(abs(alone[key] - whole[key]) > 1e-6 for key in alone)
    one.close()


def test_an_any_word_match_scored_above_the_other_memorys_and_match_is_kept(mem):
    # The personal note lacks "file" and "another" (common words here); a long project note holds every word.
    personal = mem.personal
    assert personal is not None
    answer = (
        "Copy tables between SQLite databases: attach database 'blog.db' as blog, then create table blog.til as"
        " select from the attached database; sqlite copies the table"
    )
    bystander = (
        "Backups run nightly and write one file per day; another job prunes them. "
        + "The retention policy keeps thirty days of archives on the storage volume and reports sizes. " * 12
        + "Restoring means you attach the drive, copy the archive, open the sqlite database and check one table."
    )
    store_mod.store(personal, "sqlite", answer)
    store_mod.store(mem, "ops", bystander)
    common = ("a config file is read at start", "another worker takes over on failure", "the log file rotates daily")
    store_mod.batch(mem, [store_mod.BatchItem("misc", text) for text in (*FILLER, *common)])
    found = stores.search(mem, "attach database to copy a table from one sqlite file into another")
    assert found.matched == "and"
    assert [h.entry.topic for h in found.hits][:2] == ["~personal/sqlite", "ops"]
    assert found.hits[0].relevance == 1.0 > found.hits[1].relevance
    # Then what the ranking scores at least half as high as the best, whatever words it holds (here two short
    # notes holding "another" or "one", common words of so small a memory), as one memory lists them.
    rest = found.hits[2:]
    assert all(h.ranked and search_mod.RANKED_SHARE <= h.relevance < found.hits[1].relevance for h in rest)
    assert found.total == len(found.hits) and sum(found.per_topic.values()) == found.total
