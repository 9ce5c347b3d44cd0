from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory
    from gitwiki.memory.replies import Reply
    from gitwiki.memory.search import MemoryQuery


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "memory",
        help="agent memory: topic pages of timestamped entries (store, search, brief, …)",
        description="Memory that outlives a session, kept as markdown topic pages in the wiki "
        "(<corpus>/memory/<topic>.md; see docs/memory.md). The same operations as the memory_* MCP tools.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    store = _add(actions, "store", "remember one entry in a topic")
    store.add_argument("topic", help="topic name (one page per topic)")
    store.add_argument("text", nargs="+", help="what to remember; a leading gotcha:/decision:/perf:… tags it")
    store.add_argument("--tag", dest="tags", action="append", metavar="TAG", help="a tag (repeatable)")
    store.add_argument("--source", metavar="PATH[:LINE]", help="the code it is about, pinned to its git blob")
    store.add_argument("--confidence", type=float, metavar="X", help="0 to 1 (default 1)")
    store.add_argument("--link", dest="links", action="append", metavar="TOPIC[:N]", help="a related entry")
    store.add_argument(
        "--force",
        action="store_true",
        help="store without comparing with similar entries (an exact repeat is never stored)",
    )
    store.add_argument("--terse", action="store_true", help="print only the new entry's ref")
    _scope(store)

    batch = _add(actions, "batch", "store entries from a JSON list [{topic, text, …}]")
    batch.add_argument("file", help="JSON file, or - for stdin")
    batch.add_argument("--verbose", action="store_true", help="a line per entry")
    batch.add_argument(
        "--force", action="store_true", help="no near-duplicate warnings (exact repeats are never stored)"
    )
    _scope(batch)

    search = _add(actions, "search", "search entries (relevance × confidence; newer first on a tie)", read=True)
    search.add_argument("query", nargs="*", help="words; inline tag:x topic:y source:z filter")
    search.add_argument(
        "--detail",
        default="medium",
        choices=("full", "medium", "brief", "grouped", "topics", "count"),
        help="how much of each hit (default medium: a line and 240 characters)",
    )
    search.add_argument("--limit", type=int, default=10, help="most hits (default 10, at most 4 per topic)")
    search.add_argument("--after", metavar="DATE", help="YYYY-MM-DD, today, yesterday or this-week")
    search.add_argument("--before", metavar="DATE", help="YYYY-MM-DD, today, yesterday or this-week")
    search.add_argument("--days", type=float, help="only the last N days")
    search.add_argument("--hours", type=float, help="only the last N hours")
    search.add_argument("--tag", help="only entries with this tag")
    search.add_argument("--topic", help="only this topic or glob")
    search.add_argument("--mode", choices=("and", "or"), default="and", help="every word (default, falls back to any)")

    brief = _add(actions, "brief", "a briefing: all topics, or one topic/glob by category", read=True)
    brief.add_argument("query", nargs="?", help="a topic, a glob like 'iris-*', or words")
    brief.add_argument(
        "--detail",
        default="summary",
        choices=("summary", "scan", "full"),
        help="summary (about 15 lines, default), scan (a line per entry) or full (every text)",
    )
    brief.add_argument("--since", metavar="WHEN", help="only entries since WHEN: a date, or a number of hours")
    brief.add_argument("--focus", action="append", metavar="CATEGORY", help="only this category (repeatable)")
    brief.add_argument("--compact", action="store_true", help="overview of the 5 most active topics")

    read = _add(actions, "read", "print a topic page or one entry", read=True)
    read.add_argument("topic", help="a topic, or an entry as store and search name it (TOPIC:N)")
    read.add_argument("index", nargs="?", type=int, help="entry number (1-based)")

    edit = _add(actions, "edit", "append, revise, delete, tag, rename or merge")
    edit.add_argument("edit_action", metavar="EDIT", choices=("append", "revise", "delete", "tag", "rename", "merge"))
    edit.add_argument("topic")
    edit.add_argument(
        "index", nargs="?", type=int, help="entry number, from 1 (default: the last; revise needs it or --match)"
    )
    edit.add_argument("--text", help="append, revise: the text")
    edit.add_argument("--match", dest="match_str", metavar="TEXT", help="the first entry containing TEXT")
    edit.add_argument("--tag", metavar="TAG", help="append: the last entry tagged TAG")
    edit.add_argument("--all", action="store_true", help="delete: the whole topic")
    edit.add_argument("--add", "--tags", action="append", metavar="TAG", help="tag: add TAG (repeatable)")
    edit.add_argument("--remove", action="append", metavar="TAG", help="tag: remove TAG (repeatable)")
    edit.add_argument("--to", "--new-name", dest="to", metavar="NAME", help="rename: the new name")
    edit.add_argument("--into", help="merge: the topic that takes the entries")
    _scope(edit)

    migrate = _add(actions, "import", "bring in helix's knowledge base (its data.log or JSON export)")
    migrate.add_argument("--helix", metavar="PATH", required=True, help="helix's data.log or its export JSON file")
    migrate.add_argument("--dry-run", action="store_true", help="show what it would add, write nothing")
    _scope(migrate)

    topics = _add(actions, "topics", "list topics and run upkeep actions", read=True)
    topics.add_argument(
        "topics_action",
        nargs="?",
        default="list",
        metavar="ACTION",
        help="list (default), recent, "
        "entries, stats, xref, graph, stale, refresh, prune, clean, compact, export, import, reindex, "
        "session, checkpoint, resume, clear_checkpoint",
    )
    topics.add_argument("--topic", help="entries, xref, refresh, compact: the topic (list: a glob)")
    topics.add_argument("--index", type=int, help="entries, refresh: one entry (from 1)")
    topics.add_argument("--match", dest="match_str", metavar="TEXT", help="entries: those containing TEXT")
    topics.add_argument("--detail", choices=("tags", "index"), help="stats: all tags, or the index state")
    topics.add_argument("--focus", metavar="GLOB", help="graph: topics to centre on")
    topics.add_argument(
        "--direction", choices=("in", "out", "both"), help="xref: refers to the topic (in, default), from it, both"
    )
    topics.add_argument("--limit", type=int, help="recent: how many (default 10)")
    topics.add_argument("--days", type=float, help="recent: the last N days; prune: topics idle longer (30)")
    topics.add_argument("--hours", type=float, help="recent: the last N hours (wins over --days)")
    topics.add_argument("--since", metavar="DATE", help="session: its start (a command is its own session)")
    topics.add_argument("--apply", action="store_true", help="clean, compact: write (default: dry run)")
    topics.add_argument("--min-confidence", type=float, help="clean: threshold (default 0.3)")
    topics.add_argument("--file", help="import: the export JSON file, or - for stdin")
    topics.add_argument("--name", help="checkpoint, resume, clear_checkpoint: its name (default 'default')")
    topics.add_argument("--task", help="checkpoint: the task in hand")
    for key in ("done", "next", "hypotheses", "blocked", "files"):
        topics.add_argument(f"--{key}", action="append", metavar="ITEM", help=f"checkpoint: {key} (repeatable)")
    _scope(topics, "only this memory (default: list, recent, entries, session read both)")


def _scope(p: argparse.ArgumentParser, what: str = "write there (default: [memory] write)") -> None:
    """Which memory: the project's or the personal repository (docs/memory.md, memory across repositories)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--personal", dest="scope", action="store_const", const="personal", help=f"personal memory: {what}"
    )
    group.add_argument("--project", dest="scope", action="store_const", const="project", help=f"project memory: {what}")


def _add(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str, read: bool = False
) -> argparse.ArgumentParser:
    p = actions.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON" + (" (as the MCP tool)" if read else "")
    )
    p.set_defaults(func=memory)
    return p


def memory(args: argparse.Namespace) -> int:
    from gitwiki.memory.base import Memory

    if args.action == "search":
        from gitwiki.serve.client import MEMORY_SEARCH, ask_memory_search

        query = " ".join(args.query) or None
        fields = {k: query if k == "query" else getattr(args, k) for k in MEMORY_SEARCH}
        answered = ask_memory_search(args.chdir, fields)  # a running `gitwiki serve` has the model warm
        if answered is not None:
            sys.stderr.write(answered.stderr)
            sys.stdout.write(answered.stdout)
            answered.check()
            return 0
    if args.action == "search" and args.query:
        from gitwiki.index.embed import load_in_background

        # Run as the process's entry point, `cli.main` forked the model's own process already (`_model_aside`);
        # else (a server that did not answer, the CLI called in-process) the model loads on a thread here.
        load_in_background(args.chdir)
    mem = Memory.open(args.chdir, cache=True)  # parsed pages from the index dir: a command reads them once
    try:
        reply = _dispatch(mem, args)
    finally:
        mem.close()
    if args.json:
        print(json.dumps(reply.data, ensure_ascii=False))
    else:
        print(reply.text)
    # A store or batch that stored nothing (every entry was there already) exits 1, so a script can tell;
    # refusals exit 2 or 3 through the error hierarchy.
    return 1 if args.action in ("store", "batch") and not reply.data.get("stored") else 0


def _dispatch(mem: Memory, args: argparse.Namespace) -> Reply:
    from gitwiki.memory import replies, stores

    a = args.action
    scope = getattr(args, "scope", None)
    if a == "store":
        mem, (topic,) = stores.writer(mem, scope, [args.topic])
        from gitwiki.memory.store import BatchItem

        text = " ".join(args.text)
        item = BatchItem(topic, text, args.tags or (), args.source, args.confidence, args.links or (), args.force)
        return replies.store(mem, item, terse=args.terse)
    if a == "batch":
        from gitwiki.memory import actions

        mem, entries = stores.writer_batch(mem, scope, _load_json(args.file))
        return replies.batch(mem, actions.batch_items(entries), verbose=args.verbose, force=args.force)
    if a == "search":
        return replies.search(mem, _memory_query(args), detail=args.detail)
    if a == "brief":
        return replies.brief(
            mem, args.query, detail=args.detail, since=args.since, focus=args.focus or (), compact=args.compact
        )
    if a == "read":
        return replies.read(mem, args.topic, args.index)
    from gitwiki.memory import actions  # the write path's modules: not imported by a search or a brief

    if a == "import":
        from gitwiki.commands.options import progress_bar

        raw = _read_bytes(args.helix)
        with progress_bar(enabled=not getattr(args, "json", False), terminal=sys.stderr.isatty()) as progress:
            return replies.import_helix(stores.writer(mem, scope)[0], raw, dry_run=args.dry_run, progress=progress)
    if a == "edit":
        mem, topic, to, into = stores.writer_edit(mem, scope, args.topic, args.to, args.into)
        edit = actions.EditCall(
            index=args.index,
            text=args.text,
            match_str=args.match_str,
            tag=args.tag,
            all=args.all,
            add=tuple(args.add or ()),
            remove=tuple(args.remove or ()),
            to=to,
            into=into,
        )
        return actions.run_edit(mem, args.edit_action, topic, edit)
    lists = {key: tuple(getattr(args, key) or ()) for key in ("done", "next", "hypotheses", "blocked", "files")}
    call = actions.TopicsCall(
        topic=args.topic,
        index=args.index,
        match_str=args.match_str,
        detail=args.detail,
        direction=args.direction,
        focus=args.focus,
        limit=args.limit,
        days=args.days,
        hours=args.hours,
        since=args.since,
        apply=args.apply,
        min_confidence=args.min_confidence,
        data=_load_json(args.file) if args.file else None,
        name=args.name,
        task=args.task,
        **lists,
    )
    target = stores.topics_memory(mem, scope, args.topics_action)
    if args.topics_action == "import" and call.data is not None:  # a long import shows progress, as --helix does
        from gitwiki.commands.options import progress_bar

        with progress_bar(enabled=not getattr(args, "json", False), terminal=sys.stderr.isatty()) as progress:
            return replies.import_(target, call.data, progress=progress)
    return actions.run_topics(target, args.topics_action, call)


def _memory_query(args: argparse.Namespace) -> MemoryQuery:
    """`memory search`'s MemoryQuery: every field that has a flag of its name (a new filter is a field and a flag)."""
    import dataclasses

    from gitwiki.memory.search import MemoryQuery

    asked = {f.name: getattr(args, f.name) for f in dataclasses.fields(MemoryQuery) if hasattr(args, f.name)}
    return MemoryQuery(**{**asked, "query": " ".join(args.query) or None})


def _read_bytes(path: str) -> bytes:
    from gitwiki.errors import UsageError
    from gitwiki.fs import read_bounded
    from gitwiki.memory.topics import IMPORT_CAP

    fix = "pass helix's data.log (usually ~/.helix-kb/data.log) or its JSON export"
    try:
        return read_bounded(Path(path).expanduser(), cap=IMPORT_CAP, what="import file", fix=fix)
    except FileNotFoundError:
        raise UsageError(f"cannot read {path} (no such file); {fix}") from None


def _load_json(path: str) -> Any:
    from gitwiki.errors import UsageError
    from gitwiki.fs import read_bounded
    from gitwiki.memory.replies import load_json
    from gitwiki.memory.topics import IMPORT_CAP

    if path == "-":
        stdin = getattr(sys.stdin, "buffer", sys.stdin)  # a test's StringIO has no buffer
        raw = stdin.read(IMPORT_CAP + 1)
        if len(raw) > IMPORT_CAP:
            raise UsageError(f"standard input holds more than {IMPORT_CAP:,} bytes; split the document")
    else:
        fix = "pass a JSON file gitwiki wrote (topics export) or one in its shape"
        try:
            raw = read_bounded(path, cap=IMPORT_CAP, what="JSON file", fix=fix)
        except FileNotFoundError:
            raise UsageError(f"cannot read {path} (no such file); {fix}") from None
    return load_json(raw, f"{path} is not JSON")
