from pathlib import Path

import pytest

from gitwiki import config
from gitwiki.errors import UsageError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_use_wiki_folder_when_present(tmp_path, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)  # a model directory alone names its model
    (tmp_path / "wiki").mkdir()
    cfg = config.load(tmp_path)
    assert [(c.name, c.path) for c in cfg.corpora] == [("wiki", "wiki")]
    assert cfg.search.mode == "hybrid" and cfg.embeddings.model == config.DEFAULT_MODEL


def test_defaults_use_whole_repo_without_wiki_folder(tmp_path):
    cfg = config.load(tmp_path)
    assert [(c.name, c.path, c.include) for c in cfg.corpora] == [("wiki", "", ("**/*.md",))]


def test_repo_layer_overrides_baseline_and_corpora_append(tmp_path):
    user = write(
        tmp_path / "user.toml",
        '[[corpus]]\nname = "notes"\npath = "notes"\n[search]\ntop_files = 9\nmode = "lexical"\n',
    )
    write(tmp_path / "repo/.gitwiki.toml", '[[corpus]]\nname = "docs"\npath = "./docs/"\n[search]\ntop_files = 3\n')
    cfg = config.load(tmp_path / "repo", user_file=user)
    assert [(c.name, c.path) for c in cfg.corpora] == [("notes", "notes"), ("docs", "docs")]
    assert cfg.search.top_files == 3 and cfg.search.mode == "lexical"
    assert cfg.files == (str(user), str(tmp_path / "repo/.gitwiki.toml"))


def test_duplicate_corpus_names_both_files(tmp_path):
    user = write(tmp_path / "user.toml", '[[corpus]]\nname = "wiki"\npath = "a"\n')
    repo_file = write(tmp_path / "repo/.gitwiki.toml", '[[corpus]]\nname = "wiki"\npath = "b"\n')
    with pytest.raises(UsageError) as e:
        config.load(tmp_path / "repo", user_file=user)
    assert str(user) in str(e.value) and str(repo_file) in str(e.value)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[search]\ntop_filez = 3\n", "unknown key 'top_filez'"),
        ("colour = 1\n", "unknown key 'colour'"),
        ('[[corpus]]\nname = "w"\nglobs = []\n', "unknown key 'globs'"),
        ('[search]\ntop_files = "five"\n', "top_files must be a whole number"),
        ('[search]\nmode = "fuzzy"\n', "mode must be one of"),
        ("[embeddings]\nenabled = 1\n", "enabled must be true or false"),
        ('[[corpus]]\npath = "docs"\n', "needs a name"),
        ('[[corpus]]\nname = "w"\npath = "../outside"\n', "without '..'"),
        ('[[corpus]]\nname = "w"\npath = "wiki/.GIT"\n', "without '..' or .git"),
        ("[search\n", "invalid TOML"),
    ],
)
def test_bad_config_names_key_and_file(tmp_path, text, fragment):
    path = write(tmp_path / ".gitwiki.toml", text)
    with pytest.raises(UsageError) as e:
        config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert fragment in str(e.value)
    if "TOML" not in fragment and "mode must" not in fragment:
        assert str(path) in str(e.value)


def test_env_overrides_model_and_resolves_path(tmp_path, monkeypatch):
    monkeypatch.setenv("GITWIKI_MODEL", "my/model")
    monkeypatch.setenv("GITWIKI_MODEL_PATH", "models/m")
    cfg = config.load(tmp_path)
    assert cfg.embeddings.model == "my/model"
    assert cfg.embeddings.model_path == str((tmp_path / "models/m").resolve())


def test_unknown_corpus_lists_choices(tmp_path):
    cfg = config.load(tmp_path)
    with pytest.raises(UsageError, match="choose one of: wiki"):
        cfg.corpus("nope")


def test_init_text_round_trips(tmp_path):
    write(tmp_path / ".gitwiki.toml", config.init_text("docs", "handbook"))
    cfg = config.load(tmp_path)
    assert [(c.name, c.path) for c in cfg.corpora] == [("handbook", "docs")]
    shown = config.to_toml(cfg)
    assert 'name = "handbook"' in shown and "[embeddings]" in shown


def test_repository_entries_know_which_layer_declared_them(tmp_path):
    user = write(tmp_path / "user.toml", '[[repository]]\nname = "mine"\nurl = "https://example.com/m.git"\n')
    write(tmp_path / "repo/.gitwiki.toml", '[[repository]]\nname = "theirs"\npath = "../other"\nref = "HEAD"\n')
    cfg = config.load(tmp_path / "repo", user_file=user)
    assert [(r.name, r.from_checkout) for r in cfg.repositories] == [("mine", False), ("theirs", True)]
    assert "from_checkout" not in config.to_toml(cfg)


def test_validate_warns_about_a_corpus_folder_or_repository_path_that_is_not_there(repo, cli):
    repo.commit(
        "init",
        {
            ".gitwiki.toml": '[[corpus]]\nname = "w"\npath = "wiki"\n[[corpus]]\nname = "d"\npath = "docs"\n'
            '[[corpus]]\nname = "f"\npath = "file"\n[[repository]]\nname = "gone"\npath = "../nowhere"\n',
            "docs/a.md": "# A\n",
            "file": "not a folder\n",
        },
    )
    code, out, err = cli("config", "validate", cwd=repo.path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"warning: corpus 'w': {repo.path / 'wiki'} does not exist, so it has no pages; create the folder "
        f"(mkdir -p wiki) or fix path in {repo.path / '.gitwiki.toml'}"
    )
    assert lines[1].startswith(f"warning: corpus 'f': {repo.path / 'file'} is not a folder")
    assert lines[2].startswith(f"warning: [[repository]] 'gone': path {repo.path.parent / 'nowhere'} does not exist")
    assert "run `gitwiki repo allow gone`" in lines[3]
    assert lines[4].startswith("ok with 4 warning(s): 3 corpus(es)")
    repo.commit("fixed", {".gitwiki.toml": '[[corpus]]\nname = "w"\npath = "wiki"\n', "wiki/p.md": "# P\n"})
    code, out, _ = cli("config", "validate", cwd=repo.path)
    assert (code, out) == (0, f"ok: 1 corpus(es) from {repo.path / '.gitwiki.toml'}\n")
