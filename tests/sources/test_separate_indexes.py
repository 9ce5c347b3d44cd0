"""Corpora in separate index files (the checkout's, each synced [[repository]]'s) searched together on one scale:
BM25 with the statistics of every index searched (`index.statistics`), candidates merged and fused once
(`search.shards`, `sources.source.search_shards`), so that they rank as the same pages in one index would."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from gitwiki.index.statistics import TermStats, bm25, union
from gitwiki.index.tokens import fts_query, query_terms
from gitwiki.search.ranking import Candidates
from gitwiki.search.relevance import Background
from gitwiki.search.searcher import Pool
from gitwiki.search.shards import background, kept, merge
from gitwiki.wiki import Wiki
from tests.helpers import GitRepoFixture, needs_model

LEXICAL = "[embeddings]\nenabled = false\n"


def ground(cli, cwd: Path, query: str, *args: str) -> dict:
    code, out, err = cli("ground", "--json", *args, query, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def test_bm25_from_the_index_statistics_is_fts5s_own(repo):
    # Rows of different lengths, a word in a heading (weight 2) and in the text, words rare and common.
    rng = random.Random(7)
    words = "release rollback remote canary deploy tag host ruff format review".split()
    pages = {".gitwiki.toml": LEXICAL + '[[corpus]]\nname = "wiki"\npath = "wiki"\n'}
    for i in range(30):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(3, 120)))
        pages[f"wiki/p{i}.md"] = (
            f"# {rng.choice(words).title()} {i}\n\n{body}\n\n## {rng.choice(words)}\n\n{body[:80]}\n"
        )
    repo.commit("pages", pages)
    wiki = Wiki.open(repo.path)
    wiki.index()
    store = wiki.store
    for query in ("remote rollback", "canary", "format the review of a tag", "deploy deploy host"):
        with store.read():
            found = store.lexical(fts_query(query) or "", 1000)
            stats = store.term_stats(query_terms(query))
            counts = store.term_counts([cid for cid, _, _ in found], query_terms(query))
        assert found and stats.rows == store.chunk_total()
        for cid, _, score in found:
            assert bm25(*counts[cid], stats) == pytest.approx(score, rel=1e-9, abs=1e-12), (query, cid)


def test_union_statistics_add_up_and_an_absent_term_scores_nothing():
    a, b = TermStats(10, 200, {"x": 2}), TermStats(30, 400, {"x": 1, "y": 5})
    assert union([a, b]) == TermStats(40, 600, {"x": 3, "y": 5})
    assert bm25({"x": 0.0, "y": 0.0}, 20, union([a, b])) == 0.0
    # a term in every row still counts a little (FTS5's floor), and a rarer term more than a common one
    every = TermStats(4, 40, {"x": 4, "y": 1})
    assert 0 < bm25({"x": 1.0}, 10, every) < bm25({"y": 1.0}, 10, every)


def test_merged_pools_keep_the_best_chunks_of_all_and_a_page_of_two_indexes_once():
    lexical_a = [(1, 9.0), (2, 3.0)]
    lexical_b = [(1, 7.0), (5, 1.0)]
    a = Pool(Candidates({"lexical": lexical_a}, {1: "x.md", 2: "y.md"}, "lexical"), None, 0)
    b = Pool(Candidates({"lexical": lexical_b}, {1: "x.md", 5: "z.md"}, "lexical"), None, 0)
    # b's x.md is the same page as a's (one repository declared twice): a's is kept
    merged = merge([a, b], [lambda p: ("one", p), lambda p: ("one", p) if p == "x.md" else ("two", p)], 2, 3)
    ranked = merged.found.rankings["lexical"]
    pages = [merged.pages[merged.found.page_of[cid]] for cid, _ in ranked]
    assert pages == [(0, "x.md"), (0, "y.md"), (1, "z.md")]  # the best 2, then one chunk of a third page
    assert [s for _, s in ranked] == [9.0, 3.0, 1.0]
    assert [merged.origin[cid] for cid, _ in ranked] == [(0, 1), (0, 2), (1, 5)]
    # what each index judges its pages by: its candidates the merge kept, in its own chunk ids
    assert kept(merged, 1, b).found.rankings == {"lexical": [(5, 1.0)]}
    assert kept(merged, 0, a).found.rankings == {"lexical": lexical_a}


def test_the_background_of_several_indexes_is_that_of_all_their_chunks():
    rng = random.Random(3)
    parts = [[rng.gauss(0.2 * i, 0.1 + i / 10) for _ in range(n)] for i, n in enumerate((5, 40, 17))]

    def of(scores: list[float]) -> Background:
        mean = sum(scores) / len(scores)
        return Background(mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)))

    empty = Candidates({}, {}, "hybrid")
    pooled = background([Pool(empty, of(p), len(p)) for p in parts] + [Pool(empty, None, 0)])
    every = of([s for p in parts for s in p])
    assert pooled is not None
    assert pooled.mean == pytest.approx(every.mean) and pooled.std == pytest.approx(every.std)
    assert background([Pool(empty, None, 0)]) is None


def _twelve(i: int) -> dict[str, str]:
    """Corpus i of twelve: a note with one of the query's words (both in the last), and an unrelated page."""
    if i == 11:
        note = ("both.md", "# Both\n\nA remote rollback undoes the release on every host.\n")
    else:
        note = (
            "note.md",
            f"# Note {i}\n\nThe {('remote', 'rollback')[i % 2]} step of the release is described here.\n",
        )
    return {
        f"c{i:02}/{note[0]}": note[1],
        f"c{i:02}/other.md": f"# Other {i}\n\nFormat code with ruff before review.\n",
    }


LOCAL_PAGE = {"wiki/readme.md": "# Readme\n\nWhere the team keeps its notes.\n"}


def _repo(path: Path) -> GitRepoFixture:
    path.mkdir()
    return GitRepoFixture(path.resolve())


def _separate(tmp_path: Path, cli, config: str) -> GitRepoFixture:
    """A checkout with one page of its own and twelve path [[repository]] entries, each a repository holding one
    corpus of `_twelve`, allowed and synced: thirteen index files."""
    entries = ""
    for i in range(12):
        other = _repo(tmp_path / f"r{i:02}")
        other.commit("pages", _twelve(i))
        entries += f'\n[[repository]]\nname = "c{i:02}"\npath = "{other.path}"\nwiki = "c{i:02}"\n'
    checkout = _repo(tmp_path / "checkout")
    checkout.commit("init", {".gitwiki.toml": config + entries, **LOCAL_PAGE})
    for args in (("repo", "allow"), ("repo", "sync")):
        code, _, err = cli(*args, cwd=checkout.path)
        assert code == 0, err
    return checkout


def _one_index(tmp_path: Path, config: str) -> GitRepoFixture:
    """The same pages as `_separate`, in one checkout of thirteen corpora: one index file."""
    pages = {k: v for i in range(12) for k, v in _twelve(i).items()}
    corpora = "".join(f'\n[[corpus]]\nname = "c{i:02}"\npath = "c{i:02}"\n' for i in range(12))
    one = _repo(tmp_path / "one")
    one.commit("init", {".gitwiki.toml": config + corpora, **pages, **LOCAL_PAGE})
    return one


WIKI = '[[corpus]]\nname = "wiki"\npath = "wiki"\n'


def test_twelve_corpora_in_separate_index_files_rank_the_page_holding_both_words_first(tmp_path, cli):
    # Each corpus on its own scale made every index's best page score alike: the two-word page came last of 12.
    checkout = _separate(tmp_path, cli, LEXICAL + WIKI)
    found = ground(cli, checkout.path, "remote rollback", "--corpus", "all")
    assert len(found["corpora"]) == 25  # the checkout's corpus and two of each repository's
    assert (found["docs"][0]["corpus"], found["docs"][0]["path"]) == ("repo:c11:wiki", "c11/both.md")
    assert found["docs"][0]["score"] > found["docs"][1]["score"]
    # the same pages in one index file rank the same, with the same scores: one BM25 over the same statistics
    one = ground(cli, _one_index(tmp_path, LEXICAL + WIKI).path, "remote rollback", "--corpus", "all")
    assert [(d["path"], d["score"]) for d in found["docs"]] == [(d["path"], d["score"]) for d in one["docs"]]
    # and the order the corpora are named in changes nothing
    names = [f"repo:c{i:02}:wiki" for i in reversed(range(12))] + ["wiki"]
    again = ground(cli, checkout.path, "remote rollback", "--corpus", ",".join(names))
    assert [(d["path"], d["score"]) for d in again["docs"]] == [(d["path"], d["score"]) for d in found["docs"]]


@needs_model
def test_separate_index_files_rank_as_one_index_in_hybrid_mode(tmp_path, cli):
    checkout = _separate(tmp_path, cli, WIKI)
    one = _one_index(tmp_path, WIKI)
    for query in ("remote rollback", "how do we format code", "undo a release"):
        found = ground(cli, checkout.path, query, "--corpus", "all", "--top-files", "8")
        same = ground(cli, one.path, query, "--corpus", "all", "--top-files", "8")
        assert found["mode"] == same["mode"] == "hybrid"
        assert [d["path"] for d in found["docs"]] == [d["path"] for d in same["docs"]], query
        assert [d["score"] for d in found["docs"]] == pytest.approx([d["score"] for d in same["docs"]], abs=1e-5)
        assert [d["weak"] for d in found["docs"]] == [d["weak"] for d in same["docs"]]


def test_the_shared_table_searched_beside_the_checkout_ranks_as_one_index(tmp_path, cli):
    # A team's pages in the shared LanceDB table, the reader's own page in its checkout: the table's BM25 over the
    # terms the SQLite index holds, with the statistics of both, as one index holding all the pages would score.
    from gitwiki import config as config_mod
    from gitwiki.search.lance_index import LanceReader
    from gitwiki.search.searcher import SearchOptions
    from gitwiki.sources.shared_index import SharedIndex
    from gitwiki.sources.source import search_corpora

    uri = str(tmp_path / "lance")
    team = _repo(tmp_path / "team")
    corpora = "".join(f'\n[[corpus]]\nname = "c{i:02}"\npath = "c{i:02}"\n' for i in range(12))
    pages = {k: v for i in range(12) for k, v in _twelve(i).items()}
    team.commit("init", {".gitwiki.toml": LEXICAL + f'[storage]\nuri = "{uri}"\n' + corpora, **pages})
    code, _, err = cli("lance", "export", cwd=team.path)
    assert code == 0, err
    mine = _repo(tmp_path / "mine")
    mine.commit("init", {".gitwiki.toml": LEXICAL + WIKI, **LOCAL_PAGE})
    wiki = Wiki.open(mine.path)
    wiki.index()
    shared = SharedIndex(LanceReader(uri), config_mod.load(team.path))
    names = ["wiki", *(f"c{i:02}" for i in range(12))]

    def source(name: str | None):
        return wiki.source(name) if name == "wiki" else shared.source(name)

    options = SearchOptions.build(wiki.config.search)
    found = search_corpora("remote rollback", names, options, source, lambda _: False, lambda: names)
    assert (found.docs[0].corpus, found.docs[0].path) == ("c11", "c11/both.md")
    assert found.docs[0].score > found.docs[1].score
    assert dict(found.corpora).keys() == set(names)
    one = ground(cli, _one_index(tmp_path, LEXICAL + WIKI).path, "remote rollback", "--corpus", "all")
    assert [d.path for d in found.docs] == [d["path"] for d in one["docs"]]
    assert [d.score for d in found.docs] == pytest.approx([d["score"] for d in one["docs"]], abs=1e-6)
    # the table's corpora alone are one shard too: one BM25 over the table, not twelve lists merged
    code, out, err = cli("ground", "--json", "--uri", uri, "--corpus", "all", "remote rollback", cwd=mine.path)
    assert code == 0, err
    alone = json.loads(out)["docs"]
    assert (alone[0]["corpus"], alone[0]["path"]) == ("c11", "c11/both.md") and alone[0]["score"] > alone[1]["score"]
    # the reader's own page is found beside the table's, labelled with its corpus
    mixed = search_corpora("where the team keeps notes", names, options, source, lambda _: False, lambda: names)
    assert (mixed.docs[0].corpus, mixed.docs[0].path) == ("wiki", "wiki/readme.md")


def test_a_cut_averages_record_is_a_damaged_index(repo):
    from gitwiki.index.store import IndexDamaged

    repo.commit("pages", {".gitwiki.toml": LEXICAL, "wiki/a.md": "# A\n\nremote rollback\n"})
    wiki = Wiki.open(repo.path)
    wiki.index()
    store = wiki.store
    with store.read():
        assert store.term_stats(["remot"]).holding == {"remot": 1}
    with store.lock(), store.write():
        store.conn.execute("UPDATE fts_data SET block = x'82' WHERE id = 1")  # a varint that says more follows
    with pytest.raises(IndexDamaged, match="averages record is cut short"), store.read():
        store.term_stats(["remot"])
