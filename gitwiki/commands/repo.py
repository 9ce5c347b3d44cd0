from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitwiki.sources.repositories import SyncReport
    from gitwiki.wiki import Wiki


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "repo",
        help="sync and list the [[repository]] corpora (other git repos searched as repo:NAME:wiki)",
        description="Other repositories declared with [[repository]] are searched as repo:NAME:wiki and "
        "repo:NAME:corpus. Their pages are read from git objects in a bare cache under the user cache dir, "
        "never checked out.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sync = actions.add_parser(
        "sync",
        help="fetch and re-index incrementally (an unchanged remote costs one ref listing)",
        description="Fetch each repository's ref (or the named one) and index what changed. A failed fetch "
        "keeps the last index, says so in one line and exits 1.",
    )
    sync.add_argument("name", nargs="?", help="only this repository (default: all)")
    sync.add_argument("--lexical", action="store_true", help="skip embeddings (BM25 only)")
    sync.add_argument("--json", action="store_true", help="print the reports as JSON")
    sync.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    sync.set_defaults(func=sync_command)
    allow = actions.add_parser(
        "allow",
        help="let gitwiki reach the [[repository]] entries of this checkout's .gitwiki.toml",
        description="A checkout's .gitwiki.toml comes with the clone, so gitwiki reaches the url or path of its "
        "[[repository]] entries only once you allow them here (entries in your own config need no consent). "
        "The consent is kept in your config dir for this checkout and that url or path: an entry that changes "
        "needs it again.",
    )
    allow.add_argument("names", nargs="*", metavar="name", help="only these repositories (default: all of them)")
    allow.add_argument("--revoke", action="store_true", help="withdraw the consent instead")
    allow.set_defaults(func=allow_command)
    listing = actions.add_parser("list", help="each repository: ref, commit, age of the last sync, staleness")
    listing.add_argument("--check", action="store_true", help="ask each remote where its ref is now (no fetch)")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(func=list_command)


def sync_command(args: argparse.Namespace) -> int:
    from gitwiki.commands.options import progress_bar
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    with progress_bar(enabled=not args.quiet and not args.json, terminal=sys.stderr.isatty()) as progress:
        reports = wiki.repositories.sync(args.name, wiki.config.embeddings, lexical=args.lexical, progress=progress)
    if args.json:
        rows = [
            {**r._asdict(), "reports": [{**i._asdict(), "up_to_date": i.up_to_date} for i in r.reports]}
            for r in reports
        ]
        print(json.dumps(rows, indent=2))
    for r in reports:
        if r.error is not None:
            print(failure_line(wiki, r), file=sys.stderr)
        elif not args.quiet and not args.json:
            print(sync_line(r))
    return 1 if any(r.error is not None for r in reports) else 0


def failure_line(wiki: Wiki, r: SyncReport) -> str:
    from gitwiki.wiki import age

    state = wiki.repositories.get(r.repository).state()
    return (
        f"{r.repository}: {r.error}; searching the last sync ({(r.commit or '-')[:12]}, {age(state.synced_at)}) "
        "until a sync succeeds"
    )


def sync_line(r: SyncReport) -> str:
    where = f"{r.commit[:12]}"
    if r.previous and r.previous != r.commit:
        where = f"{r.previous[:12]} → {where}" + (
            " (history rewritten: force-push or another ref)" if r.rewritten else ""
        )
    parts = []
    for i in r.reports:
        if i.up_to_date:
            parts.append(f"{i.corpus} {i.pages} pages, unchanged")
        else:
            parts.append(
                f"{i.corpus} {i.pages} pages ({i.added} added, {i.changed} changed, {i.deleted} deleted; "
                f"parsed {i.parsed}, embedded {i.embedded} chunks)"
            )
    notes = "".join(f"; {n}" for n in r.notes)
    fetched = "fetched" if r.downloaded else "no download"
    return f"{r.repository}: {where}, {fetched}: {'; '.join(parts)}{notes} ({r.seconds * 1000:.0f} ms)"


def allow_command(args: argparse.Namespace) -> int:
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    entries = wiki.repositories.allow(args.names, allow=not args.revoke)
    if not entries:
        print("this checkout's .gitwiki.toml declares no [[repository]]; nothing to allow")
    for e in entries:
        what = f"url {e.url}" if e.url else f"path {e.path}"
        print(f"{'withdrew the consent to' if args.revoke else 'allowed'} {e.name} ({what}) from {e.source}")
    return 0


def list_command(args: argparse.Namespace) -> int:
    from gitwiki.wiki import Wiki, age

    wiki = Wiki.open(args.chdir)
    rows = [r.status(check=args.check) for r in wiki.repositories]
    if args.json:
        print(json.dumps([{**s._asdict(), "state": s.state} for s in rows], indent=2))
        return 0
    if not rows:
        print("no [[repository]] declared; see docs/configuration-repositories.md")
    for s in rows:
        print(
            f"{s.name}  {s.location}  ref {s.ref or '(HEAD)'}  commit {(s.commit or '-')[:12]}  wiki {s.wiki or '.'}/"
        )
        pages = ", ".join(f"{name} {n} pages" for name, n in s.corpora.items()) or "no pages indexed"
        line = f"  {s.state}: synced {age(s.synced_at)}; {pages}"
        if s.state == "not allowed":
            line += f"; declared by this checkout: check the address, then run `gitwiki repo allow {s.name}`"
        if s.state == "behind":
            line += f"; the remote is at {s.remote_commit[:12] if s.remote_commit else '?'} (run gitwiki repo sync)"
        if s.error:
            line += f"; last fetch failed {age(s.failed_at)}: {s.error}"
        print(line)
    return 0
