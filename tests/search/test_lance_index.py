"""The LanceDB scale-out path: export the index to a local dir or s3:// and answer searches from there."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

from gitwiki.config import SearchConfig
from gitwiki.search.lance_index import LanceReader, connect
from gitwiki.search.searcher import SearchOptions
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


def test_ground_from_the_table_explains_and_judges_weak_matches_in_lexical_mode(wiki, cli, tmp_path):
    uri = str(tmp_path / "lance")
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    assert cli("lance", "export", cwd=repo.path)[0] == 0
    code, out, err = cli("ground", "--uri", uri, "--json", "--explain", "rollback the release tag", cwd=repo.path)
    assert code == 0, err
    docs = json.loads(out)["docs"]
    top = docs[0]
    assert top["path"] == "wiki/deploy.md" and top["explain"]["rankers"]["lexical"]["rank"] == 1
    assert top["explain"]["score"] == top["score"] and top["explain"]["normalization"] == "raw"
    # The same term coverage the local index judges by: a page holding under half the query's words is weak.
    assert top["explain"]["weak"]["coverage"] >= 0.5 and top["weak"] is False
    code, out, _ = cli("ground", "--uri", uri, "--json", "release train", cwd=repo.path)
    assert all("explain" not in d for d in json.loads(out)["docs"])
    code, out, _ = cli("ground", "--uri", uri, "--json", "tables and rollback and oncall and pages", cwd=repo.path)
    local = json.loads(cli("ground", "--json", "tables and rollback and oncall and pages", cwd=repo.path)[1])
    # (the two BM25s order the pages differently; each page's flag is the same)
    weak = {d["path"]: d["weak"] for d in json.loads(out)["docs"]}
    assert weak == {d["path"]: d["weak"] for d in local["docs"]} and set(weak.values()) == {True, False}


def test_local_dir_export_and_search(wiki, cli, tmp_path):
    repo = wiki(LEXICAL + f'[storage]\nuri = "{tmp_path / "lance"}"\n')
    code, out, err = cli("lance", "export", "--json", cwd=repo.path)
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"] == 4 and report["corpora"] == ["wiki"] and report["model"] is None
    assert report["inserted"] == 4 and report["deleted"] == 0 and report["tag"].startswith("gitwiki-v")

    result = search(cli, repo.path, "rollback", "tag")
    assert result["mode"] == "lexical" and result["commit"] == repo.git("rev-parse", "HEAD").strip()
    top = result["docs"][0]
    assert top["path"] == "wiki/deploy.md" and top["title"] == "Deploy"
    assert top["chunks"][0]["breadcrumb"] == ["Deploy", "Rollback"] and top["chunks"][0]["start_line"] == 5

    # The same answer as the local index gives.
    code, out, _ = cli("ground", "--json", "rollback tag", cwd=repo.path)
    assert json.loads(out)["docs"][0]["path"] == top["path"]

    # A new commit re-exported updates the table; readers see the new state.
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
    boto3 = pytest.importorskip("boto3", reason="needs the s3 extra: pip install -e '.[test,s3]'")
    server_mod = pytest.importorskip("moto.server", reason="needs the s3 extra: pip install -e '.[test,s3]'")
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

    # An incremental export to S3, then `gitwiki ground` there (no checkout) sees it.
    repo.commit("oncall", {"wiki/oncall.md": "# On-call\n\nEscalate to the incident commander.\n"})
    report = export_json(cli, repo.path)
    assert (report["inserted"], report["deleted"]) == (1, 1)
    code, out, err = cli("ground", "--json", "--uri", "s3://wiki-index/handbook", "incident commander", cwd=reader)
    assert code == 0, err
    assert json.loads(out)["docs"][0]["path"] == "wiki/oncall.md"
    assert json.loads(out)["commit"] == repo.git("rev-parse", "HEAD").strip()


@needs_model
def test_hybrid_and_dense_search_use_the_exported_vectors(wiki, cli, tmp_path):
    repo = wiki(f'[storage]\nuri = "{tmp_path / "lance"}"\n')
    code, out, err = cli("lance", "export", "--json", cwd=repo.path)
    assert code == 0, err
    assert json.loads(out)["model"] == "sentence-transformers/all-MiniLM-L6-v2@int8"
    hybrid = search(cli, repo.path, "when does the deployment happen")
    assert hybrid["mode"] == "hybrid" and hybrid["docs"][0]["path"] == "wiki/deploy.md"
    dense = search(cli, repo.path, "--mode", "dense", "who do I escalate an outage to")
    assert dense["mode"] == "dense" and dense["docs"][0]["path"] == "wiki/oncall.md"
    assert all(-1.0 <= d["score"] <= 1.0 for d in dense["docs"])
    # configured for the float32 weights now: the table's queries are still embedded by the int8 model it holds
    repo.write(".gitwiki.toml", (repo.path / ".gitwiki.toml").read_text() + '[embeddings]\nweights = "fp32"\n')
    assert search(cli, repo.path, "--mode", "dense", "who do I escalate an outage to")["docs"] == dense["docs"]


def export_json(cli, cwd, *args):
    code, out, err = cli("lance", "export", "--json", *args, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def test_export_is_incremental_and_tagged(wiki, cli, tmp_path):

    uri = str(tmp_path / "lance")
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    repo.commit("more", {f"wiki/team{i}.md": f"# Team {i}\n\nTeam {i} owns service {i}.\n" for i in range(6)})
    first = export_json(cli, repo.path)
    assert first["rows"] == 10
    reader = LanceReader(uri)  # opened now, queried after the next exports: it must follow them

    # Nothing changed: nothing written, not even a new version.
    again = export_json(cli, repo.path)
    assert (again["inserted"], again["deleted"]) == (0, 0)
    assert again["version"] == first["version"] and again["tag"] == first["tag"]

    # One page changed, one added, one removed: only their chunks are written or deleted.
    repo.git("rm", "-q", "wiki/style.md")
    head = repo.commit(
        "edit",
        {
            "wiki/oncall.md": "# On-call\n\nEscalate to the incident commander.\n",
            "wiki/billing.md": "# Billing\n\nInvoices go out on the first working day.\n",
        },
    )
    changed = export_json(cli, repo.path)
    assert (changed["inserted"], changed["deleted"]) == (2, 2) and changed["rows"] == 10
    assert changed["version"] > first["version"] and changed["tag"] == f"gitwiki-v{changed['version']}-{head}"
    table = connect(uri).open_table("chunks")
    paths = set(table.search().select(["path"]).limit(None).to_arrow().column("path").to_pylist())
    assert {"wiki/billing.md", "wiki/oncall.md"} <= paths and "wiki/style.md" not in paths

    options = SearchOptions.build(SearchConfig(), mode="lexical")
    found = reader.search("incident commander", "wiki", options, None)
    assert found.commit == head and [d.path for d in found.docs] == ["wiki/oncall.md"]
    assert reader.search("secondary fifteen minutes", "wiki", options, None).docs == []
    assert reader.search("short sentences", "wiki", options, None).docs == []  # the removed page

    # A commit outside the corpus: no row written, but readers learn the new commit.
    outside = repo.commit("code", {"src/app.py": "print('hi')\n"})
    moved = export_json(cli, repo.path)
    assert (moved["inserted"], moved["deleted"]) == (0, 0) and moved["tag"].endswith(outside)
    assert reader.search("invoices", "wiki", options, None).commit == outside
    assert len([t for t in table.tags.list() if t.startswith("gitwiki-v")]) == 2  # older tags are dropped


def test_readers_see_only_tagged_versions(wiki, cli, tmp_path):
    """A version an export has not tagged yet (rows merged, indexes or state not updated) stays invisible."""

    uri = str(tmp_path / "lance")
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    tagged = export_json(cli, repo.path)["version"]
    table = connect(uri).open_table("chunks")
    row = table.search().limit(1).to_arrow().to_pylist()[0]
    row.update(key="half-written", path="wiki/ghost.md", text="phantom row", fts="phantom row")
    table.merge_insert("key").when_not_matched_insert_all().execute(pa.Table.from_pylist([row], schema=table.schema))
    assert table.version > tagged

    options = SearchOptions.build(SearchConfig(), mode="lexical")
    reader = LanceReader(uri)
    assert reader.version == tagged and reader.search("phantom", "wiki", options, None).docs == []
    assert search(cli, repo.path, "phantom")["docs"] == []


def test_a_reader_keeps_answering_when_the_tag_listing_fails(wiki, cli, tmp_path, monkeypatch):
    """An export deletes old tags; a listing that catches one half-gone fails. The open version still answers."""
    uri = str(tmp_path / "lance")
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    export_json(cli, repo.path)
    reader = LanceReader(uri)

    class Vanishing:
        def list(self):
            raise RuntimeError("lance error: Not found: _refs/tags/gitwiki-v3-abc.json")

    monkeypatch.setattr(type(reader.table), "tags", property(lambda _: Vanishing()))
    found = reader.search("release train", "wiki", SearchOptions.build(SearchConfig(), mode="lexical"), None)
    assert [d.path for d in found.docs] == ["wiki/deploy.md"]


def test_a_table_of_the_old_layout_is_refused_by_readers_and_rewritten_by_the_next_export(wiki, cli, tmp_path):
    uri = str(tmp_path / "lance")
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    old = {"corpus": "wiki", "commit": "c0", "path": "wiki/deploy.md", "blob": "b0", "text": "release train"}
    connect(uri).create_table("chunks", data=pa.Table.from_pylist([old]))  # the replace-only export's rows
    code, _, err = cli("lance", "search", "release", cwd=repo.path)
    assert code != 0 and "run `gitwiki lance export`" in err and "Traceback" not in err
    report = export_json(cli, repo.path)
    assert (report["inserted"], report["deleted"], report["rows"]) == (4, 1, 4)
    assert search(cli, repo.path, "release train")["docs"][0]["path"] == "wiki/deploy.md"


class HashEmbedder:
    """Unit vectors from a hash of the text: an ANN index needs vectors, not meaning."""

    dim = 32

    def __init__(self, config):
        self.model_id = config.model

    def embed_documents(self, texts):
        return __import__("numpy").stack([self.embed_query(t) for t in texts])

    def embed_query(self, text):
        import hashlib

        import numpy as np

        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)


@pytest.mark.slow  # trains an IVF-HNSW-SQ index on 300 rows
def test_ann_index_above_the_configured_size(repo, cli, tmp_path, monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "hash", HashEmbedder)
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)
    uri = tmp_path / "lance"
    repo.write(
        ".gitwiki.toml",
        f'[embeddings]\nprovider = "hash"\nmodel = "hash-32"\n[storage]\nuri = "{uri}"\nann_min_rows = 300\n',
    )
    pages = {f"wiki/p{i:03}.md": f"# Page {i}\n\nTopic number {i} of the handbook.\n" for i in range(299)}
    repo.commit("pages", pages)
    below = export_json(cli, repo.path)
    assert below["rows"] == 299 and below["model"] == "hash-32" and below["ann_index"] is False

    repo.commit("one more", {"wiki/p299.md": "# Page 299\n\nThe last topic.\n"})
    above = export_json(cli, repo.path)
    assert above["rows"] == 300 and above["inserted"] == 1 and above["ann_index"] is True

    # Dense search through the index still finds a page by its own vector.
    dense = search(cli, repo.path, "--mode", "dense", "Page 7 > Page 7\nTopic number 7 of the handbook.")
    assert dense["mode"] == "dense" and len(dense["docs"]) == 5

    # Later changes are folded into the index by the next export; the index stays.
    repo.commit("edit", {"wiki/p000.md": "# Page 0\n\nRewritten.\n"})
    edited = export_json(cli, repo.path)
    assert (edited["inserted"], edited["deleted"]) == (1, 1) and edited["ann_index"] is True


def test_ground_answers_from_the_shared_index_without_a_checkout(wiki, cli, tmp_path):
    uri = tmp_path / "lance"
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    assert cli("lance", "export", cwd=repo.path)[0] == 0
    local = json.loads(cli("ground", "--json", "rollback tag", cwd=repo.path)[1])

    reader = tmp_path / "reader"  # no git repository here, only a config naming the table
    reader.mkdir()
    code, _, err = cli("ground", "rollback tag", cwd=reader)
    assert code == 3 and "git" in err  # nothing configured: the checkout error as before
    (reader / ".gitwiki.toml").write_text(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    code, out, err = cli("ground", "--json", "rollback tag", cwd=reader)
    assert code == 0, err
    shared = json.loads(out)
    assert shared["commit"] == local["commit"] and shared["corpus"] == "wiki"
    assert [d["path"] for d in shared["docs"]] == [d["path"] for d in local["docs"]]
    assert shared["docs"][0]["chunks"][0]["breadcrumb"] == ["Deploy", "Rollback"]
    # A reader's stderr holds nothing but errors (lancedb's Rust side logs its warnings straight to it).
    run = subprocess.run([sys.executable, "-m", "gitwiki", "ground", "rollback tag"], cwd=reader, capture_output=True)
    assert run.returncode == 0 and b"wiki/deploy.md" in run.stdout and run.stderr == b"", run.stderr

    # --uri asks the table even inside a checkout; --at needs the checkout's history.
    code, out, err = cli("ground", "--uri", str(uri), "--format", "outline", "release train", cwd=repo.path)
    assert code == 0 and "wiki/deploy.md" in out, err
    code, _, err = cli("ground", "--uri", str(uri), "--at", "HEAD", "release", cwd=repo.path)
    assert code == 2 and "--at needs a checkout" in err
    code, _, err = cli("ground", "--uri", str(uri), "--corpus", "docs", "release", cwd=repo.path)
    assert code == 3 and "choose one of: wiki" in err  # as an unknown corpus of a checkout


@pytest.mark.slow  # starts `gitwiki serve` and the MCP SDK client
def test_serve_answers_from_the_shared_index_and_follows_exports(wiki, cli, tmp_path):
    import os
    import sys

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    uri = tmp_path / "lance"
    repo = wiki(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    assert cli("lance", "export", cwd=repo.path)[0] == 0
    reader = tmp_path / "reader"
    reader.mkdir()
    (reader / ".gitwiki.toml").write_text(LEXICAL + f'[storage]\nuri = "{uri}"\n')
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitwiki", "-C", str(reader), "serve"], env=dict(os.environ)
    )

    log = tmp_path / "serve.log"  # the cli fixture captures sys.stderr, which has no file descriptor

    async def main():
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as session:
                await talk(session)

    async def talk(session):
        await session.initialize()
        assert {t.name for t in (await session.list_tools()).tools} == {"ground", "list_corpora"}
        found = await session.call_tool("ground", {"query": "release train", "format": "json"})
        assert not found.is_error and found.structured_content["docs"][0]["path"] == "wiki/deploy.md"
        assert "wiki/deploy.md" in found.content[0].text
        corpora = await session.call_tool("list_corpora", {"format": "json"})
        head = repo.git("rev-parse", "HEAD").strip()
        assert corpora.structured_content["corpora"] == [{"name": "wiki", "indexed_commit": head}]

        # A new export while the server runs: the next call answers from it.
        repo.commit("oncall", {"wiki/oncall.md": "# On-call\n\nEscalate to the incident commander.\n"})
        assert cli("lance", "export", cwd=repo.path)[0] == 0
        found = await session.call_tool("ground", {"query": "incident commander", "format": "json"})
        assert found.structured_content["docs"][0]["path"] == "wiki/oncall.md"
        assert found.structured_content["commit"] == repo.git("rev-parse", "HEAD").strip()

    anyio.run(main)


def test_a_reader_of_a_local_folder_that_is_not_there_makes_none(tmp_path):
    """`ground --uri` with a typo'd path said "no gitwiki table" and left the folders behind (lancedb.connect)."""
    from gitwiki.errors import NotFoundError

    with pytest.raises(NotFoundError, match="no gitwiki table"):
        LanceReader(str(tmp_path / "nx" / "deeper" / "x"))
    assert not (tmp_path / "nx").exists()
