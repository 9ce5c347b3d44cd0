"""`gitwiki serve`'s own logic: a signal that comes as the socket appears still finds the socket's close."""

from __future__ import annotations

import os
import signal

from gitwiki.commands import serve


def test_a_sigterm_sent_as_the_socket_appears_is_handled_after_its_close_is_registered():
    closing: list = []
    seen: list[int] = []

    class Server:
        def close(self) -> None:
            pass

    def handler(signum: int, _frame: object) -> None:
        seen.append(len(closing))  # what `_stop_on_signals`' handler would close

    def listen() -> Server:
        os.kill(os.getpid(), signal.SIGTERM)  # the client saw the socket file and signals at once
        return Server()

    before = signal.signal(signal.SIGTERM, handler)
    try:
        server = serve._listen(closing, listen)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert seen == [1] and closing == [server.close]
