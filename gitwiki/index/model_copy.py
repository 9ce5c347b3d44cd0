"""A model's weights laid out for a fast load: a copy of its ONNX file with the weights in a file of their own.

onnxruntime builds a session from a model whose weights sit inside the protobuf by copying each of them out: for
MiniLM (90 MB) that is most of a 145-156 ms build here. From a model whose weights are in an external file it maps
that file instead (49-50 ms), and the weights it does not repack (the 47 MB word-embedding table) stay pages of the
file, read as queries touch them: a process that embeds queries holds ~25 MiB less (docs/research/sessions-lean.md).
onnxruntime writes the copy itself, the graph as it is (no optimization baked in, so nothing tied to this CPU); the
vectors are the source's bit for bit (tests/index/test_model_copy.py). A copy is keyed to its source file (path,
size, modification time) and onnxruntime's version; a long-lived process makes it once its model has loaded
(`make`), and every later load of the model uses it (`find`). The copies live in `$GITWIKI_MODEL_CACHE`, by default
the user's cache (`~/.cache/gitwiki/models`): deleting them costs one slower load each.

A model whose weights are float32 is also kept as an int8 copy (`quantized`): onnxruntime's dynamic quantization,
per channel, of its MatMul and Gather weights. That copy is the model such a load runs, not a faster layout of it:
its vectors are within 0.01 of the float32 model's in cosine, it holds ~56 MiB less and embeds ~2x faster
(docs/research/quantized-model.md). Writing it takes ~2 s, once per machine and onnxruntime version.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitwiki.config import user_cache_dir
from gitwiki.fs import pid_alive

GRAPH = "model.onnx"
WEIGHTS = "weights.bin"
LAYOUT = "1"  # a change to how copies are written makes new ones


def cache_dir() -> Path:
    return Path(os.environ.get("GITWIKI_MODEL_CACHE") or user_cache_dir("models"))


def find(model_file: Path, runtime: str, quantized: bool = False) -> Path | None:
    """The copy of `model_file` (its int8 one if `quantized`) for onnxruntime `runtime` (its version), if made."""
    folder = _folder(model_file, runtime, quantized)
    return None if folder is None else _graph(folder)


def make(model_file: Path, quantized: bool = False) -> Path | None:
    """Write the copy of `model_file` (its int8 one if `quantized`) unless it is there; its graph, or None where it
    cannot be written (no space, a read-only cache): loads then read the source as before. Written into a temporary
    folder renamed into place, so a process that dies meanwhile leaves no half copy to be used (and the next `make`
    removes what it left)."""
    from gitwiki.native import numpy

    numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
    import onnxruntime as ort

    folder = _folder(model_file, ort.__version__, quantized)
    if folder is None:
        return None
    if (found := _graph(folder)) is not None:
        return found
    import shutil

    temp = folder.with_name(f".{folder.name}-{os.getpid()}")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _remove_left_behind(folder.parent)
        temp.mkdir()
        source = _quantized(model_file, temp / "int8.onnx") if quantized else model_file
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.optimized_model_filepath = str(temp / GRAPH)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        if quantized:
            source.unlink()
        os.rename(temp, folder)  # another process's copy already there: the rename fails, and theirs is used
        _remove_older(folder)
    except Exception:  # OSError, onnxruntime's own errors: no copy, nothing else changes
        pass
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return _graph(folder)


def _quantized(model_file: Path, target: Path) -> Path:
    """`model_file` with its MatMul and Gather weights in int8, a scale per channel (per tensor lost up to 0.08 of
    cosine; the word-embedding table's Gather is half the weights), written to `target`."""
    import logging

    from gitwiki.native import numpy

    numpy()  # first, by one thread at a time: the extension imports numpy's core (gitwiki.native.numpy)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class _Quiet(logging.Filter):  # its advice to pre-process the graph first, on the root logger: not for users
        def filter(self, record: logging.LogRecord) -> bool:
            return "pre-processing" not in record.getMessage()

    quiet = _Quiet()
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(
            model_file, target, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gather"], per_channel=True
        )
    finally:
        logging.getLogger().removeFilter(quiet)
    return target


def discard(graph: Path) -> None:
    """Remove a copy that would not load (damaged on disk): the next `make` writes it again."""
    import shutil

    shutil.rmtree(graph.parent, ignore_errors=True)


def _graph(folder: Path) -> Path | None:
    """The copy's graph in `folder`, if the copy is whole (both files: a folder is renamed into place whole)."""
    graph = folder / GRAPH
    return graph if graph.is_file() and (folder / WEIGHTS).is_file() else None


def _folder(model_file: Path, runtime: str, quantized: bool) -> Path | None:
    import hashlib  # OpenSSL's library: only where a model loads anyway

    try:
        source = model_file.resolve()
        st = source.stat()
    except OSError:
        return None
    # <the model's folder>-<its path and variant>-<its version and onnxruntime's>: one variant's copies share a prefix
    where = hashlib.sha256((str(source) + ("\0int8" if quantized else "")).encode()).hexdigest()[:12]
    version = hashlib.sha256("\0".join((LAYOUT, runtime, str(st.st_size), str(st.st_mtime_ns))).encode()).hexdigest()
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in source.parent.name)[:60]
    return cache_dir() / f"{name}{'-int8' if quantized else ''}-{where}-{version[:12]}"


def _remove_older(folder: Path) -> None:
    """The copies of the same source file and variant made before it or onnxruntime changed: no load reads them
    again (a process that has one mapped keeps its pages until it ends)."""
    import shutil

    prefix = folder.name.rsplit("-", 1)[0] + "-"
    for entry in folder.parent.glob(f"{prefix}*"):
        if entry != folder and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def _remove_left_behind(folder: Path) -> None:
    """Temporary folders of `make` runs whose process is gone."""
    import shutil

    for entry in folder.glob(".*-*"):
        pid = entry.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)
