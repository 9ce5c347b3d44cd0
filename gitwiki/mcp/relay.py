"""A later session's bridge while all goes well: a byte pipe between the client and a running owner, in a lean
interpreter.

`gitwiki serve` in a checkout whose owner is up (`serve.owner.connect` took the session) replaces itself with this
module under `python -I -S` (`exec_relay`), and so does the bridge of the session that started the owner once that
session has opened and gone quiet (`bridge.Bridge.idle`): no site, none of the bridge's imports (typing, json, re,
threading, pathlib, the early answers), a few MiB less per session (docs/research/sessions-bridge.md). Every line
goes to the owner, whose session answers the handshake, the lists and the lines framing refuses as the bridge does
(and as a direct server does). What it keeps: the session's opening lines and the requests the owner has yet to
answer.

Anything out of the ordinary hands the session to the full bridge (`mcp.bridge`): the owner connection's end, an
owner that does not answer its status while a call is out (asked as the bridge asks it: PROBE_EVERY, HANG_AFTER), a
call out for CALL_TIMEOUT, a client line over MAX_HELD, an error here. It writes what it kept to a file and
execs `python -m gitwiki serve` (the same pid, stdin and stdout), which goes on from there as `bridge.resume`: a
new owner, reads asked again, writes in flight answered with an error, a hung owner's calls answered in time.

Only the C modules below are imported (and `serve.wire`, over `_json`): this file is run by an interpreter with
nothing else loaded.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # `signal` is the C module and enum: 1 MiB here
import _thread
import os
import select
import sys
import time

from gitwiki.serve import wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# The relay's and the bridge's times (mcp.bridge imports them):
PROBE_EVERY = 1.0  # while a call is out for this long, the owner's status is asked
HANG_AFTER = 5.0  # an owner that does not answer its status in this is hung (the bridge says so)
CALL_TIMEOUT = 300.0  # a call the owner answers status for but never answers: as long as the CLI waits
CLOSE_WAIT = 10.0  # after the client's input ends, how long answers still due are waited for
MAX_HELD = 1 << 20  # a client line longer than this goes to the bridge, which caps lines (framing.MAX_LINE)
RESUME = "GITWIKI_RELAY_RESUME"  # "STATE_FD SOCKET_FD" (-1: the connection ended) for the bridge taking over
STATE = b"gitwiki-relay 1\n"
# The lines that open a session: a new owner gets them again (the bridge replays them, bridge._replay).
OPENING = ("initialize", "notifications/initialized", "subscriptions/listen")


def message(line: bytes) -> dict[str, object] | None:
    """The JSON object a line starts with; None for anything else (the owner answers what framing refuses)."""
    try:
        text = line.decode("utf-8")
        start = len(text) - len(text.lstrip(wire.WHITESPACE))
        value, _ = wire.scan(text, start)
    except (UnicodeDecodeError, StopIteration, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def key(value: object) -> str | None:
    """A request id as a dict key (the owner echoes it as sent: 1 and "1" are two ids)."""
    return repr(value) if value is None or isinstance(value, (str, int, float)) else None


class Relay:
    def __init__(self, sock: int, state_dir: str, back: Sequence[str], address: str) -> None:
        self._sock = sock
        self._address = address  # the owner's socket, where its status is asked
        self._probed = 0.0  # when the owner last answered its status
        self._state_dir = state_dir
        self._back = list(back)
        self._opening: list[bytes] = []
        self._pending: dict[str, tuple[bytes, float]] = {}  # id → (line, when sent): in the order sent
        self._held = b""  # the client's line under way
        self._answers = b""  # the owner's line under way
        self._closed_at = 0.0  # when the client's input ended
        self._writing = 0  # answers taken off `_pending` and still being written to the client
        self.lock = _thread.allocate_lock()  # the state above, and a hand-over waits for a line under way

    def run(self) -> None:
        _thread.start_new_thread(self._owner_side, ())
        poll = select.poll()
        poll.register(0, select.POLLIN)
        while True:
            with self.lock:
                now = time.monotonic()
                if self._closed_at and (not (self._pending or self._writing) or now - self._closed_at > CLOSE_WAIT):
                    return
                oldest = min((at for _, at in self._pending.values()), default=now)
                if now - oldest >= CALL_TIMEOUT:
                    self.hand_over()
                due = [max(oldest, self._probed) + PROBE_EVERY] if self._pending else []
            if due and now >= due[0]:
                # a call out for a second: is the owner at work or hung? Asked without the lock (answers go on)
                if not alive(self._address, HANG_AFTER):
                    with self.lock:
                        self.hand_over(hung=True)
                self._probed = time.monotonic()
                continue
            if self._closed_at:
                due.append(now + 0.02)  # the answers still due come on the other thread
            wait = -1 if not due else max(0, int((min(due) - now) * 1000) + 1)
            if poll.poll(wait) and not self._closed_at:
                with self.lock:
                    lines = self._from_client()
                if lines is None:
                    poll.unregister(0)
                    self._closed_at = time.monotonic()
                elif lines and not self._send(lines):  # not holding the lock: the owner may be writing to us
                    with self.lock:
                        self.hand_over(ended=True)

    def _from_client(self) -> bytes | None:
        """The client's whole lines read now, noted (b"": none yet); None when its input ended."""
        data = os.read(0, 65536)
        if not data:
            last, self._held = self._held, b""
            if last:  # a last line without its newline: passed on as the bridge does
                self._note(last, time.monotonic())
                if not self._send(last):
                    self.hand_over(ended=True)
            return None
        *lines, self._held = (self._held + data).split(b"\n")
        now = time.monotonic()
        for line in lines:
            self._note(line + b"\n", now)
        whole = b"".join(line + b"\n" for line in lines)
        if len(self._held) > MAX_HELD:  # the lines before it go first: the bridge sends nothing noted here
            self.hand_over(ended=not self._send(whole))
        return whole

    def _note(self, line: bytes, now: float) -> None:
        found = message(line)
        if found is None:
            return
        method = found.get("method")
        if method in OPENING:
            self._opening.append(line)
        if isinstance(method, str) and "id" in found and (name := key(found["id"])) is not None:
            self._pending[name] = (line, now)

    def _send(self, data: bytes) -> bool:
        """Write `data` to the owner; False when the connection has ended."""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._sock, view) :]
        except OSError:
            return False
        return True

    def _owner_side(self) -> None:
        """The owner's lines to the client, on a thread of their own: a blocking read wakes at once."""
        while True:
            try:
                data = os.read(self._sock, 65536)
            except OSError:
                data = b""
            with self.lock:
                if not data:
                    self.hand_over(ended=True)
                *lines, self._answers = (self._answers + data).split(b"\n")
                for line in lines:
                    found = message(line)
                    if found is not None and "method" not in found and (name := key(found.get("id"))) is not None:
                        self._pending.pop(name, None)
                self._writing += bool(lines)
            if lines:
                # not holding the lock (a client that is not reading would stop the other thread too); the end of
                # the session and a hand-over wait for `_writing` instead
                out = memoryview(b"".join(line + b"\n" for line in lines))
                try:
                    while out:
                        out = out[os.write(1, out) :]
                except OSError:
                    pass  # the client is gone; its input's end follows
                with self.lock:
                    self._writing -= 1

    def state(self, hung: bool = False) -> bytes:
        """What the bridge taking over reads back (`handover`)."""
        now = time.monotonic()
        pending = [(line, now - at) for line, at in self._pending.values()]
        return encode(self._opening, pending, self._held, self._answers, hung)

    def hand_over(self, ended: bool = False, hung: bool = False) -> None:
        """Exec the full bridge with what this relay kept (see the module's docstring). Called holding the lock."""
        while self._writing:  # an answer on its way to the client goes whole, before this process is replaced
            self.lock.release()
            time.sleep(0.001)
            self.lock.acquire()
        fd = state_file(self._state_dir, self.state(hung))
        if ended:
            os.close(self._sock)
        os.environ[RESUME] = f"{fd} {-1 if ended else self._sock}"
        os.execv(self._back[0], self._back)


def encode(
    opening: Sequence[bytes], pending: Sequence[tuple[bytes, float]], held: bytes, answers: bytes, hung: bool = False
) -> bytes:
    """A session's state as `parse` reads it back: the opening lines, the calls out (line, seconds out), the
    client's and the owner's lines under way, each length-prefixed; whether the owner was found hung."""
    state = [STATE, b"%d %d\n" % (len(opening), len(pending))]
    state += [b"%d\n" % len(line) + line for line in opening]
    state += [b"%d %.6f\n" % (len(line), age) + line for line, age in pending]
    state.append(b"%d %d %d\n" % (len(held), len(answers), hung) + held + answers)
    return b"".join(state)


def state_file(folder: str, data: bytes) -> int:
    """An unlinked file holding `data`, its descriptor at the start and inheritable (for the process exec'd next)."""
    for place in (folder, os.environ.get("TMPDIR") or "/tmp"):
        path = f"{place}/relay-{os.getpid()}-{time.monotonic_ns()}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except OSError:
            continue
    else:
        raise OSError(f"a session's state has nowhere to go ({folder} and the temp dir are not writable)")
    os.unlink(path)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    return fd


def alive(path: str, timeout: float) -> bool:
    """Whether the owner at `path` answers a status request within `timeout` (as `serve.owner.ask`)."""
    from gitwiki.serve import address

    try:
        found = message(address.ask(path, "status", timeout, timeout))
    except (OSError, ValueError):
        return False
    return found is not None and "declined" not in found


class Handover:
    """What a relay handed the bridge taking over (`handover`)."""

    def __init__(
        self,
        opening: list[bytes],
        pending: list[tuple[bytes, float]],
        held: bytes,
        answers: bytes,
        sock: int,
        hung: bool = False,
    ) -> None:
        self.opening = opening  # the session's opening lines, as the client sent them
        self.pending = pending  # the requests the owner had yet to answer: (line, seconds since sent)
        self.held = held  # the client's line under way
        self.answers = answers  # the owner's line under way
        self.sock = sock  # the owner connection's descriptor, -1 when it had ended
        self.hung = hung  # the owner did not answer its status: the calls out are answered with the reason


def handover() -> Handover | None:
    """The session a relay handed this process (RESUME in its environment, removed so that no owner this process
    starts inherits it); None when none was, or when what the variable names is not a relay's state (set by hand:
    the session then starts as any other)."""
    value = os.environ.pop(RESUME, None)
    if value is None:
        return None
    try:
        state_fd, sock = (int(part) for part in value.split())
        with os.fdopen(state_fd, "rb") as file:
            data = file.read(64 << 20)  # MAX_HELD and the calls out: far less
        return parse(data, sock)
    except (ValueError, OSError, IndexError):
        return None


def parse(data: bytes, sock: int) -> Handover:
    """A relay's `state()` read back."""
    if not data.startswith(STATE):
        raise ValueError("not a relay's state")
    at = len(STATE)

    def field() -> list[bytes]:
        nonlocal at
        end = data.index(b"\n", at)
        words, at = data[at:end].split(), end + 1
        return words

    def take(size: int) -> bytes:
        nonlocal at
        chunk, at = data[at : at + size], at + size
        return chunk

    openings, pendings = (int(word) for word in field())
    opening = [take(int(field()[0])) for _ in range(openings)]
    pending = []
    for _ in range(pendings):
        size, age = field()
        pending.append((take(int(size)), float(age)))
    held, answers, hung = (int(word) for word in field())
    return Handover(opening, pending, take(held), take(answers), sock, bool(hung))


def main(argv: Sequence[str]) -> None:
    """`SOCKET_FD STATE_DIR OPENING_FD ADDRESS BACK...`: relay until the client's input ends (and its answers are
    in)."""
    # as the bridge: SIGINT and SIGTERM end it at once, of the signal, without a traceback
    for signum in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(signum, _signal.SIG_DFL)
    # The owner a first session started is this process's child, and nothing here waits for it: the kernel reaps it
    # (no zombie when it ends while the relay runs; the bridge taking over sets this back)
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)
    relay = Relay(int(argv[0]), argv[1], argv[4:], argv[3])
    if int(argv[2]) >= 0:  # a bridge's session, opened: its opening lines (exec_relay)
        with os.fdopen(int(argv[2]), "rb") as file:
            relay._opening = parse(file.read(), -1).opening
    try:
        relay.run()
    except Exception as e:  # a bug here must not end the session: the bridge takes it over
        sys.stderr.write(f"gitwiki serve: the relay failed ({e!r}); the bridge takes the session over\n")
        with relay.lock:
            relay.hand_over()
    os._exit(0)  # the owner's side may be in a read: no interpreter teardown beside it


def exec_relay(sock: int, state_dir: str, back: Sequence[str], address: str, opening: Sequence[bytes] = ()) -> None:
    """Replace this process with the relay on the owner connection `sock` (`back`: the command that resumes the
    full bridge; `address`: the owner's socket, for its status; `opening`: the lines that opened the session, when a
    bridge opened it). Returns only when the relay cannot run here; the caller bridges as before."""
    import gitwiki

    root = os.path.dirname(os.path.dirname(os.path.abspath(gitwiki.__file__)))
    if not hasattr(select, "poll") or not os.path.isfile(os.path.join(root, "gitwiki", "mcp", "relay.py")):
        return
    # appended: the standard library first, whatever sits beside gitwiki in site-packages
    boot = f"import sys; sys.path.append({root!r}); from gitwiki.mcp.relay import main; main(sys.argv[1:])"
    os.set_inheritable(sock, True)
    try:
        state = state_file(state_dir, encode(opening, [], b"", b"")) if opening else -1
        argv = [sys.executable, "-I", "-S", "-c", boot, str(sock), state_dir, str(state), address, *back]
        os.execv(sys.executable, argv)
    except OSError:
        os.set_inheritable(sock, False)
