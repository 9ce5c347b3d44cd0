from __future__ import annotations

import argparse
import sys

from gitwiki.agent_hooks import HOOK_TYPES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hook",
        help="answer one Claude Code hook event (JSON on stdin); what `gitwiki hooks install` registers",
        description="Read a Claude Code hook event on stdin and write the hook's JSON answer on stdout: wiki and "
        "memory context, or a permission for gitwiki's own MCP tools. Always exits 0; errors go to "
        "agent-hooks.log in the index dir.",
    )
    p.add_argument(
        "type",
        metavar="TYPE",
        choices=[h.name for h in HOOK_TYPES],
        help="one of: " + ", ".join(h.name for h in HOOK_TYPES),
    )
    p.set_defaults(func=hook)


def hook(args: argparse.Namespace) -> int:
    from gitwiki.agent_hooks.run import run

    answer = run(args.type, sys.stdin.buffer.read(), args.chdir)
    if answer:
        sys.stdout.write(answer + "\n")
    return 0
