from __future__ import annotations

import argparse
import json

from gitwiki.commands.options import max_bytes_arg, path_arg


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pull",
        help="install the index CI built, then embed only what changed since",
        description="Fetch an index archive, verify and install it, then catch up to HEAD and the worktree. "
        "SOURCE: a git ref on the remote (default refs/gitwiki/index, fetched with your git credentials), "
        "an https URL, github-artifact[:NAME], github-release[:TAG] (REST API, token from GITHUB_TOKEN or "
        "`gh auth token`), or a local archive file.",
    )
    p.add_argument("--from", dest="source", metavar="SOURCE", help="where the archive is (default: refs/gitwiki/index)")
    p.add_argument("--remote", default="origin", help="the git remote for ref and GitHub sources (default: origin)")
    p.add_argument("--github-repo", metavar="OWNER/NAME", help="for github-* sources (default: from the remote URL)")
    p.add_argument("--accept-model", action="store_true", help="install even if built with another model")
    p.add_argument("--max-bytes", type=int, default=None, help="refuse archives larger than this (default 4 GiB)")
    p.add_argument("--lexical", action="store_true", help="catch up without embedding")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(func=pull_command)


def pull_command(args: argparse.Namespace) -> int:
    from gitwiki.operations.pull import parse_source, pull
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    source = args.source
    if source and parse_source(source).kind == "file":  # relative to -C DIR, like every path argument
        source = str(path_arg(args, source))
    report = pull(
        wiki,
        source,
        remote=args.remote,
        github_repo=args.github_repo,
        accept_model=args.accept_model,
        max_bytes=max_bytes_arg(args),
        lexical=args.lexical,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "source": report.source,
                    "fetched_commit": report.fetched_commit,
                    "manifest": report.manifest.to_json(),
                    "reports": [r._asdict() for r in report.reports],
                    "worktree_embedded": report.worktree_embedded,
                    "seconds": report.seconds,
                },
                indent=2,
            )
        )
        return 0
    print(report.installed())
    for r in report.reports:
        print("caught up " + r.summary())
    if report.worktree_embedded:
        print(f"embedded {report.worktree_embedded} chunks of uncommitted pages")
    print(f"done in {report.seconds:.1f} s")
    return 0
