import os
import subprocess
import time

import pytest

from gitwiki import git_hooks
from gitwiki.gitrepo import GitRepo

LEXICAL = "[embeddings]\nenabled = false\n"


def _wait_for_index(cli, path, head, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        code, out, _ = cli("status", "--json", cwd=path)
        if code == 0 and '"indexed_commit": "' + head in out:
            return True
        time.sleep(0.2)
    return False


def test_install_refreshes_the_index_in_the_background_after_commit(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/a.md": "# A\n"})
    code, out, _ = cli("git-hooks", "install", cwd=repo.path)
    assert code == 0 and out.count(": installed") == 4
    for name in git_hooks.HOOKS:
        assert os.access(repo.path / ".git/hooks" / name, os.X_OK)
    head = repo.commit("second", {"wiki/b.md": "# B\n"})
    assert _wait_for_index(cli, repo.path, head), "the post-commit hook did not index HEAD"


def test_existing_hook_is_chained_and_restored(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/a.md": "# A\n"})
    log = repo.path.parent / "previous.log"
    hook = repo.path / ".git/hooks/post-commit"
    original = f'#!/bin/sh\necho "ran $#" >> {log}\nexit 0\n'
    hook.write_text(original)
    hook.chmod(0o755)
    code, out, _ = cli("git-hooks", "status", cwd=repo.path)
    assert "post-commit: foreign" in out
    cli("git-hooks", "install", cwd=repo.path)
    cli("git-hooks", "install", cwd=repo.path)  # idempotent: the chained hook is not overwritten
    assert "post-commit: installed (runs the previous hook first)" in cli("git-hooks", "status", cwd=repo.path)[1]
    repo.commit("x", {"wiki/b.md": "# B\n"})
    assert log.read_text() == "ran 0\n"
    cli("git-hooks", "uninstall", cwd=repo.path)
    assert hook.read_text() == original
    assert not (repo.path / ".git/hooks/post-commit.gitwiki-chained").exists()
    assert not (repo.path / ".git/hooks/post-merge").exists()


def test_honours_core_hooks_path(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    repo.git("config", "core.hooksPath", ".githooks")
    cli("git-hooks", "install", cwd=repo.path)
    assert (repo.path / ".githooks/post-checkout").is_file()
    assert not (repo.path / ".git/hooks/post-checkout").exists()
    assert git_hooks.hooks_dir(GitRepo.discover(repo.path)) == (repo.path / ".githooks").resolve()


def test_chained_hook_status_is_passed_through(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    hook = repo.path / ".git/hooks/post-checkout"
    hook.write_text("#!/bin/sh\nexit 7\n")
    hook.chmod(0o755)
    cli("git-hooks", "install", cwd=repo.path)
    done = subprocess.run([str(hook), "a", "b", "1"], cwd=repo.path)
    assert done.returncode == 7


def test_install_refuses_when_both_hook_and_chained_file_exist(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    for name in ("post-merge", "post-merge.gitwiki-chained"):
        (repo.path / ".git/hooks" / name).write_text("#!/bin/sh\n")
    code, _, err = cli("git-hooks", "install", cwd=repo.path)
    assert code == 2 and "merge them by hand" in err
    assert not (repo.path / ".git/hooks/post-commit").exists()  # nothing was installed


@pytest.mark.parametrize("action", ["install", "uninstall", "status"])
def test_outside_a_repo_is_a_clear_error(tmp_path, cli, action):
    code, _, err = cli("git-hooks", action, cwd=tmp_path)
    assert code == 3 and "not inside a git repository" in err
