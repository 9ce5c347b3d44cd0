"""The session briefing kept for the next session (gitwiki/agent_hooks/briefing.py): the answer one made anew
gives, without the index code, until anything it is made of changes."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time

import pytest

from gitwiki import config as config_mod
from gitwiki.agent_hooks import briefing
from tests.agent_hooks.helpers import context_of, load
from tests.helpers import ROOT


def _settle(wiki) -> None:
    """Backdate every file of the checkout (worktree, git's, the index dir's) past status.SETTLED_NS: a checkout
    left alone since the last session. The in-process CLI's index connections are closed first: the last one to
    close checkpoints the WAL into the index file, whenever the garbage collector gets to it."""
    gc.collect()
    past = time.time() - 30
    for path in wiki.path.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))


def _kept(wiki):
    return wiki.path / ".git" / "gitwiki" / briefing.CACHE


@pytest.fixture
def made(monkeypatch):
    """How many briefings were made anew (and kept) rather than answered from a kept one."""
    calls = []
    real = briefing.keep
    monkeypatch.setattr(briefing, "keep", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.fixture
def brief(wiki, hook):
    """brief() -> the SessionStart context of a new session; brief(fresh=True): with no kept briefing."""

    def run(fresh: bool = False) -> str:
        if fresh:
            _kept(wiki).unlink(missing_ok=True)
        event = load("session_start", wiki.path, session_id=f"s{time.time_ns()}")
        return context_of(hook("session", event, wiki.path)[1])

    return run


def test_the_next_session_is_briefed_from_the_kept_briefing_without_the_index_code(wiki, brief):
    _settle(wiki)
    first = brief()
    assert _kept(wiki).is_file()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gitwiki.agent_hooks", "session"],
        input=json.dumps(load("session_start", wiki.path, session_id="next")).encode(),
        capture_output=True,
        cwd=wiki.path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert context_of(json.loads(done.stdout)) == first
    loaded = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()[1:]}
    skipped = {"sqlite3", "gitwiki.index.store", "gitwiki.agent_hooks.lookup", "gitwiki.agent_hooks.handlers"}
    assert not loaded & skipped, loaded & skipped
    # and the session is one the other hooks know (its state saved, as the full path saves it)
    assert (wiki.path / ".git" / "gitwiki" / "agent-sessions" / "next.json").is_file()


def test_the_kept_briefing_follows_everything_it_is_made_of(wiki, brief, made, cli):
    _settle(wiki)
    before = brief()
    assert brief() == before and len(made) == 1  # the second from the kept one

    def changed(what: str) -> str:
        _settle(wiki)
        now = brief()
        assert now == brief(fresh=True), what
        return now

    wiki.write("wiki/draft.md", "# Draft\n")
    text = changed("a page in the worktree")
    assert "; 1 pages changed in the worktree" in text and text != before
    wiki.git("add", "-A")
    wiki.git("commit", "-qm", "draft")
    text = changed("HEAD")
    assert "behind HEAD" in text
    assert cli("index", cwd=wiki.path)[0] == 0
    text = changed("the index")
    assert f"indexed at {wiki.git('rev-parse', 'HEAD').strip()[:12]}" in text and "behind" not in text
    assert cli("memory", "store", "keys", "the ring needs a second signing key", cwd=wiki.path)[0] == 0
    text = changed("a memory entry")
    assert "memory topics, newest first: keys (2)" in text
    config = wiki.path / ".gitwiki.toml"
    config.write_text(config.read_text() + "[agent_hooks]\nmax_chars = 150\n")
    text = changed("the config")
    assert len(text) <= 150
    made.clear()
    assert brief() == text and not made  # nothing changed since: kept


def test_a_file_changed_just_now_keeps_nothing(wiki, brief):
    brief()  # the index was written a moment ago: another write may follow within the same mtime tick
    assert not _kept(wiki).exists()
    _settle(wiki)
    brief()
    assert _kept(wiki).is_file()


def test_the_checkpoint_age_is_of_the_answer_and_the_briefing_ends_with_its_window(wiki, brief, made, monkeypatch):
    _settle(wiki)
    first = brief()
    assert "Checkpoint (" in first and len(made) == 1
    real = time.time

    class Later:
        time_ns = staticmethod(time.time_ns)

        @staticmethod
        def time() -> float:
            return real() + 2 * 86400

    monkeypatch.setattr(briefing, "time", Later)
    later = brief()
    assert len(made) == 1  # from the kept one, its checkpoint two days older
    days = [int(t.split("Checkpoint (")[1].split("d ago")[0]) for t in (first, later)]
    assert days[1] == days[0] + 2
    assert later.split("Checkpoint (")[0] == first.split("Checkpoint (")[0]
    monkeypatch.setattr(briefing, "time", time)

    kept = json.loads(_kept(wiki).read_text())
    kept["until"] = real() - 1  # an entry has left the memory brief's 7-day window
    _kept(wiki).write_text(json.dumps(kept))
    assert brief() == first and len(made) == 2


def test_a_personal_memory_repository_is_never_in_a_kept_briefing(wiki):
    config = config_mod.load(wiki.path)
    index = wiki.path / ".git" / "gitwiki"
    _settle(wiki)
    assert briefing.key(wiki.path, wiki.path / ".git", config, index) is not None
    personal = config._replace(memory=config.memory._replace(repository="/elsewhere/memory"))
    assert briefing.key(wiki.path, wiki.path / ".git", personal, index) is None


def test_the_index_files_stamped_are_the_stores_and_an_empty_log_is_no_write(wiki):
    from gitwiki.agent_hooks import cache
    from gitwiki.index.store.database import DB_NAME

    assert cache.INDEX == DB_NAME
    config = config_mod.load(wiki.path)
    index = wiki.path / ".git" / "gitwiki"
    wal = index / (DB_NAME + "-wal")
    wal.unlink(missing_ok=True)
    _settle(wiki)
    before = briefing.key(wiki.path, wiki.path / ".git", config, index)
    wal.write_bytes(b"")  # what a reader's open leaves
    assert briefing.key(wiki.path, wiki.path / ".git", config, index) == before is not None
    wal.write_bytes(b"\0" * 32)  # a write, just now: not trusted yet
    assert briefing.key(wiki.path, wiki.path / ".git", config, index) is None
    _settle(wiki)
    assert briefing.key(wiki.path, wiki.path / ".git", config, index) not in (before, None)


def test_a_briefing_made_anew_walks_the_corpus_folders_once(wiki, brief, monkeypatch):
    """The key's stamp of the worktree is the status cache's too: a big wiki's walk is not made twice."""
    from gitwiki.agent_hooks import status

    walks = []
    real = status._stamp
    monkeypatch.setattr(status, "_stamp", lambda *a: walks.append(1) or real(*a))
    _settle(wiki)
    brief(fresh=True)
    assert len(walks) == 1
    brief()
    assert len(walks) == 2  # the kept one's key


def test_a_kept_briefing_is_given_once_when_the_plugin_and_the_settings_both_run_the_hook(wiki, brief, hook, made):
    _settle(wiki)
    brief()
    event = load("session_start", wiki.path, session_id="twice")
    first = hook("session", event, wiki.path)
    assert first[0] == 0 and context_of(first[1])
    assert hook("session", event, wiki.path) == (0, None)  # the same event again: the second copy
    assert len(made) == 1  # both from the kept one


def test_a_briefing_that_cannot_be_kept_is_still_answered(wiki, brief, monkeypatch):
    from gitwiki.agent_hooks import cache

    real = cache.save

    def refused(path, data):
        if path.name == briefing.CACHE:
            raise PermissionError(13, "Permission denied", str(path))
        real(path, data)

    monkeypatch.setattr(cache, "save", refused)
    _settle(wiki)
    assert brief().startswith("gitwiki: this repository keeps a wiki")
    assert not _kept(wiki).exists()
