"""A page parsed once: front matter, headings, fences, links and anchors with file positions (what lint
rules check and what page facts extract anchors from)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from gitwiki.markdown.chunker import body_blocks
from gitwiki.markdown.frontmatter import FrontMatter, YamlReader, split_front_matter
from gitwiki.markdown.links import ANY_ANCHOR, Link, extract_links, has_generated_content, heading_slugs, html_anchors

_DISABLE = re.compile(r"<!--\s*gitwiki:\s*disable\s*=\s*([A-Za-z0-9, ]+?)\s*-->", re.IGNORECASE)
_CODE_TOKENS = ("fence", "code_block", "html_block")


class Heading(NamedTuple):
    level: int
    text: str
    line: int  # 1-based file line
    col: int


class Fence(NamedTuple):
    lang: str  # first word of the info string, lower case
    content: str
    line: int
    col: int


@dataclass
class Document:
    path: str
    text: str
    front_matter: FrontMatter
    headings: list[Heading] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)  # codes turned off by inline comments

    @functools.cached_property
    def anchors(self) -> set[str]:
        """Heading slugs and explicit ids; with `ANY_ANCHOR` among them when generated content may add more."""
        found = set(heading_slugs(h.text for h in self.headings)) | html_anchors(self.text)
        return found | {ANY_ANCHOR} if has_generated_content(self.text) else found


def parse(path: str, text: str, read_yaml: YamlReader | None = None) -> Document:
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # markdown-it ends lines at a lone CR too
    lines = text.split("\n")
    fm = split_front_matter(text, read_yaml)
    offset = fm.body_line - 1  # body line i is file line i + offset (0-based)
    skip = set(range(offset))  # front matter is YAML, not markdown
    doc = Document(
        path,
        text,
        fm,
        disabled={c.strip().upper() for m in _DISABLE.finditer(text) for c in m.group(1).split(",") if c.strip()},
    )
    # Parsed part by part where the parts stand for the whole, so a page that grows by one section (a memory
    # store) re-parses that section only; indexing the same version next reads its outline from these parts.
    for part_line, blocks in body_blocks(fm.body):
        at = part_line + offset  # a block's line in its part → its line in the file
        for block in blocks:
            first = block.start + at
            if block.type == "heading_open":
                marker = "#" if block.markup.startswith("#") else None  # a setext heading starts at its text
                doc.headings.append(Heading(int(block.tag[1]), block.text, first + 1, _col(lines[first], marker)))
            elif block.type in _CODE_TOKENS:
                skip.update(range(first, block.end + at))
                if block.type == "fence":
                    lang = block.info.split()[0].lower() if block.info.strip() else ""
                    doc.fences.append(Fence(lang, block.content, first + 1, _col(lines[first], block.markup[0])))
    doc.links = extract_links(text, skip)
    return doc


def _col(line: str, marker: str | None) -> int:
    """1-based column of `marker` in the line (a heading's '#', a fence's backtick), else of the first non-blank."""
    at = line.find(marker) if marker else -1
    return (at if at >= 0 else len(line) - len(line.lstrip())) + 1
