"""gitwiki.markdown.document: one parse of a page with file positions (what lint rules and page facts read)."""

from gitwiki.markdown.document import Fence, Heading, parse
from gitwiki.markdown.links import Link

PAGE = (
    "---\ntitle: T\n---\n"  # lines 1-3
    "# Top\n\nSub\n---\n\n"  # ATX and setext headings on file lines 4 and 6
    "  ```Mermaid x\n  graph\n  ```\n\n"  # an indented fence on line 9
    '<a name="here"></a> [l](b.md) <!-- gitwiki: disable=gw003, GW005 -->\n'
    "## Top\n```\n[no](c.md)\n```\n"
)


def test_headings_and_fences_carry_1_based_file_lines_and_columns():
    doc = parse("a.md", PAGE)
    assert doc.front_matter.meta == {"title": "T"}
    assert doc.headings == [Heading(1, "Top", 4, 1), Heading(2, "Sub", 6, 1), Heading(2, "Top", 14, 1)]
    assert doc.fences == [Fence("mermaid", "graph\n", 9, 3), Fence("", "[no](c.md)\n", 15, 1)]


def test_links_outside_code_inline_disables_and_anchors():
    doc = parse("a.md", PAGE)
    assert doc.links == [Link("b.md", 13, 21, "l", "link")]  # the one in the fence is code
    assert doc.disabled == {"GW003", "GW005"}
    assert doc.anchors == {"top", "sub", "top-1", "here"}  # repeated headings get -1, as on GitHub


def test_crlf_and_lone_cr_line_endings_keep_line_numbers():
    doc = parse("a.md", "# A\r\n\r\n## B\r### C\n")
    assert [(h.text, h.line) for h in doc.headings] == [("A", 1), ("B", 3), ("C", 4)]
