from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "outline",
        help="a page's sections with line ranges and sizes, to read the map before the page",
        description="Show a markdown file's H1-H3 sections (the sections search results point at): "
        "heading, 1-based line range and size in bytes, subsections included.",
    )
    p.add_argument("path", help="the markdown file, relative to -C DIR (printed from the top of the repository)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=outline)


def outline(args: argparse.Namespace) -> int:
    from gitwiki.commands.options import path_arg
    from gitwiki.errors import NotFoundError, UsageError
    from gitwiki.pages import page_outline

    file = path_arg(args, args.path)
    if not file.is_file():
        raise NotFoundError(f"no file {args.path!r}; give the path of a markdown page")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{args.path!r} is not valid UTF-8 (byte {e.start}); fix its encoding") from None
    entries = page_outline.outline(text)
    shown = _repo_relative(file) or args.path
    if args.json:
        print(json.dumps({"path": shown, "sections": [e._asdict() for e in entries]}, indent=2))
    else:
        print(page_outline.render(shown, entries), end="")
    return 0


def _repo_relative(file: Path) -> str | None:
    """The file's path from the top of its checkout, as `ground` and the MCP tools print paths; None outside one."""
    from gitwiki.errors import GitwikiError
    from gitwiki.git.gitcli import discover

    try:
        return file.relative_to(discover(file.parent).root).as_posix()
    except (GitwikiError, ValueError, OSError):
        return None
