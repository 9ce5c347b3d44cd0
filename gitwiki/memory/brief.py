"""Briefings: what memory holds, condensed for a model's context.

No query: a meta-briefing (topics by activity, velocity, themes). A topic or a glob (`iris-*`), or any
other words (searched): its entries after a dedup pass (identical text in several topics → one entry,
"also in"), a supersession pass (an entry > 60 % like one of the same topic written two days or more
later is SUPERSEDED, as helix's), temporal chains (entries of one topic whose dominant keyword is shared,
in time order, the keyword shown as written), classified as
helix does (by tag, then the leading `prefix:`, then keywords) into
ARCHITECTURE, DATA FLOW, INVARIANTS, GOTCHAS, DECISIONS, HOW-TO, PERFORMANCE, GAPS, UNTAGGED,
rendered as a tier: `summary` (about 15 lines), `scan` (one line per entry) or `full`.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Collection, Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple, Protocol

from gitwiki.errors import UsageError
from gitwiki.index.tokens import tokenize, words
from gitwiki.memory import personal, stores
from gitwiki.memory.entry import Entry, TopicPage, auto_tags, first_line, jaccard, parse_iso, singular, terms
from gitwiki.memory.search import MemoryQuery, in_window, since_moment
from gitwiki.pagetext import text_memo

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory

TIERS = ("summary", "scan", "full")
CATEGORIES = ("ARCHITECTURE", "DATA FLOW", "INVARIANTS", "GOTCHAS", "DECISIONS", "HOW-TO", "PERFORMANCE", "GAPS")
UNTAGGED = "UNTAGGED"
# Tag → category: helix's table (github.com/delfador0x42/helix, helix/DOCS.md "Category classification")
# beside gitwiki's own spellings. Tags are singular (`gotchas` is stored as gotcha).
TAG_CATEGORY = {
    **dict.fromkeys(
        ("architecture", "arch", "design", "structure", "module-map", "overview", "coupling", "interface"),
        "ARCHITECTURE",
    ),
    **dict.fromkeys(("data-flow", "dataflow", "flow", "pipeline", "lifecycle", "protocol"), "DATA FLOW"),
    **dict.fromkeys(("invariant", "contract", "rule", "constraint", "boundary", "concurrency"), "INVARIANTS"),
    **dict.fromkeys(("gotcha", "bug", "pitfall", "warning", "fix", "error-handling"), "GOTCHAS"),
    **dict.fromkeys(("decision", "why", "adr", "deprecation", "migration"), "DECISIONS"),
    **dict.fromkeys(("how-to", "howto", "recipe", "usage", "workflow", "config", "deploy"), "HOW-TO"),
    **dict.fromkeys(("performance", "perf", "latency", "benchmark", "optimization", "zero-alloc"), "PERFORMANCE"),
    **dict.fromkeys(("gap", "todo", "missing", "friction"), "GAPS"),
}
# The last pass for an entry no tag or prefix placed: words in its first 3 lines (helix's "body keyword
# rescue", github.com/delfador0x42/amaranthine src/briefing.rs, its change-impact words under ARCHITECTURE
# as helix now files coupling). Matched at a word start: `alloc` finds allocation, not malloc.
RESCUE_WORDS = {
    "GOTCHAS": ("gotcha", "pitfall", "trap", "watch out", "careful", "warning"),
    "DECISIONS": ("decided", "chose", "rejected", "trade-off", "tradeoff", "why not"),
    "PERFORMANCE": ("latency", "throughput", "alloc", "benchmark", "cache miss", "zero-alloc"),
    "ARCHITECTURE": (
        "architecture", "module map", "overview", "component", "layer",
        "coupling", "depends on", "refactor", "breaking change", "migration",
    ),
}  # fmt: skip
# One pass over the lowercased lines finds every rescue word (a regex per category with re.I took 30 µs
# an entry); a category word of the first line is a token looked up in TAG_CATEGORY.
_RESCUE_WORD = {w: c for c, words in RESCUE_WORDS.items() for w in words}
_RESCUE = re.compile(r"\b(" + "|".join(map(re.escape, sorted(_RESCUE_WORD, key=len, reverse=True))) + ")")
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SUPERSEDE_OVERLAP = 0.6
# helix's rule (helix/src/brief.rs `supersede`): the newer entry is two calendar days or more younger. Notes
# of one session, a minute or an hour apart, are steps of one piece of work, not a correction of each other.
SUPERSEDE_DAYS = 2
CHAIN_MIN = 3
SUMMARY_LINES = 15
VELOCITY_DAYS = 7


class Item(NamedTuple):
    entry: Entry
    category: str
    also_in: tuple[str, ...]  # refs of identical entries in other topics
    superseded_by: str  # ref of the newer entry, "" if current


class Chain(NamedTuple):
    keyword: str
    refs: tuple[str, ...]  # oldest first


class NamedPage(Protocol):
    """A topic page as `activity` and `meta` read it: the library's `TopicFile` or the agent hooks' `Topic`."""

    @property
    def name(self) -> str: ...

    @property
    def page(self) -> TopicPage: ...


class TopicActivity(NamedTuple):
    topic: str
    entries: int
    last: str  # newest created/modified timestamp
    recent: int  # entries created or changed in the last 7 days
    velocity: float  # recent / 7, entries per day
    tags: tuple[str, ...]  # most used first


class Brief(NamedTuple):
    query: str
    kind: str  # "meta", "topic" (a name or glob) or "search"
    tier: str
    topics: list[TopicActivity]
    themes: list[tuple[str, int]]  # tags by use, for the meta-briefing
    items: list[Item]  # current and superseded entries, by category then time
    chains: list[Chain]
    markdown: str


def category(entry: Entry) -> str:
    """As helix classifies: by tag; else by the text's leading `prefix:` (the auto-tags); else by a
    category's tag word in its first line; else by the rescue words in its first 3 lines; else UNTAGGED."""
    found = {TAG_CATEGORY[t] for t in entry.tags if t in TAG_CATEGORY}
    return next((c for c in CATEGORIES if c in found), UNTAGGED) if found else _text_category(entry.text)


@text_memo(8_000_000)  # a server briefs the same entries again and again
def _text_category(text: str) -> str:
    """`category` of an entry whose tags name none: from its text alone."""
    found = {TAG_CATEGORY[t] for t in auto_tags(text) if t in TAG_CATEGORY}
    if not found:
        found = {TAG_CATEGORY[w] for w in _WORD.findall(first_line(text).lower()) if w in TAG_CATEGORY}
    if not found:
        head = " ".join([line for line in text.split("\n") if line.strip()][:3]).lower()
        found = {_RESCUE_WORD[w] for w in _RESCUE.findall(head)}
    return next((c for c in CATEGORIES if c in found), UNTAGGED)


def brief(
    mem: Memory,
    query: str | None = None,
    *,
    detail: str = "summary",
    since: str | float | None = None,
    focus: str | Iterable[str] | None = None,
    compact: bool = False,
    now: datetime | None = None,
) -> Brief:
    if detail not in TIERS:
        raise UsageError(f"detail must be one of {', '.join(TIERS)}, not {detail!r}")
    now = now or datetime.now(UTC)
    lo = since_moment(since, now) if since is not None and since != "" else None
    wanted = _focus(focus)
    query = (query or "").strip()
    if not query:
        return _meta(mem, lo, compact, now, detail)
    files = stores.readable_topics(mem, query) if _is_name(query) else {}
    if files:
        entries, kind = [e for tf in files.values() for e in tf.page.entries], "topic"
    else:
        entries, kind = [h.entry for h in stores.search(mem, MemoryQuery(query, limit=200, now=now)).hits], "search"
    entries = [e for e in entries if in_window(e, lo, None)]
    items = classify(entries)
    chains = _chains([i.entry for i in items if not i.superseded_by])
    if wanted:
        items = [i for i in items if i.category in wanted]
    topics = activity(files.values() if files else [], now)
    markdown = _render(query, kind, detail, items, chains, topics)
    return Brief(query, kind, detail, topics, [], items, chains, markdown)


def _is_name(query: str) -> bool:
    """A topic name or glob, not search words: one token of name characters and glob marks (`~personal/`
    first for the personal memory's)."""
    return bool(re.fullmatch(r"[\w*?\[\]-]+", personal.split(query)[1]))


def _focus(focus: str | Iterable[str] | None) -> set[str]:
    if not focus:
        return set()
    values = focus.split(",") if isinstance(focus, str) else focus
    out = set()
    for value in values:
        key = str(value).strip()
        name = TAG_CATEGORY.get(singular(key.lower())) or key.upper().replace("_", " ")
        if name == "DATA-FLOW":
            name = "DATA FLOW"
        if name not in (*CATEGORIES, UNTAGGED):
            raise UsageError(f"focus {value!r} is not a category; use {', '.join((*CATEGORIES, UNTAGGED))}")
        out.add(name)
    return out


def classify(entries: list[Entry]) -> list[Item]:
    """Dedup across topics, then supersession within a topic; sorted by category order, then time."""
    by_text: dict[str, list[Entry]] = {}
    for e in entries:
        by_text.setdefault(" ".join(e.text.lower().split()), []).append(e)
    kept: list[tuple[Entry, tuple[str, ...]]] = []
    for same in by_text.values():
        same.sort(key=lambda e: e.created)
        kept.append((same[0], tuple(e.ref for e in same[1:] if e.topic != same[0].topic)))
    newer: dict[str, str] = {}
    by_topic: dict[str, list[Entry]] = {}
    for e, _ in kept:
        by_topic.setdefault(e.topic, []).append(e)
    for group in by_topic.values():
        group.sort(key=lambda e: e.when)
        newer.update(_superseded(tuple(group)))
    order = {c: n for n, c in enumerate((*CATEGORIES, UNTAGGED))}
    items = [Item(e, category(e), also, newer.get(e.ref, "")) for e, also in kept]
    items.sort(key=lambda i: (order[i.category], i.entry.when, i.entry.ref))
    return items


class _EntriesMemo:
    """Results of a function of one topic's entries, remembered by the entries themselves (a server briefs the
    same unchanged topics again and again; an entry's every field is in the key), bounded by how many entries the
    keys hold."""

    def __init__(self, max_entries: int) -> None:
        self._kept: dict[tuple[Entry, ...], object] = {}  # oldest use first
        self._size, self._max = 0, max_entries
        self._lock = threading.Lock()

    def get(self, key: tuple[Entry, ...]) -> object | None:
        with self._lock:
            if key not in self._kept:
                return None
            self._kept[key] = value = self._kept.pop(key)
            return value

    def put(self, key: tuple[Entry, ...], value: object) -> None:
        with self._lock:
            if key in self._kept or len(key) > self._max:
                return
            self._kept[key] = value
            self._size += len(key)
            while self._size > self._max:
                self._size -= len(oldest := next(iter(self._kept)))
                del self._kept[oldest]


_SUPERSEDED = _EntriesMemo(200_000)
_CHAINS = _EntriesMemo(200_000)


def _superseded(group: tuple[Entry, ...]) -> dict[str, str]:
    """ref → the ref of the entry that supersedes it, among one topic's entries in time order."""
    known = _SUPERSEDED.get(group)
    if known is not None:
        return known  # type: ignore[return-value]
    newer: dict[str, str] = {}
    sets = [terms(e.text) for e in group]
    days = [moment.date() if (moment := parse_iso(e.when)) else None for e in group]
    for i, later in enumerate(_similar_later(sets)):
        old_day = days[i]
        for j in later:  # the newest first: the entry that supersedes is the latest one that can
            new_day = days[j]
            clearly_newer = old_day and new_day and (new_day - old_day).days >= SUPERSEDE_DAYS
            if clearly_newer and jaccard(sets[i], sets[j]) > SUPERSEDE_OVERLAP:
                newer[group[i].ref] = group[j].ref
                break
    _SUPERSEDED.put(group, newer)
    return newer


def _similar_later(sets: list[frozenset[str]]) -> list[list[int]]:
    """For each term set, the later ones (by position, the last first) that may share more than
    SUPERSEDE_OVERLAP of their terms with it; every pair above it is among them, and the caller checks each.

    Prefix filtering (as in set-similarity joins): with the terms ordered rarest first, two sets whose
    Jaccard overlap is at least t share a term among the first |s| - ceil(t·|s|) + 1 of each. One longer
    prefix than that is taken, so a rounding of t·|s| cannot lose a pair. Comparing every pair of a topic's
    entries was 0.44 s of a brief of a 794-entry topic."""
    df = Counter(t for s in sets for t in s)
    rank = {t: n for n, t in enumerate(sorted(df, key=lambda t: (df[t], t)))}  # each term's place, sorted once
    seen: dict[str, list[int]] = {}
    later: list[set[int]] = [set() for _ in sets]
    for j, s in enumerate(sets):
        ranked = sorted(s, key=rank.__getitem__)
        for t in ranked[: len(ranked) - math.floor(SUPERSEDE_OVERLAP * len(ranked)) + 1]:
            for i in seen.get(t, ()):
                later[i].add(j)
            seen.setdefault(t, []).append(j)
    return [sorted(js, reverse=True) for js in later]


def _chains(entries: list[Entry]) -> list[Chain]:
    """Per topic, as helix's (a chain is one topic's story): entries whose dominant keyword (their most shared
    term that is not everywhere) is the same, in time order."""
    by_topic: dict[str, list[Entry]] = {}
    for e in entries:
        by_topic.setdefault(e.topic, []).append(e)
    chains = [c for group in by_topic.values() for c in _remembered_chains(tuple(group))]
    return sorted(chains, key=lambda c: (-len(c.refs), c.keyword))


def _remembered_chains(entries: tuple[Entry, ...]) -> list[Chain]:
    known = _CHAINS.get(entries)
    if known is None:
        known = _topic_chains(list(entries))
        _CHAINS.put(entries, known)
    return list(known)  # type: ignore[call-overload]


def _topic_chains(entries: list[Entry]) -> list[Chain]:
    if len(entries) < CHAIN_MIN:
        return []
    sets = [terms(e.text) for e in entries]
    df = Counter(t for s in sets for t in s)
    groups: dict[str, list[Entry]] = {}
    for entry, s in zip(entries, sets, strict=True):
        shared = [t for t in s if CHAIN_MIN <= df[t] < len(entries) and len(t) > 2]
        if shared:
            dominant = max(shared, key=lambda t: (df[t], t))
            groups.setdefault(dominant, []).append(entry)
    stems: dict[str, tuple[str, ...]] = {}  # one topic's words stemmed once, not once per chain
    return [
        Chain(_as_written(term, group, stems), tuple(e.ref for e in sorted(group, key=lambda e: e.created)))
        for term, group in groups.items()
        if len(group) >= CHAIN_MIN
    ]


@text_memo(8_000_000)  # a server briefs the same entries again and again
def _words(text: str) -> tuple[str, ...]:
    return tuple(words(text))


@text_memo(1_000_000)  # a word's stems: the same words come back in every brief
def _stem(word: str) -> tuple[str, ...]:
    return tuple(tokenize(word))


def _as_written(term: str, entries: list[Entry], stems: dict[str, tuple[str, ...]]) -> str:
    """The stemmed `term` as the entries write it (`redi` → redis): its most common form, the shorter and
    then the first alphabetically on a tie; the term itself if no word stems to it."""
    forms: Counter[str] = Counter()
    for e in entries:
        for word in _words(e.text):
            if word not in stems:
                stems[word] = _stem(word)
            if stems[word] == (term,):
                forms[word] += 1
    return min(forms, key=lambda w: (-forms[w], len(w), w)) if forms else term


def activity(files: Iterable[NamedPage], now: datetime) -> list[TopicActivity]:
    out = []
    cutoff = now - timedelta(days=VELOCITY_DAYS)
    for tf in files:
        entries = tf.page.entries
        stamps = [parse_iso(e.when) for e in entries if e.when]
        recent = sum(1 for s in stamps if s and s >= cutoff)
        tags = Counter(t for e in entries for t in e.tags)
        last = max((e.when for e in entries if e.when), default="")
        top = tuple(t for t, _ in sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
        out.append(TopicActivity(tf.name, len(entries), last, recent, round(recent / VELOCITY_DAYS, 2), top))
    return sorted(out, key=lambda a: (a.last, a.entries), reverse=True)


def _meta(mem: Memory, lo: datetime | None, compact: bool, now: datetime, detail: str) -> Brief:
    files = list(stores.readable_topics(mem).values())
    if lo is not None:
        files = [
            tf._replace(page=tf.page._replace(entries=tuple(e for e in tf.page.entries if in_window(e, lo, None))))
            for tf in files
        ]
        files = [tf for tf in files if tf.page.entries]
    return meta(files, now, compact, detail)


def meta(files: Collection[NamedPage], now: datetime, compact: bool = False, detail: str = "summary") -> Brief:
    """The meta-briefing of topic files (anything with `.name` and `.page.entries`): pure, so the agent hooks
    run it on pages they parsed themselves, without a `Memory`."""
    topics = activity(files, now)
    themes = Counter(t for tf in files for e in tf.page.entries for t in e.tags).most_common(8)
    shown = topics[:5] if compact else topics
    total = sum(a.entries for a in topics)
    recent = sum(a.recent for a in topics)
    lines = [f"# Memory: {total} entries in {len(topics)} topics, {recent} in the last {VELOCITY_DAYS} days", ""]
    if not topics:
        lines.append("Nothing stored yet: memory_store(topic, text) adds the first entry.")
    for a in shown:
        tags = f"  [{', '.join(a.tags)}]" if a.tags else ""
        lines.append(f"- {a.topic}: {a.entries} entries, last {a.last[:10] or '-'}, {a.velocity:g}/day{tags}")
    if len(shown) < len(topics):
        lines.append(f"- … {len(topics) - len(shown)} more topics (topics action=list)")
    if themes and not compact:
        lines += ["", "Themes: " + ", ".join(f"{t} ({n})" for t, n in themes)]
    return Brief("", "meta", detail, topics, themes, [], [], "\n".join(lines) + "\n")


def _render(
    query: str, kind: str, tier: str, items: list[Item], chains: list[Chain], topics: list[TopicActivity]
) -> str:
    current = [i for i in items if not i.superseded_by]
    superseded = [i for i in items if i.superseded_by]
    what = "topic" if kind == "topic" and len(topics) == 1 else ("topics" if kind == "topic" else "search")
    lines = [f"# Brief: {query} ({what}) — {len(current)} current, {len(superseded)} superseded", ""]
    groups: dict[str, list[Item]] = {}
    for item in current:
        groups.setdefault(item.category, []).append(item)
    if tier == "summary":
        for name, group in groups.items():
            newest = max(group, key=lambda i: i.entry.when)
            lines.append(f"{name} ({len(group)}): {newest.entry.ref} {first_line(newest.entry.text)}")
        for chain in chains[:3]:
            lines.append(f"chain '{chain.keyword}': {' → '.join(chain.refs)}")
        lines = lines[: SUMMARY_LINES - 1]
        if superseded:
            lines.append(f"({len(superseded)} superseded; detail=scan lists them)")
        return "\n".join(lines) + "\n"
    for name, group in groups.items():
        lines += [f"## {name}", ""]
        for item in group:
            e = item.entry
            also = f" (also in {', '.join(item.also_in)})" if item.also_in else ""
            if tier == "scan":
                lines.append(f"- {e.ref} {e.when[:10]} {first_line(e.text)}{also}")
            else:
                meta = f"[tags: {', '.join(e.tags)}] " if e.tags else ""
                meta += f"[source: {e.source}] " if e.source else ""
                lines += [f"### {e.ref} · {e.when}{also}", "", e.text, ""] + ([meta.strip(), ""] if meta else [])
        lines.append("")
    if chains:
        lines += ["## CHAINS", ""] + [f"- {c.keyword}: {' → '.join(c.refs)}" for c in chains] + [""]
    if superseded:
        lines += ["## SUPERSEDED", ""]
        lines += [f"- {i.entry.ref} {first_line(i.entry.text)} → {i.superseded_by}" for i in superseded]
    return "\n".join(lines).rstrip() + "\n"
