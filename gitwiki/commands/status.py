from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "status",
        help="corpora, indexed commit vs HEAD, dirty pages, model, index size",
        description="Show each corpus: pages and chunks indexed, the indexed commit against HEAD, "
        "uncommitted pages, the embedding model, and where the index lives.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=status)


def status(args: argparse.Namespace) -> int:
    from gitwiki.wiki import Wiki, age

    wiki = Wiki.open(args.chdir)
    rows = wiki.status()
    size = wiki.store.size_bytes()
    repositories = [r.status() for r in wiki.repositories]
    if args.json:
        print(
            json.dumps(
                {
                    "index_dir": str(wiki.index_dir),
                    "index_bytes": size,
                    "corpora": [r._asdict() for r in rows],
                    "repositories": [{**r._asdict(), "state": r.state} for r in repositories],
                },
                indent=2,
            )
        )
        return 0
    for r in rows:
        state = "fresh" if r.fresh else ("not indexed" if r.indexed_commit is None else "stale (run gitwiki index)")
        print(f"corpus {r.name}  path {r.path or '.'}/")
        print(f"  pages {r.pages}, chunks {r.chunks}, model {r.model or 'none (lexical)'}")
        print(
            f"  indexed {(r.indexed_commit or '-')[:12]} {age(r.indexed_at)}; HEAD "
            f"{(r.head_commit or '-')[:12]}: {state}"
        )
        if r.dirty:
            shown = ", ".join(r.dirty[:5]) + (f" and {len(r.dirty) - 5} more" if len(r.dirty) > 5 else "")
            print(f"  uncommitted pages ({len(r.dirty)}, searched too): {shown}")
        if r.submodules:
            print(f"  submodules skipped (their pages are not indexed): {', '.join(r.submodules)}")
    for repo in repositories:
        synced = f"commit {(repo.commit or '-')[:12]}, synced {age(repo.synced_at)}"
        print(f"repository {repo.name}  {repo.location}: {repo.state}, {synced}")
    print(f"index {wiki.index_dir} ({size / 1e6:.1f} MB)")
    return 0
