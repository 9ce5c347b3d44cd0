"""The owner's side of `gitwiki-hook TYPE` (agent_hooks/forward.py): the hook's own handler run here, where its code
is loaded, on the event and directory the hook process sent.

The request is checked as a `gitwiki ground` request is (the server's refusal: checkout, environment and
configuration). The answer is the one `agent_hooks.run.run` gives in the hook process, which reads and writes the
same files (the session state, the kept briefing, the caches, the log) in the same index dir.

The owner says it has started (`RUNNING`, a line of its own) before it runs the hook, and runs none that the hook
has given up on (`by`): the hook waits a short while for that line, and once it came, for the answer. So a hung
owner costs a hook a fraction of a second, and a hook never answers by itself what the owner is answering too (the
session state would take the second answer for a duplicate, or its notes as shown already). It runs on the
connection's thread without the server's lock: it opens the index itself, as a hook process does, and the prompt
hook's search asks this server over its socket, which takes that lock. The hook code is the owner's to pass in
(`gitwiki serve` does): this folder does not import the hooks, which import its client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("gitwiki.socket")

RUNNING = b'{"running": true}\n'


def answer(
    message: dict[str, Any],
    refusal: Callable[[dict[str, Any]], str | None],
    run: Callable[[str, bytes, str], str | None] | None,
    send: Callable[[bytes], object],
) -> dict[str, Any]:
    """The reply to a hook request: the hook's stdout and exit status, or `declined` with the reason (the hook then
    answers by itself). `refusal` is the server's identity check; `run` the hook code (None: hooks are not run
    here), which answers None for a hook type it does not know; `send` writes to the hook's connection (RUNNING,
    before the hook runs: an OSError there, the hook is gone, and nothing runs)."""
    name, event, cwd, by = message.get("hook"), message.get("event"), message.get("cwd"), message.get("by")
    deadline = float(by) if isinstance(by, int | float) and not isinstance(by, bool) else None
    reason = "this server runs no hooks" if run is None else refusal(message)
    if reason is None and (
        not isinstance(name, str)
        or not isinstance(event, str)
        or not isinstance(cwd, str)
        or "\0" in cwd
        or deadline is None
    ):
        reason = "not a hook request this version knows"
    if reason is None and time.time() >= (deadline or 0.0):  # the hook gave up on this owner: it answers itself
        reason = "too late"
    if reason is not None:
        log.info("declined a hook: %s", reason)
        return {"declined": reason}
    assert run is not None and isinstance(name, str) and isinstance(event, str) and isinstance(cwd, str)
    send(RUNNING)
    try:
        found = run(name, event.encode("utf-8", "surrogatepass"), cwd)
    except Exception as e:  # run logs its own errors; anything past it is the owner's, and the hook tries itself
        log.exception("a hook over the socket crashed")
        return {"declined": f"internal error ({type(e).__name__})"}
    if found is None:
        return {"declined": f"not a hook this version knows: {name}"}
    return {"stdout": found, "exit_code": 0}
