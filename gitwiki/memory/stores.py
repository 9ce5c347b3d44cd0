"""Which memory a call reads and writes, when a personal memory repository (gitwiki.memory.personal) is
configured beside the project's: the routing of writes, the topics of both, and search fused over both.

Where a write goes: the call's scope (`project` or `personal`), a topic with the `~personal/` prefix, else
`[memory] write`: `auto` (the default) writes where the call's topics already live; a new topic (or one
both memories have) goes to the project when it has topic pages, else to the personal repository when
there is one; `project` and `personal` always there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gitwiki.errors import UsageError
from gitwiki.memory.personal import PREFIX, no_personal, split

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory, TopicFile
    from gitwiki.memory.entry import Entry
    from gitwiki.memory.search import Found, MemoryQuery

SCOPES = ("project", "personal")
LEVELS = ("recent", "and", "or", "semantic")  # search's match levels, best first
FUSE_DEPTH = 1000  # hits taken from each memory before they are merged (search caps 4 per topic)


def check_scope(scope: str | None) -> None:
    if scope is not None and scope not in SCOPES:
        raise UsageError(f"scope must be project or personal, not {scope!r}")


def readable_topics(mem: Memory, pattern: str | None = None) -> dict[str, TopicFile]:
    """The topics of every memory `mem` reads, by the name they show (`~personal/…` for the personal one's);
    `pattern`, a name or glob, addresses the project's topics, or with the prefix the personal ones."""
    from gitwiki.memory.search import topic_pattern

    owners = [mem.reader(pattern)] if pattern else [(m, None) for m in mem.stores()]
    return {tf.name: tf for m, name in owners for tf in m.topics(topic_pattern(name)).values()}


def readable_entries(mem: Memory) -> list[Entry]:
    return [e for t in readable_topics(mem).values() for e in t.page.entries]


def writer(mem: Memory, scope: str | None = None, topics: Sequence[str] = ()) -> tuple[Memory, list[str]]:
    """The memory a write goes to and the topic names as that memory reads them (the prefix dropped)."""
    check_scope(scope)
    labels = {split(t)[0] for t in topics if isinstance(t, str)}
    if len(labels) > 1:
        raise UsageError(
            f"one call writes to one memory, and these topics name both ({PREFIX}… and not): split the call; "
            "to move entries across, export the topic from one (topics action=export) and import it into the other"
        )
    bare = [split(t)[1] for t in topics]
    if mem.label:  # the personal memory itself
        return mem, bare
    if labels == {PREFIX}:
        if scope == "project":
            raise UsageError(f"scope project, but the topic names the personal memory ({PREFIX}…); drop one")
        scope = "personal"
    if scope is None:
        chosen = mem.config.write
        if chosen == "auto":
            chosen = _auto(mem, bare)
        scope = chosen
    if scope == "project":
        return mem, bare
    if mem.personal is None:
        raise no_personal()
    return mem.personal, bare


def _auto(mem: Memory, topics: Sequence[str]) -> str:
    """`write = "auto"`: where the call's topics already live, so that `rust` does not grow in the project
    beside `~personal/rust` (a topic both memories have: the project's). New topics, or topics that live
    apart: a project that keeps topic pages writes there (reviewed with the code), one that has none into
    the personal repository, as helix writes everything into its one knowledge base."""
    if mem.personal is None:
        return "project"
    project = mem.topic_files()
    names = {n for n in map(_name, topics) if n is not None}
    if names:
        personal = mem.personal.topic_files()
        homes = {"project" if n in project else "personal" for n in names if n in project or n in personal}
        if len(homes) == 1:
            return homes.pop()
    return "project" if project else "personal"


def _name(topic: str) -> str | None:
    """The page name a topic is stored under; None for a name the store will refuse (it says why)."""
    from gitwiki.memory.entry import topic_name

    try:
        return topic_name(topic)
    except UsageError:
        return None


def writer_batch(mem: Memory, scope: str | None, items: object) -> tuple[Memory, object]:
    """`writer` for a batch: the memory its entries go to, and the entries with their topics as it reads them.
    `items` is the caller's JSON: anything but a list is handed on as it is, for batch_items to refuse."""
    listed: list[Any] = items if isinstance(items, list) else []
    named = [i for i in listed if isinstance(i, dict) and isinstance(i.get("topic"), str)]
    target, topics = writer(mem, scope, [i["topic"] for i in named])
    renamed = dict(zip(map(id, named), topics, strict=True))
    return target, [{**i, "topic": renamed[id(i)]} if id(i) in renamed else i for i in listed] if named else items


def writer_edit(
    mem: Memory, scope: str | None, topic: str, to: str | None, into: str | None
) -> tuple[Memory, str, str | None, str | None]:
    """`writer` for an edit: its topic and rename's `to` or merge's `into` must be in one memory."""
    others = [t for t in (to, into) if t is not None]
    target, (name, *bare) = writer(mem, scope, [topic, *others])
    renamed = dict(zip(others, bare, strict=True))
    return target, name, renamed.get(to) if to is not None else None, renamed.get(into) if into is not None else None


def topics_memory(mem: Memory, scope: str | None, action: str) -> Memory:
    """The memory a topics action works on: the scope's; import writes as a store does; without a scope
    the others start from the project's (list, recent, entries and session read the personal one too)."""
    return writer(mem, scope)[0] if scope or action == "import" else mem


def search(mem: Memory, query: MemoryQuery | str | None = None) -> Found:
    """memory search over the project's memory and the personal one, fused into one list (`query`: a
    `MemoryQuery`, or just its words).

    Each memory ranks its own entries in its own index, and the rankings are fused on one scale
    (`gitwiki.memory.search.one_scale`): BM25 and cosine mean the same in both, so a strong personal hit
    outranks a weak project one, and each memory's best is not 1 unless it is the best of all. The lists
    merge by score at the best match level either reached: when one memory has entries holding every query
    word, the other's any-word or dense-only matches are left out, as one memory leaves them out, except the
    entries the hybrid ranking scores at least half as high as the best of all (as one memory lists them whatever
    words they hold)."""
    from gitwiki.memory import search as search_mod

    q = query if isinstance(query, search_mod.MemoryQuery) else search_mod.MemoryQuery(query)
    topic, limit = q.topic, q.limit

    def one(owner: Memory, name: str | None, depth: int) -> Found:
        return search_mod.search(owner, dataclasses.replace(q, limit=depth, topic=name))

    inline = search_mod.split_query(q.query)[1]
    wanted = topic or inline.get("topic")
    if wanted:
        owner, name = mem.reader(wanted)
        return one(owner, name, limit)
    stores = mem.stores()
    if len(stores) == 1:
        return one(mem, None, limit)
    # Every hit of each memory (a bad limit is refused by search): the merge below re-sorts them by score.
    depth = max(limit, FUSE_DEPTH) if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else limit
    with search_mod.one_scale(stores, q.query):
        found = [one(m, None, depth) for m in stores]
    hit = [f for f in found if f.hits]
    if not hit:
        return found[0]
    best = min(LEVELS.index(f.matched) for f in hit)
    kept = [f for f in hit if LEVELS.index(f.matched) == best]
    hits = [h for f in kept for h in f.hits]
    others = [f for f in hit if LEVELS.index(f.matched) != best]
    extra = [h for f in others for h in f.hits if h.ranked and h.relevance >= search_mod.RANKED_SHARE]
    hits = search_mod.in_order(hits + extra)
    per_topic: dict[str, int] = {}
    for f in kept:
        per_topic.update(f.per_topic)
    for h in extra:
        per_topic[h.entry.topic] = per_topic.get(h.entry.topic, 0) + 1
    return found[0]._replace(
        matched=kept[0].matched,
        ranking="/".join(sorted({f.ranking for f in kept})),
        total=sum(f.total for f in kept) + len(extra),
        hits=hits[:limit],
        per_topic=dict(sorted(per_topic.items(), key=lambda kv: -kv[1])),
    )
