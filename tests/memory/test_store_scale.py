"""What a store into a large topic page does again and what it does not (docs/research/memory-store-scale.md): a
page re-read unchanged under the writer's lock is not parsed again, an entry a new version still holds keeps its
search terms, and an entry's section is parsed once per process. Exactness is held by the tests of the parser and
of search (tests/memory/test_parsed.py, test_memory.py); these hold that the work is skipped."""

from __future__ import annotations

import pytest

from gitwiki.git.gitcli import blob_id
from gitwiki.index.store import Store
from gitwiki.markdown.chunker import parse_page as chunk_page
from gitwiki.memory import base, entry
from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, entry_terms, parse_page, render_page

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


def page(n: int) -> str:
    notes = [
        Entry("git", f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z", f"note {i}: rebase onto main {i}") for i in range(n)
    ]
    return render_page("git", notes)


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "wiki/memory/git.md": page(40)})
    return Memory.open(repo.path)


def counting(monkeypatch, module, name) -> list[object]:
    calls: list[object] = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(a) or real(*a, **k))
    return calls


def test_a_page_read_again_under_the_lock_unchanged_is_not_parsed_again(mem, monkeypatch):
    first = mem.topics()["git"]
    parses = counting(monkeypatch, base, "parse_page")
    again = mem.topics(fresh={"git"})["git"]  # what a writer does under the lock
    assert parses == [] and again is first
    (mem.folder / "git.md").write_text(page(41))
    assert len(mem.topics(fresh={"git"})["git"].page.entries) == 41 and len(parses) == 1


def test_a_grown_page_stems_only_its_new_entry_and_its_terms_are_the_parsers(mem, monkeypatch):
    mem.topics()
    stems = counting(monkeypatch, base, "entry_terms")
    (mem.folder / "git.md").write_text(page(41))
    read = mem.topics()["git"]
    assert len(stems) == 1
    assert read.terms == tuple(entry_terms(e) for e in read.page.entries)


def test_each_section_of_a_page_is_parsed_once_per_process(monkeypatch):
    text = page(30)
    first = parse_page(text, "git")
    sections = counting(monkeypatch, entry, "_entry")
    grown = text + "\n" + entry.render_entry(Entry("git", "2026-02-01T00:00:00Z", "a new note on bisect"))
    back = parse_page(grown, "git")
    assert len(sections) == 1  # the new entry's
    assert back.entries[:-1] == first.entries and back.entries[-1].index == 31
    assert back.entries[-1].start_line == grown.split("\n").index("## 2026-02-01T00:00:00Z — a new note on bisect") + 1


def test_a_store_into_a_large_page_reads_back_every_entry_as_a_fresh_process_would(mem, repo):
    done = store_mod.store(mem, "git", "a new note: git worktree add keeps one checkout per branch")
    stored = done.results[0].entry
    assert stored is not None and stored.index == 41
    fresh = Memory.open(repo.path).topics()["git"]
    assert mem.topics()["git"].page == fresh.page and mem.topics()["git"].terms == fresh.terms


def chunk_rows(index: Store, blob: str) -> list[tuple[object, ...]]:
    """The index rows of a page version, page order: (id, ord, lines, text, head, body)."""
    return index.conn.execute(
        "SELECT c.id, c.ord, c.start_line, c.end_line, c.text, f.head, f.body FROM chunks c JOIN fts f "
        "ON f.rowid = c.id WHERE c.blob = ? ORDER BY c.ord",
        (blob,),
    ).fetchall()


def test_a_store_keeps_the_index_rows_of_the_entries_it_did_not_change(mem, repo):
    store_mod.store(mem, "git", "a first note: git stash keeps the worktree changes aside")  # a draft version now
    draft = blob_id((mem.folder / "git.md").read_bytes())
    before = chunk_rows(mem.search_index, draft)
    store_mod.store(mem, "git", "a second note: git bisect finds the commit that broke it")
    text = (mem.folder / "git.md").read_bytes()
    after = chunk_rows(mem.search_index, blob_id(text))
    assert [r[0] for r in after[: len(before)]] == [r[0] for r in before]  # the same rows, not new ones
    assert chunk_rows(mem.search_index, draft) == [] and not mem.search_index.known_blobs([draft])
    fresh = Store.open(repo.path / "fresh-index")
    with fresh.write():
        fresh.add_blob(blob_id(text), chunk_page(text.decode()))
    assert [r[1:] for r in after] == [r[1:] for r in chunk_rows(fresh, blob_id(text))]  # as indexed from scratch


def test_a_heading_taken_in_that_second_moves_the_stamp_on_and_another_title_does_not():
    from gitwiki.memory.entry import Entry
    from gitwiki.memory.store import _unique_stamp

    stamp = "2026-11-28T10:00:00Z"
    entries = [
        Entry("t", stamp, "deploy: use argo"),
        Entry("t", stamp, "something else"),
        Entry("t", "2026-11-28T10:00:01Z", "deploy: use argo\n\nagain"),
        Entry("t", "2026-11-28T10:00:02Z", "x", shown="deploy: use argo"),  # the heading is of what the page shows
    ]
    assert _unique_stamp(stamp, "deploy: use argo\n\nthird", entries) == "2026-11-28T10:00:03Z"
    assert _unique_stamp(stamp, "a new title", entries) == stamp
    assert _unique_stamp("2026-11-28T10:00:04Z", "deploy: use argo", entries) == "2026-11-28T10:00:04Z"
