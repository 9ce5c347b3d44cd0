"""The hooks find the checkout and the worktree's state without starting git, and agree with git about them."""

from __future__ import annotations

import os
import time

from gitwiki.git import gitcli
from tests.agent_hooks.helpers import context_of, load


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


def test_read_head_agrees_with_git_for_loose_packed_detached_and_linked_heads(repo, tmp_path, monkeypatch):
    assert gitcli.read_head(repo.path) is None  # an unborn branch: the caller asks git
    repo.commit("one", {"a.md": "# A\n"})
    assert gitcli.read_head(repo.path) == repo.git("rev-parse", "HEAD").strip()  # a loose ref
    repo.commit("two", {"a.md": "# A2\n"})
    repo.git("pack-refs", "--all", "--prune")
    assert not (repo.path / ".git" / "refs" / "heads").joinpath(repo.git("branch", "--show-current").strip()).exists()
    assert gitcli.read_head(repo.path) == repo.git("rev-parse", "HEAD").strip()
    repo.git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "linked", "HEAD~1")
    assert gitcli.read_head(tmp_path / "linked") == repo.git("rev-parse", "HEAD~1").strip()
    repo.git("checkout", "-q", "--detach", "HEAD~1")
    assert gitcli.read_head(repo.path) == repo.git("rev-parse", "HEAD").strip()
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    assert gitcli.read_head(repo.path) is None


def _age(root, seconds: float) -> None:
    """Backdate every file of the worktree and git's index, as a worktree left alone since the last session."""
    past = time.time() - seconds
    files = [p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts and p.is_file()]
    for path in [*files, root / ".git" / "index", root / ".git" / "info" / "exclude"]:
        os.utime(path, (past, past))


def test_the_session_briefing_starts_git_only_when_the_worktree_changed(wiki, hook, monkeypatch):
    calls = []
    real = gitcli.worktree_status

    def counted(root, folders):
        calls.append(list(folders))
        return real(root, folders)

    monkeypatch.setattr(gitcli, "worktree_status", counted)
    event = load("session_start", wiki.path)

    def briefing() -> str:
        text = context_of(hook("session", {**event, "session_id": f"s{len(calls)}-{time.time_ns()}"}, wiki.path)[1])
        return next(line for line in text.splitlines() if line.startswith("- corpus wiki"))

    _age(wiki.path, 60)
    assert "changed in the worktree" not in briefing() and calls == [["wiki"]]
    assert (wiki.path / ".git" / "gitwiki" / "agent-status.json").is_file()
    clean = briefing()
    assert "changed in the worktree" not in clean and len(calls) == 1  # from the cache

    page = wiki.path / "wiki" / "deploy.md"
    page.write_text(page.read_text().replace("previous", "prior"))  # same size, new mtime
    _age(wiki.path, 30)
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 2
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 2
    (wiki.path / "wiki" / "new.md").write_text("# New\n")
    _age(wiki.path, 20)
    assert "; 2 pages changed in the worktree" in briefing() and len(calls) == 3
    wiki.git("add", "-A")
    wiki.git("commit", "-qm", "edits")  # HEAD moves
    _age(wiki.path, 10)
    assert "changed in the worktree" not in briefing() and len(calls) == 4
    (wiki.path / "wiki" / "scratch.md").write_text("# Scratch\n")
    _age(wiki.path, 8)
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 5
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 5
    (wiki.path / ".gitignore").write_text("wiki/scratch.md\n")  # outside wiki/, and still in the stamp
    _age(wiki.path, 5)
    assert "changed in the worktree" not in briefing() and len(calls) == 6

    page.write_text("# Deploy\n\nJust now.\n")  # changed this very moment: git runs, every time, until it settles
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 7
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 8


def test_in_a_linked_worktree_the_shared_exclude_file_is_in_the_stamp(wiki, hook, monkeypatch, tmp_path):
    linked = tmp_path / "linked"
    wiki.git("worktree", "add", "-q", str(linked), "-b", "linked")
    calls = []
    real = gitcli.worktree_status
    monkeypatch.setattr(gitcli, "worktree_status", lambda root, folders: calls.append(1) or real(root, folders))
    (linked / "wiki" / "scratch.md").write_text("# Scratch\n")

    def briefing() -> str:
        event = load("session_start", linked, session_id=f"l{time.time_ns()}")
        return next(
            line for line in context_of(hook("session", event, linked)[1]).splitlines() if "corpus wiki" in line
        )

    def age() -> None:
        past = time.time() - 30
        for path in [*(p for p in linked.rglob("*") if p.is_file()), *(wiki.path / ".git").rglob("*")]:
            if path.is_file():
                os.utime(path, (past, past))

    age()
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 1
    assert "; 1 pages changed in the worktree" in briefing() and len(calls) == 1
    exclude = wiki.path / ".git" / "info" / "exclude"
    exclude.write_text("wiki/scratch.md\n")
    os.utime(exclude, (time.time() - 20, time.time() - 20))  # nothing else changed
    assert "changed in the worktree" not in briefing() and len(calls) == 2
