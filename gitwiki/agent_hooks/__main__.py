"""`gitwiki-hook TYPE` (or `python -m gitwiki.agent_hooks TYPE`): the command `gitwiki hooks install` writes.

It answers as `gitwiki hook TYPE` does, without the CLI around it: argparse with its gettext lookups and
the command table cost every hook process ~3 ms of its 80 ms budget (docs/benchmarks.md, "Claude Code hooks").
"""

from __future__ import annotations

import sys

from gitwiki.agent_hooks import BY_NAME

USAGE = "usage: gitwiki-hook TYPE\n  TYPE: one of " + ", ".join(BY_NAME) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        sys.stdout.write(USAGE + "Reads a Claude Code hook event on stdin; see `gitwiki hook -h`.\n")
        return 0
    if len(args) != 1 or args[0] not in BY_NAME:
        # Not 2, the CLI's usage status: Claude Code takes exit 2 as "block", so a mistyped hook command
        # would stop every tool call it matches. 1 shows the message and lets the agent carry on.
        sys.stderr.write(USAGE)
        return 1
    from gitwiki.agent_hooks.run import run

    answer = run(args[0], sys.stdin.buffer.read(), ".")
    if answer:
        sys.stdout.write(answer + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
