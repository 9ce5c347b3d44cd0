"""docs/cli.md and the pages beside it are every command's real --help; this test fails when they drift.

Each top-level command group and its subcommands live on one page (PAGES; the rest on cli.md), so every page
stays within the page-size lint limit. Regenerate after changing the CLI: python tests/commands/test_cli_docs.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
MAIN = "cli.md"
# page -> (title, description, the top-level commands it holds, in the CLI's order)
PAGES = {
    "cli-sharing.md": (
        "Command line: artifacts, pull, repositories",
        "The gitwiki artifact, pull, publish, repo and lance commands and their options, generated from the real"
        " --help.",
        ("artifact", "pull", "publish", "repo", "lance"),
    ),
    "cli-memory.md": (
        "Command line: memory",
        "The gitwiki memory commands and their options, generated from the real --help.",
        ("memory",),
    ),
}
HEADER = """---
title: Command line reference
description: Every gitwiki command and its options, generated from the real --help.
---
# Command line reference

Generated from `gitwiki --help` and each command's `--help` (a test keeps this page equal to them).
"""


def _header(page: str) -> str:
    if page == MAIN:
        others = ", ".join(f"[{', '.join(f'`{c}`' for c in cmds)}]({name})" for name, (_, _, cmds) in PAGES.items())
        return HEADER + f"\nThe commands of a few groups have pages of their own: {others}.\n"
    title, description, _ = PAGES[page]
    return (
        f'---\ntitle: "{title}"\ndescription: {description}\n---\n# {title}\n\n'
        "Generated from each command's `--help` (a test keeps this page equal to them). Part of the"
        f" [command line reference](cli.md), which has `gitwiki --help` and the other commands.\n"
    )


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def render() -> dict[str, str]:
    """Each page's text by file name: every command's --help exactly once, on the page of its top-level group."""
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal width
    from gitwiki.cli import build_parser

    root = build_parser()
    top = [name for name, _ in _subparsers(root)]
    page_of = {cmd: page for page, (_, _, cmds) in PAGES.items() for cmd in cmds}
    assert set(page_of) <= set(top), f"PAGES names commands the CLI lacks: {sorted(set(page_of) - set(top))}"
    parts: dict[str, list[str]] = {page: [_header(page)] for page in [MAIN, *PAGES]}
    parts[MAIN] += ["## gitwiki\n", "```\n" + root.format_help() + "```\n"]
    stack = [(name, "gitwiki " + name, sub) for name, sub in _subparsers(root)]
    while stack:
        group, name, parser = stack.pop(0)
        page = parts[page_of.get(group, MAIN)]
        page.append(f"## {name}\n")
        page.append("```\n" + parser.format_help() + "```\n")
        stack[0:0] = [(group, f"{name} {child}", sub) for child, sub in _subparsers(parser)]
    return {page: "\n".join(text) for page, text in parts.items()}


def test_cli_doc_matches_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for page, text in render().items():
        assert (DOCS / page).read_text() == text, f"docs/{page} is stale: run python tests/commands/test_cli_docs.py"


def test_every_command_is_documented_once():
    """Each `gitwiki …` command, walked from the real parser, has exactly one section across the pages."""
    from gitwiki.cli import build_parser

    names, stack = [], [("gitwiki", build_parser())]
    while stack:
        name, parser = stack.pop(0)
        names.append(name)
        stack[0:0] = [(f"{name} {child}", sub) for child, sub in _subparsers(parser)]
    sections = [
        line[3:]
        for page in [MAIN, *PAGES]
        for line in (DOCS / page).read_text().splitlines()
        if line.startswith("## gitwiki")
    ]
    assert sorted(sections) == sorted(names) and len(names) > 40


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent))
    for page, text in render().items():
        (DOCS / page).write_text(text)
        print(f"wrote {DOCS / page}")
