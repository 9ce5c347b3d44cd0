"""Corpus sources and the search across corpora: `ground --corpus a,b|all` through the CLI and the MCP server, the
labels and the fusion, over two local corpora in a real git repo and a synced [[repository]]."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki.config import SearchConfig
from gitwiki.errors import UsageError
from gitwiki.search.searcher import ChunkResult, DocResult, SearchOptions, SearchResult
from gitwiki.sources.source import ALL, POOL, fuse, labelled, pooled, requested
from gitwiki.wiki import Wiki
from tests.mcp.client import call, connect, refused, run, text
from tests.sources.helpers import PAGES, sync


@pytest.fixture
def two(repo):
    repo.commit("init", PAGES)
    return repo


def ground(cli, cwd, query: str, *args: str) -> dict:
    code, out, err = cli("ground", "--json", *args, query, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("spec", ["all", "ops,dev", "dev, ops"])
def test_ground_over_several_corpora_is_one_ranking_labelled_by_corpus(two, cli, spec):
    found = ground(cli, two.path, "release canary", "--corpus", spec)
    labels = {(d["corpus"], d["path"]) for d in found["docs"]}
    assert {("ops", "ops/deploy.md"), ("dev", "dev/build.md")} <= labels
    assert sorted(found["corpora"]) == ["dev", "ops"] and all(len(c) == 40 for c in found["corpora"].values())
    scores = [d["score"] for d in found["docs"]]
    assert scores == sorted(scores, reverse=True)  # one ranking, not one corpus after the other
    code, out, err = cli("ground", "--corpus", spec, "release canary", cwd=two.path)
    assert code == 0, err
    assert "[ops] ops/deploy.md" in out and "[dev] dev/build.md" in out
    assert "corpora " in out.splitlines()[-1] and "ops at " in out.splitlines()[-1]


TWELVE = "[embeddings]\nenabled = false\n" + "".join(
    f'\n[[corpus]]\nname = "c{i:02}"\npath = "c{i:02}"\n' for i in range(12)
)


def test_a_search_of_twelve_corpora_ranks_the_page_holding_both_words_first(repo, cli):
    # Eleven corpora hold one of the query's words each, the last one the only page with both. Each corpus on its
    # own scale made every corpus's best page 1.0 and broke ties by corpus order: the two-word page came last.
    pages = {".gitwiki.toml": TWELVE}
    for i in range(11):
        word = ("remote", "rollback")[i % 2]
        pages[f"c{i:02}/note.md"] = f"# Note {i}\n\nThe {word} step of the release is described here.\n"
        pages[f"c{i:02}/other.md"] = f"# Other {i}\n\nFormat code with ruff before review.\n"
    pages["c11/both.md"] = "# Both\n\nA remote rollback undoes the release on every host.\n"
    pages["c11/other.md"] = "# Other 11\n\nFormat code with ruff before review.\n"
    repo.commit("twelve", pages)
    found = ground(cli, repo.path, "remote rollback", "--corpus", "all")
    assert len(found["corpora"]) == 12
    assert (found["docs"][0]["corpus"], found["docs"][0]["path"]) == ("c11", "c11/both.md")
    assert found["docs"][0]["score"] > found["docs"][1]["score"]  # above the rest, not a tie won by corpus order
    # the same pages as one corpus rank the same way, with the same scores
    one = ground(cli, repo.path, "remote rollback", "--corpus", ",".join(f"c{i:02}" for i in reversed(range(12))))
    assert [(d["path"], d["score"]) for d in one["docs"]] == [(d["path"], d["score"]) for d in found["docs"]]


def test_the_default_stays_one_corpus_without_labels(two, cli):
    found = ground(cli, two.path, "release canary")
    assert found["corpus"] == "ops" and "corpora" not in found
    assert all("corpus" not in d and d["path"].startswith("ops/") for d in found["docs"])


def test_an_unknown_corpus_among_several_is_named_before_any_search(two, cli):
    code, out, err = cli("ground", "--corpus", "ops,nope", "canary", cwd=two.path)
    assert code == 3 and out == ""
    assert "no corpus named 'nope'" in err and "ops" in err and "dev" in err
    code, _, err = cli("ground", "--corpus", ",", "canary", cwd=two.path)
    assert code == 2 and "give one name, several as a,b, or all" in err


def test_a_synced_repository_is_searched_beside_the_local_corpus_and_a_page_shows_once(checkout, cli):
    sync(cli, checkout.path)
    found = ground(cli, checkout.path, "kubernetes", "--corpus", "wiki,repo:platform:wiki,repo:platform:corpus")
    paths = [(d["corpus"], d["path"]) for d in found["docs"]]
    # deploy.md is in both of platform's corpora: shown once, under the first that ranks it best
    assert [p for _, p in paths].count("wiki/deploy.md") == 1
    assert ("repo:platform:corpus", "README.md") in paths
    every = ground(cli, checkout.path, "annual leave", "--corpus", "all")
    assert set(every["corpora"]) == {
        "wiki",
        "repo:platform:wiki",
        "repo:platform:corpus",
        "repo:handbook:wiki",
        "repo:handbook:corpus",
    }
    assert (every["docs"][0]["corpus"], every["docs"][0]["path"]) in {
        ("repo:handbook:wiki", "docs/holidays.md"),
        ("repo:handbook:corpus", "docs/holidays.md"),
    }


def test_all_leaves_out_repositories_not_synced_instead_of_fetching(checkout, cli):
    found = ground(cli, checkout.path, "local page", "--corpus", "all")
    assert list(found["corpora"]) == ["wiki"] and found["docs"][0]["corpus"] == "wiki"


def test_mcp_ground_takes_a_list_or_all(two):
    async def main():
        async with connect(two.path) as s:
            listed = (await call(s, "ground", query="release canary", corpus=["dev", "ops"])).structured_content
            every = (await call(s, "ground", query="release canary", corpus="all")).structured_content
            shown = await text(s, "ground", query="release canary", corpus=["ops", "dev"])
            error = await refused(s, "ground", query="canary", corpus=["ops", "nope"])
            return listed, every, shown, error

    listed, every, shown, error = run(main)
    for found in (listed, every):
        assert {d["corpus"] for d in found["docs"]} == {"ops", "dev"} and sorted(found["corpora"]) == ["dev", "ops"]
    assert "[ops] ops/deploy.md" in shown and "[dev] dev/build.md" in shown
    assert error.error.code == -32602 and "no corpus named 'nope'" in error.error.message


def test_each_kind_of_source_answers_for_its_corpus(two):
    wiki = Wiki.open(two.path)
    try:
        source = wiki.source("dev")
        assert source.name == "dev"
        assert [f.path for f in source.files()[1]] == ["build.md", "style.md"]
        assert source.read("build.md").text == PAGES["dev/build.md"]
        assert source.tree("", None)[1]["pages"] == 2
        shown, commits = source.history("build.md", 5)
        assert shown == "build.md" and len(commits) == 1
        assert source.status()["name"] == "dev" and source.truncated() == ()
        source.check_writable()  # this checkout's pages are writable
    finally:
        wiki.close()


def test_a_repository_source_refuses_writes_itself(checkout, cli):
    sync(cli, checkout.path, "platform")
    wiki = Wiki.open(checkout.path)
    try:
        source = wiki.source("repo:platform:wiki")
        assert source.read("deploy.md").absolute_path == ""
        with pytest.raises(UsageError, match="synced read-only"):
            source.check_writable()
        with pytest.raises(UsageError, match="synced read-only"):
            wiki.index("repo:platform:wiki")
    finally:
        wiki.close()


# ---- the pure parts ---------------------------------------------------------------------------------------------


def _options(**given) -> SearchOptions:
    return SearchOptions.build(SearchConfig(), **given)


def _result(corpus: str, scores: list[float], paths: list[str] | None = None) -> SearchResult:
    chunks = [ChunkResult([], 1, 2, 1.0, "a"), ChunkResult([], 3, 4, 0.5, "b")]
    docs = [
        DocResult(p, p, s, chunks)
        for p, s in zip(paths or [f"p{i}.md" for i in range(len(scores))], scores, strict=True)
    ]
    # as `search_corpora` hands each index's result to `fuse`: labelled by corpus
    return labelled(corpus, SearchResult("q", corpus, f"{corpus}-commit", "hybrid", docs))


class _Source:
    def __init__(self, name: str, holder: str = "") -> None:
        self.name = name
        self.holder = holder or name

    def page_key(self, path: str) -> tuple[str, str]:
        return (self.holder, path)


def test_fuse_puts_each_corpus_on_one_scale_before_merging():
    # "big" scores on a scale ten times "small"'s: raw scores would put all of big first
    big = _result("big", [9.0, 8.0, 2.0, 1.0])
    small = _result("small", [0.9, 0.8, 0.2, 0.1])
    fused = fuse([(_Source("big"), big), (_Source("small"), small)], _options(top_files=4))  # type: ignore[list-item]
    shown = [(d.corpus, d.path) for d in fused.docs]
    assert set(shown[:2]) == {("big", "p0.md"), ("small", "p0.md")}  # each corpus's best, then each one's second
    assert set(shown[2:]) == {("big", "p1.md"), ("small", "p1.md")}
    assert fused.corpus == "big,small" and fused.corpora == (("big", "big-commit"), ("small", "small-commit"))


def test_fuse_shows_a_page_reached_through_two_corpora_once():
    wiki = _result("repo:x:wiki", [3.0, 1.0], ["wiki/a.md", "wiki/b.md"])
    everything = _result("repo:x:corpus", [3.0, 2.0, 1.0], ["wiki/a.md", "README.md", "wiki/b.md"])
    fused = fuse(
        [(_Source("repo:x:wiki", "x"), wiki), (_Source("repo:x:corpus", "x"), everything)],  # type: ignore[list-item]
        _options(top_files=5),
    )
    assert [d.path for d in fused.docs].count("wiki/a.md") == 1 and len(fused.docs) == 3


def test_each_corpus_is_asked_for_a_pool_and_the_fused_answer_keeps_the_asked_sizes():
    asked = _options(top_files=3, chunks_per_file=2, limit=5)
    each = pooled(asked)
    assert each.top_files == POOL and each.limit == POOL * 2 and each.chunks_per_file == 2
    a, b = _result("a", [4.0, 3.0, 2.0, 1.0]), _result("b", [4.0, 3.0, 2.0, 1.0])
    fused = fuse([(_Source("a"), a), (_Source("b"), b)], asked)  # type: ignore[list-item]
    assert len(fused.docs) == 3 and [len(d.chunks) for d in fused.docs] == [2, 2, 1]  # 5 chunks in all


@given(st.one_of(st.none(), st.text(), st.lists(st.text())))
def test_requested_names_a_list_without_repeats_or_refuses(spec):
    known = {"ops", "a,b"}
    try:
        names = requested(spec, known.__contains__, lambda: ["ops", "dev"])
    except UsageError as e:
        assert "corpus" in str(e)
        return
    if names is None:
        assert spec is None or spec in known
    else:
        assert names and len(names) == len(set(names)) and all(n == n.strip() and n for n in names)
        if isinstance(spec, str) and spec.strip() == ALL:
            assert names == ["ops", "dev"]


def test_requested_keeps_a_known_name_with_a_comma_whole():
    assert requested("a,b", {"a,b"}.__contains__, list) is None
    assert requested(["x", "y", "x"], set().__contains__, list) == ["x", "y"]
    with pytest.raises(UsageError):
        requested([1], set().__contains__, list)  # type: ignore[list-item]


class _Keyed:
    """Vectors under the id the configuration names (as the ONNX models have them), one per word count."""

    dim = 2

    def __init__(self, config) -> None:
        from gitwiki.index.onnx_embed import model_key

        self.model_id = model_key(config)

    def embed_documents(self, texts):
        import numpy as np

        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text):
        import numpy as np

        v = np.array([text.count("zeta") + 0.1, text.count("kappa") + 0.1], dtype=np.float32)
        return v / np.linalg.norm(v)


def _first_query(repo, monkeypatch, lexical_index: bool, edit: bool = False) -> tuple[list[tuple[bool, set[str]]], int]:
    """A hybrid query asked while the model loads on another thread, over an index built with the model (or
    lexically), with one page edited and not committed (`edit`): each read of vectors (whether the model was still
    loading, the blobs read), and the pages."""
    import threading

    from gitwiki.index import embed
    from gitwiki.index.store import Store

    monkeypatch.setitem(embed.EMBEDDERS, "keyed", _Keyed)
    monkeypatch.setattr(embed, "_cache", {})
    pages = {f"wiki/page{i}.md": f"# Page {i}\n\nzeta {'kappa ' * i}\n" for i in range(6)}
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "keyed"\n'})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=lexical_index)
    if edit:
        repo.write("wiki/page0.md", "# Page 0\n\nzeta kappa, edited\n")
    read: list[tuple[bool, set[str]]] = []
    vectors = Store.vectors

    def noted(self, model, blobs):
        blobs = list(blobs)
        read.append((embed._loading.locked(), set(blobs)))
        return vectors(self, model, blobs)

    rows = Store.vector_rows

    def noted_rows(self, model, blobs):  # a first read, through the vector file (index.store.vector_file)
        blobs = list(blobs)
        read.append((embed._loading.locked(), set(blobs)))
        return rows(self, model, blobs)

    monkeypatch.setattr(Store, "vectors", noted)
    monkeypatch.setattr(Store, "vector_rows", noted_rows)
    asked = threading.Event()  # the query waits for the model from here on
    embedder = Wiki.embedder
    monkeypatch.setattr(Wiki, "embedder", lambda self: asked.set() or embedder(self))
    embed._cache.clear()  # as in a new owner: the model not loaded yet
    found: list[SearchResult] = []
    with embed._loading:  # the model's thread (embed.load_in_background) holds it while it loads
        assert embed.loading(wiki.config.embeddings)
        query = threading.Thread(target=lambda: found.append(wiki.search("kappa", mode="hybrid")))
        query.start()
        assert asked.wait(30)
    query.join(30)
    assert not embed.loading(wiki.config.embeddings)
    assert len(wiki.searcher._matrices) == 1  # the search's own: not a second copy of the rows read ahead
    wiki.close()
    assert found and found[0].mode == "hybrid" and len(found[0].docs) == 5
    return read, len(pages)


def test_a_query_reads_the_vectors_while_the_model_loads(repo, monkeypatch):
    """An owner's first hybrid query comes while its model loads on another thread: the indexed pages' vectors are
    read meanwhile, and the search that has waited for the model reads none of them again."""
    read, pages = _first_query(repo, monkeypatch, lexical_index=False)
    assert read[0][0] and len(read[0][1]) == pages
    assert all(not loading and not blobs for loading, blobs in read[1:])  # the search read no vector again


def test_the_rows_read_ahead_are_not_kept_twice(repo, monkeypatch):
    """With a page edited, the search's view is not the indexed state's: its matrix takes the rows read ahead and
    reads the edited page's alone, and the matrix read ahead is not kept beside it (39 MB at 20,000 tldr pages)."""
    read, pages = _first_query(repo, monkeypatch, lexical_index=False, edit=True)
    assert read[0][0] and len(read[0][1]) == pages
    assert [len(blobs) for loading, blobs in read[1:] if blobs] == [1]  # the edited page's version


def test_no_vectors_are_read_ahead_of_an_index_built_without_the_model(repo, monkeypatch):
    """A state indexed lexically holds pages with no vector or only some (a section shared with another page):
    read ahead, such a page's rows would be kept without the rest once they are embedded."""
    read, pages = _first_query(repo, monkeypatch, lexical_index=True)
    assert not any(loading for loading, _ in read)
    assert sum(len(blobs) for _, blobs in read) == pages  # read once, after the model made them
