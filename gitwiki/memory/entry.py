"""The memory page format, pure: a topic page is `# <topic>` and one `## <timestamp> — <first line>` section per entry.

```
# gotchas

## 2026-11-23T15:12:31Z — gotcha: take the index lock before reading a topic page

gotcha: take the index lock before reading a topic page, or two stores lose one entry.

[tags: gotcha, locking]
[source: gitwiki/memory/store.py:40@3f2a9c1d0e7b]
[confidence: 0.85]
[links: decisions:3]
[modified: 2026-11-24T09:00:00Z]
```

Metadata lines close the section, each optional, in this order. The text keeps its own lines; headings in
it are demoted to `###`, an unclosed code fence is closed, so an entry stays one section (one chunk for
`gitwiki ground`). Only H2s in that format are entries: what a person wrote (front matter, the H1, their
own sections) is kept verbatim around them. Where a section starts is what CommonMark says (the chunker's
parse), so the entries memory reads are the sections the index and a reader see. docs/memory.md is the spec.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from gitwiki.errors import UsageError
from gitwiki.index.tokens import STOP_WORDS, tokenize
from gitwiki.pagetext import text_memo

DASH = "—"
META_KEYS = ("tags", "source", "confidence", "links", "modified", "text")
TITLE_CHARS = 80
DEFAULT_CONFIDENCE = 1.0

# Leading `prefix:` of an entry → its tag. helix's 35 auto-tag prefixes, each its own tag
# (github.com/delfador0x42/helix, helix/DOCS.md "Auto-detected tag prefixes"), and the aliases of its
# helix/src/write.rs `auto_detect_tags` (`module:` → module-map, `missing:` → gap, …); gitwiki's own
# spellings keep their tags (`perf`/`performance` → perf, `design:` → architecture, `warning:` → gotcha).
HELIX_PREFIXES = (
    "gotcha", "invariant", "perf", "architecture", "data-flow", "decision", "how-to", "gap", "friction",
    "todo", "bug", "fix", "pattern", "coupling", "module-map", "interface", "boundary", "lifecycle",
    "error-handling", "concurrency", "migration", "deprecation", "dependency", "test", "benchmark", "config",
    "deploy", "security", "api", "protocol", "schema", "format", "encoding", "observation", "hypothesis",
)  # fmt: skip
AUTO_TAGS = {
    **{prefix: prefix for prefix in HELIX_PREFIXES},
    "performance": "perf",
    "hot-path": "perf",
    "arch": "architecture",
    "design": "architecture",
    "overview": "architecture",
    "module": "module-map",
    "dataflow": "data-flow",
    "flow": "data-flow",
    "decided": "decision",
    "howto": "how-to",
    "recipe": "how-to",
    "impl": "how-to",
    "impl-spec": "how-to",
    "playbook": "how-to",
    "feature": "how-to",
    "missing": "gap",
    "deploy-gotcha": "gotcha",
    "warning": "gotcha",
    "pitfall": "gotcha",
    "change-impact": "coupling",
    "transformation": "coupling",
    "note": "note",
}

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
TOPIC_MAX_BYTES = 200  # the file name `<topic>.md` must fit a file system's 255-byte name limit
_STAMP = re.compile(STAMP)
# An entry header: a top-level CommonMark H2 (≤ 3 spaces of indent, as CommonMark allows) with a timestamp.
_ENTRY = re.compile(r"^ {0,3}##[ \t]+(" + STAMP + r") " + DASH + r" (.*)$")
_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_LOW_ATX = re.compile(r"^( {0,3})#{1,2}(?=[ \t]|$)")  # an H1 or H2 line: demoted inside an entry's text
_SETEXT = re.compile(r"^ *(?:=+|-+)[ \t]*$")  # under a paragraph line it would make that line an H1/H2
_META = re.compile(r"^\[(" + "|".join(META_KEYS) + r"): ?(.*)\]$")
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_PREFIX = re.compile(r"^\s*([A-Za-z][A-Za-z-]*(?: [A-Za-z][A-Za-z-]*)?)\s*:")  # `data flow:`, `hot path:`
_TOPIC_BAD = re.compile(r"[\W_]+")


class Entry(NamedTuple):
    """One memory entry. `index` (1-based, page order) and the line range are set when read from a page."""

    topic: str
    created: str  # ISO-8601 UTC
    text: str
    tags: tuple[str, ...] = ()
    source: str = ""  # path:line@blob
    confidence: float = DEFAULT_CONFIDENCE
    links: tuple[str, ...] = ()  # topic or topic:index
    modified: str = ""
    index: int = 0  # type: ignore[assignment]  # shadows tuple.index on purpose: the tools call it index
    start_line: int = 0
    end_line: int = 0
    after: str = ""  # text a person wrote after the entry's section (their own H2s), kept in place verbatim
    # What the page shows of `text` when that is not `text` itself ("" when it is): `text` made safe to show
    # (`clean_text`); the page then carries `text` exactly in its `[text: "…"]` line.
    shown: str = ""

    @property
    def ref(self) -> str:
        return f"{self.topic}:{self.index}"

    @property
    def title(self) -> str:
        return first_line(self.text)

    @property
    def heading(self) -> str:
        return f"## {self.created} {DASH} {first_line(self.shown or self.text)}"

    @property
    def when(self) -> str:
        """The time that counts for recency and date filters: the last change."""
        return self.modified or self.created

    def json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "index": self.index,
            "created": self.created,
            "modified": self.modified,
            "title": self.title,
            "text": self.text,
            "tags": list(self.tags),
            "source": self.source,
            "confidence": self.confidence,
            "links": list(self.links),
            "lines": [self.start_line, self.end_line],
        }


class TopicPage(NamedTuple):
    name: str
    preamble: str  # lines between the H1 and the first entry, kept verbatim
    entries: tuple[Entry, ...]
    head: str = ""  # the page's front matter and H1 as written ("": a page gitwiki starts with `# <topic>`)


# ---- names, tags, tokens ---------------------------------------------------------------------------


def topic_name(raw: str) -> str:
    """Lowercase letters (any script), digits and dashes: `Iris Auth/API` → `iris-auth-api`, `日本語` stays.

    NFC first, so a name typed on macOS (decomposed) and on Linux is one file."""
    name = _TOPIC_BAD.sub("-", unicodedata.normalize("NFC", str(raw)).strip().lower()).strip("-")
    if not name:
        raise UsageError(f"topic {raw!r} has no letters or digits; name it like 'gotchas' or 'iris-auth'")
    size = len(name.encode("utf-8"))
    if size > TOPIC_MAX_BYTES:
        raise UsageError(
            f"topic name is too long ({len(name)} characters, {size} bytes in UTF-8; at most {TOPIC_MAX_BYTES} "
            "bytes, so the page's file name fits the file system): shorten it"
        )
    return name


_REF = re.compile(r"(.+):[ \t]*(\d{1,9})")  # more digits: no entry number (int() refuses 4,300)


def is_entry_number(text: str) -> bool:
    """`text` can be an entry number, as in `topic:3` (a link, a ref): digits, and far fewer than int() refuses
    (a link of 5,000 digits was its ValueError)."""
    return text.isdecimal() and len(text) < 10


def split_ref(topic: str, index: int | None = None) -> tuple[str, int | None]:
    """A topic and entry number from what an answer printed: `billing:2` (or `~personal/billing:2`) is
    entry 2 of billing, as `memory_store` and `memory_search` name entries; a plain topic keeps `index`.
    A reference and a different `index` together are refused (which one was meant?)."""
    m = _REF.fullmatch(topic.strip()) if isinstance(topic, str) else None
    if m is None:
        return topic, index
    number = int(m.group(2))
    if index is not None and index != number:
        raise UsageError(f"{topic!r} already names entry {number}; drop the index {index} or the ':{number}'")
    return m.group(1), number


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # not the whitespace ones, which become dashes


def normalize_tags(tags: str | Iterable[object] | None) -> tuple[str, ...]:
    """Lowercase, `#` and spaces dropped (inner spaces become dashes), singular, deduplicated, sorted."""
    if isinstance(tags, str):
        tags = tags.split(",")
    # A comma inside one tag would read back as two (`[tags: a, b]`); a NUL would make the page binary.
    plain = (_CONTROL.sub("", str(t)) for t in tags or ())
    out = {singular(re.sub(r"[\s,]+", "-", t.strip().lstrip("#").strip().lower())) for t in plain}
    return tuple(sorted(t for t in out if t))


def singular(tag: str) -> str:
    """helix's singular (helix/src/write.rs `singularize`): `gotchas` → gotcha, `entries` → entry; words of
    3 letters or fewer and ones ending in ss, us, is (`class`, `status`, `analysis`) are left alone."""
    if len(tag) <= 3:
        return tag
    if tag.endswith("ies") and len(tag) > 4:
        return tag[:-3] + "y"
    if tag.endswith("sses"):
        return tag[:-2]
    if tag.endswith("s") and not tag.endswith(("ss", "us", "is")):
        return tag[:-1]
    return tag


def auto_tags(text: str) -> tuple[str, ...]:
    """The tag a leading `prefix:` announces (`perf: …` → perf, `data flow: …` → data-flow), if it is known."""
    match = _PREFIX.match(text)
    tag = AUTO_TAGS.get(match.group(1).lower().replace(" ", "-")) if match else None
    return (tag,) if tag else ()


@functools.lru_cache(maxsize=65536)  # every query and brief re-reads the same entries' token sets
def terms(text: str) -> frozenset[str]:
    """The token set used for duplicate and supersession checks: stemmed words without stop words."""
    return frozenset(tokenize(text))


def entry_terms(entry: Entry) -> frozenset[str]:
    """What search words are matched against: the topic, tags, heading and text."""
    return terms(f"{entry.topic} {' '.join(entry.tags)} {entry.text}")


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    shared = len(a & b)  # |a ∪ b| = |a| + |b| - |a ∩ b|, without building the union
    return shared / (len(a) + len(b) - shared) if a or b else 0.0


DUPLICATE_OVERLAP = 0.7  # Jaccard overlap of word sets above which a new entry is a duplicate
DUPLICATE_MIN_WORDS = 6  # shorter texts share words by chance ("fix the build" vs "build fix")
_WHOLE_WORD = re.compile(r"[^\W_]+(?:[_\-.'’][^\W_]+)*")
NEGATIONS = frozenset(("not", "no", "never", "nor", "none", "cannot", "without", "neither"))
# Words whose swap states the opposite: "tests fail on arm64" is no duplicate of "tests pass on arm64".
OPPOSITES = (
    ("fail", "pass"),
    ("fail", "succeed"),
    ("fail", "work"),
    ("break", "work"),
    ("broken", "working"),
    ("enable", "disable"),
    ("true", "false"),
    ("yes", "no"),
    ("on", "off"),
    ("up", "down"),
    ("before", "after"),
    ("more", "less"),
    ("always", "never"),
    ("allow", "deny"),
    ("allow", "forbid"),
    ("accept", "reject"),
    ("add", "remove"),
    ("include", "exclude"),
    ("open", "close"),
    ("start", "stop"),
    ("increase", "decrease"),
    ("fast", "slow"),
    ("faster", "slower"),
    ("safe", "unsafe"),
    ("valid", "invalid"),
    ("correct", "incorrect"),
    ("required", "optional"),
    ("sync", "async"),
    ("lock", "unlock"),
    ("show", "hide"),
    ("supported", "unsupported"),
    ("min", "max"),
    ("minimum", "maximum"),
)


@functools.lru_cache(maxsize=65536)
def _word_key(word: str) -> str:
    """A whole word as the duplicate check compares it: stemmed, an identifier kept whole (arm64 is one word)."""
    stems = tokenize(word) if word.isascii() else [word]
    return stems[0] if stems else word


@functools.cache
def _opposite_keys() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for a, b in OPPOSITES:
        out.setdefault(_word_key(a), set()).add(_word_key(b))
        out.setdefault(_word_key(b), set()).add(_word_key(a))
    return {k: frozenset(v) for k, v in out.items()}


@functools.lru_cache(maxsize=65536)  # every store compares the new text with each entry of its topic
def _duplicate_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the real words that count, stop words dropped; every word, for negations and opposites)."""
    raw = [w.lower() for w in _WHOLE_WORD.findall(text)]
    every = frozenset("not" if w.endswith(("n't", "n’t")) else _word_key(w) for w in raw)
    return frozenset(_word_key(w) for w in raw if w not in STOP_WORDS), every


def near_duplicate(new: str, old: str) -> float | None:
    """The word overlap of two texts when one repeats the other, else None: both need 6 real words (an
    identifier is one), more than 70 % shared (Jaccard), and no differing negation or opposite word."""
    a, a_all = _duplicate_words(new)
    b, b_all = _duplicate_words(old)
    if len(a) < DUPLICATE_MIN_WORDS or len(b) < DUPLICATE_MIN_WORDS:
        return None
    overlap = jaccard(a, b)
    if overlap <= DUPLICATE_OVERLAP:
        return None
    only_a, only_b = a_all - b_all, b_all - a_all
    opposites = _opposite_keys()
    if (only_a | only_b) & NEGATIONS or any(opposites.get(w, frozenset()) & only_b for w in only_a):
        return None
    return overlap


@functools.lru_cache(maxsize=32768)  # each render asks it of every entry of the page, and a store of its headings
def first_line(text: str) -> str:
    """The heading's title: the first line that says something (not blank, not a code fence), cut at 80."""
    line = next((s.strip() for s in text.split("\n") if s.strip() and not _FENCE.match(s)), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


# ---- time ------------------------------------------------------------------------------------------


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=65536)  # searches and briefs date every entry
def parse_iso(stamp: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(stamp)
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # OverflowError: 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        return None


def is_stamp(value: object) -> bool:
    """An entry timestamp as the page format writes it: `2026-11-23T15:46:31Z`, a real date and time."""
    return isinstance(value, str) and bool(_STAMP.fullmatch(value)) and parse_iso(value) is not None


# ---- parse and render --------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines as CommonMark sees them: only CR, LF and CRLF end a line (`str.splitlines` also splits at
    U+2028, form feeds…, which would let a text forge a line no reader of the page sees)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _fence_open(line: str) -> tuple[str, int] | None:
    """The (char, length) of a fence this line opens, by CommonMark's rules (a backtick fence's info string
    has no backtick)."""
    m = _FENCE.match(line)
    if not m or (m.group(2)[0] == "`" and "`" in m.group(3)):
        return None
    return m.group(2)[0], len(m.group(2))


def _fence_closes(line: str, fence: tuple[str, int]) -> bool:
    m = _FENCE.match(line)
    return m is not None and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and not m.group(3).strip()


def clean_text(text: str) -> str:
    """The text as stored, such that it cannot break the page's entry structure: stripped; headings that
    would be H1/H2 demoted to `###` (outside code fences); a line that would make the paragraph above it a
    setext heading set apart by a blank line; metadata-looking lines escaped; an unclosed code fence closed.
    What CommonMark would still read differently (an HTML comment left open, a heading inside a list item
    that ends a fence early) is checked by parsing the entry back, and then the whole text is stored as a
    code block, which nothing inside can end."""
    if not isinstance(text, str) or not text.replace("\x00", "").strip():
        raise UsageError("the entry text is empty; say what to remember")
    # Not shown: a NUL makes the page binary to git and the index, and its topic dropped out of search (the text
    # itself keeps it, in the `[text: …]` line's JSON)
    text = text.replace("\x00", "")
    out: list[str] = []
    fence: tuple[str, int] | None = None
    for line in split_lines(text.strip()):
        if fence is not None:
            fence = None if _fence_closes(line, fence) else fence
        elif opened := _fence_open(line):
            fence = opened
        elif m := _LOW_ATX.match(line):
            line = m.group(1) + "###" + line[m.end() :]
        elif _META.match(line.strip()):
            line = "\\" + line.lstrip()
        elif _SETEXT.match(line) and out and out[-1].strip():
            out.append("")
        out.append(line)
    if fence is not None:
        out.append(fence[0] * fence[1])
    cleaned = "\n".join(out)
    if not _PLAIN_ENTRY.fullmatch(cleaned) and not _one_section(cleaned):
        cleaned = _as_code(cleaned)
        if not _one_section(cleaned):
            raise UsageError("the entry text cannot be stored as one section of the page; simplify its markup")
    return cleaned


def with_text(entry: Entry, text: str) -> Entry:
    """The entry holding `text` exactly, every character: what the page shows of it is `clean_text(text)`, and
    when that differs (a heading demoted, a fence closed, whitespace at the ends or of a CR, …) the page
    carries the text itself in a `[text: "…"]` line (JSON), which reading takes over what it shows."""
    shown = clean_text(text)
    return entry._replace(text=text, shown="" if shown == text else shown)


def _exact(value: str) -> str | None:
    """The text of a `[text: "…"]` line: a JSON string, else None (a line a person wrote, not gitwiki's)."""
    if not value.lstrip().startswith('"'):
        return None  # not a string: nothing to decode (`[[[…` nested past the recursion limit ended every command)
    try:
        text = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return text if isinstance(text, str) and text.strip() else None


_PROBE = "2000-01-01T00:00:00Z"
# One line of letters, digits, spaces and punctuation that opens no block, code span, HTML, link, emphasis or
# heading closer: it stays one section without parsing it back (tests/memory/test_fuzz.py checks that it
# does). Most entries are such lines, and parsing every one back was a sixth of a large helix import.
_PLAIN_ENTRY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 .,;:!?'\"()/+=%@-]*[A-Za-z0-9.,;:!?'\"()/+=%@-])?")


def _one_section(text: str) -> bool:
    """Whether the text, as an entry with one after it, reads back whole and leaves the next entry an entry."""
    page = render_page("t", [Entry("t", _PROBE, text), Entry("t", _PROBE, "next")], verify=False)
    entries = parse_page(page, "t").entries
    return [(e.text, e.after) for e in entries] == [(text, ""), ("next", "")]


def _as_code(text: str) -> str:
    """The text as one tilde-fenced code block whose fence is longer than any tilde run a line starts with."""
    longest = max((len(line.lstrip()) - len(line.lstrip().lstrip("~")) for line in text.split("\n")), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _rest(text: str) -> str | None:
    """The text after its first line when the heading carries that line whole (else None: the section
    repeats the whole text under a shortened title)."""
    first, _, after = text.partition("\n")
    if (after and not after.startswith("\n")) or first != first_line(text):
        return None
    rest = after.lstrip("\n")
    # A rest that starts with the same line would read back as a whole text repeated under its heading.
    return None if rest and first_line(rest) == first else rest


def _trim(lines: list[str]) -> str:
    """Lines without the blank ones around them; the others verbatim (an indented first line keeps its indent)."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def _front_matter_end(lines: list[str]) -> int:
    """The line after a front matter block (`---` … `---` or `...`), 0 when there is none. A byte order mark
    before it (editors on Windows write one) stays where it is, in the first line."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":
        return 0
    return next((i + 1 for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)


# A line that may open a container, an HTML block or a thematic break, or underline a setext heading:
# where one occurs, only a CommonMark parser knows which heading lines are top-level.
_NOT_PLAIN = re.compile(r"^ {0,3}(?:[<>*+=_\t-]|\d{1,9}[.)])|^ {0,3}\t")


def _plain_headings(lines: list[str], start: int) -> list[tuple[int, int, int]] | None:
    """The top-level H1/H2 lines of a page made of paragraphs, ATX headings and code alone (most memory
    pages), found line by line: a fence (opened at column 0) hides what follows until it closes, any
    other ATX line is a heading. None when a line could be anything else (the full parse decides then).
    The line scan keeps a hook that re-reads one changed page from importing markdown-it (~40 ms)."""
    out = []
    fence: tuple[str, int] | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            fence = None if _fence_closes(line, fence) else fence
        elif opened := _fence_open(line):
            if line[0] == " ":
                return None
            fence = opened
        elif _ATX.match(line):
            level = len(line.lstrip(" ")) - len(line.lstrip(" ").lstrip("#"))
            if level <= 2:
                out.append((i, i + 1, level))
        elif _NOT_PLAIN.match(line):
            return None
    return out


def _headings(lines: list[str], start: int) -> list[tuple[int, int, int]]:
    """Top-level H1 and H2 headings of lines[start:] as CommonMark parses them: (first line, line after, level)."""
    plain = _plain_headings(lines, start)
    if plain is not None:
        return plain
    from gitwiki.markdown.chunker import outline_of  # markdown-it, parsed per section and remembered

    body = lines[start:]
    out = []
    for h in outline_of("\n".join(body))[0]:
        if h.level > 2:
            continue
        end = h.line + 1
        if not _ATX.match(body[h.line]):  # a setext heading: its text lines, then the underline
            end = next((j + 1 for j in range(h.line + 1, len(body)) if _SETEXT.match(body[j])), end)
        out.append((start + h.line, start + end, h.level))
    return out


# The pages `render_page` checked last, by fallback name: (text, its parse). A store reads the version it just
# rendered back (its entries' lines), and the next store into the topic renders it again with an entry more;
# parsing 1,200 entries for each was a fifth of the store. A few topics' pages are kept (a server stores into many).
_CHECKED_KEPT = 16
_checked: dict[str, tuple[str, TopicPage]] = {}


def parse_page(text: str, fallback_name: str) -> TopicPage:
    checked = _checked.get(fallback_name)
    if checked is not None and len(checked[0]) == len(text) and checked[0] == text:
        return checked[1]
    return _parse_page(text, fallback_name)


def _parse_page(text: str, fallback_name: str) -> TopicPage:
    lines = split_lines(text)
    top = _front_matter_end(lines)
    headings = _headings(lines, top)
    name, head_end = fallback_name, top
    if headings and headings[0][2] == 1 and not any(line.strip() for line in lines[top : headings[0][0]]):
        first, head_end, _ = headings[0]
        name = re.sub(r"^ {0,3}#[ \t]*|[ \t]+#+[ \t]*$", "", lines[first]).strip() or fallback_name
        headings = headings[1:]
    starts = [h[0] for h in headings] + [len(lines)]
    entries: list[tuple[int, re.Match[str], int, int]] = []  # header line, its match, section end, next entry
    for n, (line, _, level) in enumerate(headings):
        match = _ENTRY.match(lines[line]) if level == 2 else None
        if match:
            entries.append((line, match, starts[n + 1], len(lines)))
            if len(entries) > 1:
                entries[-2] = (*entries[-2][:3], line)
    preamble = _trim(lines[head_end : entries[0][0] if entries else len(lines)])
    parsed = []
    for n, (line, _, end, after_end) in enumerate(entries):
        body = lines[line + 1 : end]
        while body and not body[-1].strip():
            body.pop()
        # One string names the entry's parse: the topic and the header line hold no newline.
        entry = _section_entry(f"{fallback_name}\n{lines[line]}\n" + "\n".join(body))
        start, after = line + 1, _trim(lines[end:after_end])
        # Made whole, not with `_replace` (a third of a 1,200-entry page's parse went to it).
        parsed.append(Entry(*entry[:8], n + 1, start, start + len(body), after, entry.shown))
    head = "\n".join(lines[:head_end]).rstrip()
    return TopicPage(name, preamble, tuple(parsed), "" if head == f"# {fallback_name}" else head)


@text_memo(32_000_000)
def _section_entry(section: str) -> Entry:
    """The entry of one section ("topic\nheader line\nbody"), its place in the page left at 0: a store rewrites
    a page of hundreds of entries and reads it back twice (the render's check, the new version), so every entry
    but the new one is parsed once per process, not once per store."""
    topic, line, body = section.split("\n", 2)
    match = _ENTRY.match(line)
    assert match is not None  # parse_page passes entry header lines only
    return _entry(topic, 0, match, body.split("\n") if body else [], 0, 0)


def _entry(topic: str, index: int, heading: re.Match[str], body: list[str], start: int, end: int) -> Entry:
    meta: dict[str, str] = {}
    while body and (m := _META.match(body[-1].strip())) and m.group(1) not in meta:
        if m.group(1) == "text" and _exact(m.group(2).strip()) is None:
            break
        meta[m.group(1)] = m.group(2).strip()
        body.pop()
    text = "\n".join(body).strip()
    created, title = heading.group(1), heading.group(2).strip()
    # The heading is the text's first line, unless the body repeats the whole text.
    whole = bool(text) and first_line(text) == title
    text = text if whole else f"{title}\n\n{text}".strip()
    try:
        confidence = float(meta.get("confidence", DEFAULT_CONFIDENCE))
    except ValueError:
        confidence = DEFAULT_CONFIDENCE
    if not 0 <= confidence <= 1:  # nan, a hand-typed 5: not a weight a score can use
        confidence = DEFAULT_CONFIDENCE
    exact = _exact(meta["text"]) if "text" in meta else None
    return Entry(
        topic=topic,
        created=created,
        text=text if exact is None else exact,
        shown="" if exact is None or exact == text else text,
        tags=normalize_tags(meta.get("tags", "")),
        source=meta.get("source", ""),
        confidence=confidence,
        links=tuple(meta.get("links", "").split()),
        modified=meta.get("modified", ""),
        index=index,
        start_line=start,
        end_line=end,
    )


def render_entry(entry: Entry) -> str:
    """The entry's section. Remembered: a store renders its whole topic page, every entry but the new one as
    the store before rendered it."""
    try:
        return _rendered(entry)
    except TypeError:  # a list where a tuple belongs (unhashable): rendered all the same
        return _render_entry(entry)


def _render_entry(entry: Entry) -> str:
    meta = []
    if entry.tags:
        meta.append(f"[tags: {', '.join(entry.tags)}]")
    if entry.source:
        meta.append(f"[source: {entry.source}]")
    # Compared as written: 0.9999999999999999 writes as 1, which reads back as the default and would make
    # the next render drop the line.
    if (confidence := f"{entry.confidence:g}") != f"{DEFAULT_CONFIDENCE:g}":
        meta.append(f"[confidence: {confidence}]")
    if entry.links:
        meta.append(f"[links: {' '.join(entry.links)}]")
    if entry.modified:
        meta.append(f"[modified: {entry.modified}]")
    if entry.shown:  # JSON: one line whatever the text holds, read back exactly (control characters escaped)
        meta.append(f"[text: {json.dumps(entry.text, ensure_ascii=False)}]")
    shown = entry.shown or entry.text
    body = _rest(shown)
    body = shown if body is None else body
    parts = [entry.heading] + ([body] if body else [])
    if meta:
        parts.append("\n".join(meta))
    return "\n\n".join(parts) + "\n"


_rendered = functools.lru_cache(maxsize=32768)(_render_entry)


def render_page(name: str, entries: Iterable[Entry], preamble: str = "", head: str = "", *, verify: bool = True) -> str:
    """The page: its head (front matter and H1 as a person wrote them, else `# <name>`), the text before the
    first entry, then each entry followed by the text a person wrote after it.

    `verify` parses the result back: text a person wrote that leaves a block open (an unclosed code fence
    runs to the end of the page) would make every entry after it code, so such a page is refused, not
    written with entries no reader would see."""
    entries = list(entries)
    parts = [head + "\n" if head else f"# {name}\n"]
    if preamble:
        parts.append(preamble + "\n")
    for e in entries:
        parts.append(render_entry(e))
        if e.after:
            parts.append(e.after + "\n")
    page = "\n".join(parts)
    if verify:
        # With an entry after it, so that a block left open at the end (which would swallow the next
        # entry stored) is caught now, not at that store.
        probed = _checked_parse(name, page)
        back = probed.entries
        expected = [(e.created, e.text) for e in entries] + [(_PROBE, "probe")]
        if [(e.created, e.text) for e in back] != expected:
            raise UsageError(
                f"the text a person wrote in memory page {name}.md leaves a code fence or HTML block open, which "
                "would hide the entries after it; close it in the page, then try again"
            )
        # The probe closes nothing (a blank line, then an ATX heading at column 0, which both scans and CommonMark
        # read forward: the lines before it parse as they would alone), and here it is a top-level heading, so the
        # page alone parses as this parse without the probe: the store's read back of the page takes it.
        _checked.pop(name, None)
        _checked[name] = (page, TopicPage(probed.name, probed.preamble, back[:-1], probed.head))
        while len(_checked) > _CHECKED_KEPT:
            _checked.pop(next(iter(_checked)), None)
    return page


def _checked_parse(name: str, page: str) -> TopicPage:
    """The parse of the page with a probe entry after it. When the page is one checked before (P, whose probe
    was a top-level heading) with entries appended (`P + "\n" + tail`, the tail starting at an entry heading),
    only the tail is parsed: the lines of P parse alone as in the page (CommonMark reads forward, and P's probe
    stood where the tail's first heading stands), and the tail, after a blank line at top level, parses as it
    does below a bare H1. Its entries then take their places after P's (tests/memory/test_entry.py compares
    this with a parse of the whole page over hostile text)."""
    probe = "\n" + render_entry(Entry(name, _PROBE, "probe"))
    before = _checked.get(name)
    if before is not None and "\r" not in page:
        text, parsed = before
        cut = len(text) + 1
        if len(page) > cut and page.startswith(text) and page.startswith("\n## ", len(text)):
            bare = "# t\n\n"
            tail = _parse_page(bare + page[cut:] + probe, name)
            if not tail.preamble:  # the tail starts at an entry: its entries are all it holds
                shift, count = text.count("\n") - 1, len(parsed.entries)
                moved = tuple(
                    e._replace(index=e.index + count, start_line=e.start_line + shift, end_line=e.end_line + shift)
                    for e in tail.entries
                )
                return TopicPage(parsed.name, parsed.preamble, parsed.entries + moved, parsed.head)
    return _parse_page(page + probe, name)


def drop_entries(preamble: str, entries: Iterable[Entry], drop: Callable[[Entry], bool]) -> tuple[str, list[Entry]]:
    """The entries `drop(entry)` does not take, with the text a person wrote after a dropped entry kept in
    place (after the entry before it, or in the preamble): deleting an entry never deletes a person's text."""
    kept: list[Entry] = []
    for e in entries:
        if not drop(e):
            kept.append(e)
        elif e.after and kept:
            kept[-1] = kept[-1]._replace(after=_join(kept[-1].after, e.after))
        elif e.after:
            preamble = _join(preamble, e.after)
    return preamble, kept


def _join(a: str, b: str) -> str:
    return f"{a}\n\n{b}" if a and b else a or b


def is_confidence(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1


def check_unicode(page: str, what: str) -> None:
    """A lone surrogate (JSON's "\\ud800") has no UTF-8: found before any page of an import is written, not
    at the write of the page that holds it, after the pages before it were written."""
    try:
        page.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{what} holds text that is not valid Unicode (a lone surrogate such as \\ud800); fix the export"
        ) from None
