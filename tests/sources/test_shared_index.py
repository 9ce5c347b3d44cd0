"""The shared LanceDB table as corpus sources: searched over several corpora as a checkout is, the page tools
refused by the source with the reason."""

from __future__ import annotations

import json

import pytest

from gitwiki import config as config_mod
from gitwiki.errors import UsageError
from gitwiki.search.lance_index import LanceReader
from gitwiki.sources.shared_index import SharedIndex
from tests.sources.helpers import PAGES


@pytest.fixture
def exported(repo, cli, tmp_path):
    uri = tmp_path / "lance"
    repo.commit("init", {**PAGES, ".gitwiki.toml": PAGES[".gitwiki.toml"] + f'\n[storage]\nuri = "{uri}"\n'})
    code, _, err = cli("lance", "export", cwd=repo.path)
    assert code == 0, err
    return repo, uri


def test_ground_over_all_corpora_of_the_shared_table(exported, cli):
    repo, uri = exported
    code, out, err = cli("ground", "--json", "--uri", str(uri), "--corpus", "all", "release canary", cwd=repo.path)
    assert code == 0, err
    found = json.loads(out)
    assert sorted(found["corpora"]) == ["dev", "ops"]
    assert {(d["corpus"], d["path"]) for d in found["docs"]} >= {("ops", "ops/deploy.md"), ("dev", "dev/build.md")}
    code, _, err = cli("ground", "--uri", str(uri), "--corpus", "ops,nope", "canary", cwd=repo.path)
    assert code == 3 and "holds no corpus 'nope'" in err


def test_a_shared_corpus_searches_and_refuses_the_page_tools(exported):
    repo, uri = exported
    shared = SharedIndex(LanceReader(str(uri)), config_mod.load(repo.path))
    source = shared.source("dev")
    assert source.status()["indexed_commit"] == repo.git("rev-parse", "HEAD").strip()
    for refused in (lambda: source.read("build.md"), source.files, lambda: source.history("build.md", 3)):
        with pytest.raises(UsageError, match="holds chunks, not pages"):
            refused()
    with pytest.raises(UsageError, match="read-only"):
        source.check_writable()
