from __future__ import annotations

import argparse
from pathlib import Path

from gitwiki.commands.options import path_arg


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "publish",
        help="commit an index archive to a git ref (and push it) for `gitwiki pull`",
        description="Verify the archive, record it as a parentless commit on REF, and force-push REF to the "
        "remote. Any git host works; readers need only their normal git access.",
    )
    p.add_argument("file", type=Path, help="the archive (from `gitwiki artifact pack`)")
    p.add_argument("--ref", default="refs/gitwiki/index", help="the ref (default: refs/gitwiki/index)")
    p.add_argument("--remote", default="origin", help="push here (default: origin)")
    p.add_argument("--no-push", action="store_true", help="only update the local ref")
    p.set_defaults(func=publish_command)


def publish_command(args: argparse.Namespace) -> int:
    from gitwiki.git.gitrepo import GitRepo
    from gitwiki.index.publish import commit_archive, push

    root = GitRepo.discover(args.chdir).root
    commit = commit_archive(root, path_arg(args, args.file), args.ref)
    if not args.no_push:
        push(root, args.remote, args.ref)
    where = "locally" if args.no_push else f"and pushed to {args.remote}"
    print(f"{args.ref} is {commit} ({where})")
    return 0
