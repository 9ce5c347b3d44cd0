"""fastembed's text embeddings without fastembed: the same ONNX model run with onnxruntime and tokenizers directly.

Importing fastembed costs 0.4–0.7 s (it pulls in huggingface_hub, requests, tqdm, loguru and its image and
sparse models) where onnxruntime and tokenizers take 0.04–0.13 s, and that import was half of a cold
`gitwiki ground` (docs/research/embedding.md). So for the models in `MODELS`, once their files
are on disk (a model_path, or fastembed's own download cache), gitwiki loads them here, reproducing what
fastembed does: its tokenizer set-up (`fastembed.common.preprocessor_utils.load_tokenizer`), its session
options (less the thread pool's spin-wait), its batches and its pooling. tests/index/test_onnx_embed.py holds the
vectors of both to 1e-5. The model id stays the configured one, so an index embedded by either is the other's
too. Every other case (a model not listed, not downloaded yet, a GPU build of onnxruntime) goes to fastembed.

A model listed with float32 weights runs here as gitwiki's int8 copy of them (`model_copy`) unless
`[embeddings] weights = "fp32"`; its vectors' model id is then `<model>@int8` (`model_key`), which only this
module makes.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.config import EmbeddingsConfig
from gitwiki.index import model_copy
from gitwiki.native import numpy

if TYPE_CHECKING:
    import numpy as np
    from onnxruntime import InferenceSession
    from tokenizers import Encoding, Tokenizer


class LeanModel(NamedTuple):
    """How fastembed runs one model (its DenseModelDescription and the class that pools it)."""

    hub_repo: str  # where fastembed downloads it from (ModelSource.hf)
    model_file: str
    pooling: str  # "mean": PooledNormalizedEmbedding (masked mean, then L2); "cls": OnnxTextEmbedding (token 0, L2)
    fp32: bool = False  # float32 weights, run as gitwiki's int8 copy of them unless [embeddings] weights = "fp32"


MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": LeanModel("Qdrant/all-MiniLM-L6-v2-onnx", "model.onnx", "mean", True),
    # Qdrant's file of it is quantized already
    "BAAI/bge-small-en-v1.5": LeanModel("Qdrant/bge-small-en-v1.5-onnx-Q", "model_optimized.onnx", "cls"),
}
INT8 = "@int8"  # the model id of vectors made by gitwiki's int8 copy of a float32 model: `<model>@int8`


def quantized(config: EmbeddingsConfig) -> bool:
    """Whether this configuration's model runs as gitwiki's int8 copy of its float32 weights."""
    spec = MODELS.get(config.model)
    return spec is not None and spec.fp32 and config.weights == "int8"


def model_key(config: EmbeddingsConfig) -> str:
    """The model id the index keys this configuration's vectors by: two variants of one model make different
    vectors, so neither's may answer the other's queries."""
    return config.model + INT8 if quantized(config) else config.model


def config_for(key: str, config: EmbeddingsConfig) -> EmbeddingsConfig:
    """`config` changed to make vectors of model id `key` (an index's): its model and weights, and no model path
    unless the path holds that model."""
    model = key.removesuffix(INT8)
    weights = "int8" if key.endswith(INT8) else "fp32" if quantized(config._replace(model=model)) else config.weights
    if model == config.model:
        return config._replace(weights=weights)
    return config._replace(model=model, weights=weights, model_path=None)


class OnnxEmbedder:
    """An `embed.Embedder` for a model of `MODELS` whose files are in `model_dir`."""

    def __init__(self, config: EmbeddingsConfig, model_dir: Path, source: str) -> None:
        numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
        import onnxruntime as ort

        spec = MODELS[config.model]
        self.model_id = model_key(config)
        self.model_dir = str(model_dir)
        self.source = source  # "model_path" or "cache", as FastembedEmbedder says it
        self._pooling = spec.pooling
        self._batch_size = config.batch_size
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if config.threads is not None:
            options.intra_op_num_threads = options.inter_op_num_threads = config.threads
        # Idle pool threads spin on a core waiting for work by default, which on a busy host more than doubled a
        # one-query embed (docs/research/embedding.md). The vectors are the same. Spinning only within a run (50 µs
        # between operators, stopped when the run returns) was slower too at load 6 (sessions-warm.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # A memory pattern is planned and kept for each input shape, and texts come in many: embedding 10,000 notes in
        # batches of 32 peaked at 1,018 MiB with them, 650 without; one text a run (the default), 140 and 126 MiB.
        # The same speed and the same vectors (docs/research/embedding.md).
        options.enable_mem_pattern = False
        self.model_file = model_dir / spec.model_file
        # The copy with its weights in a file of their own loads in a third of the time (model_copy.py); the int8
        # copy is the model itself, written on its first load here (~2 s, once)
        self.quantized = quantized(config)
        self.copied = model_copy.find(self.model_file, ort.__version__, self.quantized)
        if self.copied is None and self.quantized:
            self.copied = model_copy.make(self.model_file, quantized=True)
            if self.copied is None:
                raise ValueError(f"cannot write the int8 copy of {self.model_file} in {model_copy.cache_dir()}")

        def built(path: Path) -> InferenceSession:
            return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])

        try:
            self._session = built(self.copied or self.model_file)
        except Exception:
            if self.copied is None:
                raise
            model_copy.discard(self.copied)  # damaged on disk: the source, or a new int8 copy of it
            self.copied = model_copy.make(self.model_file, quantized=True) if self.quantized else None
            if self.quantized and self.copied is None:
                raise
            self._session = built(self.copied or self.model_file)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = load_tokenizer(model_dir)
        width = self._session.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else int(self.embed_query("dimension probe").shape[0])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        np = numpy()

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # fastembed's batches: each is padded to its longest text, which moves the pooled values by float noise
        batches = [self._embed(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)]
        return normalized(np.concatenate(batches).astype(np.float32, copy=False))

    def embed_query(self, text: str) -> np.ndarray:
        """`_embed([text])`, normalized: for a text without padding (a batch of one has none, unless the tokenizer
        pads to a multiple) without the masked sum's numpy calls, which with the batch's tokenizing were 0.45 ms of a
        5 ms query embed; the same floats, bit for bit."""
        np = numpy()

        encoded = self._tokenizer.encode(text)
        if self._pooling != "mean" or not all(encoded.attention_mask):
            return normalized(self._pooled([encoded]).astype("float32", copy=False))[0]
        output = self._session.run(None, self._feeds([encoded]))[0]
        pooled = np.sum(output, axis=1, dtype=np.float64) / output.shape[1]  # every token counts: the masked mean
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return normalized((pooled / norms).astype(np.float32))[0]

    def _embed(self, texts: list[str]) -> np.ndarray:
        """fastembed's `onnx_embed` and `_post_process_onnx_output` for one batch."""
        return self._pooled(self._tokenizer.encode_batch(texts))

    def _feeds(self, encoded: list[Encoding]) -> dict[str, np.ndarray]:
        np = numpy()

        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feeds["attention_mask"] = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds

    def _pooled(self, encoded: list[Encoding]) -> np.ndarray:
        np = numpy()

        output = self._session.run(None, self._feeds(encoded))[0]
        if self._pooling == "cls":
            pooled = output[:, 0] if output.ndim == 3 else output
        else:  # summed in float64 as fastembed does, then cast back after the normalization
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            summed = np.sum(output, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(output.dtype, copy=False)


def normalized(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (all-zero rows stay zero): what every embedder of gitwiki returns."""
    np = numpy()

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def lean_embedder(config: EmbeddingsConfig) -> OnnxEmbedder | None:
    """The model loaded here, or None when fastembed must load it: a model this module does not reproduce, files
    not on disk (fastembed downloads them), onnxruntime or tokenizers missing, or a GPU build of onnxruntime
    (fastembed would run the model there)."""
    found = on_disk(config)
    if found is None:
        return None
    model_dir, source = found
    try:
        numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
        import onnxruntime as ort
    except ImportError:
        return None
    if "CUDAExecutionProvider" in ort.get_available_providers():
        return None
    try:
        return OnnxEmbedder(config, model_dir, source)
    except Exception:  # a damaged file or config: fastembed loads it again and words the error
        return None


def on_disk(config: EmbeddingsConfig) -> tuple[Path, str] | None:
    """Where the files of a model of `MODELS` are (its directory, and "model_path" or "cache"), or None: a model this
    module does not reproduce, or its files not all on disk. File checks only."""
    spec = MODELS.get(config.model)
    if spec is None:
        return None
    if config.model_path:
        model_dir, source = Path(config.model_path), "model_path"
    else:
        found = _cached_snapshot(spec.hub_repo)
        if found is None:
            return None
        model_dir, source = found, "cache"
    if not all((model_dir / f).is_file() for f in (spec.model_file, "tokenizer.json", "tokenizer_config.json")):
        return None
    return model_dir, source


def fastembed_cache_dir() -> Path:
    """fastembed's default download cache (`fastembed.common.utils.define_cache_dir`)."""
    import tempfile

    return Path(os.environ.get("FASTEMBED_CACHE_PATH") or Path(tempfile.gettempdir(), "fastembed_cache"))


def _cached_snapshot(hub_repo: str) -> Path | None:
    """The snapshot fastembed downloaded of `hub_repo`: huggingface_hub's cache layout,
    `models--ORG--NAME/snapshots/<the revision refs/main names>`."""
    repo = fastembed_cache_dir() / ("models--" + hub_repo.replace("/", "--"))
    try:
        revision = (repo / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snapshot = repo / "snapshots" / revision
    return snapshot if revision and snapshot.is_dir() else None


def load_tokenizer(model_dir: Path) -> Tokenizer:
    """`fastembed.common.preprocessor_utils.load_tokenizer`: truncation at the tokenizer config's stricter limit,
    the special tokens map's tokens added, padding to the longest text of a batch."""
    from gitwiki.native import extension

    # The Rust module alone: the package's `__init__` adds its pure-Python tokenizer classes, 3.8 ms of a new
    # owner's model thread, on a first search's path
    found = extension("tokenizers.tokenizers")
    module: Any = found if found is not None else importlib.import_module("tokenizers")
    Tokenizer, AddedToken = module.Tokenizer, module.AddedToken

    tokenizer_config = _json(model_dir / "tokenizer_config.json")
    config = _json(model_dir / "config.json")
    tokens_map = _json(model_dir / "special_tokens_map.json")
    limits = [
        v
        for v in (tokenizer_config.get("model_max_length"), tokenizer_config.get("max_length"))
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 2**63 - 1
    ]
    if not limits:
        raise ValueError(f"no model_max_length in {model_dir}/tokenizer_config.json")
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=min(limits),
        direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"),
    )
    for value in tokens_map.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None and pad_token is not None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_token is None or pad_id is None:
        raise ValueError(f"no pad token in {model_dir}")
    tokenizer.enable_padding(
        direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"),
        length=None,
    )
    return tokenizer


def _json(path: Path) -> dict[str, Any]:
    """A config file's object; {} for an absent one (fastembed reads config.json and the tokens map if present)."""
    if not path.is_file():
        return {}
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else {}
