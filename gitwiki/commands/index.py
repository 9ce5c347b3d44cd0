from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def register(sub) -> None:
    p = sub.add_parser(
        "index",
        help="build or update the search index (only what changed)",
        description="Bring the index up to HEAD: parse changed pages, embed uncached chunks. "
        "An unchanged corpus tree costs one tree-id comparison.",
    )
    p.add_argument("--corpus", help="only this corpus (default: all)")
    p.add_argument("--lexical", action="store_true", help="skip embeddings (BM25 only)")
    p.add_argument(
        "--rebuild", action="store_true", help="move the index aside and build it again from git (after damage)"
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=index)


def index(args: argparse.Namespace) -> int:
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    with _progress(enabled=not args.quiet and not args.json, terminal=sys.stderr.isatty()) as progress:
        reports = wiki.index(args.corpus, progress=progress, lexical=args.lexical, rebuild=args.rebuild)
    if args.json:
        print(
            json.dumps(
                [{**r._asdict(), "skipped": dict(r.skipped), "up_to_date": r.up_to_date} for r in reports], indent=2
            )
        )
    elif not args.quiet:
        for r in reports:
            print(summary(r))
    for r in reports:
        for path, why in r.skipped:
            print(f"gitwiki: warning: {path} is not indexed: {why}", file=sys.stderr)
    return 0


def summary(r) -> str:
    where = f"commit {r.commit[:12]}" if r.commit else "no commits yet"
    if r.up_to_date:
        return f"{r.corpus}: up to date, {r.pages} pages at {where} ({r.seconds * 1000:.0f} ms)"
    return (
        f"{r.corpus}: {r.pages} pages at {where}: {r.added} added, {r.changed} changed, {r.deleted} deleted; "
        f"parsed {r.parsed} page versions, embedded {r.embedded} chunks "
        f"({r.model or 'lexical only'}) in {r.seconds:.2f} s"
    )


# Without a terminal (CI logs, hooks' output files) a line this often shows a long run is alive.
LINE_EVERY = 5.0


class _progress:
    """A rich progress bar on a terminal; elsewhere a line on stderr every LINE_EVERY seconds of a long run."""

    def __init__(self, enabled: bool, terminal: bool = True):
        self.enabled = enabled
        self.terminal = terminal
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._last = time.monotonic()

    def __enter__(self):
        if not self.enabled:
            return None
        if not self.terminal:
            return self.line
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
        )
        self._bar.__enter__()
        return self.update

    def update(self, stage: str, done: int, total: int) -> None:
        if stage not in self._tasks:
            self._tasks[stage] = self._bar.add_task(STAGES[stage], total=total)
        self._bar.update(self._tasks[stage], completed=done, total=total)

    def line(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last >= LINE_EVERY:
            self._last = now
            print(f"gitwiki: {STAGES[stage]} {done}/{total}", file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False


STAGES = {"parse": "parsing pages", "embed": "embedding chunks"}
