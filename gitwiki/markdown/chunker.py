"""Split a page into search chunks on H1/H2/H3, with breadcrumbs and 1-based line ranges.

Deeper headings stay inside their H3 chunk, code fences are never split, and a section longer than
the embedding window is cut at block boundaries into pieces that repeat the section's breadcrumb.
"""

from __future__ import annotations

import bisect
import functools
import posixpath
import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from gitwiki.markdown.frontmatter import meta_str, meta_tags, split_front_matter
from gitwiki.pagetext import text_memo

if TYPE_CHECKING:  # markdown-it loads only when a page is parsed: the index-blocks hook never does
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

SPLIT_LEVELS = ("h1", "h2", "h3")
# MiniLM-class models read 256 word pieces; leave room for the breadcrumb line.
MAX_PIECES = 200
_PIECE = re.compile(r"\w+|[^\w\s]")


class Chunk(NamedTuple):
    ord: int  # position in the page, from 0
    breadcrumb: tuple[str, ...]  # H1 > H2 > H3 texts above (and including) this section
    level: int  # heading level of the section (0 for text before the first heading)
    start_line: int  # 1-based, inclusive, in the file (front matter counted)
    end_line: int
    text: str


class ParsedPage(NamedTuple):
    title: str
    tags: tuple[str, ...]
    description: str | None
    chunks: tuple[Chunk, ...]
    front_matter_error: str | None


class SectionHeading(NamedTuple):
    """An H1–H3 a page is split at (`markdown.document.Heading` is any heading, by file line)."""

    level: int
    text: str
    line: int  # 0-based line in the body


@functools.cache
def parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # 40 ms: paid only when a page is actually parsed

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


class Block(NamedTuple):
    """What lint's page parse and the outline read of one markdown-it block token (a token itself is too heavy to
    remember for every part of every page): every top-level block, and every heading and code block at any depth."""

    type: str
    tag: str
    markup: str
    level: int  # nesting level: 0 at the top
    start: int  # 0-based line of the body (or of the part it was parsed in)
    end: int  # exclusive
    info: str  # a fence's info string
    content: str  # a fence's content
    text: str  # a heading's plain text


_KEPT_TYPES = ("heading_open", "fence", "code_block", "html_block")


def _blocks(tokens: list[Token]) -> tuple[Block, ...]:
    out = []
    for i, tok in enumerate(tokens):
        if tok.map is None or tok.nesting == -1 or (tok.level and tok.type not in _KEPT_TYPES):
            continue
        fence = tok.type == "fence"
        text = inline_text(tokens[i + 1]) if tok.type == "heading_open" else ""
        out.append(
            Block(
                tok.type,
                tok.tag,
                tok.markup,
                tok.level,
                tok.map[0],
                tok.map[1],
                tok.info if fence else "",
                tok.content if fence else "",
                text,
            )
        )
    return tuple(out)


# The last page bodies parsed whole, by text: lint parses a written page (`body_blocks`), and indexing the same
# version right after reads its outline from that parse. A body is parsed part by part (see `outline_of`), each
# part remembered by its text, so a memory store that appends an entry to a 300 KB topic page parses the new
# part alone (docs/research/memory-store-scale.md); a body the parts cannot stand for is parsed whole, and the
# last two such bodies are kept, none over 1M characters (`gitwiki lint` of a corpus must not hold them all).
_WHOLE_KEPT = 2
_WHOLE_MAX_CHARS = 1_000_000
_whole: dict[str, tuple[Block, ...]] = {}  # oldest first
_whole_lock = threading.Lock()


def body_blocks(body: str) -> list[tuple[int, tuple[Block, ...]]]:
    """The blocks of a whole page body, as (line of the body a part starts at, its blocks with lines counted in
    the part): parsed part by part where the parts stand for the whole (one part at 0 when parsed whole). A
    body parsed whole is remembered for `outline_of`."""
    parts = _parts(body)
    if parts is not None:
        return [(line, part.blocks) for line, part in parts]
    with _whole_lock:
        blocks = _whole.pop(body, None)
    if blocks is None:
        blocks = _blocks(parser().parse(body))
    if len(body) <= _WHOLE_MAX_CHARS:
        with _whole_lock:
            _whole[body] = blocks
            while len(_whole) > _WHOLE_KEPT:
                del _whole[next(iter(_whole))]
    return [(0, blocks)]


def inline_text(token: Token) -> str:
    """The plain text of an inline token: markup dropped, code spans kept."""
    if not token.children:
        return token.content.strip()
    return "".join(c.content for c in token.children if c.type in ("text", "code_inline", "softbreak")).strip()


@text_memo(16_000_000)  # a long section unchanged since the last parse (see `outline_of`)
def estimate_pieces(text: str) -> int:
    """A cheap upper-ish estimate of word pieces: words and punctuation marks."""
    return len(_PIECE.findall(text))


def fallback_title(path: str) -> str:
    """What a page without a title is called: its file name without the extension."""
    return posixpath.splitext(posixpath.basename(path))[0]


def parse_page(text: str, fallback: str = "") -> ParsedPage:
    fm = split_front_matter(text.replace("\r\n", "\n"))
    body_lines = fm.body.split("\n")
    headings, blocks = outline_of(fm.body)
    first_h1 = next((h.text for h in headings if h.level == 1 and h.text), None)
    title = meta_str(fm.meta, "title") or first_h1 or fallback
    chunks: list[Chunk] = []
    offset = fm.body_line  # body line i (0-based) is file line i + offset
    block_starts = [b[0] for b in blocks]  # in document order, so each section's blocks are one slice
    # A section's chunks are a function of its lines, place, level, breadcrumb and blocks: a section of the body
    # parsed last, whose lines this body holds unchanged (it starts with that body), is not cut again when all
    # the rest is equal. A memory store appends an entry to a page of 1,200 sections, one section new.
    last = _latest(_last_sections, fm.body)
    same_lines = 0
    if last is not None and last[0] == offset:
        same_lines = last[1].count("\n")  # whole lines of the last body, each unchanged here
    known = last[2] if last is not None and same_lines else {}
    made: dict[tuple[int, tuple[str, ...], int, int], tuple[list[tuple[int, int]], list[Chunk]]] = {}
    for level, crumb, start, end in _sections(headings, len(body_lines)):
        section_blocks = blocks[bisect.bisect_left(block_starts, start) : bisect.bisect_left(block_starts, end)]
        key = (level, crumb, start, end)
        before = known.get(key) if end <= same_lines else None
        if before is not None and before[0] == section_blocks:
            chunks += before[1]
            made[key] = before
            continue
        first = len(chunks)
        for piece_start, piece_end in _pieces(body_lines, start, end, section_blocks):
            lines = body_lines[piece_start:piece_end]
            while lines and not lines[-1].strip():
                lines.pop()
            body = "\n".join(lines)
            if not body.strip():
                continue
            chunks.append(
                Chunk(len(chunks), crumb, level, piece_start + offset, piece_start + len(lines) - 1 + offset, body)
            )
        made[key] = (section_blocks, chunks[first:])
    _keep(_last_sections, (offset, fm.body, made), last)
    chunks = _drop_bare_headings(chunks)
    return ParsedPage(
        title=title,
        tags=meta_tags(fm.meta),
        description=meta_str(fm.meta, "description"),
        chunks=tuple(Chunk(i, *c[1:]) for i, c in enumerate(chunks)),
        front_matter_error=fm.error,
    )


# The bodies `parse_page` cut last (a few pages: a server stores into several topics in turn): (its first line
# in the file, the body, its sections' blocks and chunks by (level, breadcrumb, first line, end)). The chunks keep
# the index they had there; the page renumbers them.
_last_sections: list[
    tuple[int, str, dict[tuple[int, tuple[str, ...], int, int], tuple[list[tuple[int, int]], list[Chunk]]]]
] = []
_BODIES_KEPT = 16
_T = TypeVar("_T", bound=tuple[Any, ...])


def _latest(kept: list[_T], body: str) -> _T | None:
    """The kept record (its body second) of the longest body that `body` extends by whole lines, if any."""
    found = None
    for record in list(kept):
        before: str = record[1]
        if before.endswith("\n") and len(body) > len(before) and body.startswith(before):
            if found is None or len(before) > len(found[1]):
                found = record
    return found


def _keep(kept: list[_T], record: _T, replaces: _T | None = None) -> None:
    """Keep `record` (the newest last), in place of `replaces` (the version it grew from: one page, one record)."""
    if len(record[1]) > _WHOLE_MAX_CHARS:  # `gitwiki lint` of a corpus must not hold its largest pages
        return
    with _whole_lock:
        rest = [r for r in kept if r is not replaces and r[1] != record[1]]
        kept[:] = rest[-(_BODIES_KEPT - 1) :] + [record]


class Section(NamedTuple):
    level: int  # 0 for text before the first heading
    breadcrumb: tuple[str, ...]
    start_line: int  # 1-based, inclusive, in the file (front matter counted)
    end_line: int  # inclusive; trailing blank lines kept, so sections tile the body


def page_sections(text: str) -> list[Section]:
    """The H1–H3 sections a page is chunked at, as whole line ranges (the map `outline` shows)."""
    fm = split_front_matter(text.replace("\r\n", "\n"))
    # The empty string after a final newline (or of an empty body) is not a line.
    n_lines = fm.body.count("\n") + (not fm.body.endswith("\n") and fm.body != "")
    headings, _ = outline_of(fm.body)
    return [
        Section(level, crumb, start + fm.body_line, end - 1 + fm.body_line)
        for level, crumb, start, end in _sections(headings, n_lines)
        if end > start
    ]


# A line that starts an ATX heading at column 0: what the body is cut at before parsing (see `outline_of`).
_ATX = re.compile(r"^#{1,6}(?:[ \t]|$)", re.M)
# How an HTML block of CommonMark types 1-5 ends (types 6 and 7 end at a blank line only).
_HTML_ENDS = (
    (
        re.compile(r"<(?:script|pre|style|textarea)(?:\s|>|$)", re.I),
        re.compile(r"</(?:script|pre|style|textarea)>", re.I),
    ),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
)


def outline_of(body: str) -> tuple[list[SectionHeading], list[tuple[int, int]]]:
    """`_outline` of a body, parsed one part at a time: the parts are cut at column-0 heading lines and each
    part's outline is remembered by its text, so an edit to one section re-parses that section only. A
    generated front index.md lists every page (1,000 links in a 1,000-page wiki); parsing it whole took
    ~300 ms of each page write under load. Where the parts could parse differently from the whole (a
    reference definition, which applies to the whole page; a bare CR; a block left open at a cut), the
    whole body is parsed."""
    parts = _parts(body)
    if parts is None:
        with _whole_lock:
            whole = _whole.get(body)
        return _outline_blocks(whole if whole is not None else _blocks(parser().parse(body)))
    headings: list[SectionHeading] = []
    blocks: list[tuple[int, int]] = []
    counts = [(0, 0)]  # headings and blocks of the parts before each part
    # A body that extends one outlined before by whole lines has its parts up to that one's last (`_cut_parts`):
    # their headings and blocks are taken, the rest added (a memory store: 1,200 parts, one new).
    last = _latest(_outlines, body)
    done = 0
    if last is not None and 0 < len(last[0]) - 1 < len(parts) and parts[: len(last[0]) - 1] == last[0][:-1]:
        done = len(last[0]) - 1  # the parts compared are the same objects: compared at once
        n_headings, n_blocks = last[4][done]
        headings, blocks, counts = last[2][:n_headings], last[3][:n_blocks], last[4][: done + 1]
    for line, part in parts[done:]:
        headings.extend(SectionHeading(h.level, h.text, h.line + line) for h in part.headings)
        blocks.extend((b_start + line, b_end + line) for b_start, b_end in part.spans)
        counts.append((len(headings), len(blocks)))
    _keep(_outlines, (parts, body, headings, blocks, counts), last)
    return list(headings), list(blocks)


# The bodies outlined last: (parts, body, headings, blocks, headings and blocks before each part).
_outlines: list[
    tuple[list[tuple[int, PartParse]], str, list[SectionHeading], list[tuple[int, int]], list[tuple[int, int]]]
] = []


class PartParse(NamedTuple):
    """One part of a body parsed on its own (lines counted in the part)."""

    blocks: tuple[Block, ...]
    headings: tuple[SectionHeading, ...]  # its outline: top-level H1–H3 …
    spans: tuple[tuple[int, int], ...]  # … and the line spans of its top-level blocks
    whole_only: bool  # the body must be parsed whole instead


def _parts(body: str) -> list[tuple[int, PartParse]] | None:
    """The body's parts (cut at column-0 ATX heading lines) with the line each starts at, parsed (or taken
    from the memo); None when the body is to be parsed whole. The last body's are kept: a page write chunks and
    lints the same version (cutting a 1,200-entry topic page and finding its parts cost ~2 ms each time)."""
    global _last_parts
    last = _last_parts
    if last is not None and last[0] == body:
        return last[1]
    parts = _cut_parts(body)
    _last_parts = (body, parts)
    return parts


_last_parts: tuple[str, list[tuple[int, PartParse]] | None] | None = None


def _cut_parts(body: str) -> list[tuple[int, PartParse]] | None:
    last = _latest(_last_cut, body)
    if last is not None:
        # The body of the last cut with lines added: a cut is found by its line alone and every line of that
        # body is here unchanged, so its parts up to its last one are this body's too (the same texts, the
        # same parses); only its last part onwards is cut and parsed again.
        at, _, line, before = last
        if "\r" not in body[at:]:
            tail = _cut_from(body, at, line)
            if tail is None:
                return None
            out = before[:-1] + tail[0]
            _keep(_last_cut, (tail[1], body, tail[2], out), last)
            return out
    cuts = [m.start() for m in _ATX.finditer(body)]
    if len(cuts) < 2 or "\r" in body:
        return None
    if cuts[0] != 0:
        cuts.insert(0, 0)
    parts = _outline_parts(body, cuts, 0)
    if parts is None:
        return None
    _keep(_last_cut, (cuts[-1], body, parts[-1][0], parts))
    return parts


def _cut_from(body: str, at: int, line: int) -> tuple[list[tuple[int, PartParse]], int, int] | None:
    """`_cut_parts` of the body from `at` (where a part starts, at body line `line`) on: the parts, where the
    last one starts and its line; None when a part must be parsed whole."""
    cuts = [m.start() for m in _ATX.finditer(body, at)]
    out = _outline_parts(body, cuts, line)
    if out is None:
        return None
    return out, cuts[-1], out[-1][0]


def _outline_parts(body: str, cuts: list[int], line: int) -> list[tuple[int, PartParse]] | None:
    """The parts of `body` between `cuts` (the first at body line `line`), each with its line; None when one must
    be parsed whole."""
    out = []
    for start, end in zip(cuts, [*cuts[1:], len(body)], strict=True):
        part = body[start:end]
        parsed = _part_outline(part) if end != len(body) else _last_outline(part)
        if parsed.whole_only:
            return None
        out.append((line, parsed))
        line += part.count("\n")
    return out


# The last bodies cut into parts: (where its last part starts, the body, that part's line, the parts).
_last_cut: list[tuple[int, str, int, list[tuple[int, PartParse]]]] = []


@text_memo(16_000_000)
def _part_outline(part: str) -> PartParse:
    """One part of a body parsed, and whether the body must be parsed whole instead: the part defines a link
    reference (it applies to every part), or a block in it may run on past its end."""
    return _outline_part(part, last=False)


@text_memo(16_000_000)
def _last_outline(part: str) -> PartParse:
    """`_part_outline` of the body's last part, where a block may run on to the end."""
    return _outline_part(part, last=True)


def _outline_part(part: str, last: bool) -> PartParse:
    env: dict[str, Any] = {}
    tokens = parser().parse(part, env)
    blocks = _blocks(tokens)
    headings, spans = _outline_blocks(blocks)
    lines = part.split("\n")
    whole_only = bool(env.get("references")) or (not last and any(_open_at_end(t, lines) for t in tokens))
    return PartParse(blocks, tuple(headings), tuple(spans), whole_only)


def _open_at_end(token: Token, lines: list[str]) -> bool:
    """Whether a block reaching the last line of `lines` (a part that ends in a newline) was cut off by the
    end rather than closed: then the next part's heading line may belong to it. A table is never closed
    by a heading line in markdown-it, a fenced code block by its closing fence, an HTML block by its
    type's end marker."""
    if token.map is None or token.map[1] < len(lines) - 1:
        return False
    raw = lines[token.map[1] - 1]
    last = raw.strip()
    if token.type == "table_open":
        return True
    if token.type == "fence":
        fence = token.markup
        closing = last.startswith(fence) and set(last) == {fence[0]} and len(raw) - len(raw.lstrip(" ")) < 4
        return token.map[1] - 1 == token.map[0] or not closing
    if token.type == "html_block":
        first = token.content.lstrip()
        end = next((end for start, end in _HTML_ENDS if start.match(first)), None)
        return end is None or not end.search(last)
    return False


def _outline(tokens: list[Token]) -> tuple[list[SectionHeading], list[tuple[int, int]]]:
    """Top-level H1–H3 headings and the line spans of every top-level block."""
    return _outline_blocks(_blocks(tokens))


def _outline_blocks(blocks: tuple[Block, ...] | list[Block]) -> tuple[list[SectionHeading], list[tuple[int, int]]]:
    headings: list[SectionHeading] = []
    spans: list[tuple[int, int]] = []
    for b in blocks:
        if b.level != 0:
            continue
        spans.append((b.start, b.end))
        if b.type == "heading_open" and b.tag in SPLIT_LEVELS:
            headings.append(SectionHeading(int(b.tag[1]), b.text, b.start))
    return headings, spans


def _sections(headings: list[SectionHeading], n_lines: int) -> Iterator[tuple[int, tuple[str, ...], int, int]]:
    """(level, breadcrumb, start, end) per section; text before the first heading has level 0."""
    first = headings[0].line if headings else n_lines
    if first > 0:
        yield 0, (), 0, first
    trail: dict[int, str] = {}
    for i, h in enumerate(headings):
        trail = {lvl: t for lvl, t in trail.items() if lvl < h.level}
        trail[h.level] = h.text
        end = headings[i + 1].line if i + 1 < len(headings) else n_lines
        yield h.level, tuple(t for _, t in sorted(trail.items()) if t), h.line, end


def _pieces(lines: list[str], start: int, end: int, blocks: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Cut [start, end) into runs of whole blocks that each fit MAX_PIECES (a lone big block stays whole)."""
    if estimate_pieces("\n".join(lines[start:end])) <= MAX_PIECES or len(blocks) < 2:
        yield start, end
        return
    piece_start, size = start, 0
    for i, (b_start, b_end) in enumerate(blocks):
        b_end = blocks[i + 1][0] if i + 1 < len(blocks) else end
        cost = estimate_pieces("\n".join(lines[b_start:b_end]))
        if size and size + cost > MAX_PIECES:
            yield piece_start, b_start
            piece_start, size = b_start, 0
        size += cost
    yield piece_start, end


def _drop_bare_headings(chunks: list[Chunk]) -> list[Chunk]:
    """A section that is only its heading adds nothing its children's breadcrumbs do not carry."""
    out = []
    for i, c in enumerate(chunks):
        only_heading = c.start_line == c.end_line and c.level > 0 and c.text.lstrip().startswith("#")
        has_child = i + 1 < len(chunks) and chunks[i + 1].breadcrumb[: len(c.breadcrumb)] == c.breadcrumb
        if only_heading and has_child:
            continue
        out.append(c)
    return out
