from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init", help="write .gitwiki.toml with one corpus", description="Write .gitwiki.toml with one [[corpus]]."
    )
    p.add_argument("--path", default="wiki", help="the corpus folder, relative to the repo root (default: wiki)")
    p.add_argument("--name", default="wiki", help="the corpus name (default: wiki)")
    p.add_argument("--force", action="store_true", help="overwrite an existing .gitwiki.toml")
    p.set_defaults(func=init)


def init(args: argparse.Namespace) -> int:
    from gitwiki.config import write_init
    from gitwiki.gitrepo import GitRepo

    print(write_init(GitRepo.discover(args.chdir).root, args.path, args.name, args.force).describe())
    return 0
