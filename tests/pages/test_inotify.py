"""The Linux watch (gitwiki.pages.inotify): no fence, yet every change made before a query is in it; folders made
later are watched as their events are read; .git and the index dir are not watched; a lost queue or a watched
folder gone away costs a status, never a missed change. (tests/pages/test_watch.py runs the shared cases.)"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from gitwiki.git import gitrepo
from gitwiki.pages import inotify
from gitwiki.pages.inotify import Inotify
from gitwiki.wiki import Wiki

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

LEXICAL = "[embeddings]\nenabled = false\n"


@pytest.fixture
def status_calls(monkeypatch):
    calls: list[str] = []
    real = gitrepo.GitRepo.worktree_changes
    monkeypatch.setattr(gitrepo.GitRepo, "worktree_changes", lambda self, c: calls.append(c.name) or real(self, c))
    return calls


def paths(wiki: Wiki, query: str) -> list[str]:
    return [d.path for d in wiki.search(query).docs]


def test_folders_made_at_once_and_files_in_them_are_seen(tmp_path):
    (tmp_path / "wiki").mkdir()
    watcher = Inotify.start([tmp_path / "wiki"])
    assert watcher is not None
    assert watcher.sync() == 0 and watcher.sync() == 0  # nothing happened: the generation stays
    deep = tmp_path / "wiki/a/b/c"
    deep.mkdir(parents=True)
    (deep / "x.md").write_text("one\n")
    assert watcher.sync() == 1  # one query: one step, however many events
    assert str(deep) in watcher._paths.values()  # watched as its parent's event was read
    with open(deep / "x.md", "a") as f:  # in place: only the file's own event
        f.write("two\n")
    assert watcher.sync() == 2
    os.rename(deep, tmp_path / "wiki/moved")
    assert watcher.sync() == 3
    (tmp_path / "wiki/moved/y.md").write_text("three\n")
    assert watcher.sync() == 4
    watcher.close()
    assert watcher.sync() is None


def test_git_and_the_index_dir_are_not_watched(repo, status_calls, tmp_path):
    index = repo.path / "index-here"
    repo.commit("pages", {".gitwiki.toml": '[[corpus]]\nname = "all"\npath = "."\n' + LEXICAL, "deploy.md": "# D\n"})
    watcher = Inotify.start([repo.path], (repo.path / ".git", index))
    assert watcher is not None
    index.mkdir()
    (index / "db").write_text("x")
    repo.git("add", "deploy.md")
    repo.git("commit", "-q", "--allow-empty", "-m", "empty")
    assert watcher.sync() == 0  # only the index dir and .git moved: no page did
    assert not any(p.startswith((str(repo.path / ".git"), str(index))) for p in watcher._paths.values())
    (repo.path / "new.md").write_text("# N\n")
    assert watcher.sync() == 1
    watcher.close()


def test_a_lost_queue_is_a_change_and_every_folder_is_watched_again(tmp_path):
    (tmp_path / "wiki").mkdir()
    watcher = Inotify.start([tmp_path / "wiki"])
    assert watcher is not None
    (tmp_path / "wiki/later").mkdir()
    while True:  # the queue's events dropped unread, as when it overflows
        try:
            os.read(watcher._fd, 1 << 16)
        except BlockingIOError:
            break
    assert watcher.sync() == 0  # (what a full queue's lost events would have said)
    assert watcher._event(-1, inotify.IN_Q_OVERFLOW, "")  # the kernel's word that events were lost
    assert str(tmp_path / "wiki/later") in watcher._paths.values()
    (tmp_path / "wiki/later/x.md").write_text("x\n")
    assert watcher.sync() == 1
    watcher.close()


def test_a_watched_folder_gone_away_asks_git_from_then_on(repo, status_calls):
    repo.commit("pages", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": "# Deploy\n\nWe deploy with argo.\n"})
    wiki = Wiki.open(repo.path)
    assert wiki.watch() and isinstance(wiki.local._watcher, Inotify)
    assert paths(wiki, "argo") == ["wiki/deploy.md"]
    shutil.rmtree(repo.path / "wiki")
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with nomad.\n")  # a new folder of the same name
    assert paths(wiki, "nomad") == ["wiki/deploy.md"]
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with helm.\n")
    assert paths(wiki, "helm") == ["wiki/deploy.md"]  # not watched any more: git is asked
    assert len(status_calls) == 3
    wiki.close()


def test_a_folder_that_cannot_be_watched_is_no_watch(tmp_path):
    assert Inotify.start([tmp_path / "missing"]) is None
