"""Text embedders behind one small Protocol. fastembed's models (ONNX on CPU) are the ones we ship: loaded by
`onnx_embed` when it reproduces the model and its files are on disk, by fastembed otherwise.

Nothing heavy is imported at module import time: fastembed and onnxruntime load on first use, so the
hook and lint paths never pay for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from gitwiki.config import EmbeddingsConfig
from gitwiki.errors import EmbeddingUnavailable, GitwikiError
from gitwiki.fs import atomic_write
from gitwiki.index.onnx_embed import OnnxEmbedder, lean_embedder, normalized, quantized
from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np
    from fastembed import TextEmbedding


class Embedder(Protocol):
    model_id: str

    @property
    def dim(self) -> int: ...  # read-only: a query vector's model still loading knows it once loaded

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...  # (n, dim) float32, L2-normalized

    def embed_query(self, text: str) -> np.ndarray: ...  # (dim,) float32, L2-normalized


class FastembedEmbedder:
    def __init__(self, config: EmbeddingsConfig) -> None:
        self.model_id = config.model
        self._config = config
        self.source = "model_path"  # or "cache" (downloaded before) or "download" (fetched now)
        self._model = self._load()
        self.dim = int(self.embed_query("dimension probe").shape[0])

    def _load(self) -> TextEmbedding:
        config = self._config
        if config.model_path:
            # A local model directory must never reach out to the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            if not Path(config.model_path, "model.onnx").is_file():
                raise EmbeddingUnavailable(
                    f"no model.onnx in {config.model_path}; point [embeddings] model_path or GITWIKI_MODEL_PATH "
                    "at an ONNX model directory"
                )
        try:
            numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
            from fastembed import TextEmbedding
        except ImportError as e:
            raise EmbeddingUnavailable(f"fastembed is not installed ({e}); run `pip install fastembed`") from None
        quiet_fastembed()
        kwargs: dict[str, Any] = {"model_name": config.model, "threads": config.threads}
        if config.model_path:
            kwargs["specific_model_path"] = config.model_path
            _register_if_unknown(config.model, config.model_path)
        else:
            try:  # a model fastembed downloaded before loads without touching the network
                self.source = "cache"
                return TextEmbedding(**kwargs, local_files_only=True)
            except Exception:
                self.source = "download"
            if not hub_reachable():
                raise EmbeddingUnavailable(
                    f"model {config.model!r} is not downloaded and huggingface.co cannot be reached; "
                    "connect once to download it, or set GITWIKI_MODEL_PATH to a local model directory"
                )
        try:
            return TextEmbedding(**kwargs)
        except Exception as e:  # fastembed raises plain ValueError/OSError/hub errors; all mean "no model"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            hint = (
                f"set GITWIKI_MODEL (or [embeddings] model) to the name of the model in {config.model_path}"
                if config.model_path
                else "set GITWIKI_MODEL_PATH to a local model directory"
            )
            raise EmbeddingUnavailable(
                f"cannot load embedding model {config.model!r} ({first}); {hint}, or [embeddings] enabled = false"
            ) from None

    @property
    def model_dir(self) -> str | None:
        """Where the model's files are on disk."""
        found = getattr(self._model.model, "_model_dir", None)
        return str(found) if found else self._config.model_path

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        np = numpy()

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.passage_embed(texts, batch_size=self._config.batch_size)
        return normalized(np.asarray(list(vectors), dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        np = numpy()

        return normalized(np.asarray(list(self._model.query_embed(text))[0], dtype=np.float32)[None, :])[0]


def quiet_fastembed() -> None:
    # fastembed logs every download retry through loguru; our one warning says what matters.
    try:
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:
        pass


def hub_reachable(timeout: float = 3.0) -> bool:
    """fastembed retries an unreachable hub for ~40 s; one connect attempt tells us up front. None is made when the
    user said to stay offline (HF_HUB_OFFLINE, as huggingface_hub reads it)."""
    import socket

    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _register_if_unknown(model: str, model_path: str) -> None:
    """Let a local directory hold a model fastembed does not list (mean pooling, normalized)."""
    numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    if model in {m["model"] for m in TextEmbedding.list_supported_models()}:
        return

    try:
        dim = json.loads(Path(model_path, "config.json").read_text())["hidden_size"]
    except (OSError, ValueError, KeyError):
        raise EmbeddingUnavailable(
            f"{model_path}/config.json does not give hidden_size; fastembed cannot load {model!r} from there"
        ) from None
    TextEmbedding.add_custom_model(
        model=model,
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf=model),
        dim=dim,
        model_file="model.onnx",
    )


def fastembed_model(config: EmbeddingsConfig) -> Embedder:
    """A fastembed model: without importing fastembed when `onnx_embed` can load it (0.4–0.7 s less). A model to run
    in int8 that fastembed had to download is loaded the lean way once it is on disk; where it still cannot be,
    fastembed runs the float32 model, and its vectors say so (their model id is the plain model's)."""
    lean = lean_embedder(config)
    if lean is not None:
        return lean
    model = FastembedEmbedder(config)
    return (lean_embedder(config) or model) if quantized(config) and model.source == "download" else model


# Embedder plug-ins by `[embeddings] provider`; each takes the config and raises EmbeddingUnavailable.
EMBEDDERS: dict[str, Callable[[EmbeddingsConfig], Embedder]] = {"fastembed": fastembed_model}

_cache: dict[EmbeddingsConfig, Embedder] = {}
_failed: dict[EmbeddingsConfig, str] = {}
_warned: set[EmbeddingsConfig] = set()
_cleared: set[tuple[EmbeddingsConfig, Path]] = set()  # (model, index dir) whose UNAVAILABLE_FILE is gone
_loading = threading.Lock()  # the model may be loading on a background thread (load_in_background, warm.py)
# A new owner's model in a process of its own (search.model_process), lent until the owner loads its own (`own_model`).
_lent: dict[EmbeddingsConfig, Lender] = {}

# In the index dir: which model last failed to load there (its first line, `_named`), and why. The stderr warning is
# said once per index (a hook's or CI's every command would repeat it otherwise), and `gitwiki status`, the MCP
# server's instructions and `artifact pack` read it back without loading the model, for that model only: a command
# run once without GITWIKI_MODEL_PATH must not make later ones with it say search is lexical. Removed by the next
# load that works.
UNAVAILABLE_FILE = "model-unavailable"


def _named(config: EmbeddingsConfig) -> str:
    """The model a failure record is about: the same name in another directory, or its other weights, is another."""
    return f"model: {config.provider} {config.model} {config.weights} {config.model_path or '-'}"


def load_embedder(config: EmbeddingsConfig, index_dir: Path | None = None) -> Embedder | None:
    """The configured embedder, loaded once per process; None if it cannot load, after one warning per index
    (`index_dir`; per process without one)."""
    if not config.enabled:
        return None
    embedder = _load(config)
    if embedder is None:
        _warn_once(config, index_dir)
    elif index_dir is not None and (config, index_dir) not in _cleared:
        _cleared.add((config, index_dir))  # once per process: a model that loaded stays loaded
        with contextlib.suppress(OSError):
            (index_dir / UNAVAILABLE_FILE).unlink(missing_ok=True)
    return embedder


def _warn_once(config: EmbeddingsConfig, index_dir: Path | None) -> None:
    if config in _warned:
        return
    _warned.add(config)
    reason = _failed[config]
    if index_dir is not None:
        if _recorded(config, index_dir) == reason:
            return  # this index was told already; `gitwiki status` and the ground footer keep saying it
        try:
            # A server's model can fail on its warm-up thread before the first search made the index dir: made
            # here, or the record was lost for good (this warning is said once).
            index_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(index_dir / UNAVAILABLE_FILE, f"{_named(config)}\n{reason}", sync=False)
        except OSError:
            pass  # a read-only index dir: the warning is then said per process, as before
    print(f"gitwiki: warning: {reason}; using lexical search only", file=sys.stderr)


def unavailable(config: EmbeddingsConfig, index_dir: Path | None = None) -> str | None:
    """Why the configured model does not load: this process's own failure, else the one recorded in `index_dir`
    by an earlier command (no load is tried). None when the model loaded, is off, or never failed here."""
    if not config.enabled or config in _cache:
        return None
    if config in _failed:
        return _failed[config]
    return None if index_dir is None else _recorded(config, index_dir)


def _recorded(config: EmbeddingsConfig, index_dir: Path) -> str | None:
    """Why `config`'s model failed to load, as recorded in `index_dir`: None for another model's record."""
    try:
        named, _, reason = (index_dir / UNAVAILABLE_FILE).read_text(encoding="utf-8").partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return (reason.strip() or None) if named == _named(config) else None


def model_fix(config: EmbeddingsConfig) -> str:
    """The next step for a model that does not load, short enough for a footer."""
    if config.model_path:
        return f"check that {config.model_path} holds model.onnx of {config.model!r}, or set GITWIKI_MODEL to its name"
    return f"set GITWIKI_MODEL_PATH to a local model directory, or connect once so {config.model!r} downloads"


def lexical_notice(config: EmbeddingsConfig, index_dir: Path | None = None) -> str | None:
    """One line for where a person or an agent decides how far to trust a search (`gitwiki status`, the MCP
    server's instructions): search is lexical because the configured model does not load, and how to fix it."""
    if unavailable(config, index_dir) is None:
        return None
    return (
        f"Search is lexical only (words, not meaning): the embedding model {config.model!r} does not load. "
        f"Fix: {model_fix(config)}; `gitwiki status` says why."
    )


def _load(config: EmbeddingsConfig) -> Embedder | None:
    """`load_embedder` without the warning, which a background load leaves to the caller that needs the model."""
    if config in _cache:
        return _cache[config]
    lent = _lent.get(config)
    if lent is not None:
        borrowed = lent.embedder()
        if borrowed is not None:
            return borrowed
        own_model(config)  # its process did not load it: loaded here, and any failure worded as ever
    return _load_own(config)


def load_silently(config: EmbeddingsConfig) -> Embedder | None:
    """The configured embedder, loaded once per process, or None (`unavailable` says why); no warning."""
    return _load(config) if config.enabled else None


def _load_own(config: EmbeddingsConfig) -> Embedder | None:
    if config in _cache:
        return _cache[config]
    with _loading:
        if config in _cache:  # loaded by the thread we waited for
            return _cache[config]
        if config not in _failed:
            try:
                if config.provider not in EMBEDDERS:
                    raise EmbeddingUnavailable(
                        f"unknown [embeddings] provider {config.provider!r}; known: {', '.join(EMBEDDERS)}"
                    )
                _cache[config] = EMBEDDERS[config.provider](config)
                return _cache[config]
            except EmbeddingUnavailable as e:
                _failed[config] = str(e)
    return None


def load_in_background(start: str, mode: str | None = None) -> None:
    """A fresh process about to search the checkout at `start` (in `mode`, default the config's): start loading
    the model on a thread now, before the library's imports and the index reads; the first `load_embedder`
    waits for it. onnxruntime builds its session without holding the GIL (a Python loop ran at full speed beside
    a load), so on a second core the load's 0.2–0.45 s overlaps the caller's work. Reads the config from the
    filesystem only; where finding the checkout needs git, the model loads on first use as before."""
    found = wanted(start, mode)
    if found is not None:
        threading.Thread(target=_load_quietly, args=(found.settings,), name="gitwiki-model", daemon=True).start()


class Lender(Protocol):
    """A model loaded in another process, which this one uses until it loads its own (`own_model`)."""

    # Its embedder, which may still be loading there (its calls wait for it), or None when it did not load.
    def embedder(self) -> Embedder | None: ...

    def ready(self) -> bool: ...  # waits for the load: whether the model loaded there

    def close(self) -> None: ...


def lend(config: EmbeddingsConfig, lender: Lender) -> None:
    """Use `lender`'s model for `config` until `own_model`."""
    _lent[config] = lender


def lent(config: EmbeddingsConfig) -> bool:
    """Whether this process's model is still one lent by another process (`lend`): waits for its load there, so
    that a caller about to take a lock its search would hold while waiting does not."""
    lender = _lent.get(config)
    return lender is not None and lender.ready()


def loaded(config: EmbeddingsConfig) -> Embedder | None:
    """This process's own copy of the model, if it has loaded."""
    return _cache.get(config)


def own_model(config: EmbeddingsConfig) -> Embedder | None:
    """This process's own copy of a model lent by another process (`lend`), loaded now; the lender is closed.
    Without one lent, `load_embedder`'s model."""
    own = _load_own(config)
    lender = _lent.pop(config, None)
    if lender is not None:
        lender.close()
    return own


class Wanted(NamedTuple):
    """The model a process about to search a checkout will want, and where that checkout's index is."""

    settings: EmbeddingsConfig
    index_dir: Path
    corpora: tuple[str, ...]
    depth: int  # [search] depth


def wanted(start: str, mode: str | None = None) -> Wanted | None:
    """The model a process about to search the checkout at `start` will want and has not started loading; read
    from the filesystem alone (None where finding the checkout needs git)."""
    from gitwiki import config as config_mod
    from gitwiki.git.gitcli import find_checkout

    # a model loading already (an owner's, asked for by `gitwiki.__main__`) needs no second load to wait for it
    checkout = None if mode == "lexical" or _loading.locked() or _lent else find_checkout(start)
    if checkout is None:
        return None
    try:
        config = config_mod.load(checkout.root)
    except GitwikiError:  # the command's own Wiki.open reports it
        return None
    settings = config.embeddings
    if (mode or config.search.mode) == "lexical" or not settings.enabled or settings in _cache:
        return None
    index = config_mod.index_dir(config, checkout.root, checkout.common_dir)
    return Wanted(settings, index, tuple(c.name for c in config.corpora), config.search.depth)


def loading(config: EmbeddingsConfig) -> bool:
    """Whether this process is loading a model that `config` has not loaded yet: a `load_embedder` now waits."""
    # a model lent by another process reads its own vectors ahead there (search.model_process)
    return (
        config.enabled and config not in _cache and config not in _failed and config not in _lent and _loading.locked()
    )


def keep_fast_copy(embedder: Embedder) -> None:
    """For a long-lived process whose model has loaded: write the copy of it that later loads read in a third of
    the time (`model_copy`), when there is none yet. The caller's work goes on meanwhile only if it is on a
    thread of its own (a second session build: 0.1-0.3 s of CPU, once)."""
    if isinstance(embedder, OnnxEmbedder) and embedder.copied is None:
        from gitwiki.index import model_copy

        model_copy.make(embedder.model_file)


def _load_quietly(config: EmbeddingsConfig) -> None:
    try:
        _load(config)
    except Exception:  # not a thread's traceback on stderr: the command's own load meets it again and reports it
        pass
