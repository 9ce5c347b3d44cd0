from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitwiki.indexer import Progress


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index",
        help="build or update the search index (only what changed)",
        description="Bring the index up to HEAD: parse changed pages, embed uncached chunks. "
        "An unchanged corpus tree costs one tree-id comparison.",
    )
    p.add_argument("--corpus", help="only this corpus (default: all)")
    p.add_argument("--lexical", action="store_true", help="skip embeddings (BM25 only)")
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=index)


def index(args: argparse.Namespace) -> int:
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    if wiki.has_no_index_to_start_from():
        from gitwiki.pull import install_published

        install_published(wiki, lexical=args.lexical)
    with _progress(enabled=not args.quiet and not args.json and sys.stderr.isatty()) as progress:
        reports = wiki.index(args.corpus, progress=progress, lexical=args.lexical)
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    elif not args.quiet:
        for r in reports:
            print(r.summary())
    return 0


@contextmanager
def _progress(enabled: bool) -> Iterator[Progress | None]:
    """A rich progress bar on a terminal; no callback elsewhere."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    tasks: dict[str, TaskID] = {}
    with Bar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
    ) as bar:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task({"parse": "parsing pages", "embed": "embedding chunks"}[stage], total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update
