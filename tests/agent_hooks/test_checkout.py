"""The hooks find the checkout without starting git, and agree with git about it."""

from __future__ import annotations

from gitwiki import gitcli


def test_find_checkout_agrees_with_git_in_a_repo_a_subfolder_and_a_worktree(repo, tmp_path, monkeypatch):
    repo.commit("start", {"wiki/a/b.md": "# B\n"})
    repo.git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "linked")
    for start in (repo.path, repo.path / "wiki" / "a", tmp_path / "linked", tmp_path / "linked" / "wiki"):
        assert gitcli.find_checkout(start) == gitcli.discover(start), start
    assert gitcli.find_checkout(tmp_path / "linked").common_dir == repo.path / ".git"


def test_find_checkout_leaves_unusual_set_ups_to_git(repo, tmp_path, monkeypatch):
    repo.commit("start")
    assert gitcli.find_checkout(tmp_path) is None  # no repository above
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    assert gitcli.find_checkout(repo.path) is None
