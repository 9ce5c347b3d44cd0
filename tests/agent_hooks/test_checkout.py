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


def test_worktree_status_names_head_and_the_changes_git_status_lists(repo):
    assert gitcli.worktree_status(repo.path, [""]) == (None, [])  # before the first commit
    repo.commit("start", {"wiki/a.md": "# A\n", "wiki/b.md": "# B\n", "docs/c.md": "# C\n", "src/x.py": ""})
    repo.write("wiki/a.md", "# A changed\n")
    repo.write("wiki/new page.md", "# New\n")
    (repo.path / "wiki" / "b.md").unlink()
    repo.write("docs/c.md", "# C staged\n")
    repo.git("add", "docs/c.md")
    repo.write("src/x.py", "changed = 1\n")
    head = repo.git("rev-parse", "HEAD").strip()
    found = gitcli.worktree_status(repo.path, ["wiki", "docs"])
    assert found[0] == head
    assert sorted(found[1]) == sorted(gitcli.changed_files(repo.path, "wiki") + gitcli.changed_files(repo.path, "docs"))
    assert sorted(found[1]) == ["docs/c.md", "wiki/a.md", "wiki/b.md", "wiki/new page.md"]
    assert sorted(gitcli.worktree_status(repo.path, [""])[1]) == sorted(gitcli.changed_files(repo.path, ""))
