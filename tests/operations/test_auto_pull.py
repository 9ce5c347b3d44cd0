"""A fresh clone starts from the index CI published at the remote's refs/gitwiki/index: `gitwiki index`,
`ground` and `serve` install it instead of parsing (and embedding) every page, and say so in one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitwiki.index.artifact import ARCHIVE_NAME
from tests.helpers import LEXICAL, GitRepoFixture, numbered_page
from tests.mcp.client import call, connect, run

LINE = "gitwiki: no local index; installing the one published at origin refs/gitwiki/index"


@pytest.fixture
def remote(repo, cli, tmp_path) -> Path:
    """A bare remote holding main (3 pages) and the published index of its HEAD."""
    repo.write(".gitwiki.toml", LEXICAL)
    for i in range(3):
        repo.write(f"wiki/p{i}.md", numbered_page(i))
    repo.commit("pages")
    bare = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    code, _, err = cli("artifact", "pack", "--out", str(tmp_path / ARCHIVE_NAME), cwd=repo.path)
    assert code == 0, err
    code, _, err = cli("publish", str(tmp_path / ARCHIVE_NAME), cwd=repo.path)
    assert code == 0, err
    return bare


def fresh_clone(remote: Path, where: Path) -> GitRepoFixture:
    subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True)
    return GitRepoFixture.existing(where)


def index_json(cli, cwd) -> tuple[dict, str]:
    code, out, err = cli("index", "--json", cwd=cwd)
    assert code == 0, err
    return json.loads(out)[0], err


def test_index_in_a_fresh_clone_installs_the_published_index_and_catches_up(remote, cli, tmp_path):
    local = fresh_clone(remote, tmp_path / "clone")
    local.commit("ahead", {"wiki/p1.md": numbered_page(1, "narwhal")})
    report, err = index_json(cli, local.path)
    assert err.count(LINE) == 1
    # and what it installed: the fetched commit and the pages it held
    assert "gitwiki: installed the index from git refs/gitwiki/index (commit " in err and "wiki 3 pages" in err, err
    # the install caught up with the one page changed since the published index: this run's work, as the action's
    # job summary reports it (it said 0 changed pages)
    assert not report["up_to_date"] and report["pages"] == 3 and report["changed"] == 1, report
    again, err = index_json(cli, local.path)
    assert again["up_to_date"], again
    assert err == "", err  # an index exists now: no second install


def test_ground_in_a_fresh_clone_starts_from_it_too(remote, cli, tmp_path):
    local = fresh_clone(remote, tmp_path / "clone")
    code, out, err = cli("ground", "--json", "walrus number 2", cwd=local.path)
    assert code == 0 and LINE in err
    assert json.loads(out)["docs"][0]["path"] == "wiki/p2.md"


def test_auto_pull_off_builds_from_scratch(remote, cli, tmp_path):
    local = fresh_clone(remote, tmp_path / "clone")
    local.commit("off", {".gitwiki.toml": LEXICAL + "\n[artifact]\nauto_pull = false\n"})
    report, err = index_json(cli, local.path)
    assert LINE not in err and report["parsed"] == 3


def test_a_remote_without_a_published_index_is_indexed_as_before(repo, cli, tmp_path):
    repo.commit("pages", {".gitwiki.toml": LEXICAL, "wiki/p0.md": numbered_page(0)})
    bare = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    local = fresh_clone(bare, tmp_path / "clone")
    report, err = index_json(cli, local.path)
    assert err == "" and report["parsed"] == 1


def test_serve_in_a_fresh_clone_installs_it(remote, tmp_path):
    local = fresh_clone(remote, tmp_path / "clone")
    log = tmp_path / "serve.log"

    async def main():
        with log.open("w") as errlog:
            async with connect(local.path, errlog=errlog) as s:
                return await call(s, "ground", query="walrus number 0")

    result = run(main)
    assert result.structured_content["docs"][0]["path"] == "wiki/p0.md"
    assert log.read_text().count(LINE) == 1
