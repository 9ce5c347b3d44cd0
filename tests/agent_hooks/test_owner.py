"""A hook that searches asks the checkout's running owner first (its warm search), and searches by itself when no
owner is up, when it declines, or when it hangs: within the hook's budget, never starting one."""

from __future__ import annotations

import time

import pytest

from gitwiki.agent_hooks import HOOK_TIMEOUT
from gitwiki.agent_hooks import owner as hook_owner
from gitwiki.agent_hooks.lookup import Lookup
from gitwiki.serve import client as serve_client
from gitwiki.serve.server import SocketServer
from gitwiki.wiki import Wiki
from tests.agent_hooks.helpers import context_of, load
from tests.helpers import hung_socket, socket_server


@pytest.fixture
def owner(wiki, monkeypatch):
    """A socket server over the hooks' wiki, in this process (what the owner `gitwiki serve` runs), counting the
    searches it answers."""
    answered: list[str] = []
    reply = SocketServer.reply

    def counted(self, message):
        found = reply(self, message)
        if "stdout" in found:
            answered.append(message["request"]["query"])
        return found

    monkeypatch.setattr(SocketServer, "reply", counted)
    with socket_server(wiki.path):
        yield answered


def no_local_search(*args, **kwargs):
    raise AssertionError("the hook searched by itself")


def test_a_prompt_hook_gets_the_owners_answer_when_one_is_up(wiki, hook, owner, monkeypatch):
    event = load("user_prompt_submit", wiki.path)
    monkeypatch.setattr(Lookup, "search", no_local_search)  # the hook's own path would fail: the answer is the owner's
    text = context_of(hook("prompt", event, wiki.path)[1])
    assert owner == [event["prompt"]]
    assert "- [wiki] wiki/deploy.md:3-5 Deploy › Rollback" in text
    assert "`rollback_release`" in text
    # the session's notes are not injected twice, whoever found them
    again = load("user_prompt_submit", wiki.path, prompt="And how do we roll back a release today?")
    assert hook("prompt", again, wiki.path) == (0, None)
    assert len(owner) == 2


def test_a_prompt_the_owner_answers_never_opens_the_index(wiki, hook, owner, monkeypatch):
    """SQLite and the store are the hook's own search: with the owner's answer the hook loads neither."""

    def never(self):
        raise AssertionError("the hook opened the index")

    monkeypatch.setattr(Lookup, "store", property(never))
    text = context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert "- [wiki] wiki/deploy.md:3-5 Deploy › Rollback" in text and len(owner) == 1


def test_the_owners_answer_shows_what_the_hooks_own_search_shows(wiki, hook, owner, monkeypatch):
    event = load("user_prompt_submit", wiki.path)
    from_owner = context_of(hook("prompt", event, wiki.path)[1])
    monkeypatch.setenv(serve_client.NO_SERVER, "1")
    alone = context_of(hook("prompt", load("user_prompt_submit", wiki.path, session_id="other"), wiki.path)[1])
    assert len(owner) == 1
    assert from_owner == alone


def test_without_an_owner_the_hook_searches_by_itself(wiki, hook, monkeypatch):
    asked = []
    monkeypatch.setattr(serve_client, "ask_search", lambda *a: asked.append(a) or None)
    text = context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert "- [wiki] wiki/deploy.md:3-5 Deploy › Rollback" in text
    assert len(asked) == 1  # it asked, found no owner, and did not start one
    where = Wiki.open(wiki.path)
    try:
        assert not serve_client.socket_path(where.index_dir, where.root).exists()
    finally:
        where.close()


def test_an_owner_that_hangs_leaves_the_hook_its_own_answer_within_its_budget(wiki, hook):
    opened = Wiki.open(wiki.path)
    path = serve_client.socket_path(opened.index_dir, opened.root)
    opened.close()
    with hung_socket(path):  # connections are queued, never accepted or answered: a stopped owner
        started = time.monotonic()
        code, answer = hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)
        took = time.monotonic() - started
    assert code == 0
    assert "wiki/deploy.md:3-5" in context_of(answer)
    # the budget, with room for a loaded machine; without one the hook would wait for the reply for minutes
    assert took < min(hook_owner.OWNER_BUDGET + 3.0, HOOK_TIMEOUT)


def test_an_owners_reply_of_another_shape_is_not_used(wiki, hook, monkeypatch):
    monkeypatch.setattr(serve_client, "ask_search", lambda *a: {"docs": [{"path": "x.md"}]})
    text = context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert "wiki/deploy.md:3-5" in text


def _page(path: str, weak: bool, heading: str) -> dict:
    chunk = {"breadcrumb": [heading], "start_line": 1, "end_line": 3, "text": f"## {heading}\n\nrollback", "score": 1}
    return {"path": path, "weak": weak, "chunks": [chunk]}


def test_weak_pages_of_the_owner_are_left_out(wiki, hook, monkeypatch):
    found = {"docs": [_page("wiki/cache.md", True, "Stale entries"), _page("wiki/keys.md", False, "Rotation policy")]}
    monkeypatch.setattr(serve_client, "ask_search", lambda *a: found)
    text = context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert "wiki/keys.md:1-3 Rotation policy" in text and "wiki/cache.md" not in text


def test_when_every_page_of_the_owner_is_weak_the_hooks_own_search_decides(wiki, hook, monkeypatch):
    """On a small wiki the owner can call every page weak; the hook's coverage rule then answers, as before."""
    found = {"docs": [_page("wiki/cache.md", True, "Stale entries")]}
    monkeypatch.setattr(serve_client, "ask_search", lambda *a: found)
    text = context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])
    assert "- [wiki] wiki/deploy.md:3-5 Deploy › Rollback" in text and "wiki/cache.md" not in text
