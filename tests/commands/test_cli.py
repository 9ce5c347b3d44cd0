"""The CLI through its real entry point: output formats, the JSON contract, exit codes."""

import json
import subprocess
import sys

import pytest

from gitwiki.errors import NotFoundError, StoreError, UsageError
from tests.helpers import needs_model

PAGES = {
    "wiki/keys.md": "# Keys\n\n## Rotate\n\nRotate the signing key every 90 days with vault.\n",
    "wiki/deploy.md": "# Deploy\n\nWe deploy with argo to the kubernetes cluster.\n",
    ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n',
}


@pytest.fixture
def wiki_repo(repo):
    repo.commit("pages", PAGES)
    return repo


def test_index_then_ground_outline(cli, wiki_repo):
    code, out, err = cli("index", cwd=wiki_repo.path)
    assert code == 0 and "2 pages" in out and "2 added" in out
    code, out, _ = cli("index", cwd=wiki_repo.path)
    assert code == 0 and "up to date" in out
    code, out, _ = cli("ground", "rotate", "signing", "key", cwd=wiki_repo.path)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("wiki/keys.md  Keys")
    assert lines[1].strip() == "wiki/keys.md:3-5  Keys > Rotate"
    assert "Rotate the signing key" in lines[2]


def test_json_contract(cli, wiki_repo):
    code, out, _ = cli("ground", "signing key", "--json", cwd=wiki_repo.path)
    data = json.loads(out)
    assert code == 0
    assert set(data) >= {"query", "corpus", "commit", "mode", "docs"}
    assert (data["query"], data["corpus"], data["mode"]) == ("signing key", "wiki", "lexical")
    assert data["commit"] == wiki_repo.git("rev-parse", "HEAD").strip()
    doc = data["docs"][0]
    assert set(doc) == {"path", "title", "score", "chunks", "weak"} and doc["path"] == "wiki/keys.md"
    assert doc["title"] == "Keys" and doc["weak"] is False and data["weak"] is False  # `weak`: issue 15, additive
    chunk = doc["chunks"][0]
    assert set(chunk) == {"breadcrumb", "start_line", "end_line", "score", "text"}
    assert chunk["breadcrumb"] == ["Keys", "Rotate"] and (chunk["start_line"], chunk["end_line"]) == (3, 5)
    assert isinstance(doc["score"], float) and isinstance(chunk["score"], float)
    scores = [d["score"] for d in data["docs"]]
    assert scores == sorted(scores, reverse=True)


def test_ground_shows_each_result_folders_summary_once(cli, repo):
    repo.commit(
        "pages",
        {
            **PAGES,
            "wiki/ops/index.md": "# Operations\n\nRunbooks for the on-call engineer.\n",
            "wiki/ops/restart.md": "# Restart\n\nRestart the argo controller.\n",
            "wiki/ops/scale.md": "# Scale\n\nScale argo workers up.\n",
            "wiki/index.md": "---\ndescription: The platform wiki.\n---\n# Wiki\n",
        },
    )
    code, out, _ = cli("ground", "argo", "--json", cwd=repo.path)
    data = json.loads(out)
    assert code == 0 and {d["path"] for d in data["docs"]} >= {"wiki/deploy.md", "wiki/ops/restart.md"}
    assert data["folders"] == {"wiki": "The platform wiki.", "wiki/ops": "Runbooks for the on-call engineer."}
    code, out, _ = cli("ground", "argo", cwd=repo.path)
    assert out.count("Runbooks for the on-call engineer.") == 1 and out.count("The platform wiki.") == 1
    lines = out.splitlines()
    first_ops = next(i for i, line in enumerate(lines) if line.startswith("wiki/ops/") and ".md" in line)
    assert lines[first_ops - 1] == "wiki/ops/  Runbooks for the on-call engineer."
    # The summary is the folder's index.md as searched: the worktree edit now, the committed one --at HEAD.
    (repo.path / "wiki/ops/index.md").write_text("# Operations\n\nWhat on-call does at night.\n")
    code, out, _ = cli("ground", "argo", "--json", cwd=repo.path)
    assert json.loads(out)["folders"]["wiki/ops"] == "What on-call does at night."
    code, out, _ = cli("ground", "argo", "--json", "--at", "HEAD", cwd=repo.path)
    assert json.loads(out)["folders"]["wiki/ops"] == "Runbooks for the on-call engineer."
    # A folder without an index.md, or results without one, add nothing.
    code, out, _ = cli("ground", "signing", "key", "--json", cwd=repo.path)
    assert [d["path"] for d in json.loads(out)["docs"]] == ["wiki/keys.md"]
    assert json.loads(out)["folders"] == {"wiki": "The platform wiki."}


def test_json_pretty_and_full(cli, wiki_repo):
    code, out, _ = cli("ground", "argo", "--format", "json-pretty", "--full", cwd=wiki_repo.path)
    assert code == 0 and out.startswith("{\n  ")
    assert (
        json.loads(out)["docs"][0]["chunks"][0]["text"] == "# Deploy\n\nWe deploy with argo to the kubernetes cluster."
    )


def test_status_and_config(cli, wiki_repo):
    cli("index", cwd=wiki_repo.path)
    code, out, _ = cli("status", cwd=wiki_repo.path)
    assert code == 0 and "pages 2" in out and "fresh" in out
    code, out, _ = cli("status", "--json", cwd=wiki_repo.path)
    assert json.loads(out)["corpora"][0]["fresh"] is True
    code, out, _ = cli("config", "show", cwd=wiki_repo.path)
    assert code == 0 and 'path = "wiki"' in out and "enabled = false" in out
    code, out, _ = cli("config", "validate", cwd=wiki_repo.path)
    assert code == 0 and out.startswith("ok: 1 corpus")


def test_init_writes_config_once(cli, repo):
    code, out, _ = cli("init", "--path", "docs", cwd=repo.path)
    assert code == 0 and 'path = "docs"' in (repo.path / ".gitwiki.toml").read_text()
    code, _, err = cli("init", cwd=repo.path)
    assert code == UsageError.exit_code and "--force" in err


def test_config_init_is_init(cli, repo):
    code, out, _ = cli("config", "init", "--path", "./docs/", "--name", "handbook", cwd=repo.path)
    assert code == 0 and out.startswith("corpus folder: docs/ (github): the folder given with --path\nwrote ")
    assert "(corpus 'handbook' at docs/); next: gitwiki index" in out
    first = (repo.path / ".gitwiki.toml").read_text()
    assert 'name = "handbook"' in first and 'path = "docs"' in first
    code, _, err = cli("config", "init", cwd=repo.path)
    assert code == UsageError.exit_code and "--force" in err
    code, out, _ = cli("init", "--force", "--path", "docs", "--name", "handbook", cwd=repo.path)
    assert code == 0 and (repo.path / ".gitwiki.toml").read_text() == first
    code, _, err = cli("config", "init", "--force", "--path", "../up", cwd=repo.path)
    assert code == UsageError.exit_code and "without '..'" in err


@pytest.mark.parametrize(
    "setup, args, code, message",
    [
        (None, ["ground", "x"], NotFoundError.exit_code, "not inside a git repository"),
        ("nodir", ["ground", "x"], NotFoundError.exit_code, "does not exist"),
        ("pages", ["ground", "  "], UsageError.exit_code, "query is empty"),
        ("pages", ["ground", "x", "--corpus", "nope"], NotFoundError.exit_code, "no corpus named 'nope'"),  # README
        ("pages", ["ground", "x", "--at", "nope"], NotFoundError.exit_code, "unknown revision"),
        ("pages", ["ground", "x", "--top-files", "0"], UsageError.exit_code, "top_files"),
        ("badconfig", ["index"], UsageError.exit_code, "unknown key 'nope'"),
        ("empty", ["ground", "x"], NotFoundError.exit_code, "has no pages"),
    ],
)
def test_errors_are_one_line_with_exit_code(cli, repo, tmp_path, setup, args, code, message):
    if setup == "pages":
        repo.commit("pages", PAGES)
    elif setup == "badconfig":
        repo.commit("bad", {".gitwiki.toml": "nope = 1\n"})
    elif setup == "empty":
        repo.commit("empty", {".gitwiki.toml": PAGES[".gitwiki.toml"]})
    cwd = repo.path if setup else tmp_path / "elsewhere"
    if setup == "nodir":
        cwd = tmp_path / "no" / "such" / "dir"
    else:
        cwd.mkdir(exist_ok=True)
    got, out, err = cli(*args, cwd=cwd)
    assert got == code
    assert message in err and err.count("\n") == 1 and err.startswith("gitwiki: error: ")


def test_busy_index_exit_code(cli, wiki_repo, monkeypatch):
    from gitwiki.index import store

    def busy(*a, **k):
        raise StoreError("the index is busy")

    monkeypatch.setattr(store.Store, "lock", busy)
    code, _, err = cli("index", cwd=wiki_repo.path)
    assert code == StoreError.exit_code and "busy" in err


def test_console_script_runs_as_a_process(wiki_repo):
    proc = subprocess.run(
        [sys.executable, "-m", "gitwiki", "ground", "argo", "--json"],
        cwd=wiki_repo.path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["docs"][0]["path"] == "wiki/deploy.md"


@needs_model
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["ground", "x", "--corpus", "nope"], NotFoundError.exit_code),
        (["ground", "x", "--top-files", "0"], UsageError.exit_code),
        (["ground", " "], UsageError.exit_code),
        (["memory", "search", "x", "--limit", "0"], UsageError.exit_code),
    ],
)
def test_an_error_with_the_model_loading_beside_it_is_one_line_and_its_exit_code(repo, args, code):
    """`ground` starts the model's load on a thread before it reads the request: the interpreter's teardown beside
    that thread aborted the process (exit 134, "terminate called without an active exception")."""
    repo.commit("pages", {**PAGES, ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n'})
    subprocess.run([sys.executable, "-m", "gitwiki", "index", "-q"], cwd=repo.path, check=True)
    proc = subprocess.run([sys.executable, "-m", "gitwiki", *args], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.startswith("gitwiki: error: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_only_the_requested_command_is_built(capsys):
    from gitwiki.cli import COMMANDS, build_parser, main, requested_command

    assert requested_command(["-C", "lint", "index-blocks", "x.md"]) == "index-blocks"  # -C's folder is not the command
    assert requested_command(["--help", "lint"]) is None and requested_command(["nope"]) is None
    assert requested_command(["-Cdocs", "lint"]) == "lint"
    assert build_parser("lint").parse_args(["lint", "a.md"]).files == ["a.md"]
    with pytest.raises(SystemExit):
        main(["nope"])
    err = capsys.readouterr().err
    assert all(f"'{name}'" in err for name in COMMANDS), err  # an unknown command lists them all
