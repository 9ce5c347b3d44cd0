"""gitwiki.index.embed: a model that does not load is said once per index, and stays visible where search is used."""

from __future__ import annotations

import json

import pytest

from gitwiki.config import EmbeddingsConfig
from gitwiki.index import embed


@pytest.fixture
def fresh_process(monkeypatch):
    """What a new process starts with: no model loaded, tried or warned about."""

    def reset() -> None:
        monkeypatch.setattr(embed, "_cache", {})
        monkeypatch.setattr(embed, "_failed", {})
        monkeypatch.setattr(embed, "_warned", set())
        monkeypatch.setattr(embed, "_cleared", set())

    reset()
    return reset


def test_the_warning_is_said_once_per_index_not_once_per_process(tmp_path, fresh_process, capsys):
    config = EmbeddingsConfig(model="org/m", model_path=str(tmp_path / "no-model-here"))
    first, second = tmp_path / "index1", tmp_path / "index2"
    first.mkdir()
    second.mkdir()
    assert embed.load_embedder(config, first) is None
    assert "warning: no model.onnx in" in capsys.readouterr().err
    fresh_process()
    assert embed.load_embedder(config, first) is None
    assert capsys.readouterr().err == ""  # this index was told
    fresh_process()
    assert embed.load_embedder(config, second) is None
    assert "warning" in capsys.readouterr().err  # another index is told too
    fresh_process()  # a later process that loads nothing still knows why, from the index alone
    notice = embed.lexical_notice(config, first)
    assert notice is not None and "lexical only" in notice and "GITWIKI_MODEL" in notice


def test_a_failure_before_the_index_dir_exists_is_recorded_there(tmp_path, fresh_process, capsys):
    """A server's warm-up can fail to load the model before its first search made the index dir."""
    config = EmbeddingsConfig(model="org/m", model_path=str(tmp_path / "no-model-here"))
    index = tmp_path / "git" / "gitwiki"
    assert embed.load_embedder(config, index) is None
    assert "warning" in capsys.readouterr().err
    assert embed.unavailable(config, index) is not None
    fresh_process()  # a later process reads it from the index alone
    assert embed.unavailable(config, index) is not None


def test_the_record_is_of_the_model_that_failed_not_of_the_one_configured_now(tmp_path, fresh_process):
    """A command once run without GITWIKI_MODEL_PATH (a hook from an IDE) failed to get the default model: later
    ones, whose model is there, are not told search is lexical, nor why another model did not load."""
    default = EmbeddingsConfig()
    assert embed.load_embedder(default._replace(model_path=str(tmp_path / "none")), tmp_path) is None
    fresh_process()
    for other in (default, default._replace(model_path=str(tmp_path / "elsewhere")), default._replace(weights="fp32")):
        assert embed.unavailable(other, tmp_path) is None and embed.lexical_notice(other, tmp_path) is None
    assert embed.unavailable(default._replace(model_path=str(tmp_path / "none")), tmp_path) is not None
    (tmp_path / embed.UNAVAILABLE_FILE).write_text("no model.onnx in /x")  # an older gitwiki's record: whose, unknown
    assert embed.unavailable(default, tmp_path) is None


def test_a_model_that_loads_again_clears_the_record(tmp_path, fresh_process, monkeypatch):
    config = EmbeddingsConfig(model="org/m", model_path=str(tmp_path / "no-model-here"))
    assert embed.load_embedder(config, tmp_path) is None
    assert embed.unavailable(config, tmp_path) is not None
    fresh_process()
    monkeypatch.setitem(embed.EMBEDDERS, "fastembed", lambda c: object())
    assert embed.load_embedder(config, tmp_path) is not None
    assert embed.unavailable(config, tmp_path) is None and embed.lexical_notice(config, tmp_path) is None
    assert not (tmp_path / embed.UNAVAILABLE_FILE).exists()


def test_a_newcomer_without_a_model_is_told_search_is_lexical_and_how_to_fix_it(repo, cli, monkeypatch, tmp_path):
    """`gitwiki init` then `GITWIKI_MODEL_PATH` alone, pointing at a directory without the model: the first output
    says so, the warning is not repeated, and status, the ground footer and --json keep saying it."""
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "all-MiniLM-L6-v2-onnx"))
    repo.commit("pages", {"wiki/a.md": "# Keys\n\nThe signing key rotates monthly.\n"})
    assert cli("init", cwd=repo.path)[0] == 0
    code, _, err = cli("index", cwd=repo.path)
    assert code == 0 and "warning: no model.onnx in" in err and "using lexical search only" in err
    for reset in (embed._failed, embed._warned):
        reset.clear()  # the next command is another process
    code, out, err = cli("ground", "signing key", "--no-server", cwd=repo.path)
    assert code == 0 and err == ""
    assert "mode lexical (no model: check that" in out and "GITWIKI_MODEL" in out
    code, out, _ = cli("ground", "signing key", "--no-server", "--json", cwd=repo.path)
    assert json.loads(out)["mode"] == "lexical"
    code, out, err = cli("status", cwd=repo.path)
    assert "Search is lexical only" in out and "why: no model.onnx in" in out and err == ""
    code, out, _ = cli("status", "--json", cwd=repo.path)
    assert "lexical only" in json.loads(out)["lexical_notice"]
    code, _, err = cli("artifact", "pack", "--out", str(tmp_path / "a.tar.gz"), cwd=repo.path)
    assert code == 5 and "not packing: corpus wiki has no all-MiniLM-L6-v2 vectors" in err and "--lexical" in err
    assert not (tmp_path / "a.tar.gz").exists()
    code, out, _ = cli("artifact", "pack", "--lexical", "--out", str(tmp_path / "a.tar.gz"), cwd=repo.path)
    assert code == 0 and "lexical only" in out
