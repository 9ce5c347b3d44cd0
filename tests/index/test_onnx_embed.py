"""The lean embedder (gitwiki.index.onnx_embed) gives fastembed's vectors for the same model, finds the models fastembed
downloaded, and leaves everything it does not reproduce to fastembed."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.config import WEIGHTS, EmbeddingsConfig
from gitwiki.index import embed, onnx_embed
from gitwiki.index.embed import FastembedEmbedder
from gitwiki.index.onnx_embed import OnnxEmbedder, lean_embedder
from tests.helpers import MODEL_DIR, MODEL_NAME, needs_model

pytestmark = needs_model

TEXTS = [
    "",
    " ",
    "a",
    "How do I list the files in a directory?",
    "git log --oneline --graph shows the commits as a tree",
    "héllo wörld ✓ naïve café — 日本語のテキスト, русский текст, emoji 🎉🚀",
    "zero\u200bwidth and\ttabs\nand newlines\r\n",
    "deploy " * 400,  # far past the 256 word pieces the tokenizer keeps
    "x" * 3000,
    "## Heading\n\n- a list item with `code` and [a link](page.md#section)",
]
MODEL_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


def _config(model_path=MODEL_DIR) -> EmbeddingsConfig:
    """The float32 model, fastembed's own (the int8 one is gitwiki's: tests/index/test_model_copy.py)."""
    return EmbeddingsConfig(model=MODEL_NAME, model_path=str(model_path), batch_size=4, weights="fp32")


def _agree(lean, slow) -> None:
    # batch_size 4: several batches, each padded to its own longest text, as fastembed pads them
    docs = lean.embed_documents(TEXTS)
    assert docs.shape == (len(TEXTS), 384) and docs.dtype == np.float32
    assert np.abs(docs - slow.embed_documents(TEXTS)).max() <= 1e-5
    for text in TEXTS:
        query = lean.embed_query(text)
        assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1) < 1e-5
        assert np.abs(query - slow.embed_query(text)).max() <= 1e-5
    assert lean.embed_documents([]).shape == (0, 384)


def test_the_lean_and_the_fastembed_vectors_agree():
    config = _config()
    lean = embed.EMBEDDERS["fastembed"](config)
    assert isinstance(lean, OnnxEmbedder)
    assert (lean.model_id, lean.dim, lean.source, lean.model_dir) == (MODEL_NAME, 384, "model_path", str(MODEL_DIR))
    _agree(lean, FastembedEmbedder(config))


def test_cls_pooling_agrees_with_fastembed_for_a_cls_model(tmp_path):
    """bge-small is pooled by its first token; the MiniLM weights under bge's file name run both poolings."""
    for name in MODEL_FILES:
        shutil.copy(MODEL_DIR / name, tmp_path / name)
    for name in ("model_optimized.onnx", "model.onnx"):  # FastembedEmbedder asks for a model.onnx in any model_path
        (tmp_path / name).symlink_to(MODEL_DIR / "model.onnx")
    config = EmbeddingsConfig(model="BAAI/bge-small-en-v1.5", model_path=str(tmp_path), batch_size=4)
    lean = lean_embedder(config)
    assert lean is not None
    _agree(lean, FastembedEmbedder(config))
    mean = lean_embedder(_config())
    assert mean is not None and np.abs(lean.embed_query("deploy") - mean.embed_query("deploy")).max() > 1e-3


def test_a_query_gets_the_batch_paths_vector_bit_for_bit(tmp_path):
    """`embed_query` skips the batch's masked sum for an unpadded text; with padding to a multiple (a tokenizer
    that pads even a batch of one) it pools the masked way. Either way the floats are the batch path's."""
    lean = lean_embedder(_config())
    assert lean is not None
    for name in (*MODEL_FILES, "model.onnx"):
        (tmp_path / name).symlink_to(MODEL_DIR / name)
    (tmp_path / "tokenizer.json").unlink()
    tokenizer = json.loads((MODEL_DIR / "tokenizer.json").read_text())
    tokenizer["padding"] = {**(tokenizer["padding"] or {}), "pad_to_multiple_of": 16}
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer))
    padded = lean_embedder(_config(tmp_path))
    assert padded is not None and 0 in padded._tokenizer.encode("deploy").attention_mask
    for embedder in (lean, padded):
        for text in TEXTS:
            batch = onnx_embed.normalized(embedder._embed([text]).astype(np.float32))[0]
            assert np.array_equal(embedder.embed_query(text), batch), text
    assert np.abs(padded.embed_query("deploy") - lean.embed_query("deploy")).max() <= 1e-5


def test_a_model_fastembed_downloaded_is_found_in_its_cache(tmp_path, monkeypatch):
    """huggingface_hub's layout under FASTEMBED_CACHE_PATH: fastembed (offline) and the lean path load the same files."""
    repo = tmp_path / "models--Qdrant--all-MiniLM-L6-v2-onnx"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    for name in (*MODEL_FILES, "model.onnx"):
        (snapshot / name).symlink_to(MODEL_DIR / name)
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = EmbeddingsConfig(model=MODEL_NAME, batch_size=4, weights="fp32")
    lean = lean_embedder(config)
    assert lean is not None and (lean.source, lean.model_dir) == ("cache", str(snapshot))
    slow = FastembedEmbedder(config)
    assert slow.source == "cache" and slow.model_dir == str(snapshot)
    _agree(lean, slow)


def test_fastembed_loads_what_the_lean_path_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))  # an empty cache: not downloaded yet
    assert lean_embedder(EmbeddingsConfig(model=MODEL_NAME)) is None
    assert lean_embedder(EmbeddingsConfig(model="intfloat/multilingual-e5-large", model_path=str(MODEL_DIR))) is None
    assert lean_embedder(EmbeddingsConfig(model="BAAI/bge-small-en-v1.5", model_path=str(MODEL_DIR))) is None
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in MODEL_FILES:
        shutil.copy(MODEL_DIR / name, broken / name)
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    assert lean_embedder(_config(broken)) is None
    monkeypatch.setattr(onnx_embed, "MODELS", {})
    assert isinstance(embed.EMBEDDERS["fastembed"](_config()), FastembedEmbedder)


def test_a_broken_model_is_still_an_embedding_error_with_the_next_step(tmp_path, capsys):
    for name in MODEL_FILES:
        shutil.copy(MODEL_DIR / name, tmp_path / name)
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    assert embed.load_embedder(_config(tmp_path)) is None
    err = capsys.readouterr().err
    assert err.startswith("gitwiki: warning: cannot load embedding model") and "using lexical search only" in err


@pytest.mark.parametrize("first", ["fastembed", "lean"])
def test_an_index_embedded_by_one_is_searched_by_the_other_without_re_embedding(first, repo, cli, monkeypatch):
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(MODEL_DIR))
    monkeypatch.setenv("GITWIKI_MODEL", MODEL_NAME)
    loaders = {"fastembed": FastembedEmbedder, "lean": embed.fastembed_model}
    second = "lean" if first == "fastembed" else "fastembed"
    pages = {f"p{i}.md": f"# Page {i}\n\nWe deploy service {i} with argo and helm.\n" for i in range(6)}
    repo.commit("pages", {**pages, ".gitwiki.toml": '[embeddings]\nweights = "fp32"\n'})

    def run(loader: str) -> tuple[list, str]:
        monkeypatch.setitem(embed.EMBEDDERS, "fastembed", loaders[loader])
        monkeypatch.setattr(embed, "_cache", {})
        code, out, err = cli("index", "--json", cwd=repo.path)
        assert code == 0 and "warning" not in err
        code, found, _ = cli("ground", "how do we deploy", "--json", "--no-server", cwd=repo.path)
        assert code == 0 and json.loads(found)["mode"] == "hybrid"
        loaded = next(iter(embed._cache.values()))
        assert isinstance(loaded, OnnxEmbedder) == (loader == "lean")
        return json.loads(out), found

    built, answer = run(first)
    assert built[0]["embedded"] > 0 and built[0]["model"] == MODEL_NAME
    reused, same = run(second)
    assert reused[0]["embedded"] == 0 and reused[0]["model"] == MODEL_NAME
    assert json.loads(same)["docs"] == json.loads(answer)["docs"] != []


def _background_loads(monkeypatch, start, mode=None) -> dict:
    """What `load_in_background` loaded, once its thread is done (a fresh model cache)."""
    import threading

    monkeypatch.setattr(embed, "_cache", {})
    monkeypatch.setattr(embed, "_failed", {})
    monkeypatch.setattr(embed, "_warned", set())
    embed.load_in_background(str(start), mode)
    for thread in threading.enumerate():
        if thread.name == "gitwiki-model":
            thread.join()
    return embed._cache


def test_a_fresh_process_loads_the_model_in_the_background(repo, monkeypatch):
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(MODEL_DIR))
    monkeypatch.setenv("GITWIKI_MODEL", MODEL_NAME)
    repo.commit("pages", {"a.md": "# A\n\ntext\n"})
    loaded = _background_loads(monkeypatch, repo.path / "sub")
    assert [(c.model, type(e)) for c, e in loaded.items()] == [(MODEL_NAME, OnnxEmbedder)]
    config = next(iter(loaded))
    assert embed.load_embedder(config) is loaded[config]  # the command's own load finds it
    assert _background_loads(monkeypatch, repo.path, mode="lexical") == {}
    repo.write(".gitwiki.toml", '[search]\nmode = "lexical"\n')
    assert _background_loads(monkeypatch, repo.path) == {}
    assert _background_loads(monkeypatch, repo.path, mode="hybrid") != {}


def test_a_model_that_fails_in_the_background_warns_once_when_it_is_needed(repo, monkeypatch, capsys, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in MODEL_FILES:
        shutil.copy(MODEL_DIR / name, broken / name)
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(broken))
    monkeypatch.setenv("GITWIKI_MODEL", MODEL_NAME)
    repo.commit("pages", {"a.md": "# A\n\ntext\n"})
    assert _background_loads(monkeypatch, repo.path) == {} and len(embed._failed) == 1
    assert capsys.readouterr().err == ""  # a background load stays quiet: the command may not need the model
    config = next(iter(embed._failed))
    assert embed.load_embedder(config) is None and embed.load_embedder(config) is None
    err = capsys.readouterr().err
    assert err.count("gitwiki: warning: cannot load embedding model") == 1 and err.count("\n") == 1


def test_an_unexpected_error_in_the_background_is_left_to_the_commands_own_load(repo, monkeypatch, capsys):
    def crash(config):
        raise RuntimeError("a provider's bug")

    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(MODEL_DIR))
    monkeypatch.setitem(embed.EMBEDDERS, "fastembed", crash)
    repo.commit("pages", {"a.md": "# A\n\ntext\n"})
    assert _background_loads(monkeypatch, repo.path) == {} and embed._failed == {}
    assert capsys.readouterr().err == ""  # no thread traceback
    with pytest.raises(RuntimeError, match="a provider's bug"):
        embed.load_embedder(EmbeddingsConfig(model=MODEL_NAME, model_path=str(MODEL_DIR)))


MODEL_IDS = [*onnx_embed.MODELS, MODEL_NAME + onnx_embed.INT8, "intfloat/multilingual-e5-large"]


@pytest.mark.parametrize("key", MODEL_IDS)
@pytest.mark.parametrize("model", [MODEL_NAME, "BAAI/bge-small-en-v1.5", "intfloat/multilingual-e5-large"])
@pytest.mark.parametrize("weights", ["int8", "fp32"])
def test_a_configuration_made_for_an_index_s_model_id_makes_vectors_of_that_id(key, model, weights):
    config = EmbeddingsConfig(model=model, model_path="/models/x", weights=weights)
    made = onnx_embed.config_for(key, config)
    assert onnx_embed.model_key(made) == key
    assert made.model_path == (config.model_path if made.model == model else None)  # a path holds its own model


def test_only_a_float32_model_gitwiki_runs_gets_int8_weights_and_their_own_model_id():
    assert onnx_embed.model_key(EmbeddingsConfig(model=MODEL_NAME)) == MODEL_NAME + "@int8"
    assert onnx_embed.model_key(EmbeddingsConfig(model=MODEL_NAME, weights="fp32")) == MODEL_NAME
    assert onnx_embed.model_key(EmbeddingsConfig(model="BAAI/bge-small-en-v1.5")) == "BAAI/bge-small-en-v1.5"
    assert onnx_embed.model_key(EmbeddingsConfig(model="intfloat/multilingual-e5-large")) == (
        "intfloat/multilingual-e5-large"
    )


@settings(max_examples=300)
@given(key=st.text(max_size=60) | st.sampled_from(MODEL_IDS).map(lambda k: k + "@int8"))
def test_any_model_id_an_index_or_a_shared_table_names_gives_a_valid_configuration(key):
    """A table's or an artifact's model id is not ours: whatever it says, the configuration made for it is one the
    config would accept, and its vectors are keyed that id or not used (their model ids differ)."""
    config = EmbeddingsConfig(model=MODEL_NAME, model_path="/models/x")
    made = onnx_embed.config_for(key, config)
    assert made.weights in WEIGHTS and made.model_path in (config.model_path, None)
    assert made.model == key.removesuffix("@int8")
    assert onnx_embed.model_key(made) == key or (key.endswith("@int8") and not onnx_embed.quantized(made))
