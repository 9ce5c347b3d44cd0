"""The memory tools as the MCP server and the CLI answer them: a short text for the model (or the
terminal) and the data as JSON. Both adapters call these, so the two always say the same thing.

One typed function per operation; which action name calls which is the adapters' business
(gitwiki/memory/actions.py, with helix's names and string forms)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.errors import UsageError
from gitwiki.memory import brief as brief_mod
from gitwiki.memory import checkpoint as checkpoint_mod
from gitwiki.memory import search as search_mod
from gitwiki.memory import stores
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.entry import Entry, first_line, render_entry, split_ref
from gitwiki.memory.sources import Ignored, ignored

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress
    from gitwiki.memory import store as store_mod
    from gitwiki.memory.base import Memory
    from gitwiki.operations.writes import WriteReport

MEDIUM_CHARS = 240


class Reply(NamedTuple):
    text: str
    data: dict[str, Any]


def _line(e: Entry) -> str:
    tags = f"  [{', '.join(e.tags)}]" if e.tags else ""
    return f"{e.ref}  {e.when[:16] or '-'}  {first_line(e.text) or e.title}{tags}"


def _writes(writes: list[WriteReport]) -> dict[str, Any]:
    commits = [w.commit for w in writes if w.commit]
    return {
        "pages": [w.path for w in writes],
        "commit": commits[-1] if commits else None,
        "index_files": sorted({f for w in writes for f in w.index_files}),
        "findings": [f for w in writes for f in w.findings],
    }


def _commit_note(writes: list[WriteReport]) -> str:
    commits = [w.commit for w in writes if w.commit]
    return f"committed as {commits[-1][:12]}" if commits else "not committed (worktree change; [memory] commit is off)"


# ---- store and batch -------------------------------------------------------------------------------


def store(mem: Memory, item: store_mod.BatchItem, *, terse: bool = False) -> Reply:
    """The answer to storing one entry, as the adapter read it (its topic already routed by `stores.writer`)."""
    from gitwiki.memory import store as store_mod  # the page write path: not for a search

    done = store_mod.batch(mem, [item])
    page = mem.label + mem.repo_path(mem.rel_path(done.results[0].topic))  # repo-relative, as ground prints it
    result = done.results[0]._replace(topic=mem.label + done.results[0].topic)  # ~personal/NAME in the personal one
    return Reply(_stored_text(result, terse, done.writes, page), {**_result_json(result), **_writes(done.writes)})


def batch(mem: Memory, entries: Sequence[store_mod.BatchItem], *, verbose: bool = False, force: bool = False) -> Reply:
    from gitwiki.memory import store as store_mod

    done = store_mod.batch(mem, entries, force=force)
    done = done._replace(results=[r._replace(topic=mem.label + r.topic) for r in done.results])
    stored = [r for r in done.results if r.stored]
    lines = [f"stored {len(stored)} of {len(done.results)} entries in {len({r.topic for r in stored})} topic(s)"]
    for n, r in enumerate(done.results, 1):
        if verbose or not r.stored or r.warnings:
            lines.append(f"  {n}. " + _stored_text(r, True, []))
    lines.append(_commit_note(done.writes))
    data = {"stored": len(stored), "results": [_result_json(r) for r in done.results], **_writes(done.writes)}
    return Reply("\n".join(lines), data)


def _stored_text(r: store_mod.StoreResult, terse: bool, writes: list[WriteReport], page: str = "") -> str:
    if not r.stored:
        assert r.duplicate_of is not None
        text = (
            f"already stored as {r.topic}:{r.duplicate_of.index} ({first_line(r.duplicate_of.text)}); not stored again"
        )
    else:
        assert r.entry is not None
        text = f"stored {r.entry.ref}" + (f" [{', '.join(r.entry.tags)}]" if r.entry.tags else "")
        if not terse:
            text += f" (lines {r.entry.start_line}-{r.entry.end_line} of {page})\n{_commit_note(writes)}"
    if r.warnings:
        text += "".join(f"\nwarning: {w}" for w in r.warnings)
    return text


def _result_json(r: store_mod.StoreResult) -> dict[str, Any]:
    return {
        "stored": r.stored,
        "topic": r.topic,
        "entry": r.entry.json() if r.entry else None,
        "duplicate_of": f"{r.topic}:{r.duplicate_of.index}" if r.duplicate_of else None,
        "similar_to": f"{r.topic}:{r.similar_to.index}" if r.similar_to else None,
        "overlap": round(r.overlap, 3),
        "warnings": list(r.warnings),
    }


# ---- search, brief, read ---------------------------------------------------------------------------


def search(mem: Memory, query: search_mod.MemoryQuery | str | None = None, *, detail: str = "medium") -> Reply:
    """The answer to a memory search (`query`: a `MemoryQuery`, or just its words) at `detail`."""
    if detail not in search_mod.DETAILS:
        raise UsageError(f"detail must be one of {', '.join(search_mod.DETAILS)}, not {detail!r}")
    found = stores.search(mem, query)
    head = {k: v for k, v in found._asdict().items() if k not in ("hits", "per_topic")}
    summary = (
        f"{len(found.hits)} of {found.total} entries ({found.matched} match, {found.ranking}{_no_model(mem, found)})"
    )
    if detail == "count":
        return Reply(f"{found.total} entries match", head)
    if detail == "topics":  # every match counted, as helix's: the per-topic cap is for listing entries
        return Reply(
            "\n".join(f"{t}  {n} hit(s)" for t, n in found.per_topic.items()) or "no matches",
            {**head, "topics": found.per_topic},
        )
    unread = {h.entry.ref: i for h in found.hits if (i := ignored(mem, h.entry)) is not None}
    hits = [
        {
            **h.entry.json(),
            "score": round(h.score, 6),
            "relevance": round(h.relevance, 6),
            "stale": h.stale,
            **({"source_ignored": unread[h.entry.ref].why} if h.entry.ref in unread else {}),
        }
        for h in found.hits
    ]
    lines = []
    if detail == "grouped":
        for topic in dict.fromkeys(h.entry.topic for h in found.hits):
            lines.append(f"{topic}")
            lines += [f"  {h.entry.index}. {first_line(h.entry.text)}" for h in found.hits if h.entry.topic == topic]
    for h in found.hits if detail != "grouped" else ():
        mark = "  (stale source)" if h.stale else ""
        if h.entry.ref in unread:
            mark = f"  (source not read: it {unread[h.entry.ref].why})"
        if detail == "brief":
            lines.append(f"{h.entry.ref}  {first_line(h.entry.text)}{mark}")
        elif detail == "medium":
            text = " ".join(h.entry.text.split())
            text = text if len(text) <= MEDIUM_CHARS else text[: MEDIUM_CHARS - 1] + "…"
            lines += [f"{_line(h.entry)}  ({h.score:.3f}){mark}", f"    {text}"]
        else:
            body = render_entry(h.entry).rstrip()
            body = search_mod.highlight(body, found.query) if found.query else body
            lines += [f"{h.entry.ref} · score {h.score:.3f}{mark}", body, ""]
    lines.append(summary if found.hits else f"no entries match ({found.matched} match)")
    return Reply("\n".join(lines).rstrip(), {**head, "hits": hits})


def _no_model(mem: Memory, found: search_mod.Found) -> str:
    """Why a search meant to be hybrid ranked by words alone, and the fix, as `ground`'s footer says it: the warning
    on stderr is said once per index."""
    from gitwiki.index.embed import model_fix, unavailable

    config = mem.wiki.config
    if found.ranking != "lexical" or config.search.mode == "lexical":
        return ""
    if unavailable(config.embeddings, mem.wiki.index_dir) is None:
        return ""
    return f" (no model: {model_fix(config.embeddings)})"


def brief(
    mem: Memory,
    query: str | None = None,
    *,
    detail: str = "summary",
    since: str | float | None = None,
    focus: Sequence[str] = (),
    compact: bool = False,
) -> Reply:
    b = brief_mod.brief(mem, query, detail=detail, since=since, focus=focus, compact=compact)
    items = [
        {**i.entry.json(), "category": i.category, "also_in": list(i.also_in), "superseded_by": i.superseded_by or None}
        for i in b.items
    ]
    data = {
        "query": b.query,
        "kind": b.kind,
        "tier": b.tier,
        "topics": [t._asdict() for t in b.topics],
        "themes": [list(t) for t in b.themes],
        "entries": items,
        "chains": [c._asdict() for c in b.chains],
        "markdown": b.markdown,
    }
    return Reply(b.markdown.rstrip(), data)


def read(mem: Memory, topic: str, index: int | None = None) -> Reply:
    """A topic page, or one entry: `index`, or the reference an answer printed (`billing:2`)."""
    topic, index = split_ref(topic, index)
    tf = mem.topic(topic)
    owner = mem.reader(topic)[0]
    path = owner.label + tf.repo_path  # ~personal/memory/x.md: a path in the personal repository, not here
    if index is not None:
        e = mem.entry(tf.name, index)
        return Reply(render_entry(e).rstrip(), {"topic": tf.name, "path": path, "entries": [e.json()]})
    text = tf.data.decode("utf-8", errors="replace").rstrip()
    return Reply(text, {"topic": tf.name, "path": path, "entries": [e.json() for e in tf.page.entries]})


# ---- edit ------------------------------------------------------------------------------------------


def append(
    mem: Memory,
    topic: str,
    text: str,
    *,
    index: int | None = None,
    match_str: str | None = None,
    tag: str | None = None,
) -> Reply:
    from gitwiki.memory import store as store_mod

    return _changed(mem, store_mod.append(mem, topic, text, index=index, match_str=match_str, tag=tag))


def revise(mem: Memory, topic: str, text: str, *, index: int | None = None, match_str: str | None = None) -> Reply:
    from gitwiki.memory import store as store_mod

    return _changed(mem, store_mod.revise(mem, topic, text, index=index, match_str=match_str))


def tag(
    mem: Memory,
    topic: str,
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    index: int | None = None,
    match_str: str | None = None,
) -> Reply:
    from gitwiki.memory import store as store_mod

    return _changed(mem, store_mod.tag(mem, topic, add=add, remove=remove, index=index, match_str=match_str))


def delete(
    mem: Memory, topic: str, *, index: int | None = None, match_str: str | None = None, all: bool = False
) -> Reply:
    from gitwiki.memory import store as store_mod

    done = _labelled(mem, store_mod.delete(mem, topic, index=index, match_str=match_str, all=all))
    return _edited(done, f"deleted {done.removed} entr{'y' if done.removed == 1 else 'ies'} from {done.topic}")


def rename(mem: Memory, topic: str, to: str) -> Reply:
    from gitwiki.memory import store as store_mod

    done = _labelled(mem, store_mod.rename(mem, topic, to))
    return _edited(done, f"renamed {done.topic} into {done.target} ({len(done.entries)} entries)")


def merge(mem: Memory, topic: str, into: str) -> Reply:
    from gitwiki.memory import store as store_mod

    done = _labelled(mem, store_mod.merge(mem, topic, into))
    return _edited(done, f"merged {done.topic} into {done.target} ({len(done.entries)} entries)")


def _labelled(mem: Memory, done: store_mod.Edited) -> store_mod.Edited:
    """The edit with its topics as the caller names them: ~personal/NAME in the personal memory."""
    return done._replace(topic=mem.label + done.topic, target=mem.label + done.target)


def _changed(mem: Memory, done: store_mod.Edited) -> Reply:
    done = _labelled(mem, done)
    return _edited(done, f"{done.action}: " + "; ".join(_line(e) for e in done.entries))


def _edited(done: store_mod.Edited, text: str) -> Reply:
    data = {
        "action": done.action,
        "topic": done.topic,
        "target": done.target,
        "removed": done.removed,
        "entries": [e.json() for e in done.entries],
        **_writes(done.writes),
    }
    return Reply(text + "\n" + _commit_note(done.writes), data)


# ---- topics ----------------------------------------------------------------------------------------


def list_topics(mem: Memory, pattern: str | None = None) -> Reply:
    rows = topics_mod.list_topics(mem, pattern)
    lines = [f"{a.topic}  {a.entries} entries  last {a.last[:16] or '-'}  {a.velocity:g}/day" for a in rows]
    return Reply("\n".join(lines) or "no topics yet", {"topics": [a._asdict() for a in rows]})


def recent(mem: Memory, limit: int | None = None, days: float | None = None, hours: float | None = None) -> Reply:
    rows = topics_mod.recent(mem, limit, days, hours)
    return Reply("\n".join(_line(e) for e in rows) or "no entries yet", {"entries": [e.json() for e in rows]})


def entries(mem: Memory, topic: str, index: int | None = None, match_str: str | None = None) -> Reply:
    """A topic's entries, or one (index), or those containing match_str, as helix's topics entries."""
    from gitwiki.memory import store as store_mod

    tf = mem.topic(topic)
    rows = list(tf.page.entries)
    if index is not None:
        rows = [store_mod.pick(rows, tf.name, index)]
    if match_str:
        rows = [e for e in rows if match_str.lower() in e.text.lower()]
    return Reply(
        "\n".join(_line(e) for e in rows) or f"{tf.name} has no entries",
        {"topic": tf.name, "entries": [e.json() for e in rows]},
    )


def session(mem: Memory, since: str | None = None) -> Reply:
    start, rows = topics_mod.session(mem, since)
    text = "\n".join(_line(e) for e in rows) or f"nothing stored since this session started ({start})"
    return Reply(text, {"started": start, "entries": [e.json() for e in rows]})


def stats(mem: Memory, detail: str | None = None) -> Reply:
    s = topics_mod.stats(mem, detail)
    lines = [
        f"{s.entries} entries in {s.topics} topics; {s.tagged} tagged, {s.sourced} with a source, {s.stale} stale",
        f"oldest {s.oldest or '-'}, newest {s.newest or '-'}",
        "tags: " + (", ".join(f"{t} ({n})" for t, n in s.tags) or "none"),
    ]
    if s.index:
        lines.append("index: " + ", ".join(f"{k} {v}" for k, v in s.index.items()))
    return Reply("\n".join(lines), {**s._asdict(), "tags": [list(t) for t in s.tags]})


def xref(mem: Memory, topic: str | None = None, direction: str = "in") -> Reply:
    rows = topics_mod.xref(mem, topic, direction)
    lines = [f"{x.source} → {x.target}  ({x.kind}{'' if x.valid else ', missing'})" for x in rows]
    return Reply("\n".join(lines) or "no cross references", {"xrefs": [x._asdict() for x in rows]})


def graph(mem: Memory, focus: str | None = None) -> Reply:
    g = topics_mod.graph(mem, focus)
    lines = [f"{a} → {b}  ({w})" for a, b, w in g.edges] or ["no references between topics"]
    lines.append(f"{len(g.nodes)} topics, {len(g.edges)} edges")
    data = {
        "nodes": [{"topic": t, "entries": n} for t, n in g.nodes],
        "edges": [{"from": a, "to": b, "weight": w} for a, b, w in g.edges],
    }
    return Reply("\n".join(lines), data)


def stale(mem: Memory) -> Reply:
    rows = topics_mod.stale_entries(mem)
    lines = [
        f"{s.entry.ref}  {s.path}@{s.pinned} → {(s.current or 'deleted')[:12]}  {first_line(s.entry.text)}"
        for s in rows
    ]
    data = {"stale": [{"entry": s.entry.ref, "path": s.path, "pinned": s.pinned, "current": s.current} for s in rows]}
    return _with_ignored(Reply("\n".join(lines) or "no stale sources", data), topics_mod.ignored_sources(mem))


def refresh(mem: Memory, topic: str | None = None, index: int | None = None) -> Reply:
    rows = topics_mod.refresh_entries(mem, topic, index)
    parts = [
        f"{r.entry.ref}  {first_line(r.entry.text)}\n{r.diff or '(no change near the referenced lines)'}" for r in rows
    ]
    data = {
        "refresh": [
            {"entry": r.entry.ref, "path": r.path, "pinned": r.pinned, "current": r.current, "diff": r.diff}
            for r in rows
        ]
    }
    reply = Reply("\n".join(parts).rstrip() or "no stale sources", data)
    return _with_ignored(reply, topics_mod.ignored_sources(mem, topic, index))


def _with_ignored(reply: Reply, ignored: list[Ignored]) -> Reply:
    """The reply with a note on each entry whose source gitwiki did not read (outside the repository, …)."""
    if not ignored:
        return reply
    notes = [f"ignored {i.note()}" for i in ignored]
    data = {**reply.data, "ignored": [{"entry": i.entry.ref, "path": i.path, "why": i.why} for i in ignored]}
    return Reply("\n".join([reply.text, *notes]), data)


def _maintenance(m: topics_mod.Maintenance) -> Reply:
    verb = "applied" if m.applied else "would apply (dry run; pass apply to write)"
    lines = [f"{m.action}: {len(m.changes)} change(s) {verb if m.changes else ''}".rstrip()]
    lines += [f"  {c.entry.ref}  {c.reason}  {first_line(c.entry.text)}" for c in m.changes]
    data = {
        "action": m.action,
        "applied": m.applied,
        "changes": [{"entry": c.entry.ref, "reason": c.reason} for c in m.changes],
    }
    return Reply("\n".join(lines), data)


def prune(mem: Memory, days: float = topics_mod.PRUNE_DAYS) -> Reply:
    rows = topics_mod.prune(mem, days)
    lines = [f"{i.topic}: {i.days if i.days >= 0 else '?'} days since its last entry" for i in rows]
    lines.append(f"{len(rows)} topic(s) idle for more than {days:g} days" if rows else f"no topic idle > {days:g} days")
    return Reply("\n".join(lines), {"days": days, "idle": [i._asdict() for i in rows]})


def clean(mem: Memory, apply: bool = False, min_confidence: float = topics_mod.PRUNE_CONFIDENCE) -> Reply:
    return _maintenance(topics_mod.clean(mem, min_confidence, apply))


def compact(mem: Memory, topic: str | None = None, apply: bool = False) -> Reply:
    return _maintenance(topics_mod.compact(mem, topic, apply))


def export(mem: Memory) -> Reply:
    data = topics_mod.export(mem)
    return Reply(json.dumps(data, ensure_ascii=False, indent=1), data)


def import_(mem: Memory, data: dict[str, Any] | list[Any], progress: Progress | None = None) -> Reply:
    """An export document (topics export's JSON, or helix's JSON export), merged in."""
    notes: list[str] = []
    added, checkpoints = topics_mod.import_memory(mem, data, notes=notes, progress=progress)
    return _imported(added, checkpoints, notes=notes)


def import_helix(mem: Memory, raw: bytes, dry_run: bool = False, progress: Progress | None = None) -> Reply:
    """helix's knowledge base, its binary data.log or its JSON export (the file's bytes), merged in."""
    from gitwiki.memory import helix

    checkpoints: list[str] = []
    notes: list[str] = []
    if helix.is_log(raw):
        added = topics_mod.import_helix_log(mem, raw, dry_run, notes, progress)
    else:
        data = load_json(raw, "not a helix data.log (no AMRL header) nor its JSON export")
        if not helix.is_export(data):
            raise UsageError("this is a gitwiki export, not helix's; import it with topics import --file")
        added, checkpoints = topics_mod.import_memory(mem, data, dry_run, notes, progress)
    return _imported(added, checkpoints, dry_run, notes)


def load_json(raw: bytes | str, what: str) -> Any:
    """A JSON document an import names; one clear error for text that is not JSON, or is nested too deep for
    the parser (a RecursionError) or holds a number too long to read (ValueError past 4,300 digits)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise UsageError(f"{what}: it nests arrays or objects too deep to read; pass the export as written") from None
    except ValueError as e:
        raise UsageError(f"{what} ({e})") from None


def _imported(added: dict[str, int], checkpoints: list[str], dry_run: bool = False, notes: Sequence[str] = ()) -> Reply:
    text = ", ".join(f"{t} +{n}" for t, n in added.items()) or "nothing new"
    more = f"; checkpoints: {', '.join(checkpoints)}" if checkpoints else ""
    verb = "would import" if dry_run else "imported"
    data = {
        "added": added,
        "checkpoints": checkpoints,
        **({"notes": list(notes)} if notes else {}),
        **({"dry_run": True} if dry_run else {}),
    }
    lines = [f"{verb} {sum(added.values())} entries: {text}{more}", *(f"note: {n}" for n in notes)]
    return Reply("\n".join(lines), data)


def reindex(mem: Memory) -> Reply:
    info = topics_mod.reindex(mem)
    return Reply(
        f"memory index: {info['pages']} pages, {info['chunks']} chunks, model {info['model'] or '(lexical)'}", info
    )


def checkpoint(
    mem: Memory,
    task: str,
    *,
    done: Sequence[str] = (),
    next: Sequence[str] = (),
    hypotheses: Sequence[str] = (),
    blocked: Sequence[str] = (),
    files: Sequence[str] = (),
    name: str = "default",
) -> Reply:
    saved, writes = checkpoint_mod.checkpoint(mem, task, done, next, hypotheses, blocked, files, name)
    return Reply(
        f"checkpoint {saved.name} saved to {saved.path}\n{_commit_note(writes)}", {**saved.json(), **_writes(writes)}
    )


def resume(mem: Memory, name: str = "default") -> Reply:
    r = checkpoint_mod.resume(mem, name)
    return Reply(r.markdown.rstrip(), {**r.checkpoint.json(), "age_seconds": r.age_seconds, "markdown": r.markdown})


def clear_checkpoint(mem: Memory, name: str = "default") -> Reply:
    writes = checkpoint_mod.clear_checkpoint(mem, name)
    return Reply(f"checkpoint {name} cleared\n{_commit_note(writes)}", {"name": name, **_writes(writes)})
