"""An absolute index dir shared by two repositories: the second is refused with the way out, not indexed over
the first (before: each run undid the other's rows)."""

from __future__ import annotations

import json
import shutil

import pytest

from gitwiki.agent_hooks.lookup import Lookup
from gitwiki.git import gitcli
from gitwiki.index.claim import STAMP
from tests.helpers import LEXICAL, GitRepoFixture


@pytest.fixture
def two(tmp_path, monkeypatch):
    shared = tmp_path / "indexes"
    monkeypatch.setenv("GITWIKI_INDEX_DIR", str(shared))
    repos = []
    for name, word in (("alpha", "walrus"), ("beta", "pelican")):
        (tmp_path / name).mkdir()
        repo = GitRepoFixture(tmp_path / name)
        repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": f"# Home\n\nAll about the {word}.\n"})
        repos.append(repo)
    return shared, *repos


def test_a_second_repository_is_refused_and_the_first_keeps_its_index(two, cli):
    shared, alpha, beta = two
    assert cli("index", cwd=alpha.path)[0] == 0
    assert (shared / STAMP).read_text().strip() == str((alpha.path / ".git").resolve())

    code, out, err = cli("ground", "pelican", "--json", cwd=beta.path)
    assert code != 0 and out == ""
    assert f"holds the index of the repository at {(alpha.path / '.git').resolve()}" in err
    assert "give each project its own" in err and len(err.strip().splitlines()) == 1

    code, out, _ = cli("ground", "walrus", "--json", cwd=alpha.path)
    assert code == 0 and [h["path"] for h in json.loads(out)["docs"]] == ["wiki/index.md"]


def test_the_hooks_read_no_notes_from_another_repositorys_index(two, cli):
    _, alpha, beta = two
    assert cli("index", cwd=alpha.path)[0] == 0
    assert Lookup.from_checkout(gitcli.discover(str(beta.path))).store is None
    assert Lookup.from_checkout(gitcli.discover(str(alpha.path))).store is not None


def test_a_stamp_of_a_repository_that_is_gone_is_taken_over(two, cli):
    shared, alpha, beta = two
    assert cli("index", cwd=alpha.path)[0] == 0
    shutil.rmtree(alpha.path)
    code, out, _ = cli("ground", "pelican", "--json", cwd=beta.path)
    assert code == 0 and [h["path"] for h in json.loads(out)["docs"]] == ["wiki/index.md"]
    assert (shared / STAMP).read_text().strip() == str((beta.path / ".git").resolve())


def test_an_index_dir_inside_the_repository_is_not_stamped_so_a_copy_keeps_working(tmp_path, cli):
    (tmp_path / "one").mkdir()
    repo = GitRepoFixture(tmp_path / "one")
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n\nAll about the walrus.\n"})
    assert cli("index", cwd=repo.path)[0] == 0
    assert not (repo.path / ".git" / "gitwiki" / STAMP).exists()
    shutil.copytree(repo.path, tmp_path / "two", symlinks=True)
    code, out, _ = cli("ground", "walrus", "--json", cwd=tmp_path / "two")
    assert code == 0 and json.loads(out)["docs"]
