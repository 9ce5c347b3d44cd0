"""`gitwiki-hook TYPE` (or `python -m gitwiki.agent_hooks TYPE`): the command `gitwiki hooks install` writes.

It answers as `gitwiki hook TYPE` does, without the CLI around it: argparse with its gettext lookups and
the command table cost every hook process ~3 ms of its 80 ms budget (docs/research/agent-hooks.md).
"""

from __future__ import annotations

import os
import sys

from gitwiki.agent_hooks import BY_NAME

USAGE = "usage: gitwiki-hook TYPE\n  TYPE: one of " + ", ".join(BY_NAME) + "\n"


def answer(args: list[str]) -> int:
    """Run the hook `args` names on the event on stdin, its answer on stdout; the exit status."""
    if args in (["-h"], ["--help"]):
        sys.stdout.write(USAGE + "Reads a Claude Code hook event on stdin; see `gitwiki hook -h`.\n")
        return 0
    if len(args) != 1 or args[0] not in BY_NAME:
        # Not 2, the CLI's usage status: Claude Code takes exit 2 as "block", so a mistyped hook command
        # would stop every tool call it matches. 1 shows the message and lets the agent carry on.
        sys.stderr.write(USAGE)
        return 1
    raw = sys.stdin.buffer.read()
    from gitwiki.agent_hooks import forward  # the owner's answer, when it is up: the hook code stays unloaded

    answered = forward.ask(args[0], raw)
    if answered is not None:
        if answered[0]:
            sys.stdout.write(answered[0] + "\n")
        return answered[1]
    from gitwiki.agent_hooks.run import run

    found = run(args[0], raw, ".")
    if found:
        sys.stdout.write(found + "\n")
    return 0


def main() -> None:  # NoReturn, which would load typing
    code = answer(sys.argv[1:])
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # Claude Code stopped reading (its timeout): nothing left to tell it
        pass
    # The answer is out and every file the hook wrote is closed: skip the interpreter's teardown of the ~60
    # modules a hook loads, a few ms of every hook that `python -c pass` does not pay.
    os._exit(code)


if __name__ == "__main__":
    main()
