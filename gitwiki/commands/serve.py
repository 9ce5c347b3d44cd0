from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from gitwiki.mcp.logs import LEVELS

if TYPE_CHECKING:
    import _socket

    from gitwiki.serve.owner import Owner
    from gitwiki.serve.server import SocketServer

log = logging.getLogger("gitwiki.mcp")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the MCP server on stdio (for Claude Code and other MCP clients)",
        description="Serve this repo's wiki to an MCP client over stdin/stdout: search, read, list, "
        "safe writes. Logs go to stderr. Set it up with `claude mcp add gitwiki -- gitwiki serve` "
        "or paste the output of `gitwiki mcp config` into your client's config.",
    )
    p.add_argument(
        "--log-level",
        choices=tuple(LEVELS),
        default="WARNING",
        help="what the server logs on stderr (default WARNING; DEBUG adds per-call timings)",
    )
    p.add_argument(
        "--uri",
        help="serve `ground` from the LanceDB table at URI (`gitwiki lance export`), no checkout needed; outside "
        "a checkout [storage] uri is used",
    )
    p.add_argument(
        "--alone",
        action="store_true",
        help="serve this session in this process, without sharing the checkout's warm owner (docs/mcp.md); "
        "GITWIKI_SERVE_ALONE=1 (or GITWIKI_NO_SERVER=1) does the same for every session",
    )
    p.add_argument(
        "--stop",
        action="store_true",
        help="stop this checkout's owner (the warm server sessions share) and exit; its sessions start a new one "
        "on their next call",
    )
    p.add_argument("--owner-fd", type=int, help=argparse.SUPPRESS)  # the owner lock, from `serve.owner.start`
    p.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    alone = args.alone or any(os.environ.get(name) for name in ("GITWIKI_NO_SERVER", "GITWIKI_SERVE_ALONE"))
    bridging = not args.stop and args.owner_fd is None and args.uri is None and not alone and _in_checkout(args.chdir)
    # A session finding no owner starts one before its own imports below: the owner's start-up runs beside them.
    found = _find_owner(args.chdir) if bridging else None
    from gitwiki import __version__
    from gitwiki.mcp.early import Handshake, answer_initialize, log_to_stderr

    log_to_stderr(args.log_level)
    if args.stop:
        return _stop(args.chdir)
    if args.owner_fd is not None:
        return _own(args)
    if isinstance(found, str):
        log.info("running alone: the owner declined (%s)", found)
    elif found is not None:
        return _bridge(args, *found)
    calls = threading.Lock()  # one tool call (or CLI request) at a time, and the warm-up between them
    closing: list[Callable[[], None]] = []
    hold = _stop_on_signals(calls, closing)
    if args.uri is not None:
        return _serve_shared(args, args.uri)
    # In a checkout the handshake is answered from the start, on a thread of its own, while the wiki is opened
    # and long before the MCP SDK's import (about 1 s).
    handshake = Handshake(__version__, lambda: _lexical_notice(args.chdir)) if _in_checkout(args.chdir) else None
    from gitwiki.errors import NotFoundError
    from gitwiki.operations.warm import warm_up
    from gitwiki.serve.server import SocketServer
    from gitwiki.wiki import Wiki

    try:
        wiki = Wiki.open(args.chdir)
    except NotFoundError:  # no checkout here: serve the shared index, if one is configured
        from gitwiki.search.lance_index import storage_uri

        uri = None if handshake is not None else storage_uri(args.chdir)
        if uri is None:
            raise
        return _serve_shared(args, uri)
    wiki.local.embed_in_background()  # a write answers before its page is embedded (gitwiki.index.background_embed)
    # `gitwiki ground` in this checkout asks this server from now on
    cli = _listen(hold, closing, lambda: SocketServer.listen(wiki, calls))
    try:
        stdio = answer_initialize(__version__) if handshake is None else handshake.stdio()
        if stdio is None:  # the client hung up before saying anything
            return 0
        # The warm-up runs during the MCP SDK's import, so a query 1 s after the spawn finds the model and the
        # vectors ready; the lean embedder's session is built without the GIL, so the two do not slow each other
        # (gitwiki.index.onnx_embed, docs/research/mcp-startup.md).
        threading.Thread(target=warm_up, args=(wiki, calls), name="gitwiki-warm-up", daemon=True).start()
        from gitwiki.mcp.server import serve as run

        run(wiki, calls, stdio, hooks=_hook)
    finally:
        if cli is not None:
            cli.close()
    return 0


def _find_owner(chdir: str) -> tuple[Owner, _socket.socket | None] | str | None:
    """The checkout's owner for a new session, asked (and started, when none answers) before the session's own
    imports: its `serve.owner.Owner` and the session's connection (None: an owner was started, or is starting); a
    reason when an owner answers but declines this session (another environment or configuration); None when there
    is no place for an owner. Either of the last two: this session runs alone."""
    from gitwiki.serve import owner

    where = owner.place(chdir)
    if where is None:
        return None
    got = owner.connect(where)
    if isinstance(got, owner.Declined):
        return got.reason
    owned = owner.Owner(where, chdir)
    if got is None:
        owned.start()
    return owned, got


def _bridge(args: argparse.Namespace, owned: Owner, got: _socket.socket | None) -> int:
    """Serve this session through the checkout's owner (`_find_owner`'s)."""
    from gitwiki import __version__
    from gitwiki.mcp import bridge

    # A bridge holds nothing to finish: SIGINT and SIGTERM end it at once, of the signal, without a traceback (a
    # call in flight is the owner's to finish; its answer has no one to go to).
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    from gitwiki.cli import hook_call

    # the owner starting: a hook's call before it is up is answered here, as a hook process would answer it
    hooks = hook_call(owned.root) if got is None else None
    return bridge.run(owned, got, __version__, _lexical_notice(args.chdir), hooks=hooks)


def _own(args: argparse.Namespace) -> int:
    """Be the checkout's owner (started by `serve.owner.start`, holding the lock on `--owner-fd`): the wiki,
    the model and the watch warm, MCP sessions and the CLI's requests served over the socket, until no session
    has been connected for [mcp] idle_timeout seconds or `gitwiki serve --stop`."""
    from gitwiki.search.model_process import load_for_owner

    # The model first, in a process of its own (or on a thread): its 0.2-0.45 s of load runs beside the imports
    # and the index's opening below, and the session's first hybrid search waits for it.
    load_for_owner(args.chdir)
    from gitwiki import __version__
    from gitwiki.mcp.session import Sessions
    from gitwiki.operations.warm import warm_up
    from gitwiki.serve import owner
    from gitwiki.serve.server import SocketServer
    from gitwiki.wiki import Wiki

    owner.mark(args.owner_fd)
    calls = threading.Lock()
    closing: list[Callable[[], None]] = []
    hold = _stop_on_signals(calls, closing)
    wiki = Wiki.open(args.chdir)
    wiki.local.embed_in_background()
    # Sessions are answered without the MCP SDK (`mcp.session`); it is imported only for a line that needs it.
    sessions = Sessions(wiki, calls, __version__, _lexical_notice(args.chdir), hooks=_hook)
    session = sessions.serve

    server = _listen(
        hold,
        closing,
        lambda: SocketServer.listen(wiki, calls, session, retire=lambda: os.close(args.owner_fd), hooks=_hook),
    )
    if server is None:
        log.warning("another gitwiki serve holds this checkout's socket; this owner ends")
        return 1
    log.info("owner of %s, pid %d", wiki.root, os.getpid())
    threading.Thread(target=warm_up, args=(wiki, calls), name="gitwiki-warm-up", daemon=True).start()
    try:
        server.wait_idle(wiki.config.mcp.idle_timeout)
    finally:
        server.close()
        with calls:
            wiki.close()
    log.info("owner ends")
    return 0


def _stop(chdir: str) -> int:
    from gitwiki.errors import NotFoundError
    from gitwiki.serve import owner

    where = owner.place(chdir)
    if where is None:
        raise NotFoundError(f"no git checkout at {chdir}")
    reply = owner.ask(where, "stop")
    if reply is None:
        pid = owner.kill(where) if owner.held(where) else None  # alive but not answering: hung
        shown = f"killed the hung gitwiki owner (pid {pid})"
        print("no gitwiki owner runs for this checkout" if pid is None else shown)
        return 0
    print(f"stopped the gitwiki owner (pid {reply.get('stopping')})")
    return 0


def _lexical_notice(start: str) -> str | None:
    """That search is lexical only, for the instructions (`embed.lexical_notice`), read before the wiki is opened:
    the config and the record an earlier command left in the index dir (a few ms of light imports); None when
    that cannot be read here, e.g. GIT_DIR and friends (`Wiki.open` reports real errors)."""
    from gitwiki import config
    from gitwiki.errors import GitwikiError
    from gitwiki.git.gitcli import find_checkout
    from gitwiki.index.embed import lexical_notice

    try:
        checkout = find_checkout(start)
        if checkout is None:
            return None
        cfg = config.load(checkout.root)
        return lexical_notice(cfg.embeddings, config.index_dir(cfg, checkout.root, checkout.common_dir))
    except (OSError, ValueError, GitwikiError):
        return None


def _in_checkout(start: str) -> bool:
    """Whether `start` looks like a git checkout (a `.git` there or above, or GIT_DIR set), seen without pygit2;
    `Wiki.open` decides after the handshake."""
    if os.environ.get("GIT_DIR"):
        return True
    here = Path(start).resolve()
    return any((folder / ".git").exists() for folder in (here, *here.parents))


Hold = Callable[[], AbstractContextManager[None]]  # `_stop_on_signals`' hold


def _listen(
    hold: Hold, closing: list[Callable[[], None]], listen: Callable[[], SocketServer | None]
) -> SocketServer | None:
    """`listen()`, its server's close in `closing` before a SIGINT or SIGTERM is acted on: the socket file appears
    inside `listen`, and a client that signals as soon as it sees it would otherwise leave it behind."""
    with hold():
        server = listen()
        if server is not None:
            closing.append(server.close)
    return server


def _stop_on_signals(calls: threading.Lock, closing: list[Callable[[], None]]) -> Hold:
    """SIGINT and SIGTERM end the server at once, without a traceback: after the tool call in progress (up to 0.5 s,
    so a write is not cut short; writes are atomic either way) and after `closing` (the CLI socket), the process dies of
    the signal (the shell's 130 for SIGINT), as a client that sent it expects. Returns `hold`: a signal that comes
    inside `with hold():` is acted on at its end (a mask would not do: any thread may take a process's signal, and
    Python runs the handler on the main thread all the same).

    Left to Python and the SDK, SIGINT did nothing until stdin closed: it cancels the event loop, which then waits
    for the SDK's stdin reader, a thread blocked in read() (Claude Code: "SIGINT failed, sending SIGTERM"). The
    process ends without `finally` blocks and thread joins; the index is SQLite in WAL mode and the locks are
    the kernel's, released with the process."""
    holding: list[bool] = []
    held: list[int] = []  # signals that came while holding

    def stop(signum: int, _frame: object) -> None:
        if holding:
            held.append(signum)
            return
        log.info("stopping on %s", signal.Signals(signum).name)
        if not calls.acquire(timeout=0.5):
            log.warning("stopping during a call that took more than 0.5 s")
        for close in closing:
            close()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    @contextlib.contextmanager
    def hold() -> Iterator[None]:
        holding.append(True)
        try:
            yield
        finally:
            holding.clear()
            if held:
                stop(held[0], None)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    return hold


def _serve_shared(args: argparse.Namespace, uri: str) -> int:
    from gitwiki import config as config_mod
    from gitwiki.mcp.early import guard_lines
    from gitwiki.mcp.lance import serve as run

    config = config_mod.load(Path(args.chdir).resolve())
    stdio = guard_lines()  # every line checked as the checkout's server checks it (mcp.framing)
    if stdio is None:
        return 0
    try:
        run(uri, config)
    finally:
        stdio.close()
    return 0


def _hook(name: str, raw: bytes, cwd: str) -> str | None:
    """A hook that `gitwiki-hook` sent the owner (serve/hooks.py), answered by the hook's own code: loaded at the
    first one, so an owner whose sessions run no hooks never imports it."""
    from gitwiki.agent_hooks.run import served

    return served(name, raw, cwd)
