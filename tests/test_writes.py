"""gitwiki.writes: a page write or delete with its index blocks, commit, index update and lint, on a real repo."""

import pytest

from gitwiki import writes
from gitwiki.errors import UsageError
from gitwiki.markdown.index_block import BlockError
from gitwiki.wiki import Wiki
from tests.test_pages import DEPLOY

LEXICAL = "[embeddings]\nenabled = false\n"


def _wiki(repo, extra: str = "") -> Wiki:
    repo.commit("init", {".gitwiki.toml": LEXICAL + extra, "wiki/guides/deploy.md": DEPLOY})
    return Wiki.open(repo.path)


def test_add_page_indexes_the_page_and_refreshes_ancestor_index_blocks(repo):
    wiki = _wiki(repo)
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the zebra rota.\n")
    assert (report.action, report.path, report.commit) == ("created", "guides/ops/oncall.md", None)
    assert "wiki/guides/ops/oncall.md" in report.dirty
    assert report.indexed_commit == repo.git("rev-parse", "HEAD").strip()
    assert report.index_files == ["wiki/index.md"]  # the corpus's front index, scaffolded with its block
    assert "[On-call](guides/ops/oncall.md)" in (repo.path / "wiki/index.md").read_text()
    hits = wiki.search("zebra rota", mode="lexical")
    assert hits.docs[0].path == "wiki/guides/ops/oncall.md"
    with pytest.raises(UsageError, match="already exists"):
        writes.add_page(wiki, None, "guides/ops/oncall.md", "# Other\n")


def test_add_page_returns_lint_findings_without_blocking(repo):
    wiki = _wiki(repo)
    report = writes.add_page(wiki, None, "broken.md", "# Broken\n\nSee [missing](nowhere.md).\n")
    assert (repo.path / "wiki/broken.md").is_file()
    assert any("nowhere.md" in f["message"] for f in report.findings), report.findings


def test_delete_page_prunes_it_from_search(repo):
    wiki = _wiki(repo)
    writes.add_page(wiki, None, "tmp.md", "# Temporary\n\nquokka sightings\n")
    assert wiki.search("quokka", mode="lexical").docs
    report = writes.delete_page(wiki, None, "tmp.md")
    assert report.action == "deleted" and not (repo.path / "wiki/tmp.md").exists()
    assert not wiki.search("quokka", mode="lexical").docs
    blobs = {r[0] for r in wiki.store.conn.execute("SELECT title FROM blobs")}
    assert "Temporary" not in blobs


def test_commit_writes_commits_only_that_page_and_its_index_blocks(repo):
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    repo.write("unrelated.txt", "staged, not ours\n")
    repo.git("add", "unrelated.txt")
    report = writes.add_page(wiki, None, "guides/new.md", "# New page\n")
    assert report.commit == repo.git("rev-parse", "HEAD").strip()
    assert repo.git("log", "-1", "--format=%s").strip() == "gitwiki: add_markdown wiki/guides/new.md"
    committed = set(repo.git("show", "--name-only", "--format=", "HEAD").split())
    assert "wiki/guides/new.md" in committed and "unrelated.txt" not in committed
    assert committed <= {"wiki/guides/new.md", *report.index_files}
    assert "A  unrelated.txt" in repo.git("status", "--porcelain")  # still staged, still not committed
    report = writes.delete_page(wiki, None, "guides/new.md")
    assert repo.git("log", "-1", "--format=%s").strip() == "gitwiki: delete_markdown wiki/guides/new.md"
    assert "wiki/guides/new.md" not in repo.git("ls-files")


def test_a_malformed_ancestor_index_is_named_and_the_others_are_still_refreshed(repo):
    wiki = _wiki(repo)
    repo.write("wiki/index.md", "# Home\n\n<!-- GITWIKI:INDEX-START -->\n")  # no END marker
    repo.write("wiki/guides/index.md", "# Guides\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    with pytest.raises(BlockError, match="wiki/index.md:3: INDEX-START has no INDEX-END"):
        writes.add_page(wiki, None, "guides/new.md", "# New\n")
    assert (repo.path / "wiki/guides/new.md").read_text() == "# New\n"  # the write itself is kept
    assert "[New](new.md)" in (repo.path / "wiki/guides/index.md").read_text()
    assert (repo.path / "wiki/index.md").read_text() == "# Home\n\n<!-- GITWIKI:INDEX-START -->\n"
