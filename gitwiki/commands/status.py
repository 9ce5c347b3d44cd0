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
    p.add_argument(
        "--check",
        action="store_true",
        help="also check the index and each synced repository's for damage and rows that do not read back "
        "(reads all of them); exit 4 if damaged",
    )
    p.set_defaults(func=status)


def status(args: argparse.Namespace) -> int:
    from gitwiki.embed import lexical_notice, unavailable
    from gitwiki.indexer import truncated_pages
    from gitwiki.wiki import Wiki, age

    wiki = Wiki.open(args.chdir)
    rows = wiki.status()
    size = wiki.store.size_bytes()
    repositories = [r.status() for r in wiki.repositories]
    damage = wiki.store.check(full=True) if args.check else None
    if any(r.model != wiki.wanted_model() for r in rows if r.indexed_commit):
        wiki.embedder()  # vectors missing: does the model load now? (a failure is recorded for lexical_notice)
    lexical = lexical_notice(wiki.config.embeddings, wiki.index_dir)
    # each synced repository's own index too: a published index installed by `repo sync` lives there
    checked = {
        r.name: r.store.check(full=True) or "ok"
        for r, row in zip(wiki.repositories, repositories, strict=True)
        if args.check and row.commit is not None
    }
    code = 4 if damage or any(v != "ok" for v in checked.values()) else 0  # StoreError's: the index is unusable
    if args.json:
        extra = {"check": damage or "ok"} if args.check else {}
        print(
            json.dumps(
                {
                    "index_dir": str(wiki.index_dir),
                    "index_bytes": size,
                    "corpora": [r._asdict() for r in rows],
                    "repositories": [
                        {**r._asdict(), "state": r.state, **({"check": checked[r.name]} if r.name in checked else {})}
                        for r in repositories
                    ],
                    "lexical_notice": lexical,
                    **extra,
                },
                indent=2,
            )
        )
        return code
    for r in rows:
        state = "fresh" if r.fresh else ("not indexed" if r.indexed_commit is None else "stale (run gitwiki index)")
        print(f"corpus {r.name}  path {r.path or '.'}/")
        print(f"  pages {r.pages}, chunks {r.chunks}, model {r.model or 'none (lexical)'}")
        if r.head_commit is None:  # `git init` without a commit: only the worktree has pages
            print("  HEAD: no commit yet; uncommitted pages are searched as they are, commit them to index them")
        else:
            print(f"  indexed {(r.indexed_commit or '-')[:12]} {age(r.indexed_at)}; HEAD {r.head_commit[:12]}: {state}")
        if r.dirty:
            shown = ", ".join(r.dirty[:5]) + (f" and {len(r.dirty) - 5} more" if len(r.dirty) > 5 else "")
            print(f"  uncommitted pages ({len(r.dirty)}, searched too): {shown}")
        if cut := truncated_pages(wiki.index_dir, wiki.store.pages(r.name)):
            limit = f"{wiki.config.search.max_page_bytes:,}"
            print(f"  searched only up to [search] max_page_bytes ({limit}): {', '.join(p for p, _ in cut)}")
        if r.submodules:
            print(f"  submodules skipped (their pages are not indexed): {', '.join(r.submodules)}")
    for repo in repositories:
        synced = f"commit {(repo.commit or '-')[:12]}, synced {age(repo.synced_at)}"
        print(f"repository {repo.name}  {repo.location}: {repo.state}, {synced}")
        if repo.name in checked:
            found = checked[repo.name]
            print(
                f"repository {repo.name} index check: "
                + ("ok" if found == "ok" else f"damaged ({found}); run `gitwiki repo sync {repo.name}` to rebuild it")
            )
    print(f"index {wiki.index_dir} ({size / 1e6:.1f} MB)")
    if lexical:
        print(f"{lexical}\n  why: {unavailable(wiki.config.embeddings, wiki.index_dir)}")
    if args.check:
        print(f"index check: damaged ({damage}); run `gitwiki index --rebuild`" if damage else "index check: ok")
    return code
