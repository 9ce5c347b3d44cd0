"""Issue 11's smaller findings: explicit heading ids, a model named by its directory, whole warnings, progress
lines without a terminal. (Exit codes and `mcp config` env are in tests/commands/test_cli.py and
tests/mcp/test_server.py.)"""

from __future__ import annotations

import json

import pytest

from gitwiki import config as config_mod
from gitwiki.commands import options
from gitwiki.config import EmbeddingsConfig
from gitwiki.index import embed
from gitwiki.lint import lint_text
from gitwiki.markdown.links import heading_slugs
from tests.helpers import MODEL_DIR, needs_model


def test_explicit_heading_ids_are_anchors():
    assert heading_slugs(["Setup {#install}", "Run { #run-it .big }", "Set {not an id}"]) == [
        "setup",
        "install",
        "run",
        "run-it",
        "set-not-an-id",
    ]
    config = config_mod.Config(corpora=(config_mod.CorpusConfig(name="wiki"),))
    page = "# T\n\n## Install {#install}\n\n## Run { #run-it }\n\nSee [i](#install), [r](#run-it), [s](#install-1).\n"
    codes = [(f.code, f.message) for f in lint_text("a.md", page, {"a.md"}, config)]
    assert codes == [("GW006", "no heading or anchor #install-1 in this page")]


def test_a_model_directory_alone_names_the_model(tmp_path, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.setenv("GITWIKI_MODEL_PATH", "/models/all-MiniLM-L6-v2-onnx")
    assert config_mod.load(tmp_path).embeddings.model == "all-MiniLM-L6-v2"
    snapshot = "/cache/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/abc123"
    monkeypatch.setenv("GITWIKI_MODEL_PATH", snapshot)
    assert config_mod.load(tmp_path).embeddings.model == "sentence-transformers/all-MiniLM-L6-v2"
    monkeypatch.setenv("GITWIKI_MODEL", "BAAI/bge-small-en-v1.5")  # a name given wins
    assert config_mod.load(tmp_path).embeddings.model == "BAAI/bge-small-en-v1.5"


@needs_model
def test_only_the_model_path_set_searches_with_vectors(repo, cli, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    repo.commit("pages", {"a.md": "# Deploy\n\nWe deploy with argo.\n"})
    code, out, err = cli("ground", "deploy", "--json", cwd=repo.path)
    assert code == 0 and json.loads(out)["mode"] == "hybrid" and "warning" not in err


@needs_model
def test_a_wrong_model_name_warning_is_whole_and_names_gitwiki_model(capsys):
    config = EmbeddingsConfig(model="BAAI/bge-small-en-v1.5", model_path=str(MODEL_DIR))
    assert embed.load_embedder(config) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith("using lexical search only")
    assert f"set GITWIKI_MODEL (or [embeddings] model) to the name of the model in {MODEL_DIR}" in err


def test_without_a_terminal_long_runs_print_progress_lines(monkeypatch, capsys):
    clock = iter([0.0, 1.0, 6.0, 7.0, 12.5])
    monkeypatch.setattr(options.time, "monotonic", lambda: next(clock))
    with options.progress_bar(enabled=True, terminal=False) as progress:
        assert progress is not None
        for done in (64, 128, 192, 256):
            progress("embed", done, 300)
    assert capsys.readouterr().err.splitlines() == [
        "gitwiki: embedding chunks 128/300",
        "gitwiki: embedding chunks 256/300",
    ]


@pytest.mark.parametrize("quiet", [["-q"], ["--json"]])
def test_quiet_and_json_runs_print_no_progress(repo, cli, quiet):
    repo.commit("pages", {".gitwiki.toml": "[embeddings]\nenabled = false\n", "a.md": "# A\n"})
    code, out, err = cli("index", *quiet, cwd=repo.path)
    assert code == 0 and err == ""
