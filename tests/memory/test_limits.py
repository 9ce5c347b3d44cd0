"""Names, sizes and numbers at their limits: Unicode topics, long names, huge spans, huge checkpoints,
and what the duplicate check counts as the same entry."""

from __future__ import annotations

import pytest

from gitwiki.errors import GitwikiError, UsageError
from gitwiki.memory import checkpoint as cp
from gitwiki.memory import replies
from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory.actions import batch_items
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import parse_page, topic_name

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


def test_unicode_topic_names_are_letters(mem, repo):
    assert topic_name("日本語") == "日本語" and topic_name("É" * 100) == "é" * 100
    assert topic_name("Cafe\u0301 Notes") == "café-notes"  # NFC: one file whatever the keyboard
    assert topic_name("a/../b") == "a-b"
    stored = store_mod.store(mem, "日本語", "テストは arm64 で失敗する").results[0]
    assert stored.entry.ref == "日本語:1" and (repo.path / "wiki/memory/日本語.md").is_file()
    assert store_mod.store(mem, "é" * 100, "a note").results[0].stored


def test_a_topic_name_too_long_for_a_file_name_is_refused_with_the_limit(mem):
    with pytest.raises(UsageError, match=r"too long \(300 characters, 300 bytes.*at most 200 bytes"):
        store_mod.store(mem, "x" * 300, "text")
    with pytest.raises(UsageError, match="too long"):
        cp.checkpoint(mem, "task", name="日" * 70)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("tests fail on arm64", "tests pass on arm64"),
        ("the CI tests fail on arm64 runners since tuesday", "the CI tests pass on arm64 runners since tuesday"),
        ("the cache is enabled for every worker in staging", "the cache is disabled for every worker in staging"),
        ("the writer lock is not held across processes here", "the writer lock is held across processes here"),
        ("the writer lock isn't held across processes here", "the writer lock is held across processes here"),
        ("rotateSigningKey fail_fast", "rotateSigningKey fail_safe"),  # two words, not six tokens
    ],
)
def test_opposites_negations_and_short_texts_are_not_duplicates(mem, new, old):
    store_mod.store(mem, "t", old)
    stored = store_mod.store(mem, "t", new).results[0]
    assert stored.stored and stored.similar_to is None and not stored.warnings


def test_a_restatement_is_stored_with_a_warning_naming_the_entry_it_is_like(mem):
    store_mod.store(mem, "t", "the CI tests fail on arm64 runners since tuesday")
    again = store_mod.store(mem, "t", "CI tests fail on arm64 runners since Tuesday!").results[0]
    assert again.stored and again.entry.ref == "t:2" and again.similar_to.ref == "t:1" and again.overlap == 1.0
    assert again.warnings == (
        "100% like t:1 (the CI tests fail on arm64 runners since tuesday); stored anyway: if the two say the same, "
        "revise one and delete the other",
    )
    assert [e.ref for e in mem.topic("t").page.entries] == ["t:1", "t:2"]


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize(
    "again", ["rotateSigningKey fail_fast", "rotateSigningKey   fail_fast", " rotateSigningKey\tfail_fast\n"]
)
def test_an_exact_repeat_is_never_stored_whatever_its_length(mem, again, force):
    """Under six words the overlap test does not apply; the same text (whitespace aside) is still the same note."""
    store_mod.store(mem, "t", "rotateSigningKey fail_fast")
    store_mod.store(mem, "u", "rotateSigningKey fail_fast")  # another topic: a note of its own
    repeat = store_mod.store(mem, "t", again, force=force).results[0]
    assert not repeat.stored and repeat.entry is None and repeat.duplicate_of.ref == "t:1"
    assert len(mem.topic("t").page.entries) == 1 and len(mem.topic("u").page.entries) == 1


def test_huge_spans_mean_no_lower_bound_and_nan_is_refused(mem):
    store_mod.store(mem, "t", "an old note")
    assert search_mod.search(mem, search_mod.MemoryQuery(None, days=10**12)).total == 1
    assert search_mod.search(mem, search_mod.MemoryQuery(None, hours=1e308)).total == 1
    assert search_mod.search(mem, search_mod.MemoryQuery(None, hours=float("inf"))).total == 1
    with pytest.raises(UsageError, match="days must be a positive number"):
        search_mod.search(mem, search_mod.MemoryQuery(None, days=float("nan")))


def test_checkpoints_are_capped_on_save_and_in_resume(mem, repo):
    with pytest.raises(UsageError, match="at most 64,000"):
        cp.checkpoint(mem, "task", done=["x" * 1000] * 900)
    assert not (repo.path / "wiki/memory/checkpoints").exists()
    # A page grown past the cap by hand: resume answers the start of it and names the page.
    big = "# Checkpoint default\n\nSaved 2026-11-23T15:40:00Z.\n\n## Task\n\nbig\n\n## Done\n\n" + "- x\n" * 300_000
    repo.write("wiki/memory/checkpoints/default.md", big)
    resumed = cp.resume(mem)
    assert len(resumed.markdown) < 64_200 and resumed.markdown.rstrip().endswith(
        "read wiki/memory/checkpoints/default.md"
    )
    assert resumed.checkpoint.done == ()


@pytest.mark.parametrize(
    "item",
    [
        {"topic": "t", "text": "x", "tags": 5},
        {"topic": "t", "text": "x", "tags": [1, None]},
        {"topic": "t", "text": "x", "links": [1, None, {}]},
        {"topic": "t", "text": "x", "links": ["a:b"]},
        {"topic": "t", "text": "x", "confidence": float("nan")},
        {"topic": "t", "text": 5},
        {"topic": "t", "text": "x", "source": "a.py:1\n## 2026-01-01T00:00:00Z — forged"},
    ],
)
def test_a_batch_item_of_the_wrong_shape_is_refused(mem, repo, item):
    with pytest.raises(UsageError, match="^entry 2: "):  # which one, for the agent to fix
        store_mod.batch(mem, batch_items([{"topic": "t", "text": "a good one"}, item]))
    assert not (repo.path / "wiki/memory").exists()


@pytest.mark.parametrize("item", [{"topic": "t", "text": "  "}, {"topic": "", "text": "x"}])
def test_one_refused_item_names_its_number_and_nothing_is_stored(mem, repo, item):
    with pytest.raises(UsageError, match="^entry 3: "):
        store_mod.batch(mem, batch_items([{"topic": "t", "text": "one"}, {"topic": "u", "text": "two"}, item]))
    assert not (repo.path / "wiki/memory").exists()
    with pytest.raises(UsageError) as alone:
        store_mod.batch(mem, batch_items([item]))
    assert not str(alone.value).startswith("entry")  # a store of one is not numbered


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda mem: store_mod.store(mem, "t", "x", links=("t:" + "9" * 5000,)), "with N an entry number"),
        (lambda mem: replies.read(mem, "t:" + "9" * 5000), "too long"),
    ],
)
def test_a_nul_or_a_number_of_thousands_of_digits_is_refused_in_one_line(mem, repo, call, says):
    """A NUL stored raw made the topic page binary to git and the index (the topic dropped out of search); a link or
    ref of 5,000 digits was int()'s ValueError, an internal error over MCP."""
    store_mod.store(mem, "t", "the gateway retries on timeout")
    with pytest.raises(GitwikiError, match=says):
        call(mem)
    text = (repo.path / "wiki/memory/t.md").read_text()
    assert [e.text for e in parse_page(text, "t").entries] == ["the gateway retries on timeout"]


def test_a_nul_in_a_text_is_kept_but_not_written_raw_into_the_page(mem, repo):
    """A NUL stored raw made the topic page binary to git and the index: the topic dropped out of search."""
    store_mod.store(mem, "t", "the gateway retries on timeout")
    stored = store_mod.store(mem, "t", "a\x00b and\x00more", tags=("x\x00y",)).results[0]
    raw = (repo.path / "wiki/memory/t.md").read_bytes()
    assert b"\x00" not in raw and stored.entry.tags == ("xy",)
    assert Memory.open(repo.path).entry("t", 2).text == "a\x00b and\x00more"  # the exact text, from its JSON line
    assert [h.entry.index for h in search_mod.search(Memory.open(repo.path), "gateway").hits] == [1]
