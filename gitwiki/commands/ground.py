from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitwiki.search import SearchResult


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ground",
        help="search the wiki (hybrid BM25 + embeddings), results per page",
        description="Search the wiki as you see it: HEAD plus uncommitted and untracked pages, "
        "or the corpus as of --at REV. Results are rolled up per page, best first.",
    )
    p.add_argument("query", nargs="+", help="what to look for")
    p.add_argument(
        "--mode", choices=("hybrid", "lexical", "dense"), help="ranking (default from [search] mode: hybrid)"
    )
    p.add_argument("--corpus", help="the corpus to search (default: the first)")
    p.add_argument("--top-files", type=int, metavar="N", help="pages to return (default 5)")
    p.add_argument("--chunks-per-file", type=int, metavar="M", help="best chunks shown per page (default 3)")
    p.add_argument("--limit", type=int, metavar="N", help="cap on chunks returned in all (default 50)")
    p.add_argument(
        "--format",
        choices=("outline", "json", "json-pretty"),
        default="outline",
        help="output format (default outline)",
    )
    p.add_argument("--json", dest="format", action="store_const", const="json", help="shorthand for --format json")
    p.add_argument("--full", action="store_true", help="whole chunk bodies instead of snippets")
    p.add_argument("--snippet-chars", type=int, metavar="N", help="snippet length (default 240)")
    p.add_argument(
        "--fusion",
        choices=("rrf", "score"),
        help="how lexical and dense rankings combine (default from [search] fusion: score)",
    )
    p.add_argument("--at", metavar="REV", help="search the corpus as of a commit, branch or tag")
    p.add_argument("--committed", action="store_true", help="ignore uncommitted and untracked pages")
    p.add_argument(
        "--uri",
        help="answer from the LanceDB table at URI (`gitwiki lance export`), no checkout needed; outside a "
        "checkout [storage] uri is used",
    )
    p.set_defaults(func=ground)


def ground(args: argparse.Namespace) -> int:
    from gitwiki.errors import NotFoundError
    from gitwiki.wiki import Wiki

    if args.uri is not None:
        return _ground_shared(args, args.uri)
    try:
        wiki = Wiki.open(args.chdir)
    except NotFoundError:  # no checkout here: a reader of the shared index, if one is configured
        from gitwiki.lance_index import storage_uri

        uri = storage_uri(args.chdir)
        if uri is None:
            raise
        return _ground_shared(args, uri)
    if args.at is None and wiki.has_no_index_to_start_from():
        from gitwiki.pull import install_published  # fetching and archives: only in a clone without an index

        install_published(wiki, lexical=args.mode == "lexical")
    result = wiki.search(" ".join(args.query), args.corpus, **_options(args), at=args.at, worktree=not args.committed)
    return _print(result, args.format)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The search options both the checkout and the shared index take."""
    return {
        "mode": args.mode,
        "top_files": args.top_files,
        "chunks_per_file": args.chunks_per_file,
        "limit": args.limit,
        "snippet_chars": args.snippet_chars,
        "full": args.full,
        "fusion": args.fusion,
    }


def _ground_shared(args: argparse.Namespace, uri: str) -> int:
    """The scale-out reader: the table at `uri` holds the last exported commit, nothing else."""
    from pathlib import Path

    from gitwiki import config as config_mod
    from gitwiki.errors import UsageError
    from gitwiki.lance_index import LanceReader
    from gitwiki.search import SearchOptions

    if args.at is not None:
        raise UsageError("--at needs a checkout: the shared index holds only the last exported commit")
    config = config_mod.load(Path(args.chdir).resolve())
    options = SearchOptions.build(config.search, **_options(args))
    return _print(LanceReader(uri).ground(config, " ".join(args.query), args.corpus, options), args.format)


def _print(result: SearchResult, fmt: str) -> int:
    from gitwiki.outline import outline

    if fmt == "outline":
        sys.stdout.write(outline(result, color=sys.stdout.isatty()))
    else:
        print(json.dumps(result.to_json(), indent=2 if fmt == "json-pretty" else None, ensure_ascii=False))
    return 0
