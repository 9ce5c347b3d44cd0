"""Argument helpers several commands share (commands never import each other)."""

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
