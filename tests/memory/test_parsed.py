"""The index dir's cache of parsed topic pages (gitwiki.memory.parsed, gitwiki.index.store.memory_entries): a
cached page reads back as the parser gives it, a search from it answers as a search from the pages, and a
damaged, foreign or unwritable cache costs a parse, never an answer."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.git.gitcli import blob_id
from gitwiki.index.store.memory_entries import FILE_NAME, MemoryEntries
from gitwiki.memory import parsed
from gitwiki.memory import search as search_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import entry_terms, parse_page
from tests.memory.helpers import TEXT

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)

OPS = """---
owner: platform
---
# Ops notes

A person's preamble, kept verbatim.

## 2026-11-01T10:00:00Z — deploy: the rollout waits for the canary

deploy: the rollout waits for the canary
and then for the `argo sync` of every region.

[tags: deploy, gotcha]
[source: src/app.py:2@0123456789abcdef0123456789abcdef01234567]
[confidence: 0.6]
[links: build build:2]
[modified: 2026-11-05T08:00:00Z]

## A person's own section

Text a person wrote after the entry.

## 2026-11-10T09:30:00Z — rotate_key before the release build

Call rotateKey() in CI; the release build reads it.

[tags: release]
"""

BUILD = """# build

## 2026-10-01T00:00:00Z — the build caches wheels per python version

The build caches wheels per python version.

## 2026-10-02T00:00:00Z — a flaky test retries three times

A flaky test retries three times before the build fails.

[confidence: 0.9]
"""


@pytest.fixture
def repo_mem(repo):
    repo.commit(
        "init",
        {
            ".gitwiki.toml": LEXICAL,
            "wiki/index.md": "# Home\n\nThe wiki.\n",
            "wiki/memory/ops.md": OPS,
            "wiki/memory/build.md": BUILD,
            "src/app.py": "a\nb\nc\n",
        },
    )
    return repo


def _fresh(repo, cache: bool) -> Memory:
    return Memory.open(repo.path, cache=cache)


def test_a_cached_page_reads_back_as_the_parser_gives_it(repo_mem):
    first = _fresh(repo_mem, cache=True)
    parsed_now = first.topics()  # parsed, and kept in the cache
    first.close()
    again = _fresh(repo_mem, cache=True)
    from_cache = again.topics()
    for name in ("ops", "build"):
        assert from_cache[name].page == parsed_now[name].page
        assert from_cache[name].terms == parsed_now[name].terms
        assert from_cache[name].page == parse_page(from_cache[name].data.decode(), name)
    assert (
        from_cache["ops"].page.entries[0].after == "## A person's own section\n\nText a person wrote after the entry."
    )
    store = again.parsed_cache()
    assert store is not None and len(store.known([(from_cache["ops"].blob, "ops")])) == 1
    again.close()


QUERIES = [
    ("rollout canary", {}),
    ("build", {}),  # several entries, two topics
    ("rotate key", {}),  # identifiers split in the query
    ("canary wheels", {"mode": "or"}),
    ("wheels canary", {}),  # no entry holds both: any-word match
    ("nothing like this", {}),  # no term anywhere
    ("", {}),  # the newest entries
    ("build", {"tag": "gotcha"}),
    ("build", {"topic": "build"}),
    ("release", {"after": "2026-11-05"}),
    ("the of", {}),  # stop words only
]


@pytest.mark.parametrize(("query", "options"), QUERIES)
def test_a_search_from_the_cache_answers_as_one_from_the_pages(repo_mem, query, options):
    plain = search_mod.search(_fresh(repo_mem, cache=False), search_mod.MemoryQuery(query, now=NOW, **options))
    _fresh(repo_mem, cache=True).topics()  # fills the cache
    cached_mem = _fresh(repo_mem, cache=True)
    cached = search_mod.search(cached_mem, search_mod.MemoryQuery(query, now=NOW, **options))
    assert cached == plain
    assert cached_mem._pages == {}  # no page parsed: the entries came from the cache


def test_an_edited_page_is_parsed_again_not_read_from_the_cache(repo_mem):
    _fresh(repo_mem, cache=True).topics()
    repo_mem.write("wiki/memory/build.md", BUILD + "\n## 2026-11-20T00:00:00Z — wheels moved to the new cache\n")
    found = search_mod.search(_fresh(repo_mem, cache=True), search_mod.MemoryQuery("wheels", now=NOW))
    assert sorted(h.entry.ref for h in found.hits) == ["build:1", "build:3"]


def test_a_damaged_cache_is_set_aside_and_the_search_still_answers(repo_mem):
    mem = _fresh(repo_mem, cache=True)
    mem.topics()
    where = mem.index_dir()
    mem.close()
    assert where is not None
    (where / FILE_NAME).write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (where / f"{FILE_NAME}{suffix}").unlink(missing_ok=True)
    again = _fresh(repo_mem, cache=True)
    assert [h.entry.ref for h in search_mod.search(again, search_mod.MemoryQuery("canary", now=NOW)).hits] == ["ops:1"]
    again.close()
    conn = sqlite3.connect(where / FILE_NAME)
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 2  # rebuilt from the pages
    conn.close()


def test_rows_of_another_parser_version_are_dropped(tmp_path):
    store = MemoryEntries.open(tmp_path, "one")
    assert store is not None
    store.put("b" * 40, "t", parsed_page(), 1)
    assert store.known([("b" * 40, "t")]) == {("b" * 40, "t")}
    store.close()
    other = MemoryEntries.open(tmp_path, "two")
    assert other is not None and other.known([("b" * 40, "t")]) == set()
    other.close()


def test_only_the_newest_versions_of_a_topic_are_kept(tmp_path):
    store = MemoryEntries.open(tmp_path, "v")
    assert store is not None
    for n in range(5):
        store.put(f"{n:040d}", "t", parsed_page(), n)
    kept = store.known([(f"{n:040d}", "t") for n in range(5)])
    assert kept == {(f"{n:040d}", "t") for n in (2, 3, 4)}
    store.close()


def test_a_read_only_index_dir_reads_the_cache_without_writing(tmp_path):
    store = MemoryEntries.open(tmp_path, "v")
    assert store is not None
    store.put("a" * 40, "t", parsed_page(), 1)
    store.close()
    tmp_path.chmod(0o555)
    (tmp_path / FILE_NAME).chmod(0o444)
    try:
        reader = MemoryEntries.open(tmp_path, "v")
        if reader is not None:  # root writes anyway: then there is nothing read-only to test
            assert reader.known([("a" * 40, "t")]) == {("a" * 40, "t")}
            reader.put("c" * 40, "t", parsed_page(), 2)  # skipped or written, never an error
            reader.close()
    finally:
        tmp_path.chmod(0o755)
        (tmp_path / FILE_NAME).chmod(0o644)


def test_a_page_whose_terms_would_not_read_back_is_not_cached(repo_mem):
    mem = _fresh(repo_mem, cache=True)
    tf = mem.topics()["build"]
    odd = tf.page.entries[0]._replace(tags=("two words",))
    page = tf.page._replace(entries=(odd, *tf.page.entries[1:]))
    parsed.keep(mem.parsed_cache(), {"odd": (tf.blob, page, tf.terms)})
    store = mem.parsed_cache()
    assert store is not None and store.known([(tf.blob, "odd")]) == set()
    mem.close()


def parsed_page():
    from gitwiki.index.store.memory_entries import CachedPage

    row = ("2026-01-01T00:00:00Z", "", "text", "", "", 1.0, "", 3, 4, "", "", " text ")
    return CachedPage("t", "", "", [row])


STAMP = "2026-11-01T10:00:00Z"


@given(
    preamble=st.one_of(st.just(""), TEXT),
    texts=st.lists(TEXT, min_size=1, max_size=3),
    meta=st.lists(st.sampled_from(["", "[tags: a, b-c]", "[links: x x:2]", "[confidence: 0.4]", "[source: p:1@ab]"])),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_page_reads_back_from_the_cache_as_parsed(tmp_path, preamble, texts, meta):
    """Whatever a page holds (hostile text, a person's preamble, metadata), its cached rows read back as
    the parser's entries and terms, or the page is not cached at all."""
    body = "".join(f"## {STAMP} — {(t.splitlines() or ['x'])[0]}\n\n{t}\n\n" + "\n".join(meta) + "\n\n" for t in texts)
    page = parse_page(f"# t\n\n{preamble}\n\n{body}", "t")
    terms = tuple(entry_terms(e) for e in page.entries)
    store = MemoryEntries.open(tmp_path / "index", parsed.version())
    assert store is not None
    try:
        parsed.keep(store, {"t": ("a" * 40, page, terms)})
        back = parsed.lookup(store, {"t": "a" * 40})
        assert back == {} or back["t"] == (page, terms)
        assert back or any(" " in w or w != w.strip() for e in page.entries for w in (*e.tags, *e.links))
    finally:
        store.close()


@given(
    texts=st.lists(TEXT, min_size=1, max_size=4),
    added=st.lists(TEXT, min_size=1, max_size=2),
    changed=st.booleans(),
    cached_before=st.booleans(),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_version_keeping_the_entries_it_starts_with_reads_back_as_one_cached_whole(
    tmp_path, texts, added, changed, cached_before
):
    """A store's new version takes the cached rows of the entries the version before starts with: it reads back
    as the same version cached whole, and when the version before is not cached, it is cached whole."""
    sections = [f"## {STAMP} — {(t.splitlines() or ['x'])[0]}\n\n{t}\n\n" for t in texts]
    old_text = "# t\n\n" + "".join(sections)
    old = parse_page(old_text, "t")
    if changed:  # an entry revised in the middle: the rows after it are made again
        sections[len(sections) // 2] = f"## {STAMP} — revised\n\nrevised\n\n"
    sections += [f"## 2026-11-02T00:00:00Z — {(t.splitlines() or ['x'])[0]}\n\n{t}\n\n" for t in added]
    new_text = "# t\n\n" + "".join(sections)
    new = parse_page(new_text, "t")
    ob, nb = blob_id(old_text.encode()), blob_id(new_text.encode())  # a blob id names its text
    run = tmp_path / uuid.uuid4().hex  # a fresh cache per example
    old_terms = tuple(entry_terms(e) for e in old.entries)
    new_terms = tuple(entry_terms(e) for e in new.entries)
    for where, before in (("whole", None), ("kept", {"t": (ob, old, old_terms)})):
        store = MemoryEntries.open(run / where / "index", parsed.version())
        assert store is not None
        try:
            if cached_before:
                parsed.keep(store, {"t": (ob, old, old_terms)})
            parsed.keep(store, {"t": (nb, new, new_terms)}, before)
            back = parsed.lookup(store, {"t": nb})
            assert back == {} or back["t"] == (new, new_terms)
            rows = store.conn.execute("SELECT * FROM entries WHERE blob = ? ORDER BY ord", (nb,)).fetchall()
            if where == "whole":
                whole = rows
            else:
                assert rows == whole
        finally:
            store.close()
