"""helix's knowledge base, read into a gitwiki memory import document: pure (bytes or JSON in, a document out).

helix (github.com/delfador0x42/helix, `helix/README.md` "Shared Data Format" and `helix/src/topics_io.rs`)
keeps its knowledge in `data.log`: an 8-byte header `AMRL` + u32 LE version 1, then records:

- entry `0x01`: u8 topic_len, u32 LE body_len, i32 LE timestamp in minutes, 2 pad bytes, the topic, the body.
  The README counts the minutes from 2024-01-01 00:00 UTC, but helix's code (`helix/src/time.rs`,
  `LocalTime::to_minutes`: Hinnant's days from civil) counts them from 1970-01-01 in local time. Both are read:
  helix did not exist before 2024, so a count of at least `SINCE_1970_FROM` minutes is one from 1970 (from 2024
  it would be a date after 2077), a smaller one is from 2024; the local offset is unknown and taken as UTC;
- delete `0x02`: 3 reserved bytes, u32 LE byte offset of the entry record it deletes (a tombstone).

A body is the text with `[tags: …]`, `[source: …]`, `[confidence: …]`, `[links: …]` (and, after a revise,
`[modified: YYYY-MM-DD HH:MM]`) lines anywhere in it. helix's JSON export is `{"topic": [{"ts": minutes,
"body": …}]}`. Both become the `{"topics": [...]}` document `gitwiki memory topics import` takes, so every
check of that path (line breaks in fields, confidence range, dates, one page per sanitized name) applies.
A log that is truncated or contradicts itself is refused whole: nothing of a damaged log is half-imported.
"""

from __future__ import annotations

import re
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

from gitwiki.errors import UsageError

MAGIC = b"AMRL"
VERSION = 1
HEADER = struct.Struct("<4sI")
ENTRY_HEAD = struct.Struct("<BBIi2x")  # type, topic_len, body_len, timestamp (minutes), pad
DELETE = struct.Struct("<B3xI")  # type, reserved, offset of the deleted entry record
ENTRY, TOMBSTONE = 0x01, 0x02
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)  # the README's
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # helix's code's
SINCE_1970_FROM = (EPOCH - UNIX_EPOCH) // timedelta(minutes=1)  # 28,401,120: 2024-01-01 counted from 1970
_META = re.compile(r"^\[(tags|source|confidence|links|modified): ?(.*)\]$")
_HELIX_TIME = re.compile(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d)$")  # `[modified: 2026-02-21 06:11]`


def is_log(data: bytes) -> bool:
    return data[:4] == MAGIC


def parse_log(data: bytes, now: datetime | None = None) -> dict[str, Any]:
    """The live entries of a data.log as an import document; a damaged log raises UsageError, and so does
    an entry dated after `now` (default: the clock) by more than a day."""
    if data[:4] != MAGIC:
        raise _damaged("it does not start with helix's AMRL header")
    if len(data) < HEADER.size:
        raise _damaged("its header is cut short")
    version = HEADER.unpack_from(data)[1]
    if version != VERSION:
        raise _damaged(f"its format version is {version}, and only version {VERSION} is known")
    entries: dict[int, tuple[str, int, str]] = {}  # record offset → (topic, minutes, body)
    pos = HEADER.size
    while pos < len(data):
        kind = data[pos]
        if kind == ENTRY:
            if pos + ENTRY_HEAD.size > len(data):
                raise _damaged(f"the entry record at byte {pos} is cut short")
            _, topic_len, body_len, minutes = ENTRY_HEAD.unpack_from(data, pos)
            start = pos + ENTRY_HEAD.size
            end = start + topic_len + body_len
            if end > len(data):
                raise _damaged(f"the entry record at byte {pos} claims {topic_len + body_len} bytes past the end")
            topic = _text(data[start : start + topic_len], pos, "topic")
            entries[pos] = (topic, minutes, _text(data[start + topic_len : end], pos, "body"))
            pos = end
        elif kind == TOMBSTONE:
            if pos + DELETE.size > len(data):
                raise _damaged(f"the delete record at byte {pos} is cut short")
            target = DELETE.unpack_from(data, pos)[1]
            if entries.pop(target, None) is None:  # a deleted entry, or no record starts there
                raise _damaged(f"the delete record at byte {pos} points at byte {target}, where no live entry starts")
            pos += DELETE.size
        else:
            raise _damaged(f"byte {pos} starts a record of unknown type {kind:#04x}")
    rows = [(topic, minutes, body, f"the entry at byte {at}") for at, (topic, minutes, body) in entries.items()]
    return _document(rows, now)


def parse_export(data: object, now: datetime | None = None) -> dict[str, Any]:
    """helix's JSON export (`{"topic": [{"ts": minutes, "body": …}]}`, or the list form
    `[{"topic": …, "text": …}]` its reference shows) as an import document."""
    rows: list[tuple[str, int, str, str]] = []
    if isinstance(data, dict):
        for topic, items in data.items():
            if not isinstance(items, list):
                raise UsageError(f"helix export: topic {topic!r} must hold a list of entries; pass helix's export")
            rows += [_export_row(topic, item, f"entry {n} of topic {topic!r}") for n, item in enumerate(items, 1)]
    elif isinstance(data, list):
        for n, item in enumerate(data, 1):
            topic = item.get("topic") if isinstance(item, dict) else None
            if not isinstance(topic, str):
                raise UsageError(f"helix export: entry {n} has no topic; pass helix's export")
            rows.append(_export_row(topic, item, f"entry {n}"))
    else:
        raise UsageError("helix export must be a JSON object of topics (what helix's topics action=export returns)")
    return _document(rows, now)


def is_export(data: object) -> bool:
    """Whether a JSON document is helix's export rather than gitwiki's (which has a `format` string and a
    `topics` list; a helix topic may itself be called format, then it holds a list, or topics, then its
    items are helix entries with a body)."""
    if isinstance(data, list):
        return True
    if not isinstance(data, dict) or isinstance(data.get("format"), str):
        return False
    topics = data.get("topics")
    return (topics is None and bool(data)) or (
        isinstance(topics, list) and bool(topics) and all(isinstance(t, dict) and "body" in t for t in topics)
    )


def summary(document: dict[str, Any]) -> dict[str, int]:
    """Entries per topic of an import document: what a dry run reports."""
    return {t["name"]: len(t["entries"]) for t in document["topics"]}


def _export_row(topic: str, item: object, where: str) -> tuple[str, int, str, str]:
    if not isinstance(item, dict):
        raise UsageError(f"helix export: {where} must be an object with ts and body")
    body = item.get("body", item.get("text"))
    minutes = item.get("ts", 0)
    if not isinstance(body, str) or isinstance(minutes, bool) or not isinstance(minutes, int):
        raise UsageError(f"helix export: {where} needs a text body and ts in whole minutes")
    return topic, minutes, body, where


def _document(rows: list[tuple[str, int, str, str]], now: datetime | None) -> dict[str, Any]:
    """The rows (topic, minutes, body, where) as `{"topics": [{"name", "entries"}]}`, in log order per topic."""
    # An entry cannot be written after the import runs; a day's margin covers helix's local clock.
    latest = (now or datetime.now(UTC)) + timedelta(days=1)
    topics: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    renamed: dict[str, str] = {}
    for topic, minutes, body, where in rows:
        where = f"helix: {where} of topic {_cut(topic)}"
        if not topic.strip():
            raise UsageError(f"{where} has an empty topic; the knowledge base is damaged")
        if _when(minutes, where) > latest:
            raise UsageError(
                f"{where} is dated {_stamp(minutes, where)}, after today: the log is damaged or not helix's"
            )
        if topic not in renamed:
            renamed[topic] = fitting_topic(topic)
            if renamed[topic] != topic:
                notes.append(
                    f"{where}: the topic's name is {len(topic.encode('utf-8'))} bytes, more than a page's file name "
                    f"holds; imported as {renamed[topic]!r} (rename it with memory edit rename)"
                )
        topics.setdefault(renamed[topic], []).append(_entry(minutes, body, where))
    document: dict[str, Any] = {"topics": [{"name": name, "entries": entries} for name, entries in topics.items()]}
    return {**document, "notes": notes} if notes else document


def fitting_topic(topic: str) -> str:
    """helix's topic name as it is, or, when its page name would pass TOPIC_MAX_BYTES (helix allows 255
    bytes, a file name `<topic>.md` no more), its longest prefix that fits with 9 bytes to spare, then `-`
    and 8 hex digits of the full name's SHA-1: one helix topic is one page on every import, and two long
    names alike in their first 190 bytes stay two pages."""
    import hashlib

    from gitwiki.memory.entry import TOPIC_MAX_BYTES, topic_name

    try:
        topic_name(topic)
        return topic
    except (UsageError, UnicodeError):
        pass
    digest = hashlib.sha1(topic.encode("utf-8", errors="surrogatepass")).hexdigest()[:8]
    for keep in range(min(len(topic), 4 * TOPIC_MAX_BYTES), 0, -1):  # a run of symbols becomes one dash
        try:
            name = topic_name(topic[:keep])
        except (UsageError, UnicodeError):  # still too long, or no letters in it
            continue
        if len(name.encode("utf-8")) <= TOPIC_MAX_BYTES - 9:
            return f"{name}-{digest}"
    return topic  # no letters or digits at all: the import refuses it, saying so


def _cut(topic: str) -> str:
    return repr(topic if len(topic) <= 80 else topic[:80] + "…")


def _entry(minutes: int, body: str, where: str) -> dict[str, Any]:
    meta: dict[str, str] = {}
    text = []
    for line in body.replace("\r\n", "\n").split("\n"):
        m = _META.match(line.strip())
        if m and m.group(1) not in meta:
            meta[m.group(1)] = m.group(2).strip()
        else:
            text.append(line)
    entry: dict[str, Any] = {"created": _stamp(minutes, where), "text": "\n".join(text).strip()}
    if tags := meta.get("tags"):
        entry["tags"] = [t.strip() for t in tags.split(",") if t.strip()]
    if source := meta.get("source"):
        entry["source"] = source
    if "confidence" in meta:
        entry["confidence"] = _number(meta["confidence"])
    if links := meta.get("links"):
        entry["links"] = helix_links(links)
    if modified := meta.get("modified"):
        m = _HELIX_TIME.match(modified)
        # A helix time is local and to the minute; gitwiki's are UTC seconds. Left as written when it is
        # not helix's shape, so the import's date check names it.
        entry["modified"] = f"{m.group(1)}T{m.group(2)}:00Z" if m else modified
    return entry


def helix_links(links: str) -> list[str]:
    """helix's space-separated links (a log's `[links: …]` line, a tool call's `links`) as gitwiki refs: helix
    numbers a topic's entries from 0 (helix/src/tools.rs), gitwiki from 1, so `topic:0` is `topic:1` here."""
    return [_link(link) for link in links.split()]


def _link(link: str) -> str:
    from gitwiki.memory.entry import is_entry_number

    name, sep, index = link.rpartition(":")
    return f"{name}:{int(index) + 1}" if sep and is_entry_number(index) else link


def _number(raw: str) -> float | str:
    try:
        return float(raw)
    except ValueError:
        return raw  # refused by the import's check, with its message


def _when(minutes: int, where: str) -> datetime:
    try:
        return (UNIX_EPOCH if minutes >= SINCE_1970_FROM else EPOCH) + timedelta(minutes=minutes)
    except OverflowError:
        raise UsageError(f"{where}: its timestamp {minutes} is not a date; the knowledge base is damaged") from None


def _stamp(minutes: int, where: str) -> str:
    d = _when(minutes, where)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:00Z"  # strftime drops %Y's zeros


def _text(raw: bytes, at: int, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _damaged(f"the {what} of the entry record at byte {at} is not UTF-8") from None


def _damaged(why: str) -> UsageError:
    return UsageError(f"not a readable helix data.log: {why}; nothing was imported (pass helix's data.log or export)")
