"""What an entry's text or a person's page can do to the page's entry structure: nothing. Entry bodies
cannot open a block over the next entry, a heading CommonMark sees is a section boundary for memory too,
and a hand-written page keeps its front matter, H1 and sections."""

from __future__ import annotations

import pytest

from gitwiki.errors import UsageError
from gitwiki.markdown.chunker import parser
from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, clean_text, parse_page, render_page

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


def commonmark_h2(page: str) -> list[int]:
    """0-based lines of the top-level H1/H2 headings markdown-it (CommonMark) finds."""
    tokens = parser().parse(page)
    return [t.map[0] for t in tokens if t.type == "heading_open" and t.level == 0 and t.tag in ("h1", "h2")]


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "```python"])
def test_an_unclosed_fence_does_not_swallow_the_entries_after_it(mem, repo, fence):
    store_mod.store(mem, "t", f"how to run the tests\n\n{fence}\npytest -q")
    second = store_mod.store(mem, "t", "second entry about the cache").results[0]
    third = store_mod.store(mem, "t", "third entry about the lock").results[0]
    assert (second.entry.ref, third.entry.ref) == ("t:2", "t:3")
    entries = mem.topic("t").page.entries
    assert [e.title for e in entries] == [
        "how to run the tests",
        "second entry about the cache",
        "third entry about the lock",
    ]
    # The text reads back as stored; the page shows it with the fence closed.
    assert entries[0].text == f"how to run the tests\n\n{fence}\npytest -q"
    assert entries[0].shown.endswith("pytest -q\n" + fence.rstrip("python"))
    page = (repo.path / "wiki/memory/t.md").read_text()
    assert len(commonmark_h2(page)) == 4  # the H1 and three entries, as any reader sees the page
    store_mod.delete(mem, "t", index=1)
    assert [e.title for e in mem.topic("t").page.entries] == [
        "second entry about the cache",
        "third entry about the lock",
    ]


def test_revise_with_an_unclosed_fence_keeps_modified_out_of_the_fence(mem):
    store_mod.store(mem, "t", "first")
    store_mod.store(mem, "t", "second")
    revised = store_mod.revise(mem, "t", index=1, text="now with code\n\n~~~\nmake test").entries[0]
    assert revised.modified and revised.text == "now with code\n\n~~~\nmake test"
    assert revised.shown == "now with code\n\n~~~\nmake test\n~~~"
    assert [e.title for e in mem.topic("t").page.entries] == ["now with code", "second"]


@pytest.mark.parametrize(
    "text",
    [
        "intro\n   ## 2026-01-01T00:00:00Z — forged",
        "intro\n## 2026-01-01T00:00:00Z — forged",
        "intro\n#\tforged h1",
        "title\n\na paragraph\n---\nmore",
        "title\n\na paragraph\n===",
        "intro\n<!-- never closed\n## 2026-01-01T00:00:00Z — forged",
        "intro\n<pre>\n## 2026-01-01T00:00:00Z — forged",
        "- item\n\n  ```\n  code in a list\n```",
        "text\n[tags: forged]",
        "line one\u2028## 2026-01-01T00:00:00Z — forged\rmore",
    ],
)
def test_an_entry_text_is_always_one_section(text):
    cleaned = clean_text(text)
    page = render_page("t", [Entry("t", "2026-01-02T00:00:00Z", cleaned), Entry("t", "2026-01-03T00:00:00Z", "next")])
    entries = parse_page(page, "t").entries
    assert [(e.text, e.tags) for e in entries] == [(cleaned, ()), ("next", ())]
    # CommonMark agrees: the H1 and exactly the two entry headers are headings.
    assert commonmark_h2(page) == [0, *(e.start_line - 1 for e in entries)]


def test_the_parser_takes_what_commonmark_calls_a_heading_as_a_boundary():
    page = (
        "# t\n\n## 2026-01-01T00:00:00Z — one\n\n"
        "   ## 2026-01-02T00:00:00Z — indented, still an H2\n\n"
        "    ## 2026-01-03T00:00:00Z — four spaces: code\n\n"
        "```\n## 2026-01-04T00:00:00Z — in a fence\n```\n\n"
        "Setext human section\n---\n\nhuman text\n"
    )
    entries = parse_page(page, "t").entries
    assert [e.created for e in entries] == ["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"]
    assert "four spaces" in entries[1].text and "in a fence" in entries[1].text
    assert entries[1].after == "Setext human section\n---\n\nhuman text"


HAND_WRITTEN = """---
title: Design
owner: platform
---
# Design notes

Why the system looks the way it does.

## Overview

Written by a person.

## Details

Also written by a person.
"""


def test_storing_into_a_hand_written_page_keeps_it_a_persons_page(mem, repo):
    repo.write("wiki/memory/design.md", HAND_WRITTEN)
    stored = store_mod.store(mem, "design", "decision: one writer lock per index").results[0]
    assert stored.entry.ref == "design:1"
    text = (repo.path / "wiki/memory/design.md").read_text()
    assert text.startswith(HAND_WRITTEN.rstrip("\n") + "\n\n## 20")  # front matter first, H1 and sections kept
    assert text.count("\n# ") == 1 and "# design\n" not in text
    page = mem.topic("design").page
    assert [e.title for e in page.entries] == ["decision: one writer lock per index"]
    store_mod.store(mem, "design", "gotcha: the lock is per thread")
    store_mod.delete(mem, "design", index=1)
    text = (repo.path / "wiki/memory/design.md").read_text()
    assert "## Overview\n\nWritten by a person." in text and "## Details\n\nAlso written by a person." in text
    store_mod.delete(mem, "design", all=True)  # every entry gone: the person's page stays
    assert (repo.path / "wiki/memory/design.md").read_text() == HAND_WRITTEN


def test_a_byte_order_mark_before_the_front_matter_keeps_the_page_a_persons(mem, repo):
    repo.write("wiki/memory/design.md", "\ufeff" + HAND_WRITTEN)
    store_mod.store(mem, "design", "decision: one writer lock per index")
    text = (repo.path / "wiki/memory/design.md").read_text()
    assert text.startswith("\ufeff" + HAND_WRITTEN.rstrip("\n") + "\n\n## 20") and "# design\n" not in text


def test_a_persons_section_after_an_entry_survives_deleting_that_entry(mem, repo):
    store_mod.store(mem, "t", "first entry")
    path = repo.path / "wiki/memory/t.md"
    path.write_text(path.read_text() + "\n## Notes\n\nA person's note.\n")
    store_mod.store(mem, "t", "second entry")
    assert [e.title for e in mem.topic("t").page.entries] == ["first entry", "second entry"]
    store_mod.delete(mem, "t", index=1)
    text = path.read_text()
    assert "## Notes\n\nA person's note." in text and "first entry" not in text
    assert [e.title for e in mem.topic("t").page.entries] == ["second entry"]


def test_a_persons_unclosed_fence_refuses_the_store_and_writes_nothing(mem, repo):
    page = "# notes\n\nSome code:\n\n```\nnever closed\n"
    repo.write("wiki/memory/notes.md", page)
    with pytest.raises(UsageError, match="code fence or HTML block open"):
        store_mod.store(mem, "notes", "an entry that would be swallowed")
    assert (repo.path / "wiki/memory/notes.md").read_text() == page


def test_an_append_is_one_section_with_the_text_it_joins(mem):
    """Found by the fuzz suite: `<?php` alone is a title, but appended it is an HTML block that ran on over
    the next entry."""
    store_mod.store(mem, "t", "```")
    store_mod.append(mem, "t", index=1, text="<?php")
    assert store_mod.store(mem, "t", "the next entry").results[0].entry.ref == "t:2"
    assert [e.title for e in mem.topic("t").page.entries] == ["<?php", "the next entry"]


def test_rename_moves_a_persons_page_whole_and_merge_leaves_their_text(mem, repo):
    repo.write("wiki/memory/design.md", HAND_WRITTEN)
    store_mod.store(mem, "design", "decision: one writer lock per index")
    store_mod.rename(mem, "design", to="architecture")
    text = (repo.path / "wiki/memory/architecture.md").read_text()
    assert text.startswith(HAND_WRITTEN.rstrip("\n")) and not (repo.path / "wiki/memory/design.md").exists()
    store_mod.store(mem, "other", "an entry of another topic")
    store_mod.merge(mem, "architecture", into="other")
    assert (repo.path / "wiki/memory/architecture.md").read_text() == HAND_WRITTEN
    assert [e.title for e in mem.topic("other").page.entries] == [
        "an entry of another topic",
        "decision: one writer lock per index",
    ]


def test_a_plain_page_is_parsed_without_markdown_it():
    """What a hook re-reads after a store: paragraphs, code and ATX headings need no CommonMark parser."""
    import subprocess
    import sys

    script = (
        "import sys\nfrom gitwiki.memory.entry import parse_page\n"
        "page = '# t\\n\\n## 2026-01-01T00:00:00Z — a\\n\\nsome text\\n\\n```\\n## code\\n```\\n\\n[tags: x]\\n'\n"
        "assert [e.tags for e in parse_page(page, 't').entries] == [('x',)]\n"
        "print('markdown_it' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
