"""Argument helpers several commands share (commands never import each other, so they import this)."""

from __future__ import annotations

import argparse
from pathlib import Path


def max_bytes_arg(args: argparse.Namespace) -> int:
    """`--max-bytes`, defaulting to the archive cap; a non-positive value is a usage error."""
    from gitwiki.artifact import MAX_BYTES
    from gitwiki.errors import UsageError

    if args.max_bytes is None:
        return MAX_BYTES
    if args.max_bytes < 1:
        raise UsageError("--max-bytes must be a positive number of bytes")
    return args.max_bytes


def path_arg(args: argparse.Namespace, path: str | Path) -> Path:
    """A path argument, relative to -C DIR like every path argument."""
    return Path(args.chdir, path).resolve()


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    """`gitwiki init` and `gitwiki config init` are one command under two names: the same options, the same run."""
    parser.add_argument("--path", default="wiki", help="the corpus folder, relative to the repo root (default: wiki)")
    parser.add_argument("--name", default="wiki", help="the corpus name (default: wiki)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing .gitwiki.toml")
    parser.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    from gitwiki.config import write_init
    from gitwiki.gitrepo import GitRepo

    print(write_init(GitRepo.discover(args.chdir).root, args.path, args.name, args.force).describe())
    return 0


def repo_relative(root: Path, cwd: str, files: list[str]) -> list[str]:
    """FILE arguments (relative to `cwd`) as repo-relative POSIX paths; files outside the repo are an error."""
    from gitwiki.errors import UsageError

    out = []
    for name in files:
        full = Path(cwd, name).resolve()
        try:
            out.append(full.relative_to(root).as_posix())
        except ValueError:
            raise UsageError(f"{name} is outside the repository {root}; pass pages inside it") from None
    return out
