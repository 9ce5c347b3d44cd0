from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "init", help="write .gitwiki.toml with one corpus", description="Write .gitwiki.toml with one [[corpus]]."
    )
    p.add_argument("--path", default="wiki", help="the corpus folder, relative to the repo root (default: wiki)")
    p.add_argument("--name", default="wiki", help="the corpus name (default: wiki)")
    p.add_argument("--force", action="store_true", help="overwrite an existing .gitwiki.toml")
    p.set_defaults(func=init)


def init(args: argparse.Namespace) -> int:
    from gitwiki.config import REPO_CONFIG_NAME, init_text, normalize_corpus_path
    from gitwiki.errors import UsageError
    from gitwiki.fs import atomic_write
    from gitwiki.gitrepo import GitRepo

    repo = GitRepo.discover(args.chdir)
    target = repo.root / REPO_CONFIG_NAME
    if target.exists() and not args.force:
        raise UsageError(f"{target} exists; edit it, or pass --force to overwrite it")
    path = normalize_corpus_path(args.path, "--path")
    atomic_write(target, init_text(path, args.name))
    print(f"wrote {target} (corpus {args.name!r} at {path or '.'}/); next: gitwiki index")
    return 0
