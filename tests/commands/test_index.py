"""`gitwiki index` leaves the model's fast-load copy behind when it loaded the model (gitwiki.index.model_copy)."""

from __future__ import annotations

from gitwiki.index import embed
from tests.helpers import LEXICAL, needs_model


@needs_model
def test_an_index_that_embedded_makes_the_fast_load_copy_and_a_lexical_one_does_not(repo, cli, tmp_path, monkeypatch):
    copies = tmp_path / "copies"
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", str(copies))
    monkeypatch.setattr(embed, "_cache", {})  # a model an earlier test loaded here came from the tests' own copy
    repo.commit("lexical", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n\nAll about the walrus.\n"})
    assert cli("index", "-q", cwd=repo.path)[0] == 0
    assert not copies.exists()
    repo.commit("hybrid", {".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n'})
    assert cli("index", "-q", cwd=repo.path)[0] == 0
    assert [p.name for p in copies.glob("*/weights.bin")] == ["weights.bin"]
