from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitwiki.config import Config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "lance",
        help="export the index to LanceDB (local dir or s3://) and search it there",
        description="The scale-out path: one LanceDB table at [storage] uri (or --uri) that many readers "
        "query, e.g. in S3. Credentials and endpoint come from the AWS_* environment variables.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="index HEAD, then replace the table with the current corpora")
    export.add_argument("--uri", help="LanceDB URI (default: [storage] uri)")
    export.add_argument("--json", action="store_true", help="print the report as JSON")
    export.set_defaults(func=export_command)

    search = actions.add_parser("search", help="search the table (no local index or checkout needed)")
    search.add_argument("query", nargs="+", help="what to look for")
    search.add_argument("--uri", help="LanceDB URI (default: [storage] uri)")
    search.add_argument("--corpus", help="the corpus to search (default: the first configured)")
    search.add_argument("--mode", choices=("hybrid", "lexical", "dense"), help="ranking (default from [search] mode)")
    search.add_argument(
        "--fusion", choices=("rrf", "score"), help="how lexical and dense rankings combine (default from [search])"
    )
    search.add_argument("--top-files", type=int, metavar="N", help="pages to return (default from [search])")
    search.add_argument("--full", action="store_true", help="whole chunk bodies instead of snippets")
    search.add_argument("--json", action="store_true", help="print the `ground --json` contract")
    search.set_defaults(func=search_command)


def _uri(args: argparse.Namespace, config: Config) -> str:
    from gitwiki.errors import UsageError

    uri = args.uri or config.storage.uri
    if not uri:
        raise UsageError(
            "no LanceDB location: set [storage] uri in .gitwiki.toml (e.g. s3://bucket/wiki) or pass --uri"
        )
    return uri


def export_command(args: argparse.Namespace) -> int:
    from gitwiki.search.lance_index import export
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    uri = _uri(args, wiki.config)
    wiki.index()
    report = export(wiki.store, uri, wiki.config.storage.ann_min_rows)
    if args.json:
        print(json.dumps(report._asdict(), indent=2))
    else:
        change = (
            f"{report.inserted} written, {report.deleted} deleted" if report.inserted or report.deleted else "unchanged"
        )
        print(
            f"exported {report.rows} chunks of {', '.join(report.corpora)} to {uri} ({change}; "
            f"{report.model or 'lexical only'}; version {report.version}) in {report.seconds:.1f} s"
        )
    return 0


def search_command(args: argparse.Namespace) -> int:
    from gitwiki import config as config_mod
    from gitwiki.search.lance_index import LanceReader
    from gitwiki.search.outline import outline
    from gitwiki.search.searcher import SearchOptions

    config = config_mod.load(Path(args.chdir).resolve())
    options = SearchOptions.build(
        config.search, mode=args.mode, fusion=args.fusion, top_files=args.top_files, full=args.full
    )
    result = LanceReader(_uri(args, config)).ground(config, " ".join(args.query), args.corpus, options)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        sys.stdout.write(outline(result, color=sys.stdout.isatty()))
    return 0
