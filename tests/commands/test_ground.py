"""`gitwiki ground --explain`, driven through the CLI's entry point: the numbers shown are the ones that made
the order."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs_model

PAGES = {
    "wiki/keys.md": "# Keys\n\n## Rotate\n\nRotate the signing key every 90 days with vault.\n\n## Revoke\n\n"
    "Revoke leaked signing keys at once, then rotate.\n",
    "wiki/deploy.md": "# Deploy\n\nWe deploy with argo to the kubernetes cluster; the signing of images is "
    "done by the pipeline.\n",
    "wiki/oncall.md": "# On-call\n\nThe on-call engineer holds the vault key for emergencies.\n",
    "wiki/style.md": "# Style\n\nShort sentences.\n",
}
QUERY = "rotate the signing key"


@pytest.fixture
def explained(repo, cli):
    def ground(config: str, *args: str) -> dict:
        repo.commit("wiki", {**PAGES, ".gitwiki.toml": config})
        code, out, err = cli("ground", QUERY, "--json", "--no-server", *args, cwd=repo.path)
        assert code == 0, err
        return json.loads(out)

    return ground


def _lexical_places(docs: list[dict]) -> dict[str, int]:
    return {d["path"]: i for i, d in enumerate(docs, 1)}


def test_explain_in_lexical_mode_is_the_raw_bm25_order(explained):
    found = explained("[embeddings]\nenabled = false\n", "--explain")
    docs = found["docs"]
    assert len(docs) >= 3
    for place, doc in enumerate(docs, 1):
        why = doc["explain"]
        assert why["normalization"] == "raw" and why["page_fusion"] is None and why["second_share"] == 0
        assert why["rankers"]["lexical"]["rank"] == place and "dense" not in why["rankers"]
        assert why["score"] == doc["score"] == why["rankers"]["lexical"]["raw"] == why["chunk_score"]
        assert why["weak"]["weak"] is doc["weak"] and why["weak"]["background"] is None
    assert docs[0]["explain"]["weak"]["coverage"] >= 0.5 > docs[-1]["explain"]["weak"]["coverage"]


def test_without_explain_the_json_is_unchanged(explained):
    docs = explained("[embeddings]\nenabled = false\n")["docs"]
    assert docs and all("explain" not in d for d in docs)


@needs_model
def test_explain_in_hybrid_mode_shows_what_each_ranker_and_the_rollup_gave(explained, repo, cli):
    docs = explained("", "--explain", "--top-files", "4")["docs"]
    assert [d["explain"]["score"] for d in docs] == [d["score"] for d in docs]
    assert docs[0]["explain"]["score"] >= docs[1]["explain"]["score"] >= docs[2]["explain"]["score"]
    code, out, _ = cli("ground", QUERY, "--json", "--no-server", "--mode", "lexical", cwd=repo.path)
    lexical = _lexical_places(json.loads(out)["docs"])
    code, out, _ = cli("ground", QUERY, "--json", "--no-server", "--mode", "dense", cwd=repo.path)
    dense = _lexical_places(json.loads(out)["docs"])
    for doc in docs:
        why = doc["explain"]
        assert why["normalization"] == "dbsf" and why["page_share"] == 0.5
        if doc["path"] in lexical:  # the page's lexical rank is its place in a lexical-only search
            assert why["rankers"]["lexical"]["rank"] == lexical[doc["path"]]
        assert why["rankers"]["dense"]["rank"] == dense[doc["path"]]
        base = 0.5 * why["chunk_score"] + 0.5 * why["page_fusion"]
        assert why["base"] == pytest.approx(base, abs=1e-5)
        second = why["second_share"] * (why["second_chunk"] or 0.0)
        assert why["score"] == pytest.approx(why["base"] + second, abs=1e-5)
        weak = why["weak"]
        assert weak["background"]["std"] > 0 and weak["weak"] is doc["weak"]
        z = (weak["cosine"] - weak["background"]["mean"]) / weak["background"]["std"]
        assert weak["z"] == pytest.approx(z, abs=1e-3)


def test_explain_outline_shows_the_numbers_under_each_page(repo, cli):
    repo.commit("wiki", {**PAGES, ".gitwiki.toml": "[embeddings]\nenabled = false\n"})
    code, out, err = cli("ground", QUERY, "--explain", "--no-server", cwd=repo.path)
    assert code == 0, err
    assert "  why: lexical #1 (chunk #1, raw " in out and "normalized by its own scores" in out
    assert "weak: no · coverage 1.00" in out
    code, plain, _ = cli("ground", QUERY, "--no-server", cwd=repo.path)
    assert "why:" not in plain and plain.splitlines()[0] == out.splitlines()[0]
