"""The memory tools' bodies (docs/memory-tools.md): thin wrappers over `gitwiki.memory.replies`, for the SDK's
registration (`mcp.memory`) and the owner's lean path (`mcp.lean`) alike. Nothing here imports the SDK or pydantic:
the annotations stay strings until the SDK's registration evaluates them (`mcp.schema.namespace`). One `Memory`
per server keeps the parsed topic pages warm.
"""

from __future__ import annotations

import functools
import json as json_module
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from gitwiki.errors import UsageError
from gitwiki.memory import replies, stores
from gitwiki.memory.actions import EDIT_ACTIONS, TOPIC_ACTIONS, EditCall, TopicsCall, batch_items, run_edit, run_topics
from gitwiki.memory.base import Memory
from gitwiki.memory.helix import helix_links
from gitwiki.memory.search import MemoryQuery
from gitwiki.memory.store import BatchItem
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from pydantic import Field

    from gitwiki.mcp.schema import Date, Index, Scope, Tags, Topic

__all__ = ["EDIT_ACTIONS", "TOPIC_ACTIONS", "Annotated", "Literal"]  # named by the string annotations

Ours = TypeVar("Ours")
Theirs = TypeVar("Theirs")


class MemoryTools:
    def __init__(self, wiki: Wiki):
        self.wiki = wiki

    @functools.cached_property
    def mem(self) -> Memory:
        """Made on the first call, so a bad [memory] section is that call's error, not a server that will not start."""
        return Memory(self.wiki)

    def memory_store(
        self,
        topic: Topic,
        text: Annotated[str, Field(description="What to remember; the first line becomes the heading.")],
        tags: Tags = None,
        source: Annotated[
            str | None, Field(description="The code it is about, repo-relative: 'src/app.py:42' or 'src/app.py:40-60'.")
        ] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="How sure you are (default 1).")] = None,
        links: Annotated[
            list[str] | str | None,
            Field(
                description="Related entries: a list of 'topic' or 'topic:3' (counted from 1), or helix's "
                "space-separated string, 'topic:2' counted from 0."
            ),
        ] = None,
        force: Annotated[
            bool, Field(description="Skip the near-duplicate warning (an exact repeat is never stored).")
        ] = False,
        terse: Annotated[bool, Field(description="Answer with just the new entry's ref.")] = False,
        scope: Scope = None,
    ) -> replies.Reply:
        """Remember one entry in a topic page (created on first use). Tags come from a leading `gotcha:`,
        `decision:`, `perf:`… too. A text the topic holds already is not stored again (the answer names it); one
        > 70 % like an entry is stored with a warning naming it."""
        mem, (topic,) = stores.writer(self.mem, scope, [topic])
        linked = helix_links(links) if isinstance(links, str) else links or ()
        return replies.store(mem, BatchItem(topic, text, _listed(tags), source, confidence, linked, force), terse=terse)

    def memory_batch(
        self,
        entries: Annotated[
            list[dict[str, Any]],
            Field(description="Entries: {topic, text, tags?, source?, confidence?, links?, force?}."),
        ],
        verbose: Annotated[bool, Field(description="One line per entry, not only refused or warned ones.")] = False,
        scope: Scope = None,
    ) -> replies.Reply:
        """Store several entries at once: one lock, one write per topic; repeats within the batch are caught too."""
        mem, items = stores.writer_batch(self.mem, scope, entries)
        return replies.batch(mem, batch_items(items), verbose=verbose)

    def memory_search(
        self,
        query: Annotated[
            str | None, Field(description="Words to find; inline tag:x topic:y source:z filter. Omit for the newest.")
        ] = None,
        detail: Annotated[
            Literal["full", "medium", "brief", "grouped", "topics", "count"],
            Field(description="full text, medium (default), brief lines, grouped by topic, topics, or count."),
        ] = "medium",
        limit: Annotated[
            int, Field(ge=1, description="Most hits (default 10; at most 4 per topic; the answer says how many match).")
        ] = 10,
        after: Date = None,
        before: Date = None,
        days: Annotated[float | None, Field(gt=0, description="Only entries from the last N days.")] = None,
        hours: Annotated[float | None, Field(gt=0, description="Only entries from the last N hours.")] = None,
        tag: Annotated[str | None, Field(description="Only entries with this tag.")] = None,
        topic: Annotated[str | None, Field(description="Only this topic, or a glob like 'iris-*'.")] = None,
        mode: Annotated[
            Literal["and", "or"], Field(description="and (default): every word, falling back to any; or: any word.")
        ] = "and",
    ) -> replies.Reply:
        """Search memory entries: hybrid relevance × confidence (stale sources count 0.7), newer first among equals."""
        asked = MemoryQuery(
            query, limit=limit, after=after, before=before, days=days, hours=hours, tag=tag, topic=topic, mode=mode
        )
        return replies.search(self.mem, asked, detail=detail)

    def memory_brief(
        self,
        query: Annotated[
            str | None, Field(description="A topic, a glob ('iris-*') or words; omit for an overview of all topics.")
        ] = None,
        detail: Annotated[
            Literal["summary", "scan", "full"],
            Field(description="summary (~15 lines, default), scan (a line per entry) or full (every text)."),
        ] = "summary",
        since: Annotated[
            str | float | None,
            Field(description="Only entries since: a number of hours (helix's '24') or YYYY-MM-DD, today, …"),
        ] = None,
        focus: Annotated[
            list[str] | str | None,
            Field(description="Only these categories: ['gotchas', 'decisions'] or 'gotchas,decisions'."),
        ] = None,
        compact: Annotated[bool, Field(description="Overview: only the 5 most active topics.")] = False,
    ) -> replies.Reply:
        """A briefing: what memory holds, or a topic's entries deduplicated, superseded ones marked, by category."""
        return replies.brief(self.mem, query, detail=detail, since=since, focus=_listed(focus), compact=compact)

    def memory_read(self, topic: Topic, index: Index = None) -> replies.Reply:
        """A topic page as markdown, or one entry of it."""
        return replies.read(self.mem, topic, entry_number(index))

    def memory_edit(
        self,
        action: Annotated[
            Literal[tuple(EDIT_ACTIONS)],  # type: ignore[valid-type]
            Field(description="append or revise text, delete entries, tag (add/remove), rename, merge into another."),
        ],
        topic: Topic,
        index: Index = None,
        text: Annotated[str | None, Field(description="append, revise: the text.")] = None,
        match_str: Annotated[
            str | None, Field(description="The first entry containing this text (case-insensitive).")
        ] = None,
        tag: Annotated[str | None, Field(description="append: the last entry with this tag.")] = None,
        all: Annotated[bool, Field(description="delete: the whole topic.")] = False,
        add: Annotated[list[str] | str | None, Field(description="tag: tags to add (list or comma-separated).")] = None,
        tags: Annotated[list[str] | str | None, Field(description="tag: helix's name for add.")] = None,
        remove: Annotated[
            list[str] | str | None, Field(description="tag: tags to remove (list or comma-separated).")
        ] = None,
        to: Annotated[str | None, Field(description="rename: the new topic name.")] = None,
        new_name: Annotated[str | None, Field(description="rename: helix's name for to.")] = None,
        into: Annotated[str | None, Field(description="merge: the topic that takes the entries.")] = None,
        scope: Scope = None,
    ) -> replies.Reply:
        """Change memory: revise adds [modified: …]; rename and merge rewrite links that pointed at the topic."""
        mem, topic, to, into = stores.writer_edit(self.mem, scope, topic, _one(to, new_name, "to", "new_name"), into)
        call = EditCall(
            index=entry_number(index),
            text=text,
            match_str=match_str,
            tag=tag,
            all=all,
            add=(*_listed(add), *_listed(tags)),
            remove=_listed(remove),
            to=to,
            into=into,
        )
        return run_edit(mem, action, topic, call)

    def memory_topics(
        self,
        action: Annotated[
            Literal[tuple(TOPIC_ACTIONS)],  # type: ignore[valid-type]
            Field(description="What to do; see docs/memory-tools.md. Default list."),
        ] = "list",
        topic: Annotated[
            str | None, Field(description="entries, xref, refresh, compact: the topic (list: a glob).")
        ] = None,
        index: Index = None,
        match_str: Annotated[str | None, Field(description="entries: only those containing this text.")] = None,
        detail: Annotated[str | None, Field(description="stats: tags or index.")] = None,
        direction: Annotated[
            Literal["in", "out", "both"] | None,
            Field(description="xref: the topics that refer to this one (in, default, as helix), its own (out), both."),
        ] = None,
        focus: Annotated[str | None, Field(description="graph: a glob of topics to centre on.")] = None,
        limit: Annotated[int | None, Field(ge=1, description="recent: how many entries (default 10).")] = None,
        days: Annotated[
            float | None,
            Field(ge=0, description="recent: the entries of the last N days; prune: topics idle longer (30)."),
        ] = None,
        hours: Annotated[
            float | None, Field(gt=0, description="recent: the entries of the last N hours (wins over days).")
        ] = None,
        since: Annotated[
            str | None, Field(description="session: its start (YYYY-MM-DD, today, …); default the server's start.")
        ] = None,
        refresh: Annotated[
            bool, Field(description="stale: with each entry's source diff, as the refresh action (helix's option).")
        ] = False,
        apply: Annotated[bool, Field(description="clean, compact: write the changes (default: dry run).")] = False,
        min_confidence: Annotated[float | None, Field(ge=0, le=1, description="clean: threshold (0.3).")] = None,
        data: Annotated[dict[str, Any] | str | None, Field(description="import: an export document.")] = None,
        json: Annotated[
            dict[str, Any] | list[Any] | str | None, Field(description="import: helix's name for data.")
        ] = None,
        name: Annotated[
            str | None, Field(description="checkpoint, resume, clear_checkpoint: its name (default).")
        ] = None,
        task: Annotated[str | None, Field(description="checkpoint: the task in hand.")] = None,
        done: Annotated[
            list[str] | str | None, Field(description="checkpoint: what is done; a list or a string separated by ';'.")
        ] = None,
        next: Annotated[
            list[str] | str | None,
            Field(description="checkpoint: the next steps; a list or a string separated by ';'."),
        ] = None,
        hypotheses: Annotated[
            list[str] | str | None,
            Field(description="checkpoint: open hypotheses; a list or a string separated by ';'."),
        ] = None,
        blocked: Annotated[
            list[str] | str | None,
            Field(description="checkpoint: what blocks you; a list or one string, an item per line."),
        ] = None,
        files: Annotated[
            list[str] | str | None, Field(description="checkpoint: files in play; a list or a string separated by ','.")
        ] = None,
        scope: Annotated[
            Literal["project", "personal"] | None,
            Field(
                description="Only this memory. Default: list, recent, entries and session read both; import "
                "writes where [memory] write says; the other actions act on the project's."
            ),
        ] = None,
    ) -> replies.Reply:
        """Topics and upkeep: list, recent, entries, stats, xref, graph, stale, refresh, prune (idle topics), clean,
        compact, export,
        import, reindex, session, checkpoint, resume, clear_checkpoint."""
        if refresh and action != "stale":
            raise UsageError(f"refresh is an option of stale, not of {action}")
        call = TopicsCall(
            topic=topic,
            index=entry_number(index),
            match_str=match_str,
            detail=detail,
            direction=direction,
            focus=focus,
            limit=limit,
            days=days,
            hours=hours,
            since=since,
            apply=apply,
            min_confidence=min_confidence,
            data=_document(_one(data, json, "data", "json")),
            name=name,
            task=task,
            done=_items(done, ";"),
            next=_items(next, ";"),
            hypotheses=_items(hypotheses, ";"),
            blocked=_items(blocked, None),
            files=_items(files, ","),
        )
        # helix's `stale refresh: "true"` (helix/docs/TOOLS.md) is gitwiki's refresh action.
        return run_topics(stores.topics_memory(self.mem, scope, action), "refresh" if refresh else action, call)


def entry_number(index: int | str | None) -> int | None:
    """The 1-based entry number of an Index: a number as it is, a string (helix's form) counted from 0."""
    if index is None:
        return None
    if isinstance(index, str):
        if not index.strip().isdecimal():
            raise UsageError(f"index {index!r} must be a whole number (a string counts from 0, as helix's)")
        return int(index.strip()) + 1
    if isinstance(index, bool) or index < 1:
        raise UsageError(f"index {index!r}: a number counts from 1; helix's 0-based index is a string ('0')")
    return index


def _one(ours: Ours, helix: Theirs, name: str, helix_name: str) -> Ours | Theirs:
    """A value under our name or helix's (helix/docs/TOOLS.md), not both: two values would leave one unused."""
    if ours is not None and helix is not None and ours != helix:
        raise UsageError(f"pass {name} or helix's {helix_name}, not both")
    return helix if ours is None else ours


def _listed(value: list[str] | str | None) -> tuple[str, ...]:
    """Tags or focus: a list, or helix's comma-separated string."""
    if value is None:
        return ()
    return tuple(value.split(",") if isinstance(value, str) else value)


def _items(value: list[str] | str | None, sep: str | None) -> tuple[str, ...]:
    """A checkpoint list: a list, or helix's string (helix/DOCS.md, topics checkpoint): done, next and
    hypotheses separated by `;`, files by `,`; blocked is a description there, so an item per line."""
    if value is None:
        return ()
    if not isinstance(value, str):
        return tuple(value)
    return tuple(part for line in value.splitlines() for part in (line.split(sep) if sep else [line]))


def _document(value: dict[str, Any] | list[Any] | str | None) -> dict[str, Any] | list[Any] | None:
    """An import document, or helix's `json` string of one."""
    if not isinstance(value, str):
        return value
    try:
        return json_module.loads(value)
    except ValueError as e:
        raise UsageError(f"import data is not JSON ({e}); pass the document topics action=export returned") from None
