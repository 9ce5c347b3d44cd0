"""The model's copy with its weights in a file of their own (gitwiki.index.model_copy): the vectors of the source
bit for bit, made once by a long-lived process, never used when damaged or stale; and its int8 copy, the model a
float32 model runs as by default."""

from __future__ import annotations

import logging
import os
import shutil

import numpy as np
import onnxruntime as ort
import pytest

from gitwiki.config import EmbeddingsConfig
from gitwiki.index import embed, model_copy
from gitwiki.index.onnx_embed import OnnxEmbedder, lean_embedder
from tests.helpers import MODEL_DIR, MODEL_NAME, needs_model

pytestmark = needs_model

TEXTS = ["", "How do I list the files in a directory?", "héllo wörld ✓ 日本語", "deploy " * 400]
FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


@pytest.fixture
def model(tmp_path, monkeypatch):
    """A model folder of its own (its model.onnx a copy, so its time can change) and an empty copy cache."""
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", str(tmp_path / "copies"))
    folder = tmp_path / "model"
    folder.mkdir()
    for name in (*FILES, "model.onnx"):
        shutil.copy(MODEL_DIR / name, folder / name)
    return folder


def _embedder(folder, weights: str = "fp32") -> OnnxEmbedder:
    config = EmbeddingsConfig(model=MODEL_NAME, model_path=str(folder), batch_size=2, weights=weights)
    return OnnxEmbedder(config, folder, "model_path")


def _vectors(embedder: OnnxEmbedder) -> np.ndarray:
    return np.concatenate([embedder.embed_documents(TEXTS), np.stack([embedder.embed_query(t) for t in TEXTS])])


def test_a_long_lived_process_makes_the_copy_and_later_loads_read_it_with_the_same_vectors(model):
    first = _embedder(model)
    assert first.copied is None and model_copy.find(first.model_file, ort.__version__) is None
    embed.keep_fast_copy(first)  # what the warm-up does once the model has loaded
    graph = model_copy.find(first.model_file, ort.__version__)
    assert graph is not None and graph.parent.parent == model.parent / "copies"
    assert (graph.parent / model_copy.WEIGHTS).stat().st_size > 80_000_000 > graph.stat().st_size
    later = _embedder(model)
    assert later.copied == graph
    assert np.array_equal(_vectors(later), _vectors(first))  # bit for bit
    embed.keep_fast_copy(later)  # nothing to do: it loaded from the copy
    assert [p.name for p in (model.parent / "copies").iterdir()] == [graph.parent.name]


def test_a_damaged_copy_is_discarded_and_the_source_loaded(model):
    reference = _vectors(_embedder(model))
    graph = model_copy.make(model / "model.onnx")
    assert graph is not None
    graph.write_bytes(b"not a model")
    fallen_back = _embedder(model)
    assert fallen_back.copied is None and not graph.parent.exists()
    assert np.array_equal(_vectors(fallen_back), reference)


def test_a_changed_source_is_not_read_through_its_old_copy_and_its_new_copy_replaces_it(model, tmp_path):
    old = model_copy.make(model / "model.onnx")
    assert old is not None
    other = tmp_path / "other"  # another model's copy: not this source's, kept
    shutil.copytree(model, other)
    kept = model_copy.make(other / "model.onnx")
    st = (model / "model.onnx").stat()
    os.utime(model / "model.onnx", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert model_copy.find(model / "model.onnx", ort.__version__) is None
    assert _embedder(model).copied is None
    new = model_copy.make(model / "model.onnx")
    assert new is not None and new != old and not old.parent.exists()
    assert kept is not None and kept.is_file()


def test_what_a_dead_make_left_is_removed_and_nothing_is_written_where_it_cannot_be(model, tmp_path, monkeypatch):
    copies = tmp_path / "copies"
    copies.mkdir()
    left = copies / ".model-abc-999999999"  # no such pid
    left.mkdir()
    (left / "weights.bin").write_bytes(b"half")
    assert model_copy.make(model / "model.onnx") is not None and not left.exists()
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    assert model_copy.make(model / "model.onnx") is None
    assert _embedder(model).copied is None


def test_the_int8_model_is_written_on_its_first_load_and_read_by_every_later_one(model, caplog):
    caplog.set_level(logging.WARNING)
    first = _embedder(model, "int8")
    assert first.model_id == MODEL_NAME + "@int8" and first.copied is not None
    assert first.copied == model_copy.find(first.model_file, ort.__version__, quantized=True)
    assert (first.copied.parent / model_copy.WEIGHTS).stat().st_size < 30_000_000  # a quarter of float32's
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]  # the quantizer's advice, unsaid
    later = _embedder(model, "int8")
    assert later.copied == first.copied
    assert np.array_equal(_vectors(later), _vectors(first))
    cosines = (_vectors(first) * _vectors(_embedder(model))).sum(axis=1)
    assert cosines.min() > 0.97 and np.median(cosines) > 0.99  # the same model, not the same vectors


def test_an_int8_text_vector_is_its_own_whatever_it_is_embedded_with(model):
    """int8 activations are quantized with one scale for the whole batch, so a text's vector in a batch depends on
    the texts beside it. One text per run (the default `batch_size`) makes it the text's own: the same alone, among
    others, in any order, and as a query."""
    config = EmbeddingsConfig(model=MODEL_NAME, model_path=str(model))
    alone = OnnxEmbedder(config, model, "model_path")
    together = alone.embed_documents(TEXTS)
    assert np.array_equal(alone.embed_documents(TEXTS[::-1])[::-1], together)
    for i, text in enumerate(TEXTS):
        assert np.array_equal(alone.embed_documents([text])[0], together[i])
        assert np.array_equal(alone.embed_query(text), together[i])
    batched = OnnxEmbedder(config._replace(batch_size=len(TEXTS)), model, "model_path").embed_documents(TEXTS)
    assert np.abs(batched - together).max() > 1e-3  # the reason: batched, the vectors move with their neighbours


def test_the_int8_and_the_float32_copies_of_one_model_keep_each_other(model):
    quantized = _embedder(model, "int8").copied
    fast = model_copy.make(model / "model.onnx")
    assert quantized is not None and fast is not None and quantized.parent != fast.parent
    assert quantized.is_file() and _embedder(model, "int8").copied == quantized
    assert _embedder(model).copied == fast


def test_a_damaged_int8_copy_is_written_again_and_an_unwritable_cache_leaves_it_to_fastembed(
    model, tmp_path, monkeypatch
):
    reference = _vectors(_embedder(model, "int8"))
    graph = model_copy.find(model / "model.onnx", ort.__version__, quantized=True)
    assert graph is not None
    (graph.parent / model_copy.WEIGHTS).write_bytes(b"not weights")
    again = _embedder(model, "int8")
    assert again.copied is not None and np.array_equal(_vectors(again), reference)
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ValueError, match="int8 copy"):
        _embedder(model, "int8")
    config = EmbeddingsConfig(model=MODEL_NAME, model_path=str(model), weights="int8")
    assert lean_embedder(config) is None  # fastembed runs the float32 model, and its vectors say so
