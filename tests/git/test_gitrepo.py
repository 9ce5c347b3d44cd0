import json
import os
import subprocess
import sys

import pytest

from gitwiki.config import CorpusConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.git import gitrepo
from gitwiki.git.gitrepo import GitRepo
from tests.helpers import hostile_commit


def test_worktree_changes_takes_the_status_again_when_a_file_vanishes_mid_scan(repo, monkeypatch):
    """libgit2 lists the worktree, then hashes each file: one removed in between by another writer (an atomic
    write's temp file) failed the scan with "error reading file for hashing" (two MCP servers writing at once)."""
    monkeypatch.setattr(gitrepo, "FOLDER_STATUS_FROM", 10**9)
    repo.commit(files={"wiki/a.md": "# A\n"})
    repo.write("wiki/a.md", "# A, edited\n")
    git = GitRepo.discover(repo.path)
    real = git._repo

    class Vanishing:
        failures = 2

        def __getattr__(self, name):
            return getattr(real, name)

        def status(self, **kwargs):
            if Vanishing.failures:
                Vanishing.failures -= 1
                raise OSError("error reading file for hashing: ")
            return real.status(**kwargs)

    monkeypatch.setattr(git, "_repo", Vanishing())
    assert git.worktree_changes(CorpusConfig("wiki", "wiki")) == {"wiki/a.md": True}
    Vanishing.failures = 99
    with pytest.raises(OSError, match="hashing"):  # a worktree that never settles is still an error
        git.worktree_changes(CorpusConfig("wiki", "wiki"))


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


def test_worktree_changes_past_libgit2s_folder_limit_come_from_git(repo):
    """A checkout with pages 120 folders deep: libgit2's status stops at 100 ("directory nesting too deep"), which
    was a traceback in every search, status and memory store (after the store had written its page)."""
    deep = "wiki/" + "d/" * 120
    repo.commit(files={deep + "p.md": "# Deep\n", "wiki/a.md": "# A\n"})
    repo.write(deep + "q.md", "# New\n")
    repo.write("wiki/a.md", "# A, edited\n")
    changes = GitRepo.discover(repo.path).worktree_changes(CorpusConfig("wiki", "wiki"))
    assert changes == {deep + "q.md": True, "wiki/a.md": True}


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


def test_git_dir_and_work_tree_from_the_environment_are_honoured(repo, tmp_path, monkeypatch, cli):
    repo.commit(files={".gitwiki.toml": "[embeddings]\nenabled = false\n", "wiki/a.md": "# Gamma\n\nzebra gamma\n"})
    elsewhere = tmp_path / "gitdir.git"
    (repo.path / ".git").rename(elsewhere)  # a worktree whose git dir lives elsewhere, no .git in it
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    monkeypatch.setenv("GIT_DIR", str(elsewhere))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo.path))
    git = GitRepo.discover(other)  # git would answer for GIT_DIR from anywhere, and so does gitwiki
    assert git.root == repo.path.resolve() and git.common_dir == elsewhere.resolve()
    code, out, err = cli("ground", "--json", "zebra", cwd=other)
    assert code == 0, err
    assert [d["path"] for d in json.loads(out)["docs"]] == ["wiki/a.md"]


def test_pages_outside_a_sparse_checkout_are_still_searched(repo, cli):
    repo.commit(
        files={
            ".gitwiki.toml": "[embeddings]\nenabled = false\n",
            "wiki/a.md": "# Alpha\n\nzebra alpha\n",
            "wiki/far/b.md": "# Beta\n\nzebra beta\n",
        }
    )
    repo.git("sparse-checkout", "set", "--no-cone", "/*", "!/wiki/far/")
    assert not (repo.path / "wiki/far/b.md").exists()
    code, out, err = cli("ground", "--json", "zebra", cwd=repo.path)
    assert code == 0, err
    result = json.loads(out)
    assert sorted(d["path"] for d in result["docs"]) == ["wiki/a.md", "wiki/far/b.md"] and result["dirty"] == []


def test_status_says_that_submodules_in_a_corpus_are_skipped(repo, tmp_path, cli):
    inner = tmp_path / "inner"
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    (inner / "page.md").write_text("# Inner\n")
    subprocess.run(["git", "-C", str(inner), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(inner), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "inner"], check=True
    )
    repo.commit(files={".gitwiki.toml": "[embeddings]\nenabled = false\n", "wiki/a.md": "# A\n"})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "wiki/ext")
    repo.commit("add a submodule")
    assert GitRepo.discover(repo.path).submodules(
        CorpusConfig("wiki", "wiki"), repo.git("rev-parse", "HEAD:wiki").strip()
    ) == ["wiki/ext"]
    code, out, err = cli("status", cwd=repo.path)
    assert code == 0, err
    assert "submodules skipped (their pages are not indexed): wiki/ext" in out
    code, out, _ = cli("status", "--json", cwd=repo.path)
    assert json.loads(out)["corpora"][0]["submodules"] == ["wiki/ext"]


def test_tree_entries_named_dot_dot_or_dot_git_are_never_pages(repo):
    hostile_commit(repo.path)
    git = GitRepo.discover(repo.path)
    corpus = CorpusConfig("wiki", "wiki")
    tree = git.subtree(git.rev_parse("HEAD").tree, "wiki")
    assert sorted(git.pages(corpus, tree)) == ["wiki/ok/x.md", "wiki/page.md"]
    assert git.refused_paths(corpus, tree) == ["wiki/..", "wiki/.GIT", "wiki/.git", "wiki/GIT~1"]


@pytest.mark.parametrize("folder_status_from", [0, 10**9], ids=["git-status-of-the-folder", "pygit2-whole-worktree"])
def test_an_untracked_folder_named_like_the_git_dir_holds_no_pages(repo, monkeypatch, folder_status_from):
    monkeypatch.setattr(gitrepo, "FOLDER_STATUS_FROM", folder_status_from)
    repo.commit(files={"wiki/a.md": "# A\n"})
    repo.write("wiki/.GIT/x.md", "# X\n")  # the git dir itself on a case-insensitive filesystem
    repo.write("wiki/new.md", "# New\n")
    assert GitRepo.discover(repo.path).worktree_changes(CorpusConfig("wiki", "wiki")) == {"wiki/new.md": True}


def test_an_unborn_head_or_a_missing_corpus_folder_has_no_pages(repo):
    git = GitRepo.discover(repo.path)
    corpus = CorpusConfig("wiki", "wiki")
    assert git.pages(corpus, "") == {} and git.submodules(corpus, "") == [] and git.refused_paths(corpus, "") == []


@pytest.mark.parametrize("setup", ["git-init", "gitwiki-init", "clone-of-an-empty-repo"])
def test_every_command_works_on_an_unborn_head(tmp_path, cli, setup):
    checkout = tmp_path / "checkout"
    if setup == "clone-of-an-empty-repo":
        subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "empty.git")], check=True)
        subprocess.run(
            ["git", "clone", "-q", str(tmp_path / "empty.git"), str(checkout)], check=True, capture_output=True
        )
    else:
        subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    if setup == "gitwiki-init":
        assert cli("init", "--path", "wiki", cwd=checkout)[0] == 0
    (checkout / "wiki").mkdir()
    (checkout / "wiki" / "first.md").write_text("# First\n\nA zebra before any commit.\n")
    config = checkout / ".gitwiki.toml"
    if config.exists():  # lexical: the question here is git's, not the model's
        config.write_text(config.read_text().replace("enabled = true", "enabled = false"))
    else:
        config.write_text("[embeddings]\nenabled = false\n")

    code, out, err = cli("status", cwd=checkout)
    assert code == 0 and "HEAD: no commit yet" in out and "wiki/first.md" in out, err
    code, out, err = cli("status", "--json", cwd=checkout)
    assert code == 0 and json.loads(out)["corpora"][0]["head_commit"] is None, err
    code, out, err = cli("index", cwd=checkout)
    assert code == 0 and "no commits yet" in out, err
    code, out, err = cli("ground", "--json", "zebra", cwd=checkout)
    assert code == 0 and [d["path"] for d in json.loads(out)["docs"]] == ["wiki/first.md"], err
    code, out, err = cli("lint", cwd=checkout)
    assert code == 0, out + err


def test_a_failed_git_says_its_first_complaint_not_its_advice(repo):
    """`fetch nosuch` ends its stderr with advice ("…and the repository exists."), which was all a user read."""
    from gitwiki.git.gitcli import run_git

    repo.commit(files={"a.md": "# A\n"})
    run = run_git(repo.path, "fetch", "nosuch")
    assert not run.ok and run.error == "'nosuch' does not appear to be a git repository"


def test_an_index_lock_a_killed_gitwiki_left_is_freed_by_the_next_status(repo, cli):
    """A kill -9 mid-commit left git's index.lock (`gitwiki pid N`, N gone): the user's `git add` failed until
    gitwiki's next write, and `status --check` said nothing. A lock another git holds stays."""
    from gitwiki.git.gitcli import LOCK_MARK

    repo.commit(files={".gitwiki.toml": "[embeddings]\nenabled = false\n", "a.md": "# A\n"})
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = repo.path / ".git" / "index.lock"
    lock.write_text(f"{LOCK_MARK}{dead.stdout.strip()}\n")
    assert cli("status", cwd=repo.path)[0] == 0
    assert not lock.exists()
    repo.write("b.md", "# B\n")
    repo.git("add", "b.md")  # the user's git works again
    lock.write_text("")  # a lock of git's own (or another gitwiki's alive) is not ours to take
    cli("status", cwd=repo.path)
    assert lock.exists()
    lock.unlink()
