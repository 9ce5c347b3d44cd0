"""docs/cli.md is every command's real --help; this test fails when they drift.

Regenerate after changing the CLI: python tests/commands/test_cli_docs.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HEADER = """---
title: Command line reference
description: Every gitwiki command and its options, generated from the real --help.
---
# Command line reference

Generated from `gitwiki --help` and each command's `--help` (a test keeps this page equal to them).
"""


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def render() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal width
    from gitwiki.cli import build_parser

    root = build_parser()
    parts = [HEADER, "## gitwiki\n", "```\n" + root.format_help() + "```\n"]
    stack = [("gitwiki " + name, sub) for name, sub in _subparsers(root)]
    while stack:
        name, parser = stack.pop(0)
        parts.append(f"## {name}\n")
        parts.append("```\n" + parser.format_help() + "```\n")
        stack[0:0] = [(f"{name} {child}", sub) for child, sub in _subparsers(parser)]
    return "\n".join(parts)


def test_cli_doc_matches_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert DOC.read_text() == render(), "docs/cli.md is stale: run python tests/commands/test_cli_docs.py"


if __name__ == "__main__":
    sys.path.insert(0, str(DOC.parent.parent))
    DOC.write_text(render())
    print(f"wrote {DOC}")
