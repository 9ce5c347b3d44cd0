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
it are demoted to `###` so an entry stays one section (one chunk for `gitwiki ground`). Sections whose
heading has no timestamp (a person's `## Notes`) are kept as they are. docs/memory.md is the spec.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import NamedTuple

from gitwiki.errors import UsageError
from gitwiki.tokens import tokenize

DASH = "—"
META_KEYS = ("tags", "source", "confidence", "links", "modified")
TITLE_CHARS = 80
DEFAULT_CONFIDENCE = 1.0

# Leading `prefix:` of an entry → its tag; helix's list plus the spellings agents actually use.
AUTO_TAGS = {
    "gotcha": "gotcha",
    "invariant": "invariant",
    "perf": "perf",
    "performance": "perf",
    "architecture": "architecture",
    "arch": "architecture",
    "design": "architecture",
    "data-flow": "data-flow",
    "dataflow": "data-flow",
    "flow": "data-flow",
    "decision": "decision",
    "decided": "decision",
    "how-to": "how-to",
    "howto": "how-to",
    "recipe": "how-to",
    "gap": "gap",
    "todo": "todo",
    "bug": "bug",
    "fix": "fix",
    "warning": "gotcha",
    "pitfall": "gotcha",
    "note": "note",
}

_HEADING = re.compile(r"^## (?:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) " + DASH + r" )?(.*)$")
_META = re.compile(r"^\[(" + "|".join(META_KEYS) + r"): ?(.*)\]$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PREFIX = re.compile(r"^\s*([A-Za-z][A-Za-z-]*)\s*:")
_TOPIC_BAD = re.compile(r"[^a-z0-9]+")


class Entry(NamedTuple):
    """One memory entry. `index` (1-based, page order) and the line range are set when read from a page."""

    topic: str
    created: str  # ISO-8601 UTC, "" for a section a person wrote without a timestamp
    text: str
    tags: tuple[str, ...] = ()
    source: str = ""  # path:line@blob
    confidence: float = DEFAULT_CONFIDENCE
    links: tuple[str, ...] = ()  # topic or topic:index
    modified: str = ""
    title: str = ""  # the heading of a section without a timestamp (a dated entry's heading is its first line)
    index: int = 0  # type: ignore[assignment]  # shadows tuple.index on purpose: the tools call it index
    start_line: int = 0
    end_line: int = 0

    @property
    def ref(self) -> str:
        return f"{self.topic}:{self.index}"

    @property
    def heading(self) -> str:
        title = self.title or first_line(self.text)
        return f"## {self.created} {DASH} {title}" if self.created else f"## {title}"

    @property
    def when(self) -> str:
        """The time that counts for recency and date filters: the last change."""
        return self.modified or self.created

    def json(self) -> dict:
        return {
            "topic": self.topic,
            "index": self.index,
            "created": self.created,
            "modified": self.modified,
            "title": self.title or first_line(self.text),
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


# ---- names, tags, tokens ---------------------------------------------------------------------------


def topic_name(raw: str) -> str:
    """Lowercase alphanumerics and dashes: `Iris Auth/API` → `iris-auth-api`."""
    name = _TOPIC_BAD.sub("-", str(raw).strip().lower()).strip("-")
    if not name:
        raise UsageError(f"topic {raw!r} has no letters or digits; name it like 'gotchas' or 'iris-auth'")
    return name


def normalize_tags(tags) -> tuple[str, ...]:
    """Lowercase, `#` and spaces dropped (inner spaces become dashes), deduplicated, sorted."""
    if isinstance(tags, str):
        tags = tags.split(",")
    out = {re.sub(r"\s+", "-", str(t).strip().lstrip("#").strip().lower()) for t in tags or ()}
    return tuple(sorted(t for t in out if t))


def auto_tags(text: str) -> tuple[str, ...]:
    """The tag a leading `prefix:` announces (`perf: …` → performance), if it is a known one."""
    match = _PREFIX.match(text)
    tag = AUTO_TAGS.get(match.group(1).lower()) if match else None
    return (tag,) if tag else ()


@functools.lru_cache(maxsize=65536)  # every query and brief re-reads the same entries' token sets
def terms(text: str) -> frozenset[str]:
    """The token set used for duplicate and supersession checks: stemmed words without stop words."""
    return frozenset(tokenize(text))


def entry_terms(entry: Entry) -> frozenset[str]:
    """What search words are matched against: the topic, tags, heading and text."""
    return terms(f"{entry.topic} {' '.join(entry.tags)} {entry.title} {entry.text}")


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def first_line(text: str) -> str:
    """The heading's title: the first line that says something (not blank, not a code fence), cut at 80."""
    line = next((s.strip() for s in text.splitlines() if s.strip() and not _FENCE.match(s)), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


# ---- time ------------------------------------------------------------------------------------------


def now_iso(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=65536)  # searches and briefs date every entry
def parse_iso(stamp: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


# ---- parse and render --------------------------------------------------------------------------------


def clean_text(text: str) -> str:
    """The text as stored: stripped, headings outside code fences demoted to `###`, metadata-looking lines
    escaped, so the entry stays one section and reads back unchanged."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the entry text is empty; say what to remember")
    out, fence = [], None
    for line in text.strip().splitlines():
        marker = _FENCE.match(line)
        if marker:
            fence = None if fence and marker.group(1)[0] == fence[0] else (fence or marker.group(1))
        elif fence is None:
            if re.match(r"^#{1,2}\s", line):
                line = "###" + line.lstrip("#")
            elif _META.match(line):
                line = "\\" + line
        out.append(line.rstrip())
    if len(out) > 1 and out[1] and not _FENCE.match(out[0]):
        out.insert(1, "")  # the first line is the title: the rest starts a paragraph of its own
    return "\n".join(out)


def _rest(text: str) -> str | None:
    """The text after its first line when the heading carries that line whole (else None: the section
    repeats the whole text under a shortened title)."""
    first, _, after = text.partition("\n")
    if (after and not after.startswith("\n")) or first != first_line(text):
        return None
    rest = after.lstrip("\n")
    # A rest that starts with the same line would read back as a whole text repeated under its heading.
    return None if rest and first_line(rest) == first else rest


def parse_page(text: str, fallback_name: str) -> TopicPage:
    lines = text.splitlines()
    name, start = fallback_name, 0
    for i, line in enumerate(lines):
        if line.startswith("# "):
            name, start = line[2:].strip() or fallback_name, i + 1
            break
        if line.strip() and not line.startswith("---"):
            break
    sections: list[tuple[int, re.Match]] = []
    fence = None
    for i in range(start, len(lines)):
        marker = _FENCE.match(lines[i])
        if marker:
            fence = None if fence and marker.group(1)[0] == fence[0] else (fence or marker.group(1))
        elif fence is None and (match := _HEADING.match(lines[i])):
            sections.append((i, match))
    end_of_preamble = sections[0][0] if sections else len(lines)
    preamble = "\n".join(lines[start:end_of_preamble]).strip()
    entries = []
    for n, (i, match) in enumerate(sections):
        stop = sections[n + 1][0] if n + 1 < len(sections) else len(lines)
        body = lines[i + 1 : stop]
        while body and not body[-1].strip():
            body.pop()
        entries.append(_entry(fallback_name, n + 1, match, body, i + 1, i + 1 + len(body)))
    return TopicPage(name, preamble, tuple(entries))


def _entry(topic: str, index: int, heading: re.Match, body: list[str], start: int, end: int) -> Entry:
    meta: dict[str, str] = {}
    while body and (m := _META.match(body[-1].strip())) and m.group(1) not in meta:
        meta[m.group(1)] = m.group(2).strip()
        body.pop()
    text = "\n".join(body).strip()
    created, title = heading.group(1) or "", heading.group(2).strip()
    if created:  # the heading is the text's first line, unless the body repeats the whole text
        whole = bool(text) and first_line(text) == title
        text, title = (text if whole else f"{title}\n\n{text}".strip()), ""
    try:
        confidence = float(meta.get("confidence", DEFAULT_CONFIDENCE))
    except ValueError:
        confidence = DEFAULT_CONFIDENCE
    return Entry(
        topic=topic,
        created=created,
        text=text,
        tags=normalize_tags(meta.get("tags", "")),
        source=meta.get("source", ""),
        confidence=confidence,
        links=tuple(meta.get("links", "").split()),
        modified=meta.get("modified", ""),
        title=title,
        index=index,
        start_line=start,
        end_line=end,
    )


def render_entry(entry: Entry) -> str:
    meta = []
    if entry.tags:
        meta.append(f"[tags: {', '.join(entry.tags)}]")
    if entry.source:
        meta.append(f"[source: {entry.source}]")
    if entry.confidence != DEFAULT_CONFIDENCE:
        meta.append(f"[confidence: {entry.confidence:g}]")
    if entry.links:
        meta.append(f"[links: {' '.join(entry.links)}]")
    if entry.modified:
        meta.append(f"[modified: {entry.modified}]")
    body = _rest(entry.text) if entry.created else entry.text
    body = entry.text if body is None else body
    parts = [entry.heading] + ([body] if body else [])
    if meta:
        parts.append("\n".join(meta))
    return "\n\n".join(parts) + "\n"


def render_page(name: str, entries, preamble: str = "") -> str:
    parts = [f"# {name}\n"]
    if preamble:
        parts.append(preamble + "\n")
    parts += [render_entry(e) for e in entries]
    return "\n".join(parts)
