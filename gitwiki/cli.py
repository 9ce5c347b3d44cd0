"""`gitwiki` command line: parse arguments, call one function in gitwiki.commands, map errors to exit codes.

Exit codes: 0 success; 1 findings (lint errors, a fixer changed files) or a general failure;
2 usage or configuration error; 3 not found (repo, corpus, page, revision); 4 index unusable or busy;
5 embedding model unavailable where it is required; 6 a download failed (network, server error);
130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from gitwiki import __version__
from gitwiki.errors import GitwikiError
from gitwiki.pagetext import printable

# Each name is a module in gitwiki.commands with `register(subparsers)`; keep their imports light.
COMMANDS = (
    "init",
    "index",
    "ground",
    "outline",
    "status",
    "config",
    "lint",
    "index-blocks",
    "git-hooks",
    "serve",
    "mcp",
    "artifact",
    "pull",
    "publish",
    "repo",
    "lance",
    "hooks",
    "hook",
    "memory",
    "eval",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` that one command: importing and building all of them costs ~7 ms
    more (argparse looks up translations for every help string), which the hooks would pay per commit."""
    parser = argparse.ArgumentParser(
        prog="gitwiki",
        description="A git-keyed, searchable markdown wiki for people and coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"gitwiki {__version__}")
    parser.add_argument("-C", dest="chdir", metavar="DIR", default=".", help="run as if gitwiki was started in DIR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (only,) if only else COMMANDS:
        importlib.import_module(f"gitwiki.commands.{name.replace('-', '_')}").register(sub)
    return parser


def requested_command(argv: list[str]) -> str | None:
    """The command `argv` names, if it names one: its first word that is not an option or -C's folder
    (None for `gitwiki -h`, which lists every command)."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help"):
            return None
        if word == "-C":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(requested_command(argv)).parse_args(argv)
    try:
        return args.func(args)
    except GitwikiError as e:
        print(f"gitwiki: error: {printable(str(e))}", file=sys.stderr)  # it may quote a page, a path, a config
        return e.exit_code
    except KeyboardInterrupt:
        print("gitwiki: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gitwiki ground … | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
