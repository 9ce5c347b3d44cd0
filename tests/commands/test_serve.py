"""`gitwiki serve`'s own logic: a signal that comes as the socket appears still finds the socket's close."""

from __future__ import annotations

import signal
import subprocess
import sys

# A server process in miniature: the signal handlers `serve` installs, another thread (as the owner's model load
# or the handshake's reader: a process's signal may go to any thread), and a `listen` during which the client,
# seeing the socket file, sends SIGTERM; the server's close says so on stdout.
SCRIPT = """
import os, signal, threading, time
from gitwiki.commands import serve

threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
closing = []
hold = serve._stop_on_signals(threading.Lock(), closing)

class Server:
    def close(self):
        print("closed", flush=True)

def listen():
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):  # bytecodes enough for Python to run a pending handler
        pass
    return Server()

serve._listen(hold, closing, listen)
time.sleep(5)
print("not stopped", flush=True)
"""


def test_a_sigterm_sent_as_the_socket_appears_closes_the_socket_and_ends_the_server():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM, done.stderr
    assert done.stdout == "closed\n"
