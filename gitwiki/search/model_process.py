"""A new owner's model in a short-lived process of its own, for the searches that come before the owner's own copy.

A first search with no owner up waited for everything the new owner's interpreter runs, one thread at a time:
numpy's and onnxruntime's imports, the tokenizer, pygit2's and gitwiki's own imports, the vector matrix's read
(docs/research/sessions-start.md). Forked at the owner's start, this process takes the model's share to the second
core and does the dense half of the owner's first searches there: the query's vector and its ranking over the
view's vectors, read from the index by a connection of its own. The owner, which then needs neither numpy nor the
model for them, fuses that ranking with its BM25 one. The same model, code and rows give the same floats. Once its
warm-up is done the owner loads the model itself (`embed.own_model`) and this process ends at its socket's end: the
owner's RSS is what it was, and this process lives a second or two.

Frames on a socket pair: four bytes of length, then one byte of kind and the request: `q` a query's text (the
answer: its float32 vector), `r` a ranking's JSON (the answer: the ranking's JSON, or null). The child's first
frame says `model id NUL dim` once its model loads, or why it did not.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki.config import EmbeddingsConfig
from gitwiki.errors import EmbeddingUnavailable
from gitwiki.index import embed
from gitwiki.index.onnx_embed import model_key, on_disk
from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np

    from gitwiki.index.embed import Embedder
    from gitwiki.search.searcher import Searcher

# Its name in ps and top (its command line is the owner's).
NAME = b"gitwiki-model"
_SIZE = struct.Struct("!I")
MAX_FRAME = 1 << 26  # a ranking request names each blob of a view: 64 MiB holds 1.5 million
ASKED = 8  # queries the owner embeds again once it has its own copy
LOAD_TIMEOUT = 120.0  # seconds for the model's load there (a first int8 copy takes ~2 s; a loaded host, more)
ASK_TIMEOUT = 30.0  # seconds for one answer: a hung process is ended and the owner loads its own copy


def load_for_owner(start: str, read_ahead: bool = True) -> None:
    """`embed.load_in_background` for a new owner, at its start: the model loads in a process of its own
    (`ModelProcess`) beside the owner's imports rather than between them, and serves the owner's first searches.
    A thread as `load_in_background`'s where this process may not fork. `read_ahead`: that process reads the vectors
    of each corpus as indexed while its model loads (an owner's first page search); a CLI memory search, whose view
    is the memory's, goes without (15 ms less at 10,000 entries, docs/research/memory-scale.md)."""
    wanted = embed.wanted(start)
    if wanted is None:
        return
    # Only a model whose files are there: one that cannot load is then known before any search, as the thread's
    # load knows it (a lent model that fails later, a damaged file, leaves its first searches lexical).
    lender = ModelProcess.fork(wanted, read_ahead) if on_disk(wanted.settings) is not None else None
    if lender is None:
        embed.load_in_background(start)
    else:
        embed.lend(wanted.settings, lender)


class ModelProcess:
    """The owner's side: an `embed.Lender` whose model answers over a socket pair."""

    def __init__(self, config: EmbeddingsConfig, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._config = config
        self._sock = sock
        self._lock = threading.Lock()
        self._said: bool | None = None  # whether the model loaded there, once it has said
        self._open = True  # until the socket is closed and the child reaped: its pid is not signalled after that
        self._lent = Lent(config, self, model_key(config))

    @classmethod
    def fork(cls, wanted: embed.Wanted, read_ahead: bool = True) -> ModelProcess | None:
        """Fork the model's process; None where this process may not fork (threads running: only a process of
        one thread forks and runs Python in the child) or the fork fails (the owner then loads the model)."""
        if threading.active_count() != 1 or not hasattr(os, "fork"):
            return None
        ours, theirs = socket.socketpair()
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            code = 0
            try:
                ours.close()
                _serve(wanted, theirs, read_ahead)
            except BaseException:  # the owner loads the model itself and words what went wrong
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        return cls(wanted.settings, pid, ours)

    def embedder(self) -> Lent | None:
        """The model's embedder, without waiting for its load; None once it has said it did not load."""
        return None if self._said is False else self._lent

    def ready(self) -> bool:
        """Wait for the child's model; False when it did not load, is another model than asked, the child is gone
        or did not say within LOAD_TIMEOUT (the owner then loads its own)."""
        with self._lock:
            if self._said is None:
                try:
                    self._sock.settimeout(LOAD_TIMEOUT)
                    model_id, _, dim = _read(self._sock).decode("utf-8").partition("\0")
                    self._said = model_id == self._lent.model_id and dim.isdigit()
                    self._lent.dim = int(dim) if self._said else 0
                    self._sock.settimeout(ASK_TIMEOUT)
                except (OSError, ValueError, EOFError):
                    self._end(kill=True)
            return bool(self._said)

    def ask(self, kind: bytes, request: bytes) -> bytes:
        """The child's answer; a child that fails to give it (gone, or hung past ASK_TIMEOUT) is ended, and its
        model no longer lent."""
        with self._lock:
            if not self._open:
                raise EOFError  # closed by the owner's own load meanwhile
            try:
                self._sock.sendall(_framed(kind + request))
                return _read(self._sock)
            except (OSError, ValueError, EOFError):
                self._end(kill=True)
                raise

    def tell(self, kind: bytes, request: bytes) -> None:
        """A frame the child does not answer; not sent while another call holds the socket (a head start only)."""
        if self._lock.acquire(blocking=False):
            try:
                if self._open:
                    self._sock.sendall(_framed(kind + request))
            except OSError:
                pass  # the child is gone: the next ask says so
            finally:
                self._lock.release()

    def close(self) -> None:
        """The child ends at its socket's end (after its load, if it still loads)."""
        with self._lock:
            self._end(kill=False)

    def _end(self, kill: bool) -> None:
        """Once: the socket closed, the child killed where it failed or hung, and reaped; the model no longer lent.
        Under the lock."""
        if not self._open:
            return
        self._open = False
        self._said = False
        self._sock.close()
        if kill:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
        _reap(self.pid)


class Lent:
    """An `Embedder` for the model of a `ModelProcess`, and a `searcher.RanksElsewhere`: queries embedded and
    ranked there until this process has its own copy, then here. Documents (an index's work) wait for that copy."""

    def __init__(self, config: EmbeddingsConfig, process: ModelProcess, model_id: str) -> None:
        self._config = config
        self._process = process
        self.model_id = model_id  # the model asked for: a process that loaded another is not used
        self.dim = 0  # once it has loaded
        # the last queries embedded there: the owner embeds them again with its own copy (operations.warm)
        self.asked: OrderedDict[str, None] = OrderedDict()

    def _asked(self, query: str) -> None:
        self.asked[query] = None
        self.asked.move_to_end(query)
        while len(self.asked) > ASKED:
            self.asked.popitem(last=False)

    def embed_query(self, text: str) -> np.ndarray:
        if embed.lent(self._config):
            self._asked(text)
            with contextlib.suppress(OSError, EOFError, ValueError):
                np = numpy()

                return np.frombuffer(self._process.ask(b"q", _text(text)), dtype=np.float32).copy()
        return self._own().embed_query(text)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._own().embed_documents(texts)

    def rank(
        self, index_dir: str, key: str, blobs: list[str], query: str, pages: int, depth: int
    ) -> tuple[list[tuple[int, str, float]], float, float] | None:
        """`Searcher.dense_ranking` of the query over the view `key` (its pages' `blobs`), run in the model's
        process: (chunk id, blob, cosine) best first, and the cosine's mean and deviation over every chunk. None
        when it cannot (its own copy loaded here, the process gone, no vectors there): the caller ranks here."""
        if not embed.lent(self._config):
            return None
        self._asked(query)
        request = {"index": index_dir, "key": key, "blobs": blobs, "query": query, "pages": pages, "depth": depth}
        try:
            got = json.loads(self._process.ask(b"r", json.dumps(request).encode("utf-8", "surrogatepass")))
        except (OSError, EOFError, ValueError):
            return None
        if not isinstance(got, dict):
            return None
        return [(int(c), str(b), float(s)) for c, b, s in got["pool"]], float(got["mean"]), float(got["std"])

    def read_ahead(self, index_dir: str, key: str, blobs: list[str], depth: int) -> None:
        """Name the view the first `rank` will ask about, so that its vectors are read there while the model loads."""
        request = {"index": index_dir, "key": key, "blobs": blobs, "depth": depth}
        self._process.tell(b"a", json.dumps(request).encode("utf-8", "surrogatepass"))  # not once it has ended

    def _own(self) -> Embedder:
        """This process's own copy, loaded now if it must be (the model's process ended, or did not load it)."""
        own = embed.loaded(self._config) or embed.own_model(self._config)
        if own is None:
            raise EmbeddingUnavailable(embed.unavailable(self._config) or f"model {self._config.model!r} does not load")
        return own


def _serve(wanted: embed.Wanted, sock: socket.socket, read_ahead: bool = True) -> None:
    """The child: hold nothing of the owner's (its lock above all: a dead owner's next one must start), load the
    model, answer until the owner closes its end."""
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else ():
        if int(name) > 2 and int(name) != sock.fileno():
            with contextlib.suppress(OSError):
                os.close(int(name))
    _let_go_of_stdio(sock.fileno())
    with contextlib.suppress(OSError), open("/proc/self/comm", "wb") as comm:
        comm.write(NAME)
    config = wanted.settings
    # numpy's and onnxruntime's imports first, alone: on a thread beside the vectors' read they took twice as long,
    # each waiting for the GIL the other held. Then the model on a thread: onnxruntime builds its session without
    # the GIL, and the vectors are read meanwhile.
    with contextlib.suppress(ImportError):
        numpy()
        import onnxruntime  # noqa: F401
    loaded: list[Embedder | None] = []
    loading = threading.Thread(target=lambda: loaded.append(embed.load_silently(config)), name="gitwiki-model")
    loading.start()
    rankers = _Rankers(wanted, read_ahead)
    # The view the caller's first ranking reads, when it named it already ('a'): read while the model loads.
    while select.select([sock], [], [], 0)[0]:
        frame = _read(sock)
        if frame[:1] == b"a":
            rankers.ahead(frame[1:])
    loading.join()
    embedder = loaded[0] if loaded else None
    if embedder is None:
        sock.sendall(_framed((embed.unavailable(config) or "no model").encode("utf-8", "replace")))
        return
    sock.sendall(_framed(f"{embedder.model_id}\0{embedder.dim}".encode()))
    while True:
        try:
            frame = _read(sock)
        except EOFError:
            return
        if frame[:1] == b"a":
            rankers.ahead(frame[1:])
            continue
        if frame[:1] == b"q":
            np = numpy()

            answer = np.asarray(embedder.embed_query(frame[1:].decode("utf-8", "surrogatepass")), np.float32).tobytes()
        else:
            answer = json.dumps(rankers.rank(embedder, json.loads(frame[1:]))).encode()
        sock.sendall(_framed(answer))


def _let_go_of_stdio(keep: int) -> None:
    """The caller's stdin and stdout, and its stderr unless that is a file (an owner's log), replaced by /dev/null:
    whoever reads a CLI search's output through a pipe waits for every writer to close it, and this process may
    outlive the search (its model still loading after the search ended on an error). `keep`: the socket, which
    is one of them where the caller had that one closed."""
    import stat

    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)  # itself 0, 1 or 2 where the caller had that one closed
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                if fd not in (null, keep) and (fd != 2 or not stat.S_ISREG(os.fstat(2).st_mode)):
                    os.dup2(null, fd)
        if null > 2:
            os.close(null)


class _Rankers:
    """The child's searchers, one per index asked about, each keeping its matrices as the owner's would. The
    owner's own index is opened at once, and the vectors of each corpus as indexed read ahead: a first search's
    view is that, or differs by the pages edited since."""

    def __init__(self, wanted: embed.Wanted, read_ahead: bool = True) -> None:
        from gitwiki.search.searcher import CorpusView

        self._searchers: dict[tuple[str, int], Searcher | None] = {}
        self._model = model_key(wanted.settings)
        if not read_ahead:
            return
        try:
            searcher = self._searcher(str(wanted.index_dir), wanted.depth)
            if searcher is None:
                return
            model = model_key(wanted.settings)
            with searcher.store.read():
                for corpus in wanted.corpora:
                    state = searcher.store.state(corpus)
                    if state is not None and state.model == model:
                        # keyed as the owner keys a clean tree's view (sources.local): its first search's matrix is
                        # this one; another view of the corpus takes its rows
                        pages = searcher.store.pages(corpus)
                        searcher.read_ahead(
                            CorpusView(corpus, state.commit, pages, (), f"{corpus}:{state.tree}"), model
                        )
        except Exception:  # only a head start: a request reads what it needs, or says it cannot
            self._searchers.clear()

    def _searcher(self, index_dir: str, depth: int) -> Searcher | None:
        from gitwiki.index.store import Store
        from gitwiki.search.searcher import Searcher

        if (index_dir, depth) not in self._searchers:
            store = Store.open_existing(Path(index_dir))
            self._searchers[index_dir, depth] = None if store is None else Searcher(store, depth=depth)
        return self._searchers[index_dir, depth]

    def ahead(self, request: bytes) -> None:
        """Read the vectors of the view `rank` will be asked about (`Lent.read_ahead`); a failure leaves them to it."""
        from gitwiki.search.searcher import CorpusView

        with contextlib.suppress(Exception):
            asked = json.loads(request)
            searcher = self._searcher(str(asked["index"]), int(asked["depth"]))
            if searcher is not None:
                with searcher.store.read():
                    view = CorpusView("", "", {b: b for b in asked["blobs"]}, (), str(asked["key"]))
                    searcher.read_ahead(view, self._model)

    def rank(self, embedder: Embedder, asked: dict[str, Any]) -> dict[str, Any] | None:
        searcher = self._searcher(str(asked["index"]), int(asked["depth"]))
        if searcher is None:
            return None
        query: str = asked["query"]
        vector: Callable[[], np.ndarray] = lambda: embedder.embed_query(query)  # noqa: E731
        with searcher.store.read():
            got = searcher.dense_ranking(
                asked["key"], embedder.model_id, dict.fromkeys(asked["blobs"], ""), vector, int(asked["pages"])
            )
        if got is None:
            return None
        pool, background = got
        return {"pool": pool, "mean": background.mean, "std": background.std}


def _reap(pid: int) -> None:
    """Wait for the child on a thread: it leaves no zombie, and nobody waits for its end."""

    def wait() -> None:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)

    threading.Thread(target=wait, name="gitwiki-model-reaper", daemon=True).start()


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _framed(data: bytes) -> bytes:
    return _SIZE.pack(len(data)) + data


def _read(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(_exactly(sock, _SIZE.size))
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    return _exactly(sock, size)


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
