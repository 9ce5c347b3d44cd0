"""The issue-24 levers of bench/experiment.py: the Python BM25 over fields reproduces FTS5's bm25(), the RM3 query
keeps its bounds (figures in docs/research/query-feedback-and-fields.md
rest on these)."""

from __future__ import annotations

import sys

import pytest

from gitwiki.tokens import fts_query, tokenize
from gitwiki.wiki import Wiki
from tests.helpers import ROOT

PAGES = {
    "wiki/vault.md": "---\ntitle: Vault\n---\n## Rotate keys\n\nRotate the signing key every 90 days.\n",
    "wiki/keys.md": "# Keys\n\nThe vault holds keys. Rotate them when a vault operator leaves.\n\n## Revoke\n\nRevoke "
    "leaked keys at once.\n",
    "wiki/deploy.md": "# Deploy\n\nWe deploy with argo to the kubernetes cluster; the vault agent injects keys.\n",
}


@pytest.fixture
def experiment(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    sys.modules.pop("experiment", None)
    import experiment

    return experiment


@pytest.fixture
def wiki(repo):
    repo.commit("pages", {**PAGES, ".gitwiki.toml": "[embeddings]\nenabled = false\n"})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=True)
    return wiki


def test_fields_with_equal_title_and_heading_weights_give_fts5_bm25(experiment, wiki):
    fields = experiment.Fields(wiki.store)
    for query in ("vault keys", "rotate signing key", "kubernetes"):
        expected = wiki.store.lexical(fts_query(query), 100)
        got = fields.score(dict.fromkeys(tokenize(query), 1.0), (2.0, 2.0, 1.0))
        assert [cid for cid, _, _ in got] == [cid for cid, _, _ in expected]
        assert [s for _, _, s in got] == pytest.approx([s for _, _, s in expected], rel=1e-6)


def test_a_title_weight_above_the_heading_weight_lifts_the_title_page(experiment, wiki):
    fields = experiment.Fields(wiki.store)
    titles = dict(wiki.store.conn.execute("SELECT blob, title FROM blobs"))

    def first(columns):
        return titles[fields.blob[fields.score({"vault": 1.0}, columns)[0][0]]]

    assert first((0.0, 2.0, 1.0)) == "Keys"  # without the title field the body's two mentions decide
    assert first((6.0, 2.0, 1.0)) == "Vault"


def test_rm3_query_keeps_the_original_terms_and_bounds_the_expansion(experiment, wiki):
    fields = experiment.Fields(wiki.store)
    feedback = [(rows, 1.0) for rows in fields.rows_of.values()]
    query = tokenize("vault")
    assert experiment.rm3_weights(query, feedback, fields, 5, 0.0) == {"vault": 1.0}
    weights = experiment.rm3_weights(query, feedback, fields, 5, 0.25)
    assert len(weights.keys() - {"vault"}) <= 5
    # the expansion model carries the share: a third of the original query's mass (0.25 / 0.75)
    assert sum(weights.values()) == pytest.approx(1.0 + 0.25 / 0.75)
