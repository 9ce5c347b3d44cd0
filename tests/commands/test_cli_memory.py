"""`gitwiki memory …` through the real entry point: each command, --json on reads, exit codes."""

import json

import pytest

DEPLOY = "how-to: deploy with argo from the release branch once the tests pass on main"
LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


@pytest.fixture
def wiki_repo(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "src/app.py": "x = 1\n"})
    return repo


def test_memory_commands_round_trip(cli, wiki_repo, tmp_path):
    path = wiki_repo.path
    code, out, _ = cli(
        "memory",
        "store",
        "ops",
        DEPLOY,
        "--tag",
        "CI",
        "--source",
        "src/app.py:1",
        "--confidence",
        "0.9",
        cwd=path,
    )
    assert code == 0 and out.startswith("stored ops:1 [ci, how-to] (lines 3-")
    code, out, _ = cli("memory", "store", "ops", DEPLOY, "--terse", cwd=path)
    assert code == 1 and out.startswith("already stored as ops:1 (how-to: deploy with argo")
    batch = tmp_path / "batch.json"
    batch.write_text(
        json.dumps(
            [
                {"topic": "ops", "text": "gotcha: argo needs the image tag"},
                {"topic": "dev", "text": "previews per branch"},
            ]
        )
    )
    code, out, _ = cli("memory", "batch", str(batch), cwd=path)
    assert code == 0 and out.splitlines()[0] == "stored 2 of 2 entries in 2 topic(s)"

    code, out, _ = cli("memory", "search", "argo", "deploy", "--json", cwd=path)
    data = json.loads(out)
    assert code == 0 and data["matched"] == "and" and [h["index"] for h in data["hits"]] == [1]
    code, out, _ = cli("memory", "search", "argo", "--detail", "brief", cwd=path)
    assert code == 0 and sorted(out.splitlines()[:2]) == ["ops:1  " + DEPLOY, "ops:2  gotcha: argo needs the image tag"]
    code, out, _ = cli("memory", "search", "--tag", "gotcha", "--days", "1", "--detail", "count", cwd=path)
    assert (code, out) == (0, "1 entries match\n")

    code, out, _ = cli("memory", "brief", "--json", cwd=path)
    assert code == 0 and json.loads(out)["kind"] == "meta"
    code, out, _ = cli("memory", "brief", "ops", "--detail", "scan", "--focus", "how-to", cwd=path)
    assert code == 0 and "## HOW-TO" in out and "GOTCHAS" not in out

    code, out, _ = cli("memory", "read", "ops", "2", cwd=path)
    assert code == 0 and out.startswith("## ") and "[tags: gotcha]" in out
    code, out, _ = cli("memory", "edit", "append", "ops", "2", "--text", "and the digest", cwd=path)
    assert code == 0 and out.startswith("append: ops:2")
    code, out, _ = cli("memory", "edit", "tag", "ops", "2", "--add", "argo", "--remove", "gotcha", "--json", cwd=path)
    assert code == 0 and json.loads(out)["entries"][0]["tags"] == ["argo"]

    code, out, _ = cli("memory", "topics", cwd=path)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["dev", "ops"]
    code, out, _ = cli(
        "memory", "topics", "checkpoint", "--task", "release", "--done", "tag", "--next", "deploy", cwd=path
    )
    assert code == 0 and out.startswith("checkpoint default saved to wiki/memory/checkpoints/default.md")
    code, out, _ = cli("memory", "topics", "resume", cwd=path)
    assert code == 0 and out.startswith("# Resuming: release") and "## Next\n\n- deploy" in out
    code, out, _ = cli("memory", "topics", "export", "--json", cwd=path)
    export = tmp_path / "export.json"
    export.write_text(out)
    code, out, _ = cli("memory", "edit", "delete", "ops", "--all", cwd=path)
    assert code == 0 and out.startswith("deleted 2 entries from ops")
    code, out, _ = cli("memory", "topics", "import", "--file", str(export), cwd=path)
    assert code == 0 and out.startswith("imported 2 entries: ops +2")
    code, out, _ = cli("memory", "topics", "stale", cwd=path)
    assert (code, out) == (0, "no stale sources\n")
    code, out, _ = cli("memory", "topics", "stats", "--detail", "index", "--json", cwd=path)
    assert code == 0 and json.loads(out)["index"]["pages"] == 2


def test_the_reference_store_and_search_print_reads_the_entry_back(cli, wiki_repo):
    """`stored ops:2` and a search's `ops:2` are what `memory read` takes; the text comes back exactly."""
    path = wiki_repo.path
    cli("memory", "store", "ops", DEPLOY, cwd=path)
    text = "gotcha: argo caches  \nthe image tag\t"  # a markdown line break and a tab at the end
    code, out, _ = cli("memory", "store", "ops", text, "--terse", cwd=path)
    ref = out.split()[1]
    assert (code, ref) == (0, "ops:2")
    code, out, _ = cli("memory", "read", ref, "--json", cwd=path)
    assert code == 0 and json.loads(out)["entries"][0]["text"] == text
    code, out, _ = cli("memory", "search", "image", "tag", "--detail", "brief", cwd=path)
    assert code == 0 and out.split()[0] == ref
    code, out, _ = cli("memory", "read", out.split()[0], cwd=path)
    assert code == 0 and out.startswith("## ") and "the image tag" in out
    assert cli("memory", "read", "ops:2", "2", cwd=path)[0] == 0  # the same entry twice over
    code, _, err = cli("memory", "read", "ops:2", "1", cwd=path)
    assert code == 2 and "already names entry 2" in err
    code, _, err = cli("memory", "read", "ops:9", cwd=path)
    assert code == 3 and "ops" in err


def test_store_exits_1_only_when_nothing_was_stored(cli, wiki_repo, tmp_path):
    """An exact repeat, of any length, is not stored again (exit 1, naming the entry); a near-duplicate is stored
    with a warning (exit 0)."""
    path = wiki_repo.path
    for _ in range(4):
        code, out, _ = cli("memory", "store", "ops", "argo  needs tags", cwd=path)
    assert code == 1 and out.startswith("already stored as ops:1 (argo  needs tags); not stored again")
    code, out, _ = cli("memory", "store", "ops", DEPLOY, cwd=path)
    assert code == 0
    code, out, _ = cli("memory", "store", "ops", DEPLOY.replace("once", "only once"), "--json", cwd=path)
    data = json.loads(out)
    assert code == 0 and data["stored"] and (data["entry"]["index"], data["similar_to"]) == (3, "ops:2")
    assert data["warnings"][0].endswith("stored anyway: if the two say the same, revise one and delete the other")
    assert len(json.loads(cli("memory", "read", "ops", "--json", cwd=path)[1])["entries"]) == 3
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([{"topic": "ops", "text": "argo needs tags"}]))
    assert cli("memory", "batch", str(batch), cwd=path)[0] == 1  # nothing of the batch stored
    batch.write_text(json.dumps([{"topic": "ops", "text": "argo needs tags"}, {"topic": "ops", "text": "new"}]))
    assert cli("memory", "batch", str(batch), cwd=path)[0] == 0


def test_memory_errors_map_to_exit_codes(cli, wiki_repo):
    code, _, err = cli("memory", "read", "nope", cwd=wiki_repo.path)
    assert code == 3 and "no memory topic 'nope'" in err
    code, _, err = cli("memory", "search", "x", "--after", "someday", cwd=wiki_repo.path)
    assert code == 2 and "YYYY-MM-DD" in err
    code, _, err = cli("memory", "topics", "frobnicate", cwd=wiki_repo.path)
    assert code == 2 and "topics action must be one of" in err
    code, _, err = cli("memory", "edit", "revise", "nope", "1", "--text", "x", cwd=wiki_repo.path)
    assert code == 3
    code, _, err = cli("memory", "store", "t", "x", "--confidence", "2", cwd=wiki_repo.path)
    assert code == 2 and "confidence" in err


def test_every_topics_action_from_the_cli(cli, wiki_repo):
    path = wiki_repo.path
    cli("memory", "store", "auth", "gotcha: tokens expire hourly in staging", "--source", "src/app.py:1", cwd=path)
    cli("memory", "store", "web", "the web app refreshes auth tokens", "--link", "auth:1", cwd=path)
    cli("memory", "store", "web", "a weak guess about caching", "--confidence", "0.1", cwd=path)
    wiki_repo.write("src/app.py", "x = 2\n")
    expected = {
        ("recent", "--limit", "1"): "web:2  ",
        ("entries", "--topic", "web"): "web:1  ",
        ("stats",): "3 entries in 2 topics; 1 tagged, 1 with a source, 1 stale",
        ("xref",): "web:1 → auth:1  (link)",
        ("graph", "--focus", "auth"): "web → auth  (2)",
        ("stale",): "auth:1  src/app.py@",
        ("refresh", "--topic", "auth"): "auth:1  gotcha: tokens expire hourly in staging\n--- src/app.py@",
        ("clean",): "clean: 1 change(s) would apply (dry run; pass apply to write)",
        ("prune", "--days", "30"): "no topic idle > 30 days",
        ("compact",): "compact: 0 change(s)",
        ("reindex",): "memory index: 2 pages, 3 chunks, model (lexical)",
        ("session", "--since", "today"): "auth:1  ",
    }
    for args, start in expected.items():
        code, out, err = cli("memory", "topics", *args, cwd=path)
        assert code == 0 and out.startswith(start), (args, out, err)
    code, out, _ = cli("memory", "topics", "clean", "--apply", cwd=path)
    assert code == 0 and out.startswith("clean: 1 change(s) applied")
    cli("memory", "topics", "checkpoint", "--task", "t", cwd=path)
    code, out, _ = cli("memory", "topics", "clear_checkpoint", cwd=path)
    assert code == 0 and out.startswith("checkpoint default cleared")
    code, _, err = cli("memory", "topics", "resume", cwd=path)
    assert code == 3 and "no checkpoint 'default'" in err


def test_memory_edit_chooses_the_entry_as_helix_with_helix_option_names(cli, wiki_repo):
    path = wiki_repo.path
    for text in ("gotcha: the cache is lazy", "the cache index is rebuilt", "the lock is per process"):
        assert cli("memory", "store", "engine", text, cwd=path)[0] == 0
    assert cli("memory", "edit", "append", "engine", "--text", "last", cwd=path)[0] == 0
    assert cli("memory", "edit", "append", "engine", "--text", "tagged", "--tag", "gotchas", cwd=path)[0] == 0
    assert (
        cli("memory", "edit", "revise", "engine", "--text", "rebuilt lazily", "--match", "CACHE INDEX", cwd=path)[0]
        == 0
    )
    assert cli("memory", "edit", "tag", "engine", "2", "--tags", "perf", cwd=path)[0] == 0
    code, out, err = cli("memory", "edit", "delete", "engine", "--match", "nowhere", cwd=path)
    assert code == 2 and "nowhere" in err
    assert cli("memory", "edit", "rename", "engine", "--new-name", "core", cwd=path)[0] == 0
    code, out, _ = cli("memory", "topics", "entries", "--topic", "core", "--match", "lazily", "--json", cwd=path)
    assert code == 0 and [e["index"] for e in json.loads(out)["entries"]] == [2]
    code, out, _ = cli("memory", "read", "core", "--json", cwd=path)
    entries = json.loads(out)["entries"]
    assert [e["text"] for e in entries] == [
        "gotcha: the cache is lazy\n\ntagged",
        "rebuilt lazily",
        "the lock is per process\n\nlast",
    ]
    assert "perf" in entries[1]["tags"]


def test_an_edit_argument_its_action_does_not_take_is_refused_and_changes_nothing(cli, wiki_repo):
    path = wiki_repo.path
    assert cli("memory", "store", "t", "first", cwd=path)[0] == 0
    code, _, err = cli("memory", "edit", "delete", "t", "1", "--text", "keep it", cwd=path)
    assert code == 2 and "edit action=delete does not take text; it takes: index, match_str, all" in err
    code, _, err = cli("memory", "edit", "revise", "t", "1", "--text", "x", "--tag", "perf", cwd=path)
    assert code == 2 and "does not take tag" in err
    code, out, _ = cli("memory", "read", "t", "--json", cwd=path)
    assert [e["text"] for e in json.loads(out)["entries"]] == ["first"]


def test_a_search_ends_without_the_interpreters_teardown_and_a_store_with_it(cli, wiki_repo):
    """`cli.ENDS_AT_ONCE`: a read run as the process's entry point ends once its output is out (numpy's and
    onnxruntime's teardown were 25-55 ms of a cold search); a write still ends the usual way. Output and exit code
    are the same either way."""
    import subprocess
    import sys

    path = wiki_repo.path
    assert cli("memory", "store", "ops", DEPLOY, cwd=path)[0] == 0
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('teardown', file=sys.stderr))\n"
        "sys.argv = ['gitwiki', *sys.argv[1:]]\n"
        "from gitwiki.cli import main\n"
        "sys.exit(main())\n"
    )

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", script, *words], cwd=path, capture_output=True, text=True)

    found = run("memory", "search", "argo", "--json")
    assert found.returncode == 0 and "teardown" not in found.stderr
    assert [h["topic"] for h in json.loads(found.stdout)["hits"]] == ["ops"]
    missing = run("memory", "read", "nosuchtopic")
    # errors too: a model loading on a thread beside the teardown aborted the process (exit 134)
    assert missing.returncode != 0 and "error" in missing.stderr and "teardown" not in missing.stderr
    again = run("memory", "store", "ops", DEPLOY)
    assert again.returncode == 1 and again.stdout.startswith("already stored") and "teardown" in again.stderr


def test_a_search_without_its_model_says_it_ranked_by_words_and_how_to_fix_it(repo, monkeypatch, tmp_path):
    """The entry point's search ranks in a model process of its own (`cli._model_aside`): a model that never loaded
    left the dense ranking empty, and the answer still said `hybrid`, and `semantic` for a word no entry holds."""
    import subprocess
    import sys

    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "no-model-here"))
    repo.commit("init", {".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n', "wiki/index.md": "# Home\n"})

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gitwiki", *words], cwd=repo.path, capture_output=True, text=True)

    assert run("index").returncode == 0 and run("memory", "store", "ops", DEPLOY).returncode == 0
    found = run("memory", "search", "deploy argo")
    assert found.returncode == 0 and "(and match, lexical (no model: check that" in found.stdout
    assert json.loads(run("memory", "search", "deploy argo", "--json").stdout)["ranking"] == "lexical"
    none = json.loads(run("memory", "search", "kubernetes", "--json").stdout)
    assert none["hits"] == [] and none["matched"] == "or" and none["ranking"] == "lexical"
