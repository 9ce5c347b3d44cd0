"""`gitwiki` command line: parse arguments, call one function in gitwiki.commands, map errors to exit codes.

Exit codes: 0 success; 1 findings (lint errors, a fixer changed files) or a general failure;
2 usage or configuration error; 3 not found (repo, corpus, page, revision); 4 index unusable or busy;
5 embedding model unavailable where it is required; 6 a download failed (network, server error);
130 interrupted.
"""

from __future__ import annotations

import sys

from gitwiki import __version__
from gitwiki.errors import GitwikiError

# Not `typing`'s: it imports re, enum and collections (~3-8 ms) on a later session's path, which needs none of them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import NoReturn

    from gitwiki.mcp.relay import Handover
    from gitwiki.serve.owner import Place

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

# The (command, action) runs that write nothing once they return: a process that ran one as its entry point ends
# without the interpreter's teardown (numpy's, onnxruntime's: 25-55 ms of a cold memory search at 10,000 entries,
# docs/research/memory-scale.md). Their index writes (vectors caught up) are committed before they return.
ENDS_AT_ONCE = {("ground", None), ("memory", "search"), ("memory", "brief"), ("memory", "read")}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with `only` that one command: importing and building all of them costs ~7 ms
    more (argparse looks up translations for every help string), which the hooks would pay per commit."""
    import argparse
    import importlib

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


def _memory_search_at(argv: list[str]) -> str | None:
    """The folder a `gitwiki [-C DIR] memory search WORDS…` runs in, else None."""
    words = list(argv)
    start = "."
    if words[:1] == ["-C"] and len(words) > 1:
        start, words = words[1], words[2:]
    rest = words[2:]
    # a word after an option may be its value (--topic ops): words after the action, another word or --json count
    after = ["", *rest][: len(rest)]
    queried = any(
        not w.startswith("-") and (not a.startswith("-") or a == "--json") for w, a in zip(rest, after, strict=True)
    )
    return start if words[:2] == ["memory", "search"] and queried else None


def _model_aside(start: str) -> None:
    """A memory search run as the process's entry point: its model loads in a process of its own (which embeds the
    query and ranks there: this one imports neither numpy nor onnxruntime), forked here before the parser and the
    command's imports, unless a running server will answer the search. Only for the entry point: a process calling
    `main` in-process (a test, a script) keeps its model its own."""
    from gitwiki.serve.client import listening

    if not listening(start):
        from gitwiki.search.model_process import load_for_owner

        load_for_owner(start, read_ahead=False)


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
    entry = argv is None  # called as this process's entry point (the console script, `python -m gitwiki`)
    argv = sys.argv[1:] if argv is None else argv
    if "serve" in argv and (bridged := serve_bridged(argv, exit_at_end=entry)) is not None:
        return bridged
    if entry and (start := _memory_search_at(argv)) is not None:
        _model_aside(start)
    args = build_parser(requested_command(argv)).parse_args(argv)
    code = _run(args)
    # These may have a model loading on a thread: the interpreter's teardown beside it aborts the process
    # ("terminate called without an active exception", exit 134), on an error as after an answer
    if entry and (args.command, getattr(args, "action", None)) in ENDS_AT_ONCE:
        end_now(code)
    return code


def _run(args: argparse.Namespace) -> int:
    """The command's exit code; a GitwikiError, an interrupt or a closed pipe said in one line on stderr."""
    try:
        code: int = args.func(args)
        return code
    except GitwikiError as e:
        from gitwiki.pagetext import printable

        print(f"gitwiki: error: {printable(str(e))}", file=sys.stderr)  # it may quote a page, a path, a config
        return e.exit_code
    except KeyboardInterrupt:
        print("gitwiki: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `gitwiki ground … | head`
        sys.stderr.close()
        return 0


MODEL_UNAVAILABLE = "model-unavailable"  # index.embed.UNAVAILABLE_FILE: the instructions then say search is lexical


def serve_bridged(argv: list[str], exit_at_end: bool = False) -> int | None:
    """`gitwiki [-C DIR] serve [--log-level LEVEL]` in a checkout whose owner takes the session, or has none yet (it
    is started here): the bridge run at once, without the parser, the command table, `logging` or the serve
    command's imports (a session's start, docs/research/sessions-bridge.md). None in every other case (another form
    or option, an environment that asks to run alone, a user config that names the index dir, a model recorded as
    not loading, a configuration that does not load, an owner that declines): `main` then does all of it as before,
    this look included. With `exit_at_end` the process ends with the bridge, without the interpreter's teardown
    (~5 ms of CPU): nothing is left to finish."""
    words = list(argv)
    chdir = "."
    if words[:1] == ["-C"] and len(words) > 2 and words[1] and not words[1].startswith("-"):
        chdir = words[1]
        del words[:2]
    if words[:1] != ["serve"]:
        return None
    from gitwiki.mcp import logs

    level = "WARNING"
    if len(words) == 3 and words[1] == "--log-level" and words[2] in logs.LEVELS:
        level = words[2]
    elif len(words) == 2 and words[1].startswith("--log-level=") and words[1].partition("=")[2] in logs.LEVELS:
        level = words[1].partition("=")[2]
    elif len(words) != 1:
        return None
    import os

    from gitwiki.mcp import relay

    handed = relay.handover()  # this process is a relay's session going on (mcp.relay)
    if handed is None and any(os.environ.get(name) for name in ("GITWIKI_NO_SERVER", "GITWIKI_SERVE_ALONE")):
        return None
    # The lean relay takes a session whose owner is up: at once here, or once a bridge's session has opened and gone
    # quiet; it comes back here only if the session needs more. A level asked for keeps the bridge, whose records
    # (a line refused, the owner lost) go to its stderr.
    back = None
    if level == "WARNING" and os.environ.get("GITWIKI_SERVE_RELAY") != "0":
        back = [sys.executable, "-P", "-m", "gitwiki", "-C", chdir, "serve"]
        if handed is None:
            _relay_at_once(chdir, back)
    from gitwiki.serve import owner

    found = owner.quick_place(chdir)
    if handed is not None:
        return _resumed(handed, found[0] if found is not None else owner.place(chdir), chdir, level, exit_at_end)
    if found is None or os.path.exists(found[1] / MODEL_UNAVAILABLE):
        return None
    where = found[0]
    got = owner.connect(where)
    if isinstance(got, owner.Declined):
        return None  # `serve` runs alone and says why
    if got is not None and back is not None:
        relay.exec_relay(got.fileno(), str(where.socket.parent), back, str(where.socket))
    owned = owner.Owner(where, chdir)
    # No owner: start it here, ~10 ms sooner than after the parser and the serve command's imports (the first
    # search waits for its start), once the configuration is known to load (else `serve` runs alone and says why).
    if got is None:
        if owner.place(chdir) != where:
            return None
        # False: another process holds the lock, an owner starting; the bridge waits for it
        owned.start(lambda fd: _own(chdir, fd))
    from gitwiki.mcp import bridge

    _bridging(level)
    # the owner starting: a hook's call before it is up is answered here, as a hook process would answer it
    code = bridge.run(owned, got, __version__, back=back, hooks=hook_call(owned.root) if got is None else None)
    if exit_at_end:
        end_now(code)
    return code


def hook_call(root: str) -> Callable[[dict[str, str]], str]:
    """`agent_hook`'s answer in this process (mcp/hook_event.py's event, the hook's own code), for the calls a first
    session's bridge gets before the owner it started is up (`mcp.bridge`)."""

    def answered(arguments: dict[str, str]) -> str:
        from pathlib import Path

        from gitwiki.agent_hooks.run import served
        from gitwiki.mcp.hook_event import answer

        return answer(arguments, Path(root), served)

    return answered


def _relay_at_once(chdir: str, back: list[str]) -> None:
    """A later session's way in when the owner is up, in `serve.address` and `mcp.relay` alone (strings and C
    modules): the owner module's imports (pathlib, typing, json; ~10 ms of a later session's start in a venv) are
    left to a session the owner does not take at once. Returns when this cannot tell (`serve_bridged` then looks as
    before: GIT_DIR and friends, a user config that may move the index dir, no owner, a decline)."""
    import os
    import time

    from gitwiki.mcp import relay
    from gitwiki.serve import address

    found = address.owner_socket(chdir)
    if found is None:
        return
    root, start, index, path = found
    if os.path.exists(os.path.join(index, MODEL_UNAVAILABLE)):
        return
    try:
        sock = address.connect(path, address.CONNECT_TIMEOUT)
    except OSError:
        return
    try:
        sock.sendall(address.session_request(root, start))
        reply = relay.message(address.Lines(sock).next(1 << 16, time.monotonic() + address.PROBE_TIMEOUT))
        sock.settimeout(None)
        if reply is not None and reply.get("session") == "accepted":
            relay.exec_relay(sock.fileno(), os.path.dirname(path), back, path)
    except (OSError, ValueError):
        pass
    sock.close()  # not taken here: `serve_bridged` asks again and says why


def _own(chdir: str, fd: int) -> int:
    """The owner's life in the process `serve.owner.start` forked from this one: as `gitwiki.__main__`'s for a
    spawned owner, its model loading in a process of its own while the rest is imported."""
    from gitwiki.search.model_process import load_for_owner

    load_for_owner(chdir)
    return main(["-C", chdir, "serve", "--owner-fd", str(fd)])


def _bridging(level: str) -> None:
    """As `commands.serve`'s bridge: records to stderr at `level`; SIGINT and SIGTERM end it at once, of the
    signal, without a traceback."""
    import signal

    from gitwiki.mcp import logs

    logs.plain(level)
    # SIGCHLD too: a relay that execs this process has it ignored (mcp.relay)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)


def _resumed(handed: Handover, where: Place | None, chdir: str, level: str, exit_at_end: bool) -> int:
    """The bridge going on with the session a relay handed over (`mcp.bridge.resume`)."""
    from gitwiki.mcp import bridge
    from gitwiki.serve import owner

    _bridging(level)
    if where is None:
        print(
            "gitwiki serve: error: this checkout's owner can no longer be found; start the session again",
            file=sys.stderr,
        )
        code = 1
    else:
        code = bridge.resume(owner.Owner(where, chdir), handed, __version__)
    if exit_at_end:
        end_now(code)
    return code


def end_now(code: int) -> NoReturn:
    """End this process with `code` once stdout and stderr are out, without the interpreter's teardown (a process
    whose files are closed: its threads are not waited for, its modules not torn down)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    import os

    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
