"""gitwiki.markdown.document.parse reads a page part by part (cut at column-0 headings, each part remembered by its
text), so a page that grows by one section is not parsed whole again: the parse must be the whole one's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.markdown import chunker
from gitwiki.markdown.document import _CODE_TOKENS, Fence, Heading, _col, parse

WORDS = st.text(alphabet="abc xyz`*_[]()<>#", min_size=0, max_size=12)
# Lines that can make a part parse differently from the whole: blocks left open at a heading line, containers,
# tables, HTML, reference definitions, setext underlines.
TRICKY = st.sampled_from(
    [
        "```",
        "~~~~",
        "    ```",
        "  ```",
        "- ```",
        "1.  ```",
        "> ```",
        "> # quoted",
        "- ## listed",
        "<div>",
        "<pre>",
        "<!--",
        "-->",
        "<?x",
        "?>",
        "</pre>",
        "| a | b |",
        "|---|---|",
        "[ref]: https://x",
        "see [ref] and [l](b.md)",
        "## [ref]",
        "#### deep `code`",
        "- item",
        "  continued",
        "",
        "text",
        "===",
        "---",
    ]
)
HEADING = st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 3), WORDS)
PAGES = st.lists(st.one_of(WORDS, TRICKY, HEADING), max_size=40).map("\n".join)


def whole(text: str) -> tuple[list[Heading], list[Fence]]:
    """Headings and fences as the page parsed whole gives them (what `parse` did before it read parts)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    body = parse("a.md", text).front_matter.body
    offset = len(lines) - len(body.split("\n"))
    tokens = chunker.parser().parse(body)
    headings, fences = [], []
    for i, tok in enumerate(tokens):
        if tok.map is None or tok.nesting == -1:
            continue
        first = tok.map[0] + offset
        if tok.type == "heading_open":
            marker = "#" if tok.markup.startswith("#") else None
            headings.append(
                Heading(int(tok.tag[1]), chunker.inline_text(tokens[i + 1]), first + 1, _col(lines[first], marker))
            )
        elif tok.type in _CODE_TOKENS and tok.type == "fence":
            lang = tok.info.split()[0].lower() if tok.info.strip() else ""
            fences.append(Fence(lang, tok.content, first + 1, _col(lines[first], tok.markup[0])))
    return headings, fences


@settings(max_examples=400, deadline=None)
@given(PAGES, st.booleans())
def test_a_page_parsed_part_by_part_has_the_headings_and_fences_of_the_whole_parse(text, seen_before):
    if seen_before:  # the parts come from the memo
        parse("a.md", text)
    doc = parse("a.md", text)
    assert (doc.headings, doc.fences) == whole(text)


def test_a_page_that_grows_by_a_section_parses_only_that_section(monkeypatch):
    """A memory store appends one entry to a topic page of hundreds: lint's parse of the new version must not
    parse the whole page again (it was 74 ms of a 107 ms store at 794 entries)."""
    page = "# Git\n\n" + "".join(
        f"## 2026-01-{n % 28 + 1:02d}T00:00:00Z — note {n}\n\nText `{n}`.\n\n" for n in range(300)
    )
    first = parse("wiki/memory/git.md", page)
    parsed: list[str] = []
    real = chunker.parser().parse
    monkeypatch.setattr(chunker.parser(), "parse", lambda text, env=None: parsed.append(text) or real(text, env))
    grown = page + "## 2026-02-01T00:00:00Z — a new note\n\n```sh\ngit log\n```\n"
    doc = parse("wiki/memory/git.md", grown)
    # the part that was the last one is parsed again (a block in it could run on to the end), and the new one
    assert len(parsed) == 2 and parsed[-1].startswith("## 2026-02-01")
    assert doc.headings[:-1] == first.headings and doc.headings[-1].text == "2026-02-01T00:00:00Z — a new note"
    assert doc.fences == [Fence("sh", "git log\n", grown.count("\n") - 2, 1)]
    assert (doc.headings, doc.fences) == whole(grown)
