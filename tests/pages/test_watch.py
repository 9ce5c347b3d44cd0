"""A watched Wiki (what `gitwiki serve` runs) asks git for the worktree status only after a change, yet every
change on disk is in the very next query: in-place writes, new folders, deletions, staging and commits."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from gitwiki.git import gitrepo
from gitwiki.pages import watch
from gitwiki.pages.inotify import Inotify
from gitwiki.pages.watch import Watcher
from gitwiki.sources import local as local_module
from gitwiki.wiki import Wiki
from tests.helpers import needs_model, python_prints

LEXICAL = "[embeddings]\nenabled = false\n"


def _watched(repo, monkeypatch, kind: str):
    # A fence later than FENCE_TIMEOUT asks git, as it should (test_a_late_fence_costs_one_status_and_the_watch_goes_on);
    # the other tests here count the watched path's status calls, which a stall of a loaded test host must not add to.
    monkeypatch.setattr(watch, "FENCE_TIMEOUT", 60.0)
    if kind == "fence":  # watchfiles' watcher, as where there is no inotify of our own (not Linux)
        monkeypatch.setattr(Inotify, "start", classmethod(lambda cls, *a, **k: None))
    repo.commit("pages", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": "# Deploy\n\nWe deploy with argo.\n"})
    wiki = Wiki.open(repo.path)
    assert wiki.watch()
    assert isinstance(wiki.local._watcher, Inotify if kind == "inotify" else Watcher)
    return repo, wiki


@pytest.fixture(params=["inotify", "fence"])
def watched(repo, monkeypatch, request):
    """A watched wiki, each test run with both watches."""
    repo, wiki = _watched(repo, monkeypatch, request.param)
    yield repo, wiki
    wiki.close()


@pytest.fixture
def fenced(repo, monkeypatch):
    repo, wiki = _watched(repo, monkeypatch, "fence")
    yield repo, wiki
    wiki.close()


def paths(result):
    return [d.path for d in result.docs]


@pytest.fixture
def status_calls(monkeypatch):
    calls = []
    real = gitrepo.GitRepo.worktree_changes

    def counting(self, corpus):
        calls.append(corpus.name)
        return real(self, corpus)

    monkeypatch.setattr(gitrepo.GitRepo, "worktree_changes", counting)
    return calls


def test_unchanged_worktree_is_not_asked_again(watched, status_calls):
    repo, wiki = watched
    for _ in range(5):
        assert paths(wiki.search("argo")) == ["wiki/deploy.md"]
    assert len(status_calls) == 1
    repo.write("README.txt", "outside the corpus folder\n")
    wiki.search("argo")
    assert len(status_calls) == 1  # only the corpus folder is watched


def test_every_kind_of_change_is_in_the_next_query(watched, status_calls):
    repo, wiki = watched
    assert paths(wiki.search("nomad")) == []
    # In place (the file's own mtime changes, its folder's does not), then queried at once.
    with open(repo.path / "wiki/deploy.md", "a", encoding="utf-8") as f:
        f.write("\nNow also nomad.\n")
    assert paths(wiki.search("nomad")) == ["wiki/deploy.md"]
    repo.write("wiki/new/deeper/garden.md", "# Garden\n\nWater the tomatoes.\n")  # folders made after the start
    assert paths(wiki.search("tomatoes")) == ["wiki/new/deeper/garden.md"]
    repo.write("wiki/new/deeper/garden.md", "# Garden\n\nWater the cucumbers.\n")
    assert paths(wiki.search("cucumbers")) == ["wiki/new/deeper/garden.md"]
    os.unlink(repo.path / "wiki/new/deeper/garden.md")
    assert paths(wiki.search("cucumbers")) == []
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with argo.\n")  # back to HEAD: no longer dirty
    assert wiki.search("argo").dirty == ()
    assert len(status_calls) == 6


def test_a_commit_or_staging_without_file_changes_is_seen(watched):
    repo, wiki = watched
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with nomad.\n")
    assert wiki.search("nomad").dirty == ("wiki/deploy.md",)
    repo.git("add", "wiki/deploy.md")  # .git is not watched; git's index file is checked
    assert wiki.search("nomad").dirty == ("wiki/deploy.md",)
    repo.git("commit", "-q", "-m", "nomad")
    result = wiki.search("nomad")
    assert result.dirty == () and result.commit == repo.git("rev-parse", "HEAD").strip()


def test_without_a_watch_each_query_asks_git(repo, status_calls, monkeypatch):
    repo.commit("pages", {".gitwiki.toml": LEXICAL, "wiki/deploy.md": "# Deploy\n\nWe deploy with argo.\n"})
    monkeypatch.setattr(watch, "start", lambda *a, **k: None)
    wiki = Wiki.open(repo.path)
    assert not wiki.watch()
    for _ in range(3):
        wiki.search("argo")
    assert len(status_calls) == 3


def test_a_broken_fence_falls_back_to_git(fenced, status_calls):
    repo, wiki = fenced
    wiki.search("argo")
    fences = wiki.local._watcher._fence_dir
    shutil.rmtree(fences)
    fences.write_text("")  # no fence can be written (even by root): the watch is no longer trusted
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with nomad.\n")
    assert paths(wiki.search("nomad")) == ["wiki/deploy.md"]
    wiki.search("nomad")
    assert len(status_calls) == 3
    fences.unlink()


def test_a_late_fence_costs_one_status_and_the_watch_goes_on(fenced, status_calls, monkeypatch):
    repo, wiki = fenced
    wiki.search("argo")
    monkeypatch.setattr(watch, "FENCE_TIMEOUT", 0.0)  # every fence is late
    repo.write("wiki/deploy.md", "# Deploy\n\nWe deploy with nomad.\n")
    assert paths(wiki.search("nomad")) == ["wiki/deploy.md"]
    monkeypatch.setattr(watch, "FENCE_TIMEOUT", 1.0)
    assert paths(wiki.search("nomad")) == ["wiki/deploy.md"]  # the late fence and the edit count as a change
    assert len(status_calls) >= 3
    # The watch goes on: once the edit's events are all in, quiet queries cost no status. On a loaded host they can
    # trail the fences in more batches than one, with a quiet query between two of them (seen in CI): a few more
    # queries may see them, then three in a row cost nothing. A watch that broke never gets there.
    quiet = 0
    for _ in range(20):
        before = len(status_calls)
        wiki.search("nomad")
        quiet = quiet + 1 if len(status_calls) == before else 0
        if quiet == 3:
            break
    assert quiet == 3, f"{len(status_calls)} status calls, none quiet three queries in a row"
    assert len(status_calls) <= 6


@needs_model
def test_a_watched_hybrid_query_looks_for_missing_vectors_only_after_a_change(repo, monkeypatch):
    repo.commit("pages", {"wiki/deploy.md": "# Deploy\n\nWe deploy with argo.\n"})
    wiki = Wiki.open(repo.path)
    assert wiki.watch()
    calls = []
    real = local_module.ensure_vectors
    monkeypatch.setattr(local_module, "ensure_vectors", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(watch, "FENCE_TIMEOUT", 60.0)  # as `watched` does, for the same reason
    repo.write("wiki/garden.md", "# Garden\n\nWater the tomatoes.\n")
    for _ in range(3):
        assert wiki.search("watering vegetables").docs[0].path == "wiki/garden.md"
    assert len(calls) == 1
    repo.write("wiki/garden.md", "# Garden\n\nWater the cucumbers.\n")
    assert "cucumbers" in wiki.search("watering vegetables").docs[0].chunks[0].text
    assert len(calls) == 2
    wiki.close()


def test_a_write_right_before_a_query_is_never_missed(watched):
    """The race the fence closes: each write returns and the very next query must hold it, 40 times over."""
    repo, wiki = watched
    page = repo.path / "wiki/deploy.md"
    for i in range(40):
        word = f"walrus{'abcdefghij'[i % 10]}{'klmnopqrst'[i // 10]}"  # letters only: one token each
        with open(page, "a", encoding="utf-8") as f:
            f.write(f"\n{word}\n")
        assert paths(wiki.search(word)) == ["wiki/deploy.md"], i


def test_the_watcher_starts_without_running_the_watchfiles_package(tmp_path):
    """Its Rust class is loaded alone (the package's own imports were 25-30 ms of a starting owner), and a later
    `import watchfiles` finds that same module rather than loading the extension a second time."""
    code = (
        "import sys; from pathlib import Path; from gitwiki.pages.watch import Watcher\n"
        f"w = Watcher.start([Path({str(tmp_path)!r})], Path({str(tmp_path / 'index')!r}))\n"
        "assert w is not None and w.sync() is not None\n"
        "alone = sorted(m for m in ('watchfiles', 'anyio', 'multiprocessing') if m in sys.modules)\n"
        "import watchfiles\n"
        "print(alone, watchfiles.main.RustNotify is sys.modules['watchfiles._rust_notify'].RustNotify)\n"
    )
    assert python_prints(code) == ["[]", "True"]


class _Scripted:
    """A notifier whose first look finds only an earlier event (the last fence's removal, say) and whose next finds
    every file in the fence folder: what a fence whose own event trails the others sees."""

    def __init__(self, folder) -> None:
        self.folder = folder
        self.steps: list[tuple[int, int, float]] = []  # (step, timeout, when the pace's looks at once began) per call

    def watch(self, debounce: int, step: int, timeout: int, stop: watch._Pace) -> set[tuple[int, str]]:
        self.steps.append((step, timeout, stop.since))
        if len(self.steps) == 1:
            return {(3, os.path.join(self.folder, "an-earlier-fence"))}
        return {(1, os.path.join(self.folder, name)) for name in os.listdir(self.folder)}

    def close(self) -> None:
        pass


def test_a_fence_looks_again_at_once_past_events_that_came_before_it(tmp_path):
    notify = _Scripted(tmp_path)
    watcher = Watcher(notify, tmp_path, (str(tmp_path) + os.sep,))  # type: ignore[arg-type]
    assert watcher.sync() == 0  # only fences: no change
    # never a timeout (watchfiles clears what it collected when it times out: events lost); the second call's looks
    # start again at once, not in 1 ms steps: the fence's own event was on its way
    assert [(step, timeout) for step, timeout, _ in notify.steps] == [(0, 0), (0, 0)]
    assert notify.steps[1][2] > notify.steps[0][2]


class _Stopped(_Scripted):
    """A notifier whose first call ends at its pace's deadline, as watchfiles' `watch` says "stop"."""

    def watch(self, debounce: int, step: int, timeout: int, stop: watch._Pace) -> set[tuple[int, str]] | str:  # type: ignore[override]
        if not self.steps:
            self.steps.append((step, timeout, stop.since))
            return "stop"
        return super().watch(debounce, step, timeout, stop)


def test_a_fence_past_its_deadline_asks_git_and_the_next_query_does_not_trust_what_it_missed(tmp_path):
    notify = _Stopped(tmp_path)
    watcher = Watcher(notify, tmp_path, (str(tmp_path) + os.sep,))  # type: ignore[arg-type]
    assert watcher.sync() is None  # this query asks git
    assert watcher.sync() == 1  # the stopped call's events are gone: the next query's overlay is taken again
    pace = watch._Pace(time.monotonic() - 1)
    assert pace.is_set() and pace.is_set() and not watch._Pace(time.monotonic() + 60).is_set()


def test_the_last_fence_is_removed_before_the_next_is_written(tmp_path, monkeypatch):
    done: list[tuple[str, str]] = []

    class Noting:
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        def open(self, path: str, *args: int) -> int:
            done.append(("write", os.path.basename(path)))
            return os.open(path, *args)

        def unlink(self, path: str) -> None:
            done.append(("remove", os.path.basename(path)))
            os.unlink(path)

    class Found:  # the fence at the first look
        def watch(self, *args: object) -> set[tuple[int, str]]:
            return {(1, os.path.join(tmp_path, name)) for name in os.listdir(tmp_path)}

    monkeypatch.setattr(watch, "os", Noting())
    watcher = Watcher(Found(), tmp_path, (str(tmp_path) + os.sep,))  # type: ignore[arg-type]
    watcher.sync()
    watcher.sync()
    (first, second) = [name for what, name in done if what == "write"]
    assert done == [("write", first), ("remove", first), ("write", second)]
    assert os.listdir(tmp_path) == [second]
