from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.markdown import chunker
from gitwiki.markdown.chunker import MAX_PIECES, estimate_pieces, parse_page
from gitwiki.markdown.frontmatter import split_front_matter

PAGE = """---
title: Signing keys
tags: [ops, security]
description: How we handle keys.
---
Intro before any heading.

# Keys

About keys.

## Rotate
### Steps
```sh
# a comment, not a heading
vault rotate
```
#### Deeper heading stays inside
still steps

## Parent without text
### Child
child text
"""


def test_front_matter_is_metadata_not_text():
    page = parse_page(PAGE, "fallback")
    assert page.title == "Signing keys"
    assert page.tags == ("ops", "security")
    assert page.description == "How we handle keys."
    assert all("tags:" not in c.text for c in page.chunks)


def test_split_on_h1_h2_h3_with_breadcrumbs_and_file_lines():
    chunks = parse_page(PAGE).chunks
    got = [(c.breadcrumb, c.level, c.start_line, c.end_line) for c in chunks]
    assert got == [
        ((), 0, 6, 6),
        (("Keys",), 1, 8, 10),
        (("Keys", "Rotate", "Steps"), 3, 13, 19),
        (("Keys", "Parent without text", "Child"), 3, 22, 23),
    ]
    lines = PAGE.split("\n")
    for c in chunks:  # the line range points at exactly the chunk's text in the file
        assert "\n".join(lines[c.start_line - 1 : c.end_line]) == c.text


def test_headings_inside_code_fences_do_not_split():
    steps = parse_page(PAGE).chunks[2]
    assert "# a comment, not a heading" in steps.text and "#### Deeper heading" in steps.text


def test_title_falls_back_to_h1_then_given_name():
    assert parse_page("# Real title\n\ntext\n", "file").title == "Real title"
    assert parse_page("no heading here\n", "file").title == "file"


def test_long_sections_split_at_blocks_with_breadcrumb_repeated():
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(12)]
    text = "# Big\n\n## Part\n\n" + "\n\n".join(paragraphs) + "\n"
    chunks = parse_page(text).chunks
    assert len(chunks) > 3
    assert all(c.breadcrumb == ("Big", "Part") for c in chunks)
    assert all(estimate_pieces(c.text) <= MAX_PIECES for c in chunks)
    body = "\n\n".join(c.text for c in chunks)
    assert all(p.strip() in body for p in paragraphs)  # nothing lost


def test_a_huge_code_fence_is_never_cut():
    fence = "```\n" + "\n".join(f"line {i} with some words here" for i in range(200)) + "\n```"
    chunks = parse_page(f"# Code\n\n{fence}\n").chunks
    assert len(chunks) == 1 and chunks[0].text.endswith("```")


def test_invalid_front_matter_reports_line_and_keeps_text():
    fm = split_front_matter("---\ntitle: [unclosed\n---\nbody\n")
    assert fm.meta == {} and fm.error and fm.error.startswith("line ") and fm.body == "body\n"
    page = parse_page("---\ntitle: [unclosed\n---\n# Body\n\ntext\n")
    assert page.front_matter_error and page.title == "Body"


def test_crlf_and_empty_input():
    assert parse_page("").chunks == ()
    crlf = parse_page("# A\r\n\r\ntext\r\n")
    assert crlf.chunks[0].text == "# A\n\ntext"


def test_a_heading_alone_is_dropped_only_when_a_subsection_carries_it():
    page = parse_page("# Guide\n## Install\n\nRun it.\n\n## Empty\n")
    assert [(c.breadcrumb, c.text) for c in page.chunks] == [
        (("Guide", "Install"), "## Install\n\nRun it."),
        (("Guide", "Empty"), "## Empty"),  # nothing below it: the heading is all the page says there
    ]


def test_a_one_line_paragraph_under_a_heading_is_kept():
    page = parse_page("# Guide\nOne line of intro.\n## Install\n\nRun it.\n")
    assert [(c.breadcrumb, c.start_line, c.end_line, c.text) for c in page.chunks] == [
        (("Guide",), 1, 2, "# Guide\nOne line of intro."),
        (("Guide", "Install"), 3, 5, "## Install\n\nRun it."),
    ]


def test_text_memo_is_bounded_by_the_length_of_what_it_keeps():
    from gitwiki.pagetext import text_memo

    calls = []

    @text_memo(10)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert [shout(t) for t in ("abcd", "efgh", "abcd")] == ["ABCD", "EFGH", "ABCD"] and calls == ["abcd", "efgh"]
    shout("ijkl")  # 12 chars kept: the least recently used ("efgh") goes
    assert shout("abcd") == "ABCD" and shout("efgh") == "EFGH" and calls == ["abcd", "efgh", "ijkl", "efgh"]
    assert shout("x" * 11) == "X" * 11 and shout("x" * 11) == "X" * 11  # longer than the bound: never kept
    assert calls[-2:] == ["x" * 11, "x" * 11]


def test_an_edit_to_one_section_reparses_that_section_only(monkeypatch):
    listing = "\n".join(f"- [Page {i}](p{i}.md) — about {i}" for i in range(200))
    body = f"# Home\n\n## Drafts\n\n- [Draft](d.md)\n\n## Pages\n\n{listing}\n"
    first = parse_page(body)
    parsed = []
    real = chunker.parser().parse
    monkeypatch.setattr(chunker.parser(), "parse", lambda text, env=None: parsed.append(text) or real(text, env))
    edited = body.replace("[Draft](d.md)", "[Draft two](d.md)")
    assert parse_page(edited).chunks[1:] == first.chunks[1:]
    assert parsed == ["## Drafts\n\n- [Draft two](d.md)\n\n"]
    assert parse_page(edited.replace("— about 7\n", "— about 7\n\n[p7]: https://x\n")) is not None
    assert parsed[-1].startswith("# Home") and len(parsed[-1]) > len(listing)  # a reference: parsed whole


def test_a_body_parsed_whole_gives_its_outline_and_only_the_last_two_small_ones_are_kept():
    """Lint's whole parse of a page (`body_blocks`, for a body the parts cannot stand for: a reference
    definition) is what indexing the same page reads its outline from; a whole corpus linted keeps two, not all."""
    bodies = [f"# Page {n}\n\nText [x][r].\n\n## Part\n\n- item {n}\n\n[r]: https://x/{n}\n" for n in range(3)]
    expected = [chunker._outline(chunker.parser().parse(b)) for b in bodies]
    for body in bodies:
        chunker.body_blocks(body)
    assert list(chunker._whole) == bodies[1:]
    assert [chunker.outline_of(b) for b in bodies] == expected
    big = "# Big\n\n" + "word " * 250_000
    chunker.body_blocks(big)
    assert big not in chunker._whole


_WORDS = st.text(alphabet="abc xyz`*_[]()<>#", min_size=0, max_size=12)
_TRICKY = st.sampled_from(
    ["```", "~~~~", "    ```", "- ```", "> # quoted", "- ## listed", "<div>", "<pre>", "<!--", "-->", "</pre>"]
    + ["| a | b |", "|---|---|", "[ref]: https://x", "#### deep", "- item", "  continued", "", "text", "===", "---"]
    + ["a\rb", "---\ntitle: t\n---", "x " * 200]
)
_HEADING = st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 3), _WORDS)
_LINES = st.lists(st.one_of(_WORDS, _TRICKY, _HEADING), max_size=12).map("\n".join)


def _fresh_parse(text: str) -> chunker.ParsedPage:
    """parse_page with nothing kept from the pages parsed before (the parts' memo holds results by text)."""
    kept = (list(chunker._last_cut), list(chunker._last_sections), list(chunker._outlines), chunker._last_parts)
    chunker._last_cut.clear()
    chunker._last_sections.clear()
    chunker._outlines.clear()
    chunker._last_parts = None
    try:
        return parse_page(text, "f")
    finally:
        chunker._last_cut[:], chunker._last_sections[:], chunker._outlines[:], chunker._last_parts = kept


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "---\ntitle: x\n---\n", "# T\n\n"]), _LINES, st.lists(_LINES, min_size=1, max_size=5))
def test_a_page_that_grows_chunks_as_it_does_parsed_afresh(head, first, added):
    """A page that grows at its end (a memory topic page, an entry appended) keeps the parts and the sections'
    chunks of the version before: the chunks must be those of the page parsed with nothing kept."""
    text = head + first
    assert parse_page(text, "f") == _fresh_parse(text)
    for more in added:
        text += "\n" + more if more.startswith("#") else more + "\n"
        assert parse_page(text, "f") == _fresh_parse(text)


def test_an_appended_section_keeps_the_chunks_before_it(monkeypatch):
    page = "# Git\n\n" + "".join(
        f"## 2026-01-{n % 28 + 1:02d}T00:00:00Z — note {n}\n\nText `{n}`.\n\n" for n in range(50)
    )
    before = parse_page(page, "git")
    pieces: list[int] = []
    real = chunker._pieces
    monkeypatch.setattr(
        chunker, "_pieces", lambda lines, start, end, blocks: pieces.append(start) or real(lines, start, end, blocks)
    )
    grown = page + "## 2026-02-01T00:00:00Z — a new note\n\nmore\n"
    after = parse_page(grown, "git")
    assert len(pieces) == 2  # the new section and the one before it (it ended at the end) are cut, no other
    assert after.chunks[:-1] == before.chunks and after.chunks[-1].text.endswith("more")
    assert after == _fresh_parse(grown)
