"""Progressive disclosure: a page's section map, and section addresses (`page.md#setup/linux`, `page.md:10-40`).

The sections are the chunker's (H1–H3, line ranges in the file), so an outline's ranges are the ones
`ground` reports and `read_markdown` reads.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gitwiki.errors import UsageError
from gitwiki.markdown.chunker import page_sections
from gitwiki.markdown.links import slugify
from gitwiki.pagetext import printable


class OutlineEntry(NamedTuple):
    level: int  # 1–3; 0 for text before the first heading
    title: str  # the heading text ('' before the first heading)
    breadcrumb: tuple[str, ...]
    slug_path: str  # the address after '#', e.g. 'setup/linux'
    start_line: int  # 1-based, inclusive
    end_line: int
    bytes: int  # UTF-8 size of the section's lines, subsections included


class Address(NamedTuple):
    path: str
    section: str | None  # a '#' breadcrumb of heading slugs or texts
    start_line: int | None
    end_line: int | None


_LINES = re.compile(r"^(?P<path>.+\.(?:md|markdown)):(?P<start>\d+)-(?P<end>\d+)$", re.I)
_SECTION = re.compile(r"^(?P<path>.+?\.(?:md|markdown))#(?P<section>.+)$", re.I)


def parse_address(address: str) -> Address:
    """Split `page.md#a/b` or `page.md:START-END` off a page path; a plain path passes through."""
    if m := _LINES.match(address):
        return Address(m["path"], None, int(m["start"]), int(m["end"]))
    if m := _SECTION.match(address):
        return Address(m["path"], m["section"].strip("/"), None, None)
    return Address(address, None, None, None)


def outline(text: str) -> list[OutlineEntry]:
    """Each section's heading, line range and size; a section's range covers its subsections."""
    lines = text.splitlines(keepends=True)
    sections = page_sections(text)
    out = []
    for i, s in enumerate(sections):
        # The chunker's section stops at the next heading of any level; an outline's runs to the next one at its
        # level or above, so reading it returns the subsections too.
        later = (t.start_line - 1 for t in sections[i + 1 :] if t.level <= s.level)
        end = s.end_line if s.level == 0 else next(later, len(lines))
        slugs = "/".join(slugify(c) for c in s.breadcrumb)
        size = len("".join(lines[s.start_line - 1 : end]).encode("utf-8"))
        title = s.breadcrumb[-1] if s.level else ""
        out.append(OutlineEntry(s.level, title, s.breadcrumb, slugs, s.start_line, end, size))
    return out


def find_section(path: str, entries: list[OutlineEntry], section: str) -> OutlineEntry:
    """The entry a '#' address names, by slug path or heading texts (case-insensitive); UsageError lists the rest."""
    wanted = "/".join(slugify(part) for part in section.split("/"))
    for e in entries:
        if e.level and (e.slug_path == wanted or e.slug_path.endswith("/" + wanted)):
            return e
    known = ", ".join(f"#{e.slug_path}" for e in entries if e.level) or "(the page has no H1–H3 headings)"
    raise UsageError(printable(f"no section {section!r} in {path!r}; its sections are: {known}"))


def render(path: str, entries: list[OutlineEntry]) -> str:
    """The outline as text: one indented line per section, `path:start-end  title  (N bytes)`."""
    rows = []
    for e in entries:
        pad = "  " * max(e.level - 1, 0)
        rows.append(
            f"{pad}{path}:{e.start_line}-{e.end_line}  {e.title or '(before the first heading)'}  ({e.bytes} bytes)"
        )
    return printable("\n".join(rows)) + "\n"  # a heading's terminal escapes shown as text, not acted on
