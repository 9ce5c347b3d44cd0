from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.markdown import links
from gitwiki.markdown.links import (
    Link,
    Target,
    extract_links,
    fenced_lines,
    heading_slugs,
    html_anchors,
    link_target,
    slugify,
)


def test_inline_links_images_and_definitions_with_positions():
    text = '# T\nSee [a](b.md) and ![img](p.png "title")\n\n[ref]: ../r.md\n  [n [x] y](<d e.md#Frag>)\n'
    assert extract_links(text) == [
        Link("b.md", 2, 5, "a", "link"),
        Link("p.png", 2, 19, "img", "image"),
        Link("../r.md", 4, 1, "ref", "definition"),
        Link("d e.md#Frag", 5, 3, "n [x] y", "link"),
    ]


def test_code_comments_and_escapes_are_not_links():
    text = "`[a](x.md)` \\[b](y.md)\n```md\n[c](z.md)\n```\n<!-- [d](w.md) -->\n~~~\n[e](v.md)\n"
    assert extract_links(text) == []


def test_empty_destination_and_link_spanning_lines():
    assert extract_links("x [e]() y") == [Link("", 1, 3, "e", "link")]
    assert extract_links("a [long\ntext](p.md)") == [Link("p.md", 1, 3, "long\ntext", "link")]


def test_caller_given_code_lines_replace_the_fence_tracker():
    assert extract_links("    [a](x.md)\n[b](y.md)", skip_lines={0}) == [Link("y.md", 2, 1, "b", "link")]


def test_fenced_lines_follow_commonmark_fence_rules():
    # a shorter run does not close; a longer one does; the other fence char does not; a backtick info
    # string makes it no fence at all
    lines = ["```", "x", "``", "````", "y", "~~~~", "```", "~~~~", "``` a`b", "z"]
    assert fenced_lines(lines) == {0, 1, 2, 3, 5, 6, 7}


def test_github_slugs():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Use `foo` — here") == "use-foo--here"
    assert slugify("Ünïcode_x 2") == "ünïcode_x-2"
    assert heading_slugs(["A", "A", "A-1", "A"]) == ["a", "a-1", "a-1-1", "a-2"]


def test_html_anchors():
    assert html_anchors("<a name=\"setup\"></a> <span id='x-y'>") == {"setup", "x-y"}


def test_python_markdowns_footnote_keyed_and_fence_ids_are_anchors():
    """mkdocs-material's own docs link all of these; each was a GW006 error (a broken anchor)."""
    text = (
        'Text.[^1]\n\n## Release 9.7.0 { id="9.7.0" }\n\n## Nav { id=nav-path }\n\n'
        '??? example\n\n    ``` { .sh .no-copy #example }\n    echo\n    ```\n\n`{ id="not-in-code" }`\n\n[^1]: A note.\n'
    )
    found = html_anchors(text) | set(heading_slugs(['Release 9.7.0 { id="9.7.0" }', "Nav { id=nav-path }"]))
    assert {"fn:1", "fnref:1", "9.7.0", "nav-path", "example"} <= found and "not-in-code" not in found


def test_an_attribute_ids_backslash_escapes_as_in_text():
    """pymdown-extensions' docs: `{#\\_fn_1}` is the anchor `#_fn_1` links name."""
    assert heading_slugs(["Notes {#\\_fn_1}"]) == ["notes", "_fn_1"]
    assert html_anchors("a footnote[^1]{ #\\_fn_1 .x } and {: #plain}") == {"_fn_1", "plain"}


def test_link_target_relative_absolute_fragment_and_external():
    assert link_target("wiki/a/b.md", "../c.md#x%20y") == Target("wiki/c.md", "x y", False)
    assert link_target("wiki/a.md", "/docs/x.md?raw=1") == Target("docs/x.md", None, False)
    assert link_target("wiki/a.md", "#top") == Target(None, "top", False)
    assert link_target("a.md", "../../x.md") == Target("../../x.md", None, True)
    assert link_target("wiki/a.md", "./") == Target("wiki", None, False)
    for external in ("https://example.com/a.md", "mailto:x@y", "//cdn/x.md"):
        assert link_target("a.md", external) is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab`[]()!:<>-\n \t\\#~é", max_size=80))
def test_masking_blanks_code_and_comments_in_place_and_a_text_without_link_marks_has_no_links(text):
    """Masked text keeps every newline and length (a char-by-char model); extract_links' early answer for a text
    holding neither '](' nor ']:' is what the scan would find."""
    source = links.masked(text)
    assert len(source) == len(text)
    assert [i for i, c in enumerate(source) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    assert all(s == t or s == " " for s, t in zip(source, text, strict=True))
    if "](" not in text and "]:" not in text:
        found = [*links._INLINE.finditer(source), *links._DEFINITION.finditer(source)]
        assert extract_links(text) == [] == found


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab`[]()!:<>-\n \t\\#é", max_size=80))
def test_links_are_where_both_patterns_match_the_masked_text(text):
    """extract_links skips a pattern whose marks masking left nowhere: what it finds is every match of both."""
    source = links.masked(text)
    starts = sorted(
        [m.start() for m in links._INLINE.finditer(source)]
        + [m.start(1) - 1 for m in links._DEFINITION.finditer(source)]
    )
    found = extract_links(text)
    lines = text.split("\n")
    assert [sum(len(x) + 1 for x in lines[: link.line - 1]) + link.col - 1 for link in found] == starts
