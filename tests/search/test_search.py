"""Search reflects what the user sees: HEAD, the worktree on top, or any revision with --at."""

import json
import re
from collections.abc import Callable

import pytest

from gitwiki.config import SearchConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.index.tokens import tokenize
from gitwiki.search.relevance import Background, is_weak, judge, known_share
from gitwiki.search.searcher import SearchOptions
from gitwiki.wiki import Wiki
from tests.helpers import FakeCrossEncoder, SynonymEmbedder, needs_model

PAGES = {
    "wiki/keys.md": "# Keys\n\n## Rotate\n\nRotate the signing key every 90 days with vault.\n\n## "
    "Revoke\n\nRevoke leaked keys at once.\n",
    "wiki/deploy.md": "# Deploy\n\nWe deploy with argo to the kubernetes cluster.\n",
}
LEXICAL = "[embeddings]\nenabled = false\n"


@pytest.fixture
def lexical_repo(repo):
    repo.commit("pages", {**PAGES, ".gitwiki.toml": LEXICAL})
    return repo


def paths(result):
    return [d.path for d in result.docs]


def test_uncommitted_edit_and_untracked_page_are_searched(lexical_repo):
    wiki = Wiki.open(lexical_repo.path)
    lexical_repo.write("wiki/deploy.md", "# Deploy\n\nWe now deploy with nomad.\n")
    lexical_repo.write("wiki/new/garden.md", "# Garden\n\nWater the tomatoes daily.\n")
    assert paths(wiki.search("nomad")) == ["wiki/deploy.md"]
    result = wiki.search("tomatoes")
    assert paths(result) == ["wiki/new/garden.md"]
    assert result.dirty == ("wiki/deploy.md", "wiki/new/garden.md")
    assert "argo" not in " ".join(c.text for d in wiki.search("argo kubernetes").docs for c in d.chunks)
    assert paths(wiki.search("argo kubernetes", worktree=False)) == ["wiki/deploy.md"]


def test_worktree_deletion_hides_page(lexical_repo):
    wiki = Wiki.open(lexical_repo.path)
    (lexical_repo.path / "wiki/deploy.md").unlink()
    assert "wiki/deploy.md" not in paths(wiki.search("argo kubernetes deploy"))


def test_git_ignored_pages_are_never_searched(lexical_repo):
    lexical_repo.commit("ignore", {".gitignore": "wiki/private/\n"})
    lexical_repo.write("wiki/private/secret.md", "# Secret\n\nThe launch codes are here.\n")
    assert Wiki.open(lexical_repo.path).search("launch codes").docs == []


def test_at_searches_an_old_commit(lexical_repo):
    old = lexical_repo.git("rev-parse", "HEAD").strip()
    lexical_repo.commit("v2", {"wiki/deploy.md": "# Deploy\n\nWe deploy with nomad.\n"})
    lexical_repo.git("tag", "v2")
    wiki = Wiki.open(lexical_repo.path)
    assert paths(wiki.search("argo")) == []
    old_result = wiki.search("argo", at=old)
    assert paths(old_result) == ["wiki/deploy.md"] and old_result.commit == old
    assert "argo" in old_result.docs[0].chunks[0].text
    assert paths(wiki.search("nomad", at="v2")) == ["wiki/deploy.md"]
    with pytest.raises(NotFoundError, match="unknown revision"):
        wiki.search("argo", at="no-such-ref")


def test_stale_index_catches_up_before_answering(lexical_repo):
    wiki = Wiki.open(lexical_repo.path)
    wiki.index()
    lexical_repo.commit("new page", {"wiki/cooking.md": "# Cooking\n\nBake bread at 230 degrees.\n"})
    assert paths(wiki.search("bread")) == ["wiki/cooking.md"]
    assert wiki.status()[0].fresh


def test_result_options_shape_output(lexical_repo):
    wiki = Wiki.open(lexical_repo.path)
    result = wiki.search("keys rotate revoke deploy", top_files=1, chunks_per_file=1)
    assert len(result.docs) == 1 and len(result.docs[0].chunks) == 1
    long = wiki.search("rotate", full=True).docs[0].chunks[0].text
    short = wiki.search("rotate", snippet_chars=20).docs[0].chunks[0].text
    assert long.startswith("## Rotate\n") and len(short) <= 22


@pytest.mark.parametrize("kwargs", [{"top_files": 0}, {"mode": "fuzzy"}, {"limit": -1}])
def test_bad_options_are_usage_errors(lexical_repo, kwargs):
    with pytest.raises(UsageError):
        Wiki.open(lexical_repo.path).search("x", **kwargs)


def test_search_options_take_config_defaults_and_check_what_is_given():
    defaults = SearchConfig(mode="lexical", fusion="rrf", top_files=7, chunks_per_file=2, limit=9, snippet_chars=30)
    assert SearchOptions.build(defaults) == SearchOptions("lexical", "rrf", 7, 2, 9, 30, False)
    given = SearchOptions.build(defaults, mode="dense", fusion="score", top_files=1, limit=3, full=True)
    assert given == SearchOptions("dense", "score", 1, 2, 3, 30, True)
    for kwargs, message in [
        ({"mode": "fuzzy"}, "mode must be one of hybrid, lexical, dense, not 'fuzzy'"),
        ({"fusion": "max"}, "fusion must be one of rrf, score, not 'max'"),
        ({"top_files": 0}, "top_files must be a whole number ≥ 1, not 0"),
        ({"snippet_chars": -5}, "snippet_chars must be a whole number ≥ 1, not -5"),
    ]:
        with pytest.raises(UsageError, match=re.escape(message)):
            SearchOptions.build(defaults, **kwargs)


def test_empty_corpus_is_a_clear_error(repo):
    repo.commit("no pages", {"src/main.py": "print()\n", ".gitwiki.toml": LEXICAL})
    with pytest.raises(NotFoundError, match="has no pages"):
        Wiki.open(repo.path).search("anything")


@needs_model
@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_modes_find_the_right_page(repo, mode):
    repo.commit("pages", PAGES)
    result = Wiki.open(repo.path).search("how often do we change the signing key", mode=mode)
    assert result.mode == mode and paths(result)[0] == "wiki/keys.md"
    assert result.docs[0].chunks[0].breadcrumb == ["Keys", "Rotate"]


@needs_model
def test_a_warm_hybrid_query_takes_the_index_dir_from_the_open_index(repo, monkeypatch):
    """Working the dir out again resolves paths (0.15 ms a call, twice per warm hybrid query): a served query
    reads it from the index it has open."""
    import gitwiki.config

    repo.commit("pages", PAGES)
    wiki = Wiki.open(repo.path)
    first = wiki.search("how often do we change the signing key", mode="hybrid")
    worked_out = []
    real = gitwiki.config.index_dir
    monkeypatch.setattr(gitwiki.config, "index_dir", lambda *a: worked_out.append(a) or real(*a))
    again = wiki.search("how often do we change the signing key", mode="hybrid")
    assert again.mode == "hybrid" and again.to_json() == first.to_json()
    assert worked_out == []


@needs_model
def test_dense_finds_paraphrase_without_shared_words(repo):
    repo.commit("pages", {**PAGES, "wiki/food.md": "# Lunch\n\nThe canteen serves pasta on Fridays.\n"})
    result = Wiki.open(repo.path).search("where can I eat a meal", mode="dense")
    assert paths(result)[0] == "wiki/food.md"


def test_unloadable_model_falls_back_to_lexical_with_one_warning(repo, monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "no-model-here"))
    repo.commit("pages", PAGES)
    wiki = Wiki.open(repo.path)
    result = wiki.search("signing key")
    wiki.search("argo")
    assert result.mode == "lexical" and paths(result)[0] == "wiki/keys.md"
    err = capfd.readouterr().err
    assert err.count("warning") == 1 and "lexical" in err and "Traceback" not in err


@needs_model
def test_a_view_one_edit_away_reuses_the_cached_vectors_and_ranks_the_same(repo):
    repo.commit("pages", {**PAGES, "wiki/food.md": "# Lunch\n\nThe canteen serves pasta on Fridays.\n"})
    wiki = Wiki.open(repo.path)
    wiki.search("where can I eat a meal", mode="dense")
    repo.write("wiki/food.md", "# Lunch\n\nThe canteen serves pasta and soup on Fridays.\n")
    warm = wiki.search("where can I eat a meal", mode="dense")
    (old, new) = list(wiki.searcher._matrices.values())
    old_blobs, new_blobs = old.blobs.tolist(), new.blobs.tolist()
    assert len(new.ids) == len(old.ids) and new_blobs[: len(old.ids) - 1] == [b for b in old_blobs if b in new_blobs]
    cold = Wiki.open(repo.path).search("where can I eat a meal", mode="dense")
    assert warm.docs == cold.docs and paths(warm)[0] == "wiki/food.md"


def test_configured_reranker_reorders_the_fused_head(repo, cli, monkeypatch):
    from gitwiki.search import rerank

    monkeypatch.setattr(rerank, "LOADER", FakeCrossEncoder)
    monkeypatch.setattr(rerank, "_cache", {})
    pages = {
        "wiki/a.md": "# Deploy\n\nDeploy the service with the deploy script, deploy often.\n",
        "wiki/b.md": "# Notes\n\nHow to deploy: ask the zebra team, zebra approves.\n",
        "wiki/c.md": "# Other\n\nNothing about it.\n",
    }
    repo.commit("pages", {".gitwiki.toml": "[embeddings]\nenabled = false\n", **pages})
    code, out, _ = cli("ground", "deploy", "--json", cwd=repo.path)
    assert code == 0 and [d["path"] for d in json.loads(out)["docs"]][:2] == ["wiki/a.md", "wiki/b.md"]

    repo.commit(
        "rerank", {".gitwiki.toml": '[embeddings]\nenabled = false\n\n[search]\nreranker = "fake/cross-encoder"\n'}
    )
    code, out, err = cli("ground", "deploy", "--json", cwd=repo.path)
    assert code == 0, err
    docs = json.loads(out)["docs"]
    assert [d["path"] for d in docs][:2] == ["wiki/b.md", "wiki/a.md"]
    assert 1 < docs[1]["score"] < docs[0]["score"] < 2  # 1 + sigmoid(logit)
    assert FakeCrossEncoder.calls[-1] == ("deploy", 2)  # only the fused candidates, at most rerank_depth


def test_unavailable_reranker_warns_once_and_keeps_the_fused_order(repo, cli, monkeypatch):
    from gitwiki.errors import EmbeddingUnavailable
    from gitwiki.search import rerank

    def broken(model):
        raise EmbeddingUnavailable(f"cannot load reranker {model!r}")

    monkeypatch.setattr(rerank, "LOADER", broken)
    monkeypatch.setattr(rerank, "_cache", {})
    repo.commit(
        "pages",
        {
            ".gitwiki.toml": '[embeddings]\nenabled = false\n\n[search]\nreranker = "missing/model"\n',
            "wiki/a.md": "# Deploy\n\nDeploy it.\n",
        },
    )
    code, out, err = cli("ground", "deploy", "--json", cwd=repo.path)
    assert code == 0 and json.loads(out)["docs"][0]["path"] == "wiki/a.md"
    assert "cannot load reranker 'missing/model'" in err and "results keep the fused order" in err


def test_identifiers_are_found_as_written_and_the_exact_one_first(repo, cli):
    repo.commit(
        "pages",
        {
            ".gitwiki.toml": LEXICAL,
            "wiki/exports.md": "# Exports\n\nList the public names in `__all__` at the top of the module.\n",
            "wiki/all.md": "# All of it\n\nAll the names, all the time, for all of us.\n",
            "wiki/trial.md": "# Trial\n\nTry a sync first with `--dry-run`.\n",
            "wiki/run.md": "# Run\n\nA dry summer: run, run and run again in the dry heat.\n",
            "wiki/hooks.md": "# Hooks\n\nCall `attrs.resolve_types` once every class is defined.\n",
            "wiki/types.md": "# Types\n\nResolve the types of a class: types, types and types resolved.\n",
        },
    )
    for query, page in (
        ("__all__", "wiki/exports.md"),  # was "no results": "all" is a stop word
        ("--dry-run", "wiki/trial.md"),
        ("resolve_types", "wiki/hooks.md"),
    ):
        code, out, err = cli("ground", "--json", "--", query, cwd=repo.path)
        assert code == 0, err
        assert json.loads(out)["docs"][0]["path"] == page, (query, out)


def test_weak_flag_lexical(repo, cli):
    """Min-max fusion always puts something first; the weak flag says when that something is a guess."""
    repo.commit("pages", {".gitwiki.toml": "[embeddings]\nenabled = false\n", **PAGES})
    for query in ("the", "?!", "what is it"):  # no content word at all
        code, out, err = cli("ground", query, "--json", cwd=repo.path)
        assert code == 0, err
        assert json.loads(out)["weak"] is True, query
    code, out, _ = cli("ground", "rotate the signing key", "--json", cwd=repo.path)
    found = json.loads(out)
    assert found["weak"] is False and found["docs"][0] == {**found["docs"][0], "path": "wiki/keys.md", "weak": False}
    # One word of four ("vault") is under half: a weak match, though it is a match.
    code, out, _ = cli("ground", "vault quota billing invoices", "--json", cwd=repo.path)
    assert json.loads(out)["docs"][0]["path"] == "wiki/keys.md" and json.loads(out)["weak"] is True
    code, out, _ = cli("ground", "vault quota billing invoices", cwd=repo.path)
    assert out.startswith("weak match: no page below holds most of the words of 'vault quota billing invoices'")
    assert "(weak)" not in out and ", weak)" in out
    code, out, _ = cli("ground", "rotate the signing key", cwd=repo.path)
    assert "weak" not in out


def test_weak_flag_reads_the_indexed_terms_as_the_text_would_tokenize(repo):
    """The weak flag takes a best chunk's text terms from its FTS row: the same flags as tokenizing the title,
    breadcrumb and text, whether the title is the page's own or the file name's, with tags that the FTS row holds
    but the flag never counted."""
    pages = {
        ".gitwiki.toml": LEXICAL,
        **PAGES,
        "wiki/rollout-notes.md": "Rolling out: canary first, then the rest of the fleet.\n\n## Rollback\n\nArgo rollback.\n",
        "wiki/tagged.md": "---\ntags: [billing, quota]\n---\n# Invoices\n\nMonthly invoices go out by mail.\n",
    }
    repo.commit("pages", pages)
    wiki = Wiki.open(repo.path)
    queries = (
        "rotate the signing key",
        "vault quota billing invoices",
        "billing quota",
        "rollout canary fleet",
        "notes rollback",
        "argo kubernetes deploy",
        "monthly mail",
        "revoke leaked vault keys",
    )
    flags = []
    for query in queries:
        found = wiki.search(query, mode="lexical", full=True, top_files=10)
        content = set(tokenize(query))
        for doc in found.docs:
            best = doc.chunks[0]
            tokens = tokenize(" ".join((doc.title, *best.breadcrumb, best.text)))
            assert doc.weak is is_weak(content, set(tokens), None, None), (query, doc.path)
            flags.append(doc.weak)
    assert True in flags and False in flags
    wiki.close()


@needs_model
def test_weak_flag_hybrid_tells_a_deleted_topic_from_a_paraphrase(repo, cli):
    # The dense evidence is a z-score against every chunk searched, so the wiki needs more than a handful.
    topics = (
        "office plants and watering",
        "the lunch menu on Fridays",
        "parking permits for visitors",
        "expense reports and receipts",
        "holiday calendar for 2026",
        "printer toner orders",
        "fire drill assembly points",
        "bike storage in the basement",
        "new starter laptop set-up",
        "meeting room booking rules",
        "coffee machine descaling",
        "travel insurance for conferences",
        "the quarterly all-hands agenda",
        "recycling bins and compost",
        "parental leave policy",
        "desk ergonomics checklist",
        "guest wifi password changes",
        "team offsite in the mountains",
        "hiring interview rubric",
        "mentoring programme sign-up",
        "security badge replacement",
        "cloud spend reviewed monthly by finance",
        "argo deploys to the kubernetes cluster on Tuesdays",
        "pager rotation and incident escalation",
    )
    pages = {f"wiki/topic{i}.md": f"# {t.capitalize()}\n\nNotes on {t}.\n" for i, t in enumerate(topics)}
    pages["wiki/keys.md"] = (
        "# Signing keys\n\nRotate the signing key every 90 days with vault. Old keys stay valid for a week so "
        "that running deploys finish.\n"
    )
    repo.commit("pages", pages)
    code, out, err = cli("ground", "how often do we change the key we sign releases with?", "--json", cwd=repo.path)
    assert code == 0, err
    found = json.loads(out)
    assert found["mode"] == "hybrid" and found["docs"][0]["path"] == "wiki/keys.md"
    assert found["weak"] is False  # few shared words, but the meaning stands out
    repo.git("rm", "-q", "wiki/keys.md")
    repo.commit("keys page deleted")
    code, out, _ = cli("ground", "how often do we change the key we sign releases with?", "--json", cwd=repo.path)
    assert json.loads(out)["weak"] is True


def test_hybrid_adds_up_a_pages_words_and_meaning_held_by_different_sections(repo, monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    pages = {
        # The words in one section, the meaning in another.
        "wiki/explains.md": "# Explains\n\n## Words\n\nzeta zeta zeta\n\n## Sense\n\nkappa\n",
        # Both in one section, each weaker.
        "wiki/mentions.md": "# Mentions\n\nzeta kappa kappa kappa\n",
        "wiki/other.md": "# Other\n\nzeta" + " filler" * 40 + "\n",
        **{f"wiki/pad{i}.md": f"# Pad {i}\n\nnothing to see\n" for i in range(6)},  # zeta is a rare word
    }
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})
    wiki = Wiki.open(repo.path)
    assert paths(wiki.search("zeta omega", mode="hybrid"))[:2] == ["wiki/explains.md", "wiki/mentions.md"]
    # Chunk by chunk alone (no page share) and min-max normalized (which stretches the dense list's small
    # differences as far as the lexical list's), the page with both in one section wins: what page fusion corrects.
    # The [search] settings reach every search.
    repo.commit(
        "settings",
        {
            ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n[search]\npage_share = 0.0\nnormalization = "minmax"\n'
        },
    )
    wiki = Wiki.open(repo.path)
    assert paths(wiki.search("zeta omega", mode="hybrid"))[:2] == ["wiki/mentions.md", "wiki/explains.md"]


def test_weak_flag_hybrid_marks_a_query_whose_words_the_wiki_does_not_hold(repo, cli, monkeypatch):
    """The best of many chunks always stands out a little; a query whose words the index does not hold at all
    (gibberish, another topic) is weak however far its best cosine stands out."""
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    pages = {
        "wiki/sense.md": "# Sense\n\nkappa kappa\n",  # what the embedder reads as the meaning of "omega"
        **{f"wiki/pad{i}.md": f"# Pad {i}\n\nnothing to see\n" for i in range(30)},
    }
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})
    for query, weak in (("omega blorf", True), ("omega see", False), ("omega pad", False)):
        code, out, err = cli("ground", query, "--json", "--explain", cwd=repo.path)
        assert code == 0, err
        found = json.loads(out)
        first = found["docs"][0]
        assert found["mode"] == "hybrid" and first["path"] == "wiki/sense.md", query
        seen = first["explain"]["weak"]
        assert seen["coverage"] == 0.0 and seen["z"] > seen["needs_z"], (query, seen)  # a standout either way
        assert found["weak"] is weak and seen["known"] == (0.0 if weak else 0.5), (query, seen)
    code, out, _ = cli("ground", "omega blorf", "--explain", cwd=repo.path)
    assert out.startswith("weak match:") and "query terms in the index 0.00 (the z counts from 0.5)" in out


def test_a_weak_judgement_needs_the_query_words_known_for_the_dense_standout_to_count():
    standout = Background(0.04, 0.05)  # a cosine of 0.25 is 4.2 deviations out
    assert judge({"zxqv", "blorf"}, [], 0.25, standout, known=0.0).weak
    assert not judge({"rotat", "key"}, [], 0.25, standout, known=0.5).weak
    assert judge({"rotat", "key"}, [], 0.25, None, known=1.0).weak  # lexical: coverage alone speaks
    assert not judge({"rotat", "key"}, ["rotat", "key"], None, None, known=0.0).weak
    assert known_share({"a", "b", "c", "d"}, {"a": 3, "b": 0, "c": 1}) == 0.5
    assert known_share(set(), {}) == 1.0


def test_a_weak_judgement_asks_for_the_known_share_only_when_the_verdict_depends_on_it():
    standout, flat = Background(0.04, 0.05), Background(0.2, 0.05)
    asked: list[str] = []

    def known(share: float) -> Callable[[], float]:
        return lambda: asked.append("known") or share  # type: ignore[func-returns-value]

    # covered, no standout, lexical: decided without it, and the record says it was not looked up
    for judged in (
        judge({"rotat", "key"}, ["rotat", "key"], 0.25, standout, known(0.0)),
        judge({"rotat", "key"}, [], 0.25, flat, known(1.0)),
        judge({"rotat", "key"}, [], None, None, known(1.0)),
    ):
        assert judged.known is None and judged.to_json()["known"] is None
    assert asked == []
    judged = judge({"zxqv", "blorf"}, [], 0.25, standout, known(0.0))
    assert judged.weak and judged.known == 0.0 and asked == ["known"]
    assert judge({"rotat", "key"}, [], 0.25, standout, known(0.5)) == judge(
        {"rotat", "key"}, [], 0.25, standout, known=0.5
    )


def test_a_hybrid_search_looks_up_the_query_terms_in_the_index_only_for_a_verdict_or_a_trace(repo, monkeypatch):
    from gitwiki.index import embed
    from gitwiki.index.store import Store

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    pages = {
        "wiki/sense.md": "# Sense\n\nkappa kappa\n",
        **{f"wiki/pad{i}.md": f"# Pad {i}\n\nnothing to see\n" for i in range(30)},
    }
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})
    looked_up: list[set[str]] = []
    term_chunks = Store.term_chunks

    def counted(self: Store, terms: set[str]) -> dict[str, int]:
        looked_up.append(set(terms))
        return term_chunks(self, terms)

    monkeypatch.setattr(Store, "term_chunks", counted)
    wiki = Wiki.open(repo.path)
    found = wiki.search("pad nothing", mode="hybrid")  # every page shown holds the words: no verdict needs it
    assert found.docs and not found.weak and looked_up == []
    found = wiki.search("omega blorf", mode="hybrid")  # a standout holding none of them: the index decides
    assert found.docs[0].path == "wiki/sense.md" and found.weak and looked_up == [{"omega", "blorf"}]
    looked_up.clear()
    traced = wiki.search("pad nothing", mode="hybrid", explain=True)
    trace = traced.docs[0].explain
    assert looked_up == [{"pad", "noth"}] and trace is not None and trace.weak is not None and trace.weak.known == 1.0


def test_search_settings_weigh_the_rankers_and_bound_their_candidates(repo, monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    pages = {
        "wiki/words.md": "# Words\n\nzeta zeta zeta\n",  # the query's word, no meaning
        "wiki/sense.md": "# Sense\n\nkappa kappa\n",  # the meaning, no word
        **{f"wiki/pad{i}.md": f"# Pad {i}\n\nzeta{' filler' * (i + 1)}\n" for i in range(6)},
    }
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})

    def first(settings: str) -> str:
        repo.write(".gitwiki.toml", '[embeddings]\nprovider = "synonyms"\n[search]\n' + settings)
        return paths(Wiki.open(repo.path).search("zeta omega", mode="hybrid"))[0]

    assert first("fusion_weight = 1.0\n") == "wiki/words.md"  # the lexical ranking alone decides
    assert first("fusion_weight = 0.0\n") == "wiki/sense.md"  # the dense one alone
    repo.write(".gitwiki.toml", '[embeddings]\nprovider = "synonyms"\n[search]\ndepth = 2\n')
    wiki = Wiki.open(repo.path)
    rankings, _ = wiki.searcher.candidates(wiki.view(vectors=True), "zeta omega", wiki.embedder(), 1)
    assert [len(r) for r in rankings] == [2, 2]  # 7 pages hold zeta, and 8 have vectors


def test_dense_candidates_take_further_pages_when_one_page_owns_the_top(repo, monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", SynonymEmbedder)
    big = "# Big\n\n" + "".join(f"## Part {i}\n\nkappa kappa kappa\n\n" for i in range(4))
    pages = {"wiki/big.md": big, **{f"wiki/pad{i}.md": f"# Pad {i}\n\nkappa{' filler' * (i + 1)}\n" for i in range(4)}}
    config = '[embeddings]\nprovider = "synonyms"\n[search]\ndepth = 2\n'
    repo.commit("pages", {**pages, ".gitwiki.toml": config})
    wiki = Wiki.open(repo.path)
    for pages_asked, pages_given in ((1, ["wiki/big.md"]), (3, ["wiki/big.md", "wiki/pad0.md", "wiki/pad1.md"])):
        rankings, page_of = wiki.searcher.candidates(wiki.view(vectors=True), "omega", wiki.embedder(), pages_asked)
        dense = rankings[-1]
        assert list(dict.fromkeys(page_of[cid] for cid, _ in dense)) == pages_given
        assert [score for _, score in dense] == sorted((score for _, score in dense), reverse=True)
    assert wiki.search("omega", mode="dense", top_files=3).docs[2].path == "wiki/pad1.md"


def test_a_new_hybrid_query_ranks_by_bm25_on_another_thread_while_it_is_embedded(repo, monkeypatch):
    """BM25 beside the model (`Searcher._beside`): the same answer as one ranker after the other, the model run on the
    calling thread, and a failed embedding raised only once BM25's statement is done."""
    import threading

    from gitwiki.index import embed
    from gitwiki.search.searcher import Searcher

    threads: dict[str, list[str]] = {"query": [], "bm25": []}

    class Noting(SynonymEmbedder):
        def embed_query(self, text):
            threads["query"].append(threading.current_thread().name)
            if text == "fails":
                raise RuntimeError("the model broke")
            return super().embed_query(text)

    lexical = Searcher._lexical

    def noted(self, *args):
        threads["bm25"].append(threading.current_thread().name)
        return lexical(self, *args)

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", Noting)
    monkeypatch.setattr(embed, "_cache", {})
    monkeypatch.setattr(Searcher, "_lexical", noted)
    pages = {
        "wiki/sense.md": "# Sense\n\nkappa zeta\n",
        **{f"wiki/pad{i}.md": f"# Pad {i}\n\nzeta\n" for i in range(8)},
    }
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})
    wiki = Wiki.open(repo.path)
    wiki.search("warm", mode="hybrid")  # reads the dense matrix: one ranker after the other
    threads["query"].clear(), threads["bm25"].clear()
    beside = wiki.search("zeta omega", mode="hybrid", explain=True)
    again = wiki.search("zeta omega", mode="hybrid", explain=True)  # its vector kept: one after the other
    assert beside == again and beside.docs[0].path == "wiki/sense.md"
    assert threads["query"] == ["MainThread"]
    assert threads["bm25"][0].startswith("gitwiki-bm25") and threads["bm25"][1] == "MainThread"
    with pytest.raises(RuntimeError, match="the model broke"):
        wiki.search("fails", mode="hybrid")
    assert threads["bm25"][-1].startswith("gitwiki-bm25")
    assert wiki.search("zeta omega", mode="hybrid", explain=True) == beside  # the index read as before


def test_a_hybrid_query_asked_again_is_not_embedded_again(repo, monkeypatch):
    """A long-lived process (the owner of a checkout) keeps the vectors of recent queries: the same answer, no
    model run."""
    from gitwiki.index import embed

    asked: list[str] = []

    class Counting(SynonymEmbedder):
        def embed_query(self, text):
            asked.append(text)
            return super().embed_query(text)

    monkeypatch.setitem(embed.EMBEDDERS, "synonyms", Counting)
    monkeypatch.setattr(embed, "_cache", {})  # not the instance an earlier test loaded
    pages = {"wiki/sense.md": "# Sense\n\nkappa zeta\n", "wiki/pad.md": "# Pad\n\nnothing\n"}
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nprovider = "synonyms"\n'})
    wiki = Wiki.open(repo.path)
    first = wiki.search("zeta omega", mode="hybrid")
    embedded = len(asked)  # the model's dimension probe, the query
    assert wiki.search("zeta omega", mode="hybrid") == first
    assert wiki.search("zeta omega", mode="dense").docs[0].path == "wiki/sense.md"
    assert len(asked) == embedded and asked.count("zeta omega") == 1
    wiki.search("omega", mode="hybrid")
    assert asked[-1] == "omega"


class _Matches:
    """The three store calls `Searcher._matches` makes, over a chunk table the test changes."""

    def __init__(self) -> None:
        self.blob_of = {1: "a", 2: "a", 3: "b"}
        self.changes = 0
        self.joined = 0
        self.looked_up: list[list[int]] = []

    def lexical_ranked(self, match, limit):
        return [(cid, 1.0 / cid) for cid in sorted(self.blob_of)][:limit]

    def lexical(self, match, limit):
        self.joined += 1
        return [(cid, self.blob_of[cid], score) for cid, score in self.lexical_ranked(match, limit)]

    def generation(self):
        return (0, self.changes)

    def chunk_blobs(self, ids):
        self.looked_up.append(list(ids))
        return {cid: self.blob_of[cid] for cid in ids if cid in self.blob_of}


def test_bm25_candidates_keep_each_chunks_blob_until_the_database_changes():
    from gitwiki.search.searcher import Searcher

    store = _Matches()
    searcher = Searcher(store)  # type: ignore[arg-type]
    assert searcher._matches("x", 10) == [(1, "a", 1.0), (2, "a", 0.5), (3, "b", 1 / 3)]
    assert store.joined == 1  # nothing kept yet: the join, whose blobs are kept
    assert searcher._matches("x", 10) == [(1, "a", 1.0), (2, "a", 0.5), (3, "b", 1 / 3)]
    assert store.joined == 1 and store.looked_up == []  # the second search joined and looked up nothing
    store.blob_of[4] = "d"  # a chunk added by this connection's own write: a new generation
    store.changes += 1
    assert searcher._matches("x", 10)[3] == (4, "d", 0.25)
    assert store.joined == 2
    store.blob_of = {1: "a", 2: "a", 3: "c", 4: "d"}  # chunk 3 deleted and its id given to a chunk of another page
    store.changes += 1
    assert searcher._matches("x", 10)[2] == (3, "c", 1 / 3)
    searcher._blobs[1].pop(2)  # one blob not kept: looked up alone
    assert searcher._matches("x", 10)[1] == (2, "a", 0.5)
    assert store.looked_up == [[2]] and store.joined == 3


def test_bm25_candidates_match_the_index_across_another_processs_reindex(lexical_repo):
    """The blobs kept by a warm searcher follow a re-index made through another connection (deleted chunks' ids
    given again), as the join with `chunks` did."""
    warm = Wiki.open(lexical_repo.path)
    assert paths(warm.search("argo")) == ["wiki/deploy.md"]
    lexical_repo.commit("move", {"wiki/deploy.md": "# Deploy\n\nWe ship by hand.\n", "wiki/keys.md": "argo keys\n"})
    other = Wiki.open(lexical_repo.path)
    assert paths(other.search("argo")) == ["wiki/keys.md"]
    other.prune(set())
    other.close()
    assert paths(warm.search("argo")) == ["wiki/keys.md"]
    assert paths(warm.search("hand")) == ["wiki/deploy.md"]
    store = warm.searcher.store
    with store.read():
        from gitwiki.index.tokens import fts_query

        for word in ("argo", "hand", "keys", "deploy"):
            match = fts_query(word) or ""
            assert warm.searcher._matches(match, 100) == store.lexical(match, 100)
