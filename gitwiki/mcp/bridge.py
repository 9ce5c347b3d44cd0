"""A `gitwiki serve` that pipes its session to the checkout's owner instead of serving it itself.

The owner (`serve.owner`) has the index, the model and the MCP SDK warm; a bridge imports none of them. It answers
what `mcp.early` answers (the handshake `initialize`, the lists, `ping`, the subscription's acknowledgement, and
every line the SDK could not parse) exactly as a direct server does, and passes every other line to the owner,
which runs the session's SDK state on that connection (one session per bridge). The owner's lines come back
verbatim, so a bridged session is a direct one, byte for byte, but for the pipe.

When the connection ends under a call (the owner was killed, or stopped), the bridge gets an owner again: it
starts one unless another process holds the owner lock (`serve.owner.start`: one of the bridges starts it, the
others wait for its socket), replays the session's opening (`initialize`, `notifications/initialized`, a
subscription) with ids of its own whose answers it drops, and then:

- resends the requests the owner had not answered that only read (`tools/call` of a tool the early answers mark
  `readOnlyHint`, and every method but `tools/call`): asking again changes nothing;
- answers a write in flight (any other tool) with a JSON-RPC error and never resends it: the owner may have died
  before the write or after it (a write is atomic: the page or entry is wholly there or not), and a second
  `add_markdown` or `memory_store` would fail on the first's page or store the entry twice. Only the caller can
  look and decide. A write the owner answered was on disk before its answer was sent, so none is lost.

An owner that hangs (stopped, or stuck holding the interpreter) is noticed while a call is out: the bridge asks
its status every PROBE_EVERY seconds on a connection of its own, which the owner answers on a thread of its
own; no answer within HANG_AFTER, and every call out is answered with an error naming the owner's pid.
"""

from __future__ import annotations

import _socket  # `socket`'s C type, all a bridge uses: the module adds 0.5 MiB of enums and selectors
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from gitwiki.mcp import early, framing, relay
from gitwiki.mcp.logs import Logger

# the times the relay keeps too: defined in its lean module, which imports nothing of this one's
from gitwiki.mcp.relay import CALL_TIMEOUT, CLOSE_WAIT, HANG_AFTER, PROBE_EVERY, Handover
from gitwiki.serve.address import socket_peer

log = Logger("gitwiki.bridge")  # `logging` only at a first record (mcp.logs)

START_TIMEOUT = 60.0  # a new owner not listening after this: the calls waiting for it are answered with an error
POLL = 0.01  # between connects to an owner that is starting
FAST_POLL_FOR = 3.0  # seconds of polling every POLL before backing off to 0.2 s
SETTLE = 0.2  # a session this long quiet (its opening done, nothing due) goes on in the lean relay
REPLAY = "gitwiki-bridge-replay-"
WRITE_LOST = (
    "gitwiki's owner process ended during this write: it may or may not have been made. "
    "Check (read_markdown, memory_search) before trying it again"
)
INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"


class Owner(Protocol):
    """What a bridge needs of the owner's side (`serve.owner`, bound to one checkout by `gitwiki serve`)."""

    def connect(self) -> _socket.socket | str | None:
        """A session connection; a reason when an owner answers but declines; None when no owner answers."""

    def start(self) -> bool:
        """Start an owner unless one is running or starting."""

    def alive(self, timeout: float) -> bool:
        """Whether the owner answers a status request within `timeout`."""

    def address(self) -> str:
        """The owner's socket (a relay asks its status there)."""

    def where(self) -> str:
        """Where the owner's log is, for an error message."""

    def failed(self) -> str | None:
        """Why the owner this process started has ended without ever taking a session; None while it has not."""


class Pending(NamedTuple):
    line: bytes
    safe: bool  # a read: asked again of a new owner
    at: float  # when it was sent (time.monotonic()), or 0.0 while it waits for a connection


def read_only_tools(answers: dict[str, dict[str, Any]]) -> frozenset[str]:
    """The tools the early answers' `tools/list` marks read-only."""
    tools = answers.get(early.HANDSHAKE, {}).get("tools/list", {}).get("tools", [])
    return frozenset(
        t["name"]
        for t in tools
        if isinstance(t, dict) and isinstance(t.get("annotations"), dict) and t["annotations"].get("readOnlyHint")
    )


class Bridge:
    def __init__(
        self,
        owner: Owner,
        answers: dict[str, dict[str, Any]],
        sock: _socket.socket | None,
        handed: Handover | None = None,
        back: list[str] | None = None,
        hooks: Callable[[dict[str, str]], str] | None = None,
    ) -> None:
        self._owner = owner
        self._hooks = hooks  # a hook call's answer here (`_answer_hook`): the first session's, while its owner starts
        self._answers = answers
        self._reads = read_only_tools(answers)
        self._state = threading.Condition()
        self._send = threading.Lock()  # whole lines to the owner
        self._out = threading.Lock()  # whole lines to the client
        self._sock: _socket.socket | None = None
        self._connecting = False
        self._declined: str | None = None
        self._pending: dict[str, Pending] = {}  # requests the owner has yet to answer, in the order sent
        self._queue: list[tuple[bytes, bool]] = []  # lines waiting for a connection (line, opens the session)
        self._opening: list[bytes] = []  # the session's opening lines, as sent: replayed to a new owner
        self._drop: set[str] = set()  # ids whose answers are not the client's (replays, the early initialize)
        self._answered: set[str] = set()  # ids the bridge answered itself: the owner's late answers are dropped
        self._acknowledged: set[str] = set()  # subscriptions acknowledged here
        self._replays = 0
        self._closed = False
        self._back = back  # the command that resumes this bridge: the session may go to the relay (`idle`)
        if handed is not None:
            self._opening = list(handed.opening)
        if sock is not None and handed is not None:
            self._go_on(sock, handed)
        elif sock is not None:
            self._attach(sock)
        else:
            self._reconnect()
        threading.Thread(target=self._watch, name="gitwiki-bridge-watch", daemon=True).start()

    # --- the lean relay (mcp.relay)

    def idle(self) -> None:
        """Called before each wait for the client's input, nothing of a line held: a session quiet for SETTLE
        with its owner up and nothing due either way goes on in the relay (the same process)."""
        if self._back is None:
            return
        import select

        waiting = select.poll()
        waiting.register(0, select.POLLIN)
        while not waiting.poll(int(SETTLE * 1000)):
            with self._state:
                if self._acknowledged:  # a subscription whose acknowledgements are dropped here: never the relay's
                    self._back = None
                    return
                if self._sock is None or not self._quiet():
                    continue
                folder = os.path.dirname(self._owner.address())  # the socket's folder, as `gitwiki serve` gives it
                relay.exec_relay(self._sock.fileno(), folder, self._back, self._owner.address(), self._opening)
                self._back = None  # it could not: the bridge goes on
                return

    def _quiet(self) -> bool:
        """Nothing the relay does not keep (holding _state): the session opened, no call out, no answer to drop,
        no line waiting for the owner."""
        return (
            not (self._connecting or self._closed or self._pending or self._queue or self._drop)
            and not (self._answered or self._acknowledged or self._declined)
            and any(INITIALIZED.encode() in line for line in self._opening)
        )

    # --- a session a relay handed over (mcp.relay)

    def _go_on(self, sock: _socket.socket, handed: Handover) -> None:
        """The owner connection still up (a call out long enough for the hang watch): the calls out stay out."""
        now = time.monotonic()
        with self._state:
            for line, age in handed.pending:
                message = json.loads(line)
                self._pending[json.dumps(message["id"])] = Pending(line, self._safe(message), now - age)
            self._sock = sock
            if handed.hung:  # the relay asked the owner's status, in vain: the calls out are answered now
                for key in list(self._pending):
                    self._refuse(key, self._hung(sock))
        self._reader(sock, handed.answers)

    def restart(self, pending: list[tuple[bytes, float]], version: str, note: str | None) -> None:
        """The calls out when the owner connection ended under the relay, as `_lost` treats them: reads asked again,
        writes answered with an error; an `initialize` the owner did not answer is answered here, as the bridge's
        first line is (`resume` left the unanswered opening out of the replay)."""
        for line, _ in pending:
            message = json.loads(line)
            if message.get("method") == INITIALIZE:
                answer = early.initialize_answer(line, version, note)
                if answer is not None:
                    self._write(framing.json_line(answer))
                    self.take(line, answered_early=True)
                    continue
            if self._safe(message):
                self.take(line)
            else:
                with self._state:
                    self._refuse(json.dumps(message["id"]), WRITE_LOST)

    # --- the client's side

    def take(self, line: bytes, answered_early: bool = False) -> None:
        """A line from the client: answered here, or passed to the owner."""
        message, reply = early.reply_to(line, self._answers)
        if message is None or reply is not None:
            if reply:
                self._write(reply)
            return
        method = message.get("method")
        key = json.dumps(message["id"]) if "id" in message else None
        opening = answered_early or method == INITIALIZED
        if method == early.LISTEN and key is not None:
            acknowledgement = early.acknowledge(line, self._answers)
            if acknowledgement is not None:
                with self._state:
                    self._acknowledged.add(key)
                self._write(acknowledgement[1])
                opening = True
        if key is not None and method == "tools/call" and self._answer_hook(message):
            return
        with self._state:
            if answered_early and key is not None:
                self._drop.add(key)
            elif key is not None and method is not None and not opening:
                if self._declined is not None:
                    self._refuse(key, self._declined)
                    return
                self._pending[key] = Pending(line, self._safe(message), 0.0)
        self._forward(line, opening)

    def close(self) -> None:
        """The client's input ended: wait (up to CLOSE_WAIT) for the answers still due, then hang up."""
        deadline = time.monotonic() + CLOSE_WAIT
        with self._state:
            self._closed = True
            while self._pending and (left := deadline - time.monotonic()) > 0:
                self._state.wait(left)
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def _answer_hook(self, message: dict[str, Any]) -> bool:
        """A hook's call (`agent_hook`, mcp/hook_event.py) while the owner this session started is not up yet:
        answered here by the hook's own code, as a `gitwiki-hook` process answers it (its own BM25 search), instead of
        after the owner's start (0.3 s under load). True when it is; never a call of another shape, or once the owner
        is connected (or has declined this session)."""
        params = message.get("params")
        if self._hooks is None or not isinstance(params, dict) or set(params) - {"name", "arguments"}:
            return False
        from gitwiki.mcp.hook_event import HOOK_TOOL  # a first session's only: a later one's bridge never loads it

        arguments = params.get("arguments")
        if params.get("name") != HOOK_TOOL or not isinstance(arguments, dict):
            return False
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()):
            return False
        with self._state:
            if self._sock is not None or self._declined is not None or self._closed:
                return False
        threading.Thread(target=self._hook, args=(message["id"], arguments), name="gitwiki-hook", daemon=True).start()
        return True

    def _hook(self, id_: object, arguments: dict[str, str]) -> None:
        from gitwiki.errors import UsageError

        assert self._hooks is not None
        try:
            text = self._hooks(arguments)
        except UsageError as e:  # the owner's answer to the same call: invalid params, with the reason
            self._write(framing.json_line(framing.error(id_, framing.INVALID_PARAMS, str(e))))
            return
        except Exception:  # the hook's own code logs what it meets; nothing a hook says is worth a failed call
            log.exception("a hook's call answered here failed")
            text = ""
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        self._write(framing.json_line({"jsonrpc": "2.0", "id": id_, "result": result}))

    def _safe(self, message: dict[str, Any]) -> bool:
        if message.get("method") != "tools/call":
            return True
        params = message.get("params")
        return isinstance(params, dict) and params.get("name") in self._reads

    def _write(self, line: bytes) -> None:
        with self._out:
            try:
                early.write_all(1, line)
            except OSError:
                pass  # the client is gone; its input's end will follow

    def _refuse(self, key: str, reason: str) -> None:
        """Answer request `key` with an error (called holding _state)."""
        self._pending.pop(key, None)
        self._answered.add(key)
        error = framing.error(json.loads(key), framing.INTERNAL_ERROR, reason)
        self._write(framing.json_line(error))
        self._state.notify_all()

    # --- the owner's side

    def _forward(self, line: bytes, opening: bool) -> None:
        with self._state:
            sock = self._sock
            if sock is None:
                self._queue.append((line, opening))
                return
            self._sent(line, opening)
        with self._send:
            try:
                sock.sendall(line)
            except OSError:  # the owner is gone: its reader meets the end after the answers still buffered
                pass

    def _sent(self, line: bytes, opening: bool) -> None:
        """Record `line` as on its way to the owner (holding _state)."""
        if opening:
            self._opening.append(line)
            return
        message = json.loads(line)
        key = json.dumps(message.get("id"))
        if "method" in message and key in self._pending:
            self._pending[key] = self._pending[key]._replace(at=time.monotonic())

    def _attach(self, sock: _socket.socket) -> None:
        """Make `sock` the owner connection: the opening replayed, then the lines that waited."""
        with self._state:
            lines = [self._replay(line) for line in self._opening]
            for line, opening in self._queue:
                self._sent(line, opening)
                lines.append(line)
            self._queue = []
            self._sock = sock
            self._connecting = False
        with self._send:
            try:
                sock.sendall(b"".join(lines))
            except OSError:  # as in _forward: the reader below meets the connection's end
                pass
        self._reader(sock, b"")

    def _reader(self, sock: _socket.socket, start: bytes) -> None:
        threading.Thread(target=self._read, args=(sock, start), name="gitwiki-bridge-read", daemon=True).start()

    def _replay(self, line: bytes) -> bytes:
        """An opening line for a new owner: a request gets an id of the bridge's own, whose answer is dropped."""
        message = json.loads(line)
        if "id" not in message:
            return line
        self._replays += 1
        new = f"{REPLAY}{self._replays}"
        self._drop.add(json.dumps(new))
        if message.get("method") == early.LISTEN:
            self._acknowledged.add(json.dumps(new))
        return framing.json_line({**message, "id": new})

    def _read(self, sock: _socket.socket, start: bytes) -> None:
        try:
            for line in early.read_lines(start, sock.fileno()):
                if self._keep(line):
                    self._write(line)
        except (OSError, ValueError):
            pass
        self._lost(sock)

    def _keep(self, line: bytes) -> bool:
        """Whether a line from the owner is the client's (answers to replays and to calls answered here are not)."""
        try:
            message = json.loads(line)
        except ValueError:
            return True
        if not isinstance(message, dict):
            return True
        with self._state:
            if "method" not in message and "id" in message:
                key = json.dumps(message["id"])
                if key in self._drop:
                    self._drop.discard(key)
                    return False
                if key in self._answered:
                    self._answered.discard(key)
                    return False
                self._pending.pop(key, None)
                self._state.notify_all()
            elif message.get("method") == early.ACKNOWLEDGED:
                meta = (message.get("params") or {}).get("_meta") or {}
                return json.dumps(meta.get(early.SUBSCRIPTION)) not in self._acknowledged
        return True

    def _lost(self, sock: _socket.socket) -> None:
        """The owner connection ended: reads are resent to the next owner, writes in flight answered."""
        with self._state:
            if self._sock is not sock:
                return
            self._sock = None
            resend = []
            for key, call in list(self._pending.items()):
                if call.at == 0.0:
                    continue  # still in the queue
                if call.safe:
                    resend.append((call.line, False))
                    self._pending[key] = call._replace(at=0.0)
                else:
                    self._refuse(key, WRITE_LOST)
            self._queue = resend + self._queue
            closed = self._closed
        sock.close()
        log.info("the owner connection ended; %d read(s) will be asked again", len(resend))
        if not closed:
            self._reconnect()

    def _reconnect(self) -> None:
        with self._state:
            if self._connecting:
                return
            self._connecting = True
        threading.Thread(target=self._connect_loop, name="gitwiki-bridge-connect", daemon=True).start()

    def _connect_loop(self) -> None:
        since = time.monotonic()
        delay = POLL
        while True:
            with self._state:
                if self._closed and not self._pending:
                    self._connecting = False
                    return
            got = self._owner.connect()
            if isinstance(got, _socket.socket):
                log.info("connected to the owner after %.0f ms", (time.monotonic() - since) * 1000)
                self._attach(got)
                return
            if isinstance(got, str):
                self._give_up(f"gitwiki's owner declined this session ({got}); run `gitwiki serve --alone`")
                return
            failed = self._owner.failed()
            if failed is not None:
                # The owner we started died before it listened. Not a wait for START_TIMEOUT (nor an owner
                # spawned again every few ms meanwhile), and not this session served alone: an owner ends at
                # start of what a session alone would end of too (the config, the index dir, the SDK). So the
                # calls waiting are answered at once with the owner's own last words, the handshake and the lists
                # still answer here, and the next call starts an owner again (its cause may be fixed by then).
                self._fail_waiting(failed)
                with self._state:
                    while not self._pending and not self._closed:
                        self._state.wait(PROBE_EVERY / 4)
                since = time.monotonic()
                continue
            self._owner.start()
            if time.monotonic() - since > START_TIMEOUT:
                self._fail_waiting(f"no gitwiki owner started in {START_TIMEOUT:.0f} s; see {self._owner.where()}")
            time.sleep(delay)
            # An owner starting answers 0.25-0.5 s after its spawn: polling every 10 ms that long (a connect to a
            # missing socket costs microseconds) reaches it at once, where doubling waits overshot it by up to 0.2 s.
            delay = POLL if time.monotonic() - since < FAST_POLL_FOR else min(delay * 2, 0.2)

    def _give_up(self, reason: str) -> None:
        with self._state:
            self._declined = reason
            self._connecting = False
            for key in list(self._pending):
                self._refuse(key, reason)
            self._queue = []

    def _fail_waiting(self, reason: str) -> None:
        with self._state:
            for key in list(self._pending):
                self._refuse(key, reason)
            self._queue = [(line, opening) for line, opening in self._queue if opening]

    def _watch(self) -> None:
        """Answer the calls of a hung owner: see the module's docstring."""
        while True:
            time.sleep(PROBE_EVERY / 2)
            now = time.monotonic()
            with self._state:
                if self._closed and not self._pending:
                    return
                out = {k: c for k, c in self._pending.items() if c.at and now - c.at >= PROBE_EVERY}
                sock = self._sock
            if not out or sock is None:
                continue
            if self._owner.alive(HANG_AFTER):
                overdue = [k for k, c in out.items() if now - c.at >= CALL_TIMEOUT]
                reason = f"gitwiki's owner has not answered this call in {CALL_TIMEOUT:.0f} s"
            else:
                overdue = list(out)
                reason = self._hung(sock)
            with self._state:
                for key in overdue:
                    if key in self._pending:
                        self._refuse(key, reason)

    def _hung(self, sock: _socket.socket) -> str:
        return (
            f"gitwiki's owner (pid {self._peer_pid(sock)}) does not answer: it is hung. `gitwiki serve "
            f"--stop` or kill it; the next call starts a new one (log: {self._owner.where()})"
        )

    @staticmethod
    def _peer_pid(sock: _socket.socket) -> str:
        try:
            found = socket_peer(sock)
        except OSError:
            return "?"
        return "?" if found is None else str(found[0])


def run(
    owner: Owner,
    sock: _socket.socket | None,
    version: str,
    note: str | None = None,
    back: list[str] | None = None,
    hooks: Callable[[dict[str, str]], str] | None = None,
) -> int:
    """Bridge this process's stdin and stdout to the owner (`sock`: a session already open, or None to get one;
    `back`: the command that resumes a bridge, when the session may go on in the relay; `hooks`: a hook call's
    arguments to its answer, for the calls that come before the owner is up)."""
    first = early.read_first_line()
    if not first:
        if sock is not None:
            sock.close()
        return 0
    line, _, rest = first.partition(b"\n")
    answer = early.initialize_answer(line, version, note)
    if answer is not None:
        early.write_all(1, framing.json_line(answer))
    bridge = Bridge(owner, early.early_answers(version, note), sock, back=back, hooks=hooks)
    start = first
    if answer is not None:
        bridge.take(line + b"\n", answered_early=True)
        start = rest
    return _serve(bridge, start)


def resume(owner: Owner, handed: Handover, version: str, note: str | None = None) -> int:
    """Go on with the session a relay handed this process (`mcp.relay`): the owner connection it kept, or a new
    owner, with the session's opening and the calls out."""
    sock = _socket.socket(fileno=handed.sock) if handed.sock >= 0 else None
    if sock is None:  # what the owner never answered is answered or asked again by `restart`, not replayed
        out = {line for line, _ in handed.pending}
        handed.opening = [line for line in handed.opening if line not in out]
    bridge = Bridge(owner, early.early_answers(version, note), sock, handed)
    if sock is None:
        bridge.restart(handed.pending, version, note)
    return _serve(bridge, handed.held)  # a client's input that had ended reads as ended again


def _serve(bridge: Bridge, start: bytes) -> int:
    """Pass the client's lines (`start`, then stdin's) to `bridge` until stdin ends."""
    try:
        for message in early.read_lines(start, 0, framing.MAX_LINE, bridge.idle):
            try:
                bridge.take(message)
            except (ValueError, KeyError, TypeError):  # a bug here must not end the session
                log.exception("could not pass a line on")
    except OSError:
        pass
    finally:
        bridge.close()
    return 0
