"""The LanceDB scale-out path: export the index to a local dir or s3:// and answer searches from there."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs_model

LEXICAL = "[embeddings]\nenabled = false\n"
PAGES = {
    "wiki/deploy.md": "# Deploy\n\nThe release train leaves on Tuesdays.\n\n## Rollback\n\nRevert the tag and "
    "redeploy.\n",
    "wiki/oncall.md": "# On-call\n\nPage the secondary after fifteen minutes.\n",
    "wiki/style.md": "# Style\n\nWrite short sentences. Prefer tables for comparisons.\n",
}


@pytest.fixture
def wiki(repo, cli):
    def build(config: str):
        repo.write(".gitwiki.toml", config)
        repo.commit("wiki", PAGES)
        return repo

    return build


def search(cli, cwd, *args):
    code, out, err = cli("lance", "search", "--json", *args, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def test_local_dir_export_and_search(wiki, cli, tmp_path):
    repo = wiki(LEXICAL + f'[storage]\nuri = "{tmp_path / "lance"}"\n')
    code, out, err = cli("lance", "export", "--json", cwd=repo.path)
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"] == 4 and report["corpora"] == ["wiki"] and report["model"] is None

    result = search(cli, repo.path, "rollback", "tag")
    assert result["mode"] == "lexical" and result["commit"] == repo.git("rev-parse", "HEAD").strip()
    top = result["docs"][0]
    assert top["path"] == "wiki/deploy.md" and top["title"] == "Deploy"
    assert top["chunks"][0]["breadcrumb"] == ["Deploy", "Rollback"] and top["chunks"][0]["start_line"] == 5

    # The same answer as the local index gives.
    code, out, _ = cli("ground", "--json", "rollback tag", cwd=repo.path)
    assert json.loads(out)["docs"][0]["path"] == top["path"]

    # A new commit re-exported replaces the table; readers see the new state.
    repo.commit("oncall", {"wiki/oncall.md": "# On-call\n\nEscalate to the incident commander.\n"})
    assert cli("lance", "export", cwd=repo.path)[0] == 0
    assert search(cli, repo.path, "incident commander")["docs"][0]["path"] == "wiki/oncall.md"
    assert search(cli, repo.path, "secondary fifteen minutes")["docs"] == []  # the old text is gone


def test_missing_uri_and_missing_table(wiki, cli, tmp_path):
    repo = wiki(LEXICAL)
    code, _, err = cli("lance", "export", cwd=repo.path)
    assert code == 2 and "[storage] uri" in err
    code, _, err = cli("lance", "search", "--uri", str(tmp_path / "empty"), "anything", cwd=repo.path)
    assert code == 3 and "gitwiki lance export" in err
    code, _, err = cli("lance", "search", "--uri", str(tmp_path / "empty"), "--top-files", "0", "x", cwd=repo.path)
    assert code == 2 and "top_files must be a whole number ≥ 1, not 0" in err  # checked like `gitwiki ground`


@pytest.fixture
def s3(monkeypatch):
    """A moto S3 server on 127.0.0.1 with one bucket; credentials through the usual AWS_* variables."""
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT": endpoint,
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(key, value)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="wiki-index")
    yield boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    server.stop()


@pytest.mark.slow  # a moto S3 server
def test_s3_export_and_search_without_a_checkout(wiki, cli, tmp_path, s3):
    repo = wiki(LEXICAL + '[storage]\nuri = "s3://wiki-index/handbook"\n')
    code, _, err = cli("lance", "export", cwd=repo.path)
    assert code == 0, err
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="wiki-index")["Contents"]]
    assert any(k.startswith("handbook/chunks.lance/") for k in keys)

    # A reader elsewhere: no repository, only the URI (and the same AWS_* environment).
    reader = tmp_path / "reader"
    reader.mkdir()
    result = search(cli, reader, "--uri", "s3://wiki-index/handbook", "--mode", "lexical", "release train")
    assert result["docs"][0]["path"] == "wiki/deploy.md"


@needs_model
def test_hybrid_and_dense_search_use_the_exported_vectors(wiki, cli, tmp_path):
    repo = wiki(f'[storage]\nuri = "{tmp_path / "lance"}"\n')
    code, out, err = cli("lance", "export", "--json", cwd=repo.path)
    assert code == 0, err
    assert json.loads(out)["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    hybrid = search(cli, repo.path, "when does the deployment happen")
    assert hybrid["mode"] == "hybrid" and hybrid["docs"][0]["path"] == "wiki/deploy.md"
    dense = search(cli, repo.path, "--mode", "dense", "who do I escalate an outage to")
    assert dense["mode"] == "dense" and dense["docs"][0]["path"] == "wiki/oncall.md"
    assert all(-1.0 <= d["score"] <= 1.0 for d in dense["docs"])
