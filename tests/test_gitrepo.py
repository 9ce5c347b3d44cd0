import os
import subprocess

import pytest

from gitwiki import gitrepo
from gitwiki.config import CorpusConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.gitrepo import GitRepo


@pytest.mark.parametrize("folder_status_from", [0, 10**9], ids=["git-status-of-the-folder", "pygit2-whole-worktree"])
def test_worktree_changes_list_what_differs_from_head_in_the_corpus(repo, monkeypatch, folder_status_from):
    monkeypatch.setattr(gitrepo, "FOLDER_STATUS_FROM", folder_status_from)
    repo.commit(
        files={
            "wiki/kept.md": "# Kept\n",
            "wiki/edited.md": "# Edited\n",
            "wiki/staged.md": "# Staged\n",
            "wiki/gone.md": "# Gone\n",
            "src/code.md": "# Not in the corpus\n",
            ".gitignore": "wiki/private/\n",
        }
    )
    repo.write("wiki/edited.md", "# Edited, not staged\n")
    repo.write("wiki/staged.md", "# Staged edit\n")
    repo.git("add", "wiki/staged.md")
    (repo.path / "wiki/gone.md").unlink()
    repo.write("wiki/new/deep/page.md", "# Untracked, in an untracked folder\n")
    repo.write("wiki/private/secret.md", "# Ignored\n")
    repo.write("wiki/notes.txt", "not a page\n")
    repo.write("src/code.md", "# Changed outside the corpus\n")
    os.symlink("kept.md", repo.path / "wiki/link.md")

    changes = GitRepo.discover(repo.path).worktree_changes(CorpusConfig("wiki", "wiki"))

    assert changes == {
        "wiki/edited.md": True,
        "wiki/staged.md": True,
        "wiki/gone.md": False,
        "wiki/new/deep/page.md": True,
        "wiki/link.md": False,  # a symlink is never a page: it counts as absent
    }


def test_committed_blob_and_is_dirty(repo):
    repo.commit(files={"wiki/a.md": "# A\n"})
    git = GitRepo.discover(repo.path)
    assert git.committed_blob("wiki/a.md") == repo.git("rev-parse", "HEAD:wiki/a.md").strip()
    assert git.committed_blob("wiki/none.md") is None
    assert not git.is_dirty("wiki/a.md")
    repo.write("wiki/a.md", "# A, edited\n")
    assert git.is_dirty("wiki/a.md")
    os.remove(repo.path / "wiki/a.md")
    assert git.is_dirty("wiki/a.md")
    repo.write("wiki/new.md", "# Untracked\n")
    assert git.is_dirty("wiki/new.md")


def test_committed_blob_on_an_unborn_head(repo):
    repo.write("a.md", "# A\n")
    git = GitRepo.discover(repo.path)
    assert git.committed_blob("a.md") is None and git.is_dirty("a.md")


def test_discover_finds_the_checkout_from_a_subfolder_and_rev_parse(repo):
    head = repo.commit(files={"wiki/a.md": "# A\n"})
    git = GitRepo.discover(repo.path / "wiki")
    assert git.root == repo.path.resolve()
    assert git.rev_parse("HEAD").id == head
    assert git.config_value("core.hooksPath") is None
    repo.git("config", "core.hooksPath", "hooks")
    assert GitRepo.discover(repo.path).config_value("core.hooksPath") == "hooks"


def test_discover_says_what_to_do_outside_a_checkout(tmp_path, monkeypatch):
    with pytest.raises(NotFoundError, match="not inside a git repository; run `git init`"):
        GitRepo.discover(tmp_path)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with pytest.raises(NotFoundError, match="bare repository; run gitwiki in a checkout"):
        GitRepo.discover(bare)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="git command is not installed; install git"):
        GitRepo.discover(tmp_path)
