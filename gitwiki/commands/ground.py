from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ground",
        help="search the wiki (hybrid BM25 + embeddings), results per page",
        description="Search the wiki as you see it: HEAD plus uncommitted and untracked pages, "
        "or the corpus as of --at REV. Results are rolled up per page, best first.",
    )
    p.add_argument("query", nargs="+", help="what to look for (at most 4,000 characters: MAX_QUERY_CHARS)")
    p.add_argument(
        "--mode", choices=("hybrid", "lexical", "dense"), help="ranking (default from [search] mode: hybrid)"
    )
    p.add_argument(
        "--corpus",
        help="the corpus to search (default: the first); several as a,b or all: one ranking, each page "
        "labelled with its corpus",
    )
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
    p.add_argument(
        "--explain",
        action="store_true",
        help="also show each page's ranking numbers: lexical and dense ranks and scores, their normalization, "
        "the fused and page scores, and what the weak flag saw (in JSON: each page's `explain`)",
    )
    p.add_argument("--at", metavar="REV", help="search the corpus as of a commit, branch or tag")
    p.add_argument("--committed", action="store_true", help="ignore uncommitted and untracked pages")
    p.add_argument(
        "--no-server",
        action="store_true",
        help="answer in this process even when a `gitwiki serve` of this checkout is running "
        "(default: ask it over its socket; also GITWIKI_NO_SERVER=1)",
    )
    p.add_argument(
        "--uri",
        help="answer from the LanceDB table at URI (`gitwiki lance export`), no checkout needed; outside a "
        "checkout [storage] uri is used",
    )
    p.set_defaults(func=ground)


def ground(args: argparse.Namespace) -> int:
    import dataclasses

    from gitwiki.operations.ground import GroundRequest

    computed: dict[str, Any] = {
        "query": " ".join(args.query),
        "worktree": not args.committed,
        "color": args.format == "outline" and sys.stdout.isatty(),
    }
    # Every field with a flag of its name: a new search option is a SearchRequest field and a flag, nothing here.
    asked = {f.name: getattr(args, f.name) for f in dataclasses.fields(GroundRequest) if hasattr(args, f.name)}
    asked.update(computed)
    request = GroundRequest(**asked)
    if args.uri is not None:
        return _ground_shared(args.chdir, args.uri, request)
    if not args.no_server:
        from gitwiki.serve.client import ask

        reply = ask(args.chdir, request)  # a running `gitwiki serve` of this checkout has everything warm
        if reply is not None:
            sys.stderr.write(reply.stderr)
            sys.stdout.write(reply.stdout)
            reply.check()  # an error the server met: the local path's message and exit code
            return 0
    from gitwiki.index.embed import load_in_background

    load_in_background(args.chdir, request.mode)
    from gitwiki.errors import NotFoundError
    from gitwiki.operations.ground import answer
    from gitwiki.wiki import Wiki

    try:
        wiki = Wiki.open(args.chdir)
    except NotFoundError:  # no checkout here: a reader of the shared index, if one is configured
        from gitwiki.search.lance_index import storage_uri

        uri = storage_uri(args.chdir)
        if uri is None:
            raise
        return _ground_shared(args.chdir, uri, request)
    sys.stdout.write(answer(wiki, request))
    return 0


def _ground_shared(chdir: str, uri: str, request: Any) -> int:
    from pathlib import Path

    from gitwiki import config as config_mod
    from gitwiki.operations.ground import answer_shared

    sys.stdout.write(answer_shared(uri, config_mod.load(Path(chdir).resolve()), request))
    return 0
