"""The warm-up of a long-lived process (`operations.warm`): a lexical-mode checkout never loads the model for it."""

from __future__ import annotations

import platform
import sys
import threading
from pathlib import Path

import pytest

from gitwiki.wiki import Wiki
from tests.helpers import DEPLOY


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_the_warm_up_loads_the_model_only_when_search_is_not_lexical(repo, monkeypatch, mode):
    from gitwiki.operations.warm import warm_up

    repo.commit("init", {".gitwiki.toml": f'[search]\nmode = "{mode}"\n', "wiki/deploy.md": DEPLOY})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=True)
    asked: list[str] = []
    monkeypatch.setattr(Wiki, "embedder", lambda self: asked.append("model") or None)  # a load, not made
    warm_up(wiki, threading.Lock())
    wiki.close()
    assert asked == ([] if mode == "lexical" else ["model"])


def test_the_warm_up_ends_by_handing_freed_heap_back(repo, monkeypatch):
    from gitwiki.operations import warm

    repo.commit("init", {".gitwiki.toml": '[search]\nmode = "lexical"\n', "wiki/deploy.md": DEPLOY})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=True)
    released: list[bool] = []
    monkeypatch.setattr(warm, "release_freed_heap", lambda: released.append(True) or True)
    warm.warm_up(wiki, threading.Lock())
    wiki.close()
    assert released == [True]


def test_the_warm_up_watches_the_corpora_after_its_searches(repo, monkeypatch):
    """The watch's start held the calls' lock while the owner's threads took turns at it: a first call waited for
    it. A query needs no watch (without one it asks git), so the warm-up starts it last, and takes the worktree
    overlay again under it: the next query asks git nothing."""
    from gitwiki.git.gitrepo import GitRepo
    from gitwiki.operations.warm import warm_up

    repo.commit("init", {".gitwiki.toml": '[search]\nmode = "lexical"\n', "wiki/deploy.md": DEPLOY})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=True)
    steps: list[str] = []
    search, watch = Wiki.search, Wiki.watch
    monkeypatch.setattr(Wiki, "search", lambda self, *a, **k: steps.append("search") or search(self, *a, **k))
    monkeypatch.setattr(Wiki, "watch", lambda self: steps.append("watch") or watch(self))
    warm_up(wiki, threading.Lock())
    assert steps == ["search", "watch", "search"]  # the last one reads BM25's postings (Searcher.keep_postings)
    kept = wiki.searcher._lexicon
    assert wiki.resident and kept is not None and kept.view is not None and kept.view.blobs
    asked: list[str] = []
    status = GitRepo.worktree_changes
    monkeypatch.setattr(GitRepo, "worktree_changes", lambda self, c: asked.append(c.name) or status(self, c))
    assert [d.path for d in wiki.search("rollback").docs] == ["wiki/deploy.md"]
    assert asked == []  # the overlay kept under the watch's generation
    wiki.close()


def _rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_freed_heap_is_handed_back_to_the_system_on_glibc(monkeypatch):
    from gitwiki.operations.warm import release_freed_heap

    # 80 MB in blocks under glibc's mmap threshold, freed below one still held: free() alone keeps it all in RSS
    blocks = [bytearray(1000) for _ in range(80_000)]
    held = bytearray(1000)
    del blocks
    before = _rss_kib()
    assert release_freed_heap() is True
    assert _rss_kib() < before - 40_000
    assert held is not None
    monkeypatch.setattr(sys, "platform", "darwin")
    assert release_freed_heap() is False  # no glibc there: nothing is done
