from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki import config, config_edit
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
        ("[search]\nfusion_weight = 1.5\n", "fusion_weight must be a number from 0 to 1"),
        ('[search]\nfusion_weight = "high"\n', "fusion_weight must be a number"),
        ("[search]\npage_share = nan\n", "page_share must be a number from 0 to 1"),
        ("[search]\npage_share = true\n", "page_share must be a number"),
        ('[search]\nnormalization = "zscore"\n', "normalization must be one of dbsf, minmax"),
        ("[search]\ndepth = 0\n", "depth must be a whole number from 1 to 10000"),
        ("[search]\ndepth = 2147483647\n", "depth must be a whole number from 1 to 10000"),
        ("[search]\nrerank_depth = 2147483647\n", "rerank_depth must be a whole number from 0 to 200"),
        ("[embeddings]\nbatch_size = 0\n", "batch_size must be a whole number ≥ 1"),
        ('[embeddings]\nweights = "int4"\n', "[embeddings] weights must be one of int8, fp32, not 'int4'"),
    ],
)
def test_bad_config_names_key_and_file(tmp_path, text, fragment):
    path = write(tmp_path / ".gitwiki.toml", text)
    with pytest.raises(UsageError) as e:
        config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert fragment in str(e.value)
    if "TOML" not in fragment and not str(e.value).startswith("["):  # "[section] key …": checked on the merged layers
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
    write(tmp_path / ".gitwiki.toml", config_edit.init_text("docs", "handbook"))
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


def test_model_path_from_the_environment_names_its_model_over_a_file(tmp_path, monkeypatch):
    # `gitwiki init` used to pin the default model in the repo file, which beat the name the directory gives.
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "all-MiniLM-L6-v2-onnx"))
    write(tmp_path / ".gitwiki.toml", '[embeddings]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    assert config.load(tmp_path).embeddings.model == "all-MiniLM-L6-v2"
    monkeypatch.setenv("GITWIKI_MODEL", "sentence-transformers/all-MiniLM-L6-v2")  # a name set beside it wins
    assert config.load(tmp_path).embeddings.model == "sentence-transformers/all-MiniLM-L6-v2"


def test_a_layer_with_model_path_and_no_model_drops_a_lower_layers_model(tmp_path, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)
    # model_path is the user's alone (gitwiki.trust): the layers that set it are the user's file and the environment
    user = write(tmp_path / "user.toml", '[embeddings]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("GITWIKI_MODEL_PATH", "/opt/models/minilm-onnx")
    assert config.load(tmp_path / "repo", user_file=user).embeddings.model == "minilm"
    monkeypatch.delenv("GITWIKI_MODEL_PATH")
    write(user, '[embeddings]\nmodel_path = "/opt/models/m"\nmodel = "org/m"\n')  # a pair in one layer stays a pair
    assert config.load(tmp_path / "repo", user_file=user).embeddings.model == "org/m"
    write(user, '[embeddings]\nmodel_path = "/opt/models/minilm-onnx"\n')
    assert config.load(tmp_path / "repo", user_file=user).embeddings.model == "minilm"


def test_a_checkout_naming_another_model_than_the_users_directory_gets_that_model(tmp_path, monkeypatch):
    # The user's local MiniLM directory used to load under the checkout's pinned name: MiniLM vectors labelled
    # as bge's, and a query embedded by one model searched against the other's.
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)
    user = write(tmp_path / "user.toml", '[embeddings]\nmodel_path = "/opt/models/all-MiniLM-L6-v2-onnx"\n')
    repo = tmp_path / "repo"
    write(repo / ".gitwiki.toml", '[embeddings]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    embeddings = config.load(repo, user_file=user).embeddings
    assert (embeddings.model, embeddings.model_path) == ("BAAI/bge-small-en-v1.5", None)
    # the same model named with its organisation is the directory's: the local copy is used
    write(repo / ".gitwiki.toml", '[embeddings]\nmodel = "sentence-transformers/all-MiniLM-L6-v2"\n')
    embeddings = config.load(repo, user_file=user).embeddings
    assert embeddings.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert embeddings.model_path == "/opt/models/all-MiniLM-L6-v2-onnx"
    write(user, '[embeddings]\nmodel_path = "/opt/models/x"\nmodel = "org/bge-small-en-v1.5"\n')  # named pair
    write(repo / ".gitwiki.toml", '[embeddings]\nmodel = "BAAI/bge-small-en-v1.5"\n')
    assert config.load(repo, user_file=user).embeddings.model_path == "/opt/models/x"


def test_init_does_not_pin_a_model(tmp_path, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "all-MiniLM-L6-v2-onnx"))
    config_edit.write_init(tmp_path, "wiki", "wiki")
    assert "\nmodel =" not in (tmp_path / ".gitwiki.toml").read_text()
    assert config.load(tmp_path).embeddings.model == "all-MiniLM-L6-v2"


USER_CONFIG = """# ours
[[corpus]]
name = "wiki"
path = "wiki"
lint_disable = ["GW007"]  # kept

[[repository]]
name = "platform"
url = "https://git.example.com/platform.git"

[search]
top_files = 9
"""


def test_init_force_merges_and_keeps_a_backup(tmp_path):
    (tmp_path / ".gitwiki.toml").write_text(USER_CONFIG)
    report = config_edit.write_init(tmp_path, "docs", "wiki", force=True)
    text = (tmp_path / ".gitwiki.toml").read_text()
    assert text == USER_CONFIG.replace('path = "wiki"', 'path = "docs"')  # one line changed, nothing dropped
    assert (tmp_path / ".gitwiki.toml.bak").read_text() == USER_CONFIG
    assert "every other setting kept" in report.describe() and ".gitwiki.toml.bak" in report.describe()
    config_edit.write_init(tmp_path, "handbook", "handbook", force=True)  # another corpus: added after the last one
    cfg = config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert [(c.name, c.path) for c in cfg.corpora] == [("wiki", "docs"), ("handbook", "handbook")]
    assert [r.name for r in cfg.repositories] == ["platform"] and cfg.search.top_files == 9
    assert cfg.corpora[0].lint_disable == ("GW007",)


def test_init_force_refuses_a_file_it_cannot_read_and_changes_nothing(tmp_path):
    (tmp_path / ".gitwiki.toml").write_text("[[corpus]\nname = \n")
    with pytest.raises(UsageError, match="not valid TOML"):
        config_edit.write_init(tmp_path, "docs", "wiki", force=True)
    assert (tmp_path / ".gitwiki.toml").read_text() == "[[corpus]\nname = \n"
    assert not (tmp_path / ".gitwiki.toml.bak").exists()


@given(
    names=st.lists(st.sampled_from(["wiki", "docs", "notes", "a-b"]), max_size=3, unique=True),
    target=st.sampled_from(["wiki", "docs", "new"]),
    path=st.sampled_from(["docs", "wiki/sub", ""]),
    comment=st.sampled_from(["", "# a comment\n", "# [[corpus]] in a comment\n"]),
    top=st.integers(1, 20),
    site=st.sampled_from([None, "mkdocs", "docusaurus"]),
    had_site=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_init_merge_changes_only_the_named_corpus_path_and_site(names, target, path, comment, top, site, had_site):
    import tomllib

    old_site = 'site = "github"\n' if had_site else ""
    text = comment + "".join(f'[[corpus]]\nname = "{n}"\npath = "p{i}"\n{old_site}\n' for i, n in enumerate(names))
    text += f'[search]\ntop_files = {top}\n[[repository]]\nname = "r"\npath = "/srv/r"\n'
    merged = config_edit.merge_corpus(text, path, target, Path(".gitwiki.toml"), site)
    before, after = tomllib.loads(text), tomllib.loads(merged)
    assert {k: v for k, v in after.items() if k != "corpus"} == {k: v for k, v in before.items() if k != "corpus"}
    asked = {"path": path, **({"site": site} if site else {})}
    want = [dict(c, **asked) if c["name"] == target else c for c in before.get("corpus", [])]
    if target not in names:
        want.append({"name": target, **asked, "include": ["**/*.md"]})
    assert after["corpus"] == want


def test_search_fusion_settings_default_to_the_measured_ones_and_read_as_numbers(tmp_path):
    from gitwiki.search.ranking import PAGE_SHARE
    from gitwiki.search.searcher import CANDIDATES

    defaults = config.load(tmp_path, user_file=tmp_path / "none.toml").search
    assert (defaults.fusion_weight, defaults.normalization, defaults.page_share, defaults.depth) == (
        0.5,
        "dbsf",
        PAGE_SHARE,
        CANDIDATES,
    )
    write(
        tmp_path / ".gitwiki.toml",
        '[search]\nfusion_weight = 1\nnormalization = "minmax"\npage_share = 0.25\ndepth = 50\n',
    )
    search = config.load(tmp_path, user_file=tmp_path / "none.toml").search
    assert (search.fusion_weight, search.normalization, search.page_share, search.depth) == (1.0, "minmax", 0.25, 50)
    assert isinstance(search.fusion_weight, float)


TUNED = {"fusion_weight": 0.7, "normalization": "minmax", "page_share": 0.25, "depth": 100}


@given(
    head=st.sampled_from(["", "# top comment\n", '[[corpus]]\nname = "w"\npath = "wiki"  # the pages\n\n']),
    table=st.sampled_from(
        [
            None,  # no [search] table yet
            "[search]\n",
            '[search]  # fusion\nmode = "hybrid"\n',
            "[search]\nfusion_weight = 0.5  # was the default\ntop_files = 3\n\n# about embeddings\n",
            '[ search ]\ndepth=200\nnormalization = "dbsf"#c\npage_share = 0.5\nfusion_weight = 0.5\n',
        ]
    ),
    tail=st.sampled_from(["", "[embeddings]\nenabled = true\n", '[[repository]]\nname = "r"\npath = "/srv/r"\n']),
    keys=st.lists(st.sampled_from(sorted(TUNED)), min_size=1, unique=True),
    newline=st.booleans(),
)
@settings(max_examples=80, deadline=None)
def test_merge_search_sets_the_keys_and_keeps_every_other_line(head, table, tail, keys, newline):
    import tomllib

    text = head + (table or "") + tail
    text = text if newline or not text else text.rstrip("\n")
    values = {k: TUNED[k] for k in keys}
    merged = config_edit.merge_search(text, values, Path(".gitwiki.toml"))
    before, after = tomllib.loads(text), tomllib.loads(merged)
    assert after == {**before, "search": {**before.get("search", {}), **values}}
    old_lines = [line for line in text.splitlines() if not any(line.lstrip().startswith(k) for k in keys)]
    new_lines = iter(merged.splitlines())
    assert all(line in new_lines for line in old_lines)  # every other line kept, in order
    for line in text.splitlines():  # a comment after a replaced value stays on its line
        if "#" in line and any(line.startswith(k) for k in keys):
            assert line[line.index("#") :] in merged


@pytest.mark.parametrize(
    "text",
    [
        'search.mode = "hybrid"\n',  # a dotted key: appending a [search] table would define it twice
        'search = {mode = "hybrid"}\n',
        "[search]\nfusion_weight = [\n0.5]\n",
    ],
)
def test_merge_search_refuses_a_layout_it_cannot_edit_and_writes_nothing(tmp_path, text):
    path = write(tmp_path / ".gitwiki.toml", text)
    with pytest.raises(UsageError, match="edit it by hand"):
        config_edit.write_search(tmp_path, TUNED)
    assert path.read_text() == text


def test_write_search_refuses_a_file_that_is_not_toml(tmp_path):
    path = write(tmp_path / ".gitwiki.toml", "[search\n")
    with pytest.raises(UsageError, match="is not valid TOML"):
        config_edit.write_search(tmp_path, TUNED)
    assert path.read_text() == "[search\n"


def test_write_search_creates_the_file_when_there_is_none(tmp_path):
    written = config_edit.write_search(tmp_path, TUNED)
    assert written == tmp_path / ".gitwiki.toml"
    assert config.load(tmp_path, user_file=tmp_path / "none.toml").search.page_share == 0.25
