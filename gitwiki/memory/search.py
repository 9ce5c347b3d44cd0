"""Memory search: the wiki's hybrid index restricted to the topic pages, re-ranked per entry.

score (`gitwiki.search.ranking.memory_score`) = relevance (fused BM25 + dense of the entry's section) ×
confidence × (0.7 if its source is stale); among equal scores the newer entry first. Without query words the
entries come newest first (× recency = 1 / (1 + age_days / 30) in place of relevance). Entries must
contain every query term (AND); when none holds every term, any term (OR); when none does, the dense
neighbours alone. An entry the hybrid ranking scores at least half as high as its best is listed whatever
words it holds: a paraphrase shares none with its note, and a short query's words are all in many notes but
the one it asks for. With `[search] reranker` set, its cross-encoder judges the first `rerank_depth` hits
again and that judgement is their relevance. At most 4 hits per topic. Inline `tag:x topic:y source:z` in the
query filter like the parameters of the same names.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.errors import EmbeddingUnavailable, UsageError
from gitwiki.memory.entry import Entry, normalize_tags, parse_iso, terms, topic_name
from gitwiki.memory.sources import STALE_FACTOR, stale
from gitwiki.search import ranking
from gitwiki.search.rerank import judged

if TYPE_CHECKING:
    from gitwiki.index.embed import Embedder
    from gitwiki.index.statistics import TermStats
    from gitwiki.memory.base import Memory, PageVersion, TopicFile
    from gitwiki.search.rerank import Reranker
    from gitwiki.search.searcher import CorpusView

PER_TOPIC = 4
CANDIDATES = 400  # sections taken from the hybrid ranking (a topic page holds many)
RANKED_SHARE = 0.5  # an entry whose relevance (the best's is 1) reaches this is listed whatever words it holds
MODES = ("and", "or")
DETAILS = ("full", "medium", "brief", "grouped", "topics", "count")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}|today|yesterday|this-week")  # a day, not a moment in it
_INLINE = re.compile(r"(?<!\S)(tag|topic|source):(\S+)")
Candidates = list[tuple[Entry, frozenset[str]]]  # entries with their search terms


@dataclass(frozen=True)
class MemoryQuery:
    """One memory search as the caller asks it, built once by the adapter (the CLI's `memory search`, the MCP
    `memory_search` tool) and passed whole to `search`: the words (with inline `tag:x topic:y source:z`), the
    filters, the match mode and the number of hits. Checked by `search`; `now` fixes the clock (tests, brief)."""

    query: str | None = None
    limit: int = 10
    after: str | None = None
    before: str | None = None
    days: float | None = None
    hours: float | None = None
    tag: str | None = None
    topic: str | None = None
    source: str | None = None
    mode: str = "and"
    now: datetime | None = None


class Hit(NamedTuple):
    entry: Entry
    score: float
    relevance: float
    stale: bool
    ranked: bool = False  # its relevance is the hybrid ranking's (not the floor of a word match it did not reach)


class Found(NamedTuple):
    query: str  # the words searched, inline filters removed
    filters: dict[str, str | None]  # tag, topic, source, after, before as applied
    matched: str  # "and", "or", "semantic" (dense neighbours only) or "recent" (no query words)
    ranking: str  # hybrid, lexical or dense: what scored relevance
    total: int  # matching entries before the per-topic cap and the limit
    hits: list[Hit]
    per_topic: dict[str, int]  # matching entries per topic before the cap and the limit (helix's topics counts)


# ---- dates -----------------------------------------------------------------------------------------


def parse_day(value: str, now: datetime | None = None) -> datetime:
    """`YYYY-MM-DD`, an ISO timestamp, `today`, `yesterday` or `this-week` → the moment it starts (UTC)."""
    now = now or datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"today": midnight, "yesterday": midnight - timedelta(days=1)}
    named["this-week"] = midnight - timedelta(days=midnight.weekday())
    key = str(value).strip().lower()
    if key in named:
        return named[key]
    parsed = parse_iso(key.upper() if "t" in key else key)
    if parsed is None:
        raise UsageError(f"date {value!r} must be YYYY-MM-DD, today, yesterday or this-week")
    return parsed


def since_moment(value: str | float, now: datetime | None = None) -> datetime:
    """brief's `since`: a number of hours as helix's (helix/docs/TOOLS.md, brief: `since: "24"`), given as
    a number or a numeric string, or a day as parse_day reads it."""
    now = now or datetime.now(UTC)
    hours = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(value, str):
        try:
            hours = float(value)
        except ValueError:
            return parse_day(value, now)
    if hours is None or not hours > 0:  # nan too
        raise UsageError(f"since {value!r} must be a number of hours > 0 or a day (YYYY-MM-DD, today, …)")
    first = datetime.min.replace(tzinfo=UTC)  # hours reaching back before year 1 keep everything
    return first if hours * 3600 >= (now - first).total_seconds() else now - timedelta(hours=hours)


def window(
    after: str | None = None,
    before: str | None = None,
    days: float | None = None,
    hours: float | None = None,
    now: datetime | None = None,
) -> tuple[datetime | None, datetime | None]:
    """(earliest, latest) datetimes for the date filters; `before` is inclusive as helix's ("on or before",
    helix/DOCS.md): a date or a named day reaches to that day's end, a timestamp to that moment."""
    now = now or datetime.now(UTC)
    lo = parse_day(after, now) if after else None
    for unit, value in (("days", days), ("hours", hours)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:  # nan too
            raise UsageError(f"{unit} must be a positive number, not {value!r}")
        seconds = value * (86400 if unit == "days" else 3600)
        # A span reaching back before year 1 (days: 10**12, hours: 1e308) keeps everything: no lower bound.
        if seconds < (now - datetime.min.replace(tzinfo=UTC)).total_seconds():
            start = now - timedelta(seconds=seconds)
            lo = max(lo, start) if lo else start
    hi = parse_day(before, now) if before else None
    if hi is not None and _DAY.fullmatch(str(before).strip().lower()):
        hi += timedelta(days=1) - timedelta(microseconds=1)  # a day: through its last moment
    return lo, hi


def in_window(entry: Entry, lo: datetime | None, hi: datetime | None) -> bool:
    if lo is None and hi is None:
        return True
    when = parse_iso(entry.when) if entry.when else None
    if when is None:
        return lo is None and hi is None
    return (lo is None or when >= lo) and (hi is None or when <= hi)


def age_days(entry: Entry, now: datetime) -> float:
    """How old an entry is, in days; a year when it carries no date."""
    when = parse_iso(entry.when) if entry.when else None
    return max(0.0, (now - when).total_seconds() / 86400) if when else 365.0


def recency(entry: Entry, now: datetime) -> float:
    """An entry's recency weight now (`gitwiki.search.ranking.recency` of its age)."""
    return ranking.recency(age_days(entry, now))


# ---- search ----------------------------------------------------------------------------------------


def split_query(query: str | None) -> tuple[str, dict[str, str]]:
    """Pull `tag:x topic:y source:z` out of the query text."""
    inline: dict[str, str] = {}
    text = _INLINE.sub(lambda m: inline.setdefault(m.group(1), m.group(2)) and "", query or "")
    return " ".join(text.split()), inline


def query_terms(text: str) -> frozenset[str]:
    """The terms an AND match needs: identifiers split (`rotateKey`, `rotate_key` → rotate, key), stop
    words dropped, stemmed; the joined identifier is not required."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.]", " ", text)
    return terms(spaced)


def search(mem: Memory, query: MemoryQuery | str | None = None) -> Found:
    """The entries of one memory matching `query`: a `MemoryQuery`, or just its words."""
    q = query if isinstance(query, MemoryQuery) else MemoryQuery(query)
    if q.mode not in MODES:
        raise UsageError(f"mode must be and or or, not {q.mode!r}")
    limit = q.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"limit must be a whole number ≥ 1, not {limit!r}")
    now = q.now or datetime.now(UTC)
    words, inline = split_query(q.query)
    lo, hi = window(q.after, q.before, q.days, q.hours, now)
    filters = _filters(q.tag or inline.get("tag", ""), q.topic or inline.get("topic"), q.source or inline.get("source"))
    filters |= {"after": lo.isoformat() if lo else None, "before": hi.isoformat() if hi else None}
    files = mem.versions(topic_pattern(filters["topic"]))
    # The query's vector is on its way (a worker thread) while the entries holding its terms are found.
    embedder = query_embedder(mem, words) if words and files and not _shared(mem) else None
    wanted = query_terms(words) if words else None

    def passing(starts: dict[str, set[int]], holding: frozenset[str] | None = wanted) -> Candidates:
        found = mem.candidates(files, holding, starts)
        if not (filters["tag"] or filters["source"] or lo or hi):  # nothing to filter: a common word finds 1,000s
            return found
        return [(e, t) for e, t in found if _passes(e, filters["tag"], filters["source"]) and in_window(e, lo, hi)]

    # Only entries holding a query term can match by words; those ranked by the index (dense neighbours) only
    # when none does: the others are not built.
    candidates = passing({})
    relevance, ranked_by = _relevance(mem, files, words, embedder) if words else ({}, "recency")
    if wanted is not None and relevance:
        # The entries the ranking scores high that hold no query word (or none as stemmed here) are built too;
        # when none holds a word, every entry it ranked (the dense neighbours).
        held = {_key(e) for e, _ in candidates}
        starts: dict[str, set[int]] = {}
        for (name, line), r in relevance.items():
            if not held or (r >= RANKED_SHARE and (name, line) not in held):
                starts.setdefault(name, set()).add(line)
        if starts:
            candidates += passing(starts, frozenset())
    scored, matched = _matched(candidates, words, q.mode, relevance)
    by_age = matched == "recent"
    hits = in_order([_hit(mem, entry, rel, now, by_age, _key(entry) in relevance) for entry, rel in scored])
    searcher = mem.wiki.searcher if hits and not by_age else None
    if searcher is not None and searcher.reranker is not None and hits[: searcher.rerank_depth]:  # depth 0: off
        hits = in_order(_reranked(hits, words, searcher.reranker, searcher.rerank_depth))
        ranked_by += ", reranked"
    counts = Counter(h.entry.topic for h in hits)
    return Found(words, filters, matched, ranked_by, len(hits), _capped(hits)[:limit], dict(counts.most_common()))


def _filters(tag: str, topic: str | None, source: str | None) -> dict[str, str | None]:
    """The filters as applied (the date window is added by the caller): the tag normalized as entries' are."""
    wanted = normalize_tags([tag])
    return {"tag": wanted[0] if wanted else None, "topic": topic, "source": source}


def _passes(entry: Entry, tag: str | None, source: str | None) -> bool:
    return (not tag or tag in entry.tags) and (not source or source in entry.source)


def _matched(
    candidates: Candidates, words: str, mode: str, relevance: dict[tuple[str, int], float]
) -> tuple[list[tuple[Entry, float]], str]:
    """The entries that match `words` with their relevance, and how they matched."""
    if not words:
        return [(e, 1.0) for e, _ in candidates], "recent"
    needed = query_terms(words)
    chosen = [e for e, t in candidates if needed and needed <= t] if mode == "and" else []
    matched = "and"
    if not chosen:
        chosen = [e for e, t in candidates if needed & t]
        matched = "or"
    if not chosen and relevance:  # without a dense ranking, nothing matched: "or" (no entry holds a word)
        chosen = [e for e, _ in candidates if relevance.get(_key(e), 0.0) > 0]
        matched = "semantic"
    floor = min(relevance.values(), default=1.0) / 2  # lexical matches the hybrid ranking cut off
    scored = [(e, relevance.get(_key(e), floor)) for e in chosen]
    return scored + _ranked_high(candidates, {_key(e) for e in chosen}, relevance), matched


def _ranked_high(
    candidates: Candidates, chosen: set[tuple[str, int]], relevance: dict[tuple[str, int], float]
) -> list[tuple[Entry, float]]:
    """The entries the hybrid ranking scores at least RANKED_SHARE of its best (relevance is relative to it) that
    the word match did not choose: an AND or OR pass alone hides the note a paraphrase or a short query asks for
    when other notes hold its words (docs/research/memory-recall-3.md)."""
    high = {key for key, r in relevance.items() if r >= RANKED_SHARE} - chosen
    # Often empty: the candidates (thousands, for a common word) are scanned only when there is one to list.
    return [(e, relevance[_key(e)]) for e, _ in candidates if _key(e) in high] if high else []


def _hit(mem: Memory, entry: Entry, relevance: float, now: datetime, by_age: bool, ranked: bool) -> Hit:
    """`entry` scored; `by_age` (no query words): newest first, its recency in place of a relevance."""
    is_stale = stale(mem, entry) is not None
    score = _scored(entry, relevance, is_stale)
    return Hit(entry, score * recency(entry, now) if by_age else score, relevance, is_stale, ranked)


def _scored(entry: Entry, relevance: float, is_stale: bool) -> float:
    return ranking.memory_score(relevance, entry.confidence, STALE_FACTOR if is_stale else 1.0)


def _reranked(hits: list[Hit], words: str, reranker: Reranker, depth: int) -> list[Hit]:
    """The first `depth` hits judged again by the `[search] reranker` cross-encoder, which reads the query and each
    entry together: a reranked hit's relevance is the model's judgement (`rerank.judged`, on one scale in every
    memory, so the project's and the personal memory's hits still compare); the others keep theirs scaled under the
    lowest judgement, so they stay below."""
    head = hits[:depth]
    logits = reranker.scores(words, [f"{h.entry.topic}\n{h.entry.text}" for h in head])
    judgements = [judged(logit) for logit in logits]
    below = min(judgements)
    relevances = judgements + [h.relevance * below for h in hits[len(head) :]]
    return [h._replace(relevance=r, score=_scored(h.entry, r, h.stale)) for h, r in zip(hits, relevances, strict=True)]


def in_order(hits: list[Hit]) -> list[Hit]:
    """Best first: by score; among equal scores the newer entry, then by topic and place on the page."""
    ordered = sorted(hits, key=_place)
    ordered.sort(key=_newer)  # stable sorts: the last one made decides first
    ordered.sort(key=_score)
    return ordered


def _score(hit: Hit) -> float:
    return -hit.score


def _newer(hit: Hit) -> float:
    """Newer entries first (their last change); an entry without a readable date last."""
    when = parse_iso(hit.entry.when) if hit.entry.when else None
    return -when.timestamp() if when else math.inf


def _place(hit: Hit) -> tuple[str, int]:
    return hit.entry.topic, hit.entry.index


def _capped(hits: list[Hit]) -> list[Hit]:
    """At most PER_TOPIC hits of each topic, in order."""
    capped, per_topic = [], dict[str, int]()
    for hit in hits:
        if per_topic.get(hit.entry.topic, 0) < PER_TOPIC:
            per_topic[hit.entry.topic] = per_topic.get(hit.entry.topic, 0) + 1
            capped.append(hit)
    return capped


def highlight(text: str, words: str) -> str:
    """helix's full detail (helix/docs/TOOLS.md, search): a line holding a query term gets `> `, the others
    are indented to match."""
    needed = query_terms(words)
    marked = (
        ("> " if needed & query_terms(line) else "  ") + line if line.strip() else "" for line in text.split("\n")
    )
    return "\n".join(marked)


def topic_pattern(raw: str | None) -> str | None:
    if not raw:
        return None
    return raw.lower() if any(ch in raw for ch in "*?[") else topic_name(raw)


def _key(entry: Entry) -> tuple[str, int]:
    return entry.topic, entry.start_line


def _shared(mem: Memory) -> Relevance | None:
    """The relevance `one_scale` ranked for `mem` over every memory searched together, if it is under way."""
    shared = _ONE_SCALE.get()
    return shared.get(mem.root) if shared is not None else None


def _relevance(
    mem: Memory, files: dict[str, PageVersion], words: str, embedder: Embedder | None
) -> tuple[dict[tuple[str, int], float], str]:
    """Each entry's best section score in the wiki's hybrid ranking of just these pages, relative to the best
    (`embedder`: `query_embedder`'s); inside `one_scale`, this memory's share of the relevance ranked over every
    memory searched together."""
    shared = _shared(mem)
    if shared is not None:
        return shared
    if not files:
        return {}, "lexical"
    s = mem.wiki.config.search
    view = memory_view(mem, files, embedder)
    if embedder is not None:
        mem.wiki.searcher.rank_ahead(view, embedder)  # a model in another process reads the vectors meanwhile
    with mem.read():
        rankings, blob_of, mode = _rankings(mem, view, words, s.mode, embedder, None)
        fused = ranking.fuse(list(rankings.values()), s.fusion, mem.wiki.searcher.weighting)
        entry_of = _entry_of_chunk(mem, files, blob_of)
    if _swapped(embedder):  # the vectors read were another model's: ranked again with the model that loaded
        return _relevance(mem, files, words, query_embedder(mem, words))
    # BM25 alone scores in arbitrary units: relevance is relative to the best hit, in (0, 1].
    return ranking.relative(ranking.best_of(fused, entry_of)), mode


def query_embedder(mem: Memory, words: str, shared: Embedder | None = None) -> Embedder | None:
    """The embedder of `mem`'s dense ranker (None: lexical), its query vector already on its way
    (`query_vector.QueryVector`); `shared`, another memory's for the same words, when its model is the same. A model
    still loading on another thread is not waited for here: the search goes on with its id (`QueryVector.loading`)."""
    from gitwiki.index import embed
    from gitwiki.memory.query_vector import QueryVector
    from gitwiki.search.searcher import RanksElsewhere

    wiki = mem.wiki
    if wiki.config.search.mode == "lexical":
        return None
    if embed.loading(wiki.config.embeddings) and (model_id := wiki.wanted_model()) is not None:
        if shared is not None and shared.model_id == model_id:
            return shared
        return QueryVector.loading(model_id, wiki.embedder, words, wiki.searcher.queries)
    embedder = wiki.embedder()
    if embedder is None:
        return None
    if shared is not None and shared.model_id == embedder.model_id:
        return shared
    if isinstance(embedder, RanksElsewhere):  # a model in a process of its own, which embeds the query where it ranks
        return embedder
    return QueryVector(embedder, words, wiki.searcher.queries)


def _rankings(
    mem: Memory, view: CorpusView, words: str, mode: str, embedder: Embedder | None, stats: TermStats | None
) -> tuple[dict[str, ranking.Ranked], dict[int, str], str]:
    """Each ranker's chunks as `ranking.fuse` takes them (lexical first), each chunk's blob and the mode used;
    BM25 with `stats` when given (every memory searched together), else with this index's own. A model that was
    still loading and did not load ranks nothing: lexical then, as without a model."""
    mode = mode if embedder is not None else "lexical"
    rankings: dict[str, ranking.Ranked] = {}
    blob_of: dict[int, str] = {}
    if mode in ("hybrid", "lexical"):
        rankings["lexical"], blob_of = _lexical(mem, view, words, stats)
    if embedder is not None and mode in ("hybrid", "dense"):
        try:
            found, dense_blobs = mem.wiki.searcher.rankings(view, words, "dense", embedder, 1)
        except EmbeddingUnavailable:
            if _settled(embedder) is not None:
                raise  # not a load that failed
            found, dense_blobs, mode = None, {}, "lexical"
            if "lexical" not in rankings:
                rankings["lexical"], blob_of = _lexical(mem, view, words, stats)
        if found is not None:
            rankings["dense"] = found.rankings.get("dense", [])
        blob_of.update(dense_blobs)
        if mode == "hybrid" and not rankings.get("dense"):  # no vectors (a model that never loaded here): lexical
            rankings.pop("dense", None)
            mode = "lexical"
    return rankings, blob_of, mode


def _swapped(embedder: Embedder | None) -> bool:
    from gitwiki.memory.query_vector import QueryVector

    return isinstance(embedder, QueryVector) and embedder.swapped()


def _settled(embedder: Embedder | None) -> Embedder | None:
    """`embedder` once a model it waits for has loaded (`QueryVector.loading`), or None when that model did not."""
    from gitwiki.memory.query_vector import QueryVector

    if isinstance(embedder, QueryVector) and embedder.embedder is None:
        try:
            embedder.model()
        except EmbeddingUnavailable:
            return None
    return embedder


def _lexical(
    mem: Memory, view: CorpusView, words: str, stats: TermStats | None
) -> tuple[ranking.Ranked, dict[int, str]]:
    """The BM25 ranking of the view's chunks: in a process that searches again and again, from the postings kept
    warm (`gitwiki.search.lexicon`, the same scores), else FTS5's."""
    from gitwiki.index.tokens import query_terms as fts_terms
    from gitwiki.search import lexicon

    searcher = mem.wiki.searcher
    terms = fts_terms(words)
    if mem.resident and lexicon.plain(terms):
        store = mem.search_index
        if mem.lexicon is None or mem.lexicon.store is not store:
            mem.lexicon = lexicon.Lexicon(store)
        given = stats if stats is not None else mem.lexicon.term_stats(terms)
        return mem.lexicon.ranking(view.pages.values(), terms, given, searcher.depth, view.key)
    found, blob_of = searcher.rankings(view, words, "lexical", None, 1, stats)
    return found.rankings.get("lexical", []), blob_of


# ---- one scale over several memories --------------------------------------------------------------

Relevance = tuple[dict[tuple[str, int], float], str]  # (topic, entry's first line) → relevance; the ranking used
Key = tuple[int, str, int]  # (which memory, topic, entry's first line)
# The relevance `one_scale` computed for each memory (by its root) while a search over several is under way.
_ONE_SCALE: ContextVar[dict[Path, Relevance] | None] = ContextVar("memory_one_scale", default=None)


@contextmanager
def one_scale(mems: list[Memory], query: str | None) -> Iterator[None]:
    """Searches made inside score relevance on one scale over `mems` (the project's and the personal memory):
    each ranker's entries of every memory are normalized and fused as one list (`joint_relevance`), so a
    memory's best is 1 only when it is the best of all, and a strong personal hit outranks a weak project one."""
    words = split_query(query)[0]
    if len(mems) < 2 or not words:
        yield
        return
    token = _ONE_SCALE.set(joint_relevance([(m, m.versions(None)) for m in mems], words))
    try:
        yield
    finally:
        _ONE_SCALE.reset(token)


def joint_relevance(owners: list[tuple[Memory, dict[str, PageVersion]]], words: str) -> dict[Path, Relevance]:
    """Each memory's entries' relevance, fused over all of them: each ranker's raw entry scores of every memory
    (`joint_rankings`) are merged, then normalized and fused once with the first memory's weighting, and made
    relative to the best of all."""
    per_ranker = joint_rankings(owners, words)
    lists = [sorted(per_ranker[r], key=lambda kv: -kv[1]) for r in ("lexical", "dense") if per_ranker.get(r)]
    first = owners[0][0].wiki
    best = ranking.relative(_fuse(lists, first.config.search.fusion, first.searcher.weighting))
    mode = "hybrid" if len(lists) == 2 else ("dense" if "dense" in per_ranker else "lexical")
    out: dict[Path, Relevance] = {mem.root: ({}, mode) for mem, _ in owners}
    for (n, topic, line), score in best.items():
        out[owners[n][0].root][0][(topic, line)] = score
    return out


def joint_rankings(
    owners: list[tuple[Memory, dict[str, PageVersion]]], words: str
) -> dict[str, list[tuple[Key, float]]]:
    """Each ranker's raw score of every entry (its best section) of every memory, `Key`'s first item the memory's
    place in `owners`: the lexical and the dense ranker of each memory run in its own index, BM25 with the
    statistics of all the indexes added up (`statistics.union`, as if one index held every memory's rows; the
    pages are indexed first) and cosines, which mean the same in every index."""
    from gitwiki.index.statistics import union

    searched: list[tuple[int, Memory, dict[str, PageVersion], CorpusView, Embedder | None]] = []
    shared: Embedder | None = None
    for n, (mem, files) in enumerate(owners):
        if not files:
            continue
        embedder = query_embedder(mem, words, shared)
        shared = embedder or shared
        searched.append((n, mem, files, memory_view(mem, files, embedder), embedder))
    stats = union(mem.wiki.searcher.statistics(words) for _, mem, _, _, _ in searched)
    per_ranker: dict[str, list[tuple[Key, float]]] = {}
    for n, mem, files, view, embedder in searched:
        with mem.read():
            rankings, blob_of, _ = _rankings(mem, view, words, "hybrid", embedder, stats)
            entry_of = _entry_of_chunk(mem, files, blob_of)
        for ranker, ranked in rankings.items():
            entries = ranking.best_of(ranked, entry_of)
            per_ranker.setdefault(ranker, []).extend(((n, t, line), s) for (t, line), s in entries.items())
    return per_ranker


def _fuse(lists: list[list[tuple[Key, float]]], fusion: str, weighting: ranking.Weighting) -> dict[Key, float]:
    """Score fusion of entry lists, as the wiki's searcher fuses chunk lists (its weights and normalization)."""
    if not lists:  # no entry holds a query word, and no ranker was embedded
        return {}
    ids: dict[Key, int] = {}
    numbered = [[(ids.setdefault(key, len(ids)), score) for key, score in ranked] for ranked in lists]
    keys = list(ids)
    if fusion == "rrf":
        fused = ranking.rrf(numbered)
    else:
        fused = ranking.score_fusion(numbered, weighting.weights(numbered), weighting.normalizer)
    return {keys[i]: score for i, score in fused}


def _entry_of_chunk(mem: Memory, files: dict[str, PageVersion], blob_of: dict[int, str]) -> dict[int, tuple[str, int]]:
    """ranked chunk id → (topic, first line of its entry); each chunk is looked up once per process."""
    if len(mem.chunk_entries) > 4 * len(files):  # a long-lived server: forget replaced page versions
        live = {v.blob for v in files.values()}
        mem.chunk_entries = {b: v for b, v in mem.chunk_entries.items() if b in live}
    unknown = [cid for cid, blob in blob_of.items() if cid not in mem.chunk_entries.get(blob, {})]
    lines = mem.search_index.chunk_lines(unknown) if unknown else {}
    by_blob = {v.blob: (name, v) for name, v in files.items()}
    spans: dict[str, list[tuple[int, int]]] = {}  # blob → its entries' line ranges, read once here
    for cid in unknown:
        name, v = by_blob.get(blob_of[cid], ("", None))
        known = mem.chunk_entries.setdefault(blob_of[cid], {})
        if v is None or cid not in lines:
            known[cid] = None
            continue
        # Entries are in page order and do not overlap: the one a chunk starts in is the last one starting at
        # or before it (bisect: a scan of the entries per chunk was quadratic, 1.7 s for a 794-entry page).
        entries = spans[v.blob] if v.blob in spans else spans.setdefault(v.blob, mem.entry_lines(name, v))
        at = bisect.bisect_right(entries, (lines[cid], sys.maxsize)) - 1
        known[cid] = (v.name, entries[at][0]) if at >= 0 and lines[cid] <= entries[at][1] else None
    return {cid: where for cid, blob in blob_of.items() if (where := mem.chunk_entries[blob].get(cid)) is not None}


def memory_view(mem: Memory, files: Mapping[str, PageVersion | TopicFile], embedder: Embedder | None) -> CorpusView:
    """The topic pages as they are on disk, as a search view; versions not yet indexed (edited by hand,
    or by another process) are parsed and embedded first."""
    from gitwiki.index.indexer import ensure_blobs, ensure_vectors
    from gitwiki.search.searcher import CorpusView

    pages = {tf.repo_path: tf.blob for tf in files.values()}
    model = embedder.model_id if embedder is not None else None
    todo = {tf.blob: tf for tf in files.values() if (tf.blob, model) not in mem.indexed}
    store = mem.search_index
    if todo and embedder is not None:
        mem.wiki.local.settle_embedding()  # a store's vectors may be on their way (gitwiki.index.background_embed)
    # Asked before the writer lock: a fresh process finds every version indexed and takes no lock.
    if todo and (set(todo) - store.known_blobs(todo) or (model and store.missing_vectors(model, todo))):
        embedder = _settled(embedder)  # vectors to make: a model still loading is waited for, not under the lock
        model = embedder.model_id if embedder is not None else None
        with store.lock():
            sources: dict[str, Callable[[], bytes]] = {b: functools.partial(bytes, tf.data) for b, tf in todo.items()}
            ensure_blobs(store, sources)
            if embedder is not None:
                ensure_vectors(store, embedder, set(todo))
    mem.indexed.update((b, model) for b in todo)
    return CorpusView(mem.corpus.name, "", pages, (), _view_key(pages))


_VIEW_KEYS: dict[int, tuple[dict[str, str], str]] = {}  # number of pages → the last pages of that many, their key


def _view_key(pages: dict[str, str]) -> str:
    """A key naming exactly these pages, for the searcher's caches; the last one is remembered: hashing released
    the GIL to a query being embedded beside it, and waited up to 5 ms (the switch interval) to get it back."""
    import hashlib  # OpenSSL, ~2.5 ms: not for the agent hooks, which import this module for its brief

    known = _VIEW_KEYS.get(len(pages))
    if known is not None and known[0] == pages:
        return known[1]
    digest = hashlib.sha1(repr(sorted(pages.items())).encode()).hexdigest()
    _VIEW_KEYS[len(pages)] = (dict(pages), f"memory:{digest}")
    if len(_VIEW_KEYS) > 16:
        _VIEW_KEYS.pop(next(iter(_VIEW_KEYS)))
    return f"memory:{digest}"
