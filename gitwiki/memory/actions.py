"""The memory tools' action names, as the MCP tools (`mcp.memory.py`) and `gitwiki memory` (`commands/memory.py`)
take them: `memory_topics action=…` / `gitwiki memory topics ACTION` and `memory_edit action=…` / `gitwiki
memory edit EDIT`, each mapped to its typed function of `memory.replies` with the parameters it takes; and a
batch's JSON items read into `BatchItem`s, once, at the edge.

The library has no action strings and no `**options`: these tables belong to the two adapters, and live in one
module so that the CLI and the MCP tools take the same actions and refuse the same parameters. helix's own
forms (0-based string indexes, `;`-separated lists, `json` for `data`) are read by the MCP adapter before it
builds a call here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from gitwiki.errors import UsageError
from gitwiki.memory import replies
from gitwiki.memory.base import Memory
from gitwiki.memory.helix import helix_links
from gitwiki.memory.store import BatchItem

A = TypeVar("A", "TopicsAction", "EditAction")


@dataclass(frozen=True)
class TopicsCall:
    """Every parameter of the topics actions; a call sets those of its action (None, () and False: not given)."""

    topic: str | None = None
    index: int | None = None  # from 1
    match_str: str | None = None
    detail: str | None = None
    direction: str | None = None
    focus: str | None = None
    limit: int | None = None
    days: float | None = None
    hours: float | None = None
    since: str | None = None
    apply: bool = False
    min_confidence: float | None = None
    data: dict[str, Any] | list[Any] | None = None
    name: str | None = None
    task: str | None = None
    done: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    hypotheses: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


class TopicsAction(NamedTuple):
    takes: tuple[str, ...]  # the TopicsCall fields it reads, in the order its error message lists them
    run: Callable[[Memory, TopicsCall], replies.Reply]
    needs: tuple[str, ...] = ()


def _name(c: TopicsCall) -> str:
    return c.name or "default"


TOPIC_ACTIONS: dict[str, TopicsAction] = {
    "list": TopicsAction(("topic",), lambda m, c: replies.list_topics(m, c.topic)),
    "recent": TopicsAction(("limit", "days", "hours"), lambda m, c: replies.recent(m, c.limit, c.days, c.hours)),
    "entries": TopicsAction(
        ("topic", "index", "match_str"),
        lambda m, c: replies.entries(m, c.topic or "", c.index, c.match_str),
        needs=("topic",),
    ),
    "stats": TopicsAction(("detail",), lambda m, c: replies.stats(m, c.detail)),
    "xref": TopicsAction(("topic", "direction"), lambda m, c: replies.xref(m, c.topic, c.direction or "in")),
    "graph": TopicsAction(("focus",), lambda m, c: replies.graph(m, c.focus)),
    "stale": TopicsAction((), lambda m, c: replies.stale(m)),
    "refresh": TopicsAction(("topic", "index"), lambda m, c: replies.refresh(m, c.topic, c.index)),
    "prune": TopicsAction(("days",), lambda m, c: replies.prune(m) if c.days is None else replies.prune(m, c.days)),
    "clean": TopicsAction(
        ("apply", "min_confidence"),
        lambda m, c: (
            replies.clean(m, c.apply) if c.min_confidence is None else replies.clean(m, c.apply, c.min_confidence)
        ),
    ),
    "compact": TopicsAction(("topic", "apply"), lambda m, c: replies.compact(m, c.topic, c.apply)),
    "export": TopicsAction((), lambda m, c: replies.export(m)),
    "import": TopicsAction(("data",), lambda m, c: replies.import_(m, c.data or {}), needs=("data",)),
    "reindex": TopicsAction((), lambda m, c: replies.reindex(m)),
    "session": TopicsAction(("since",), lambda m, c: replies.session(m, c.since)),
    "checkpoint": TopicsAction(
        ("task", "done", "next", "hypotheses", "blocked", "files", "name"),
        lambda m, c: replies.checkpoint(
            m,
            c.task or "",
            done=c.done,
            next=c.next,
            hypotheses=c.hypotheses,
            blocked=c.blocked,
            files=c.files,
            name=_name(c),
        ),
        needs=("task",),
    ),
    "resume": TopicsAction(("name",), lambda m, c: replies.resume(m, _name(c))),
    "clear_checkpoint": TopicsAction(("name",), lambda m, c: replies.clear_checkpoint(m, _name(c))),
}


@dataclass(frozen=True)
class EditCall:
    """Every parameter of the edit actions but the topic; a call sets those of its action."""

    index: int | None = None  # from 1
    text: str | None = None
    match_str: str | None = None
    tag: str | None = None
    all: bool = False
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    to: str | None = None
    into: str | None = None


class EditAction(NamedTuple):
    takes: tuple[str, ...]
    run: Callable[[Memory, str, EditCall], replies.Reply]


# An action's own check names what it lacks (`append needs text`, `rename needs to`), so none `needs` here.
EDIT_ACTIONS: dict[str, EditAction] = {
    "append": EditAction(
        ("index", "text", "match_str", "tag"),
        lambda m, t, c: replies.append(m, t, c.text or "", index=c.index, match_str=c.match_str, tag=c.tag),
    ),
    "revise": EditAction(
        ("index", "text", "match_str"),
        lambda m, t, c: replies.revise(m, t, c.text or "", index=c.index, match_str=c.match_str),
    ),
    "delete": EditAction(
        ("index", "match_str", "all"),
        lambda m, t, c: replies.delete(m, t, index=c.index, match_str=c.match_str, all=c.all),
    ),
    "tag": EditAction(
        ("index", "match_str", "add", "remove"),
        lambda m, t, c: replies.tag(m, t, add=c.add, remove=c.remove, index=c.index, match_str=c.match_str),
    ),
    "rename": EditAction(("to",), lambda m, t, c: replies.rename(m, t, c.to or "")),
    "merge": EditAction(("into",), lambda m, t, c: replies.merge(m, t, c.into or "")),
}


def run_topics(mem: Memory, action: str, call: TopicsCall) -> replies.Reply:
    spec = _action("topics", TOPIC_ACTIONS, action)
    _check(f"topics action={action}", call, spec.takes, spec.needs)
    return spec.run(mem, call)


def run_edit(mem: Memory, action: str, topic: str, call: EditCall) -> replies.Reply:
    spec = _action("edit", EDIT_ACTIONS, action)
    _check(f"edit action={action}", call, spec.takes, ())
    return spec.run(mem, topic, call)


def _action(kind: str, table: dict[str, A], action: str) -> A:
    if action not in table:
        raise UsageError(f"{kind} action must be one of {', '.join(table)}, not {action!r}")
    return table[action]


def _check(what: str, call: TopicsCall | EditCall, takes: tuple[str, ...], needs: tuple[str, ...]) -> None:
    """A parameter the action does not read is refused, never dropped: the caller meant something by it."""
    values = {f.name: getattr(call, f.name) for f in dataclasses.fields(call)}
    given = {k for k, v in values.items() if v is not None and v != () and v is not False}
    unknown = sorted(given - set(takes))
    missing = [n for n in needs if n not in given]
    if unknown or missing:
        problem = f"does not take {', '.join(unknown)}" if unknown else f"needs {', '.join(missing)}"
        raise UsageError(f"{what} {problem}; it takes: {', '.join(takes) or 'nothing'}")


# ---- batch items -----------------------------------------------------------------------------------

ITEM_KEYS = ("topic", "text", "tags", "source", "confidence", "links", "force")


def batch_items(raw: object) -> list[BatchItem]:
    """A batch's JSON entries (the MCP tool's `entries`, the CLI's file) as BatchItems, each field's type
    checked here with the entry's number in the message. helix's strings are read as helix writes them: tags
    comma-separated, links space-separated and counted from 0, confidence and force as text."""
    if not isinstance(raw, list) or not raw:
        raise UsageError("entries must be a non-empty list of {topic, text, tags?, source?, confidence?, links?}")
    return [_batch_item(n, item) for n, item in enumerate(raw, 1)]


def _batch_item(n: int, item: object) -> BatchItem:
    if not isinstance(item, dict) or not {"topic", "text"} <= item.keys() or item.keys() - set(ITEM_KEYS):
        raise UsageError(
            f"entry {n} must be an object with topic and text (optional: tags, source, confidence, links, force)"
        )
    for key, value in (("topic", item["topic"]), ("text", item["text"]), ("source", item.get("source", ""))):
        if not isinstance(value, str) and not (key == "source" and value is None):
            raise UsageError(f"entry {n}: {key} must be text, not {value!r}")
    return BatchItem(
        topic=item["topic"],
        text=item["text"],
        tags=_strings(n, "tags", item.get("tags"), lambda s: s.split(",")),
        source=item.get("source"),
        confidence=_confidence(n, item.get("confidence")),
        links=_strings(n, "links", item.get("links"), helix_links),
        force=_flag(n, item.get("force", False)),
    )


def _strings(n: int, key: str, value: object, split: Callable[[str], list[str]]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(split(value))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"entry {n}: {key} must be a list of strings or one string, not {value!r}")
    return tuple(value)


def _confidence(n: int, value: object) -> float | None:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        try:
            return float(value)  # helix's "0.9"; the range is store's check
        except ValueError:
            pass
    raise UsageError(f"entry {n}: confidence must be a number from 0 to 1, not {value!r}")


def _flag(n: int, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise UsageError(f"entry {n}: force must be true or false, not {value!r}")
