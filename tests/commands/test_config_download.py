"""`gitwiki config download`: the model is ready before the first index (tested offline with a local model)."""

from __future__ import annotations

from tests.helpers import MODEL_DIR, MODEL_NAME, needs_model


@needs_model
def test_local_model_path_is_checked_and_reported_and_its_fast_load_copy_made(repo, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", str(tmp_path / "copies"))
    code, out, err = cli("config", "download", cwd=repo.path)
    assert [p.name for p in (tmp_path / "copies").glob("*/weights.bin")] == ["weights.bin"]
    assert code == 0, err
    assert (
        out == f"{MODEL_NAME}: using the local model directory, nothing to download; 384 dimensions; int8 weights "
        f"(gitwiki's copy); files in {MODEL_DIR}\n"
    )


def test_disabled_embeddings_need_no_model(repo, cli):
    repo.write(".gitwiki.toml", "[embeddings]\nenabled = false\n")
    code, out, _ = cli("config", "download", cwd=repo.path)
    assert code == 0 and "lexical search needs no model" in out


def test_a_model_path_without_a_model_exits_5_naming_the_fix(repo, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path))
    code, out, err = cli("config", "download", cwd=repo.path)
    assert (code, out) == (5, "") and f"no model.onnx in {tmp_path}" in err and "GITWIKI_MODEL_PATH" in err
