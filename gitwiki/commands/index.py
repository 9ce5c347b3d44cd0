from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitwiki.index.indexer import IndexReport
    from gitwiki.wiki import Wiki


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    try:
        return _index(wiki, args)
    finally:  # in-process callers (tests, scripts) keep no connection to the index, whose file may change next
        wiki.close()


def _index(wiki: Wiki, args: argparse.Namespace) -> int:
    from gitwiki.commands.options import progress_bar
    from gitwiki.index.indexer import truncation

    caught_up = {}
    if wiki.has_no_index_to_start_from():
        from gitwiki.operations.pull import install_published

        pulled = install_published(wiki, lexical=args.lexical)
        caught_up = {r.corpus: r for r in pulled.reports} if pulled else {}
    with progress_bar(enabled=not args.quiet and not args.json, terminal=sys.stderr.isatty()) as progress:
        reports = wiki.index(args.corpus, progress=progress, lexical=args.lexical, rebuild=args.rebuild)
    # The pages changed since the published index were caught up by the install: this run's work, which the
    # action's job summary reports (it said 0 changed pages where 2 had changed)
    reports = [caught_up[r.corpus] if r.up_to_date and r.corpus in caught_up else r for r in reports]
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2))
    elif not args.quiet:
        for r in reports:
            print(r.summary())
    if not args.quiet:  # said where a person reads it: a hook's -q output goes nowhere
        _warn_double_indexing(wiki)
    for r in reports:
        for path, why in r.skipped:
            print(f"gitwiki: warning: {path} is not indexed: {why}", file=sys.stderr)
        for path, size in r.truncated:
            print(f"gitwiki: warning: {path}: {truncation(size, wiki.config.search.max_page_bytes)}", file=sys.stderr)
    _refuse_silent_zero(wiki, reports)
    embedder = wiki.embedder() if any(r.embedded for r in reports) else None  # loaded already: it embedded
    if embedder is not None:
        from gitwiki.index.embed import keep_fast_copy

        keep_fast_copy(embedder)  # once: the sessions and searches after this load the model fast
    return 0


def _refuse_silent_zero(wiki: Wiki, reports: list[IndexReport]) -> None:
    """A corpus that has no pages where it had some, or while markdown lies elsewhere, is a wrong folder, not a
    success: said with the fix, and a non-zero exit."""
    empty = [r for r in reports if r.pages == 0]
    if not empty:
        return
    from gitwiki.errors import NotFoundError
    from gitwiki.git import gitcli
    from gitwiki.pages import sites

    files = list(gitcli.staged_files(wiki.root))
    problems = [
        problem
        for r in empty
        if r.corpus in {c.name for c in wiki.config.corpora}
        and (problem := sites.empty_corpus(wiki.root, files, r.corpus, wiki.config.corpus(r.corpus).path, r.deleted))
    ]
    if problems:
        raise NotFoundError("; ".join(problems))


# In the index dir: this index was told it is refreshed twice per commit (`git_hooks.double_indexing`).
DOUBLE_INDEXING_FILE = "double-indexing-warned"


def _warn_double_indexing(wiki: Wiki) -> None:
    from gitwiki.fs import atomic_write
    from gitwiki.git.git_hooks import double_indexing

    marker = wiki.index_dir / DOUBLE_INDEXING_FILE
    if marker.exists() or (twice := double_indexing(wiki.repo)) is None:
        return
    print(f"gitwiki: warning: {twice} (said once)", file=sys.stderr)
    with contextlib.suppress(OSError):
        atomic_write(marker, twice, sync=False)
