"""gitwiki.operations.writes: a page write or delete with its index blocks, commit, index update and lint, on a real repo."""

import os
import subprocess
import sys
import threading
import time

import pytest

from gitwiki.errors import UsageError
from gitwiki.git import gitcli, gitrepo
from gitwiki.markdown.index_block import BlockError
from gitwiki.operations import writes
from gitwiki.wiki import Wiki
from tests.helpers import FOOTNOTED_DEPLOY

LEXICAL = "[embeddings]\nenabled = false\n"


def _wiki(repo, extra: str = "") -> Wiki:
    repo.commit("init", {".gitwiki.toml": LEXICAL + extra, "wiki/guides/deploy.md": FOOTNOTED_DEPLOY})
    return Wiki.open(repo.path)


def test_add_page_indexes_the_page_and_refreshes_ancestor_index_blocks(repo):
    wiki = _wiki(repo)
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the zebra rota.\n")
    assert (report.action, report.path, report.commit) == ("created", "wiki/guides/ops/oncall.md", None)
    assert "wiki/guides/ops/oncall.md" in report.dirty
    assert report.indexed_commit == repo.git("rev-parse", "HEAD").strip()
    assert report.index_files == ["wiki/index.md"]  # the corpus's front index, scaffolded with its block
    assert "[On-call](guides/ops/oncall.md)" in (repo.path / "wiki/index.md").read_text()
    hits = wiki.search("zebra rota", mode="lexical")
    assert hits.docs[0].path == "wiki/guides/ops/oncall.md"
    with pytest.raises(UsageError, match="already exists"):
        writes.add_page(wiki, None, "guides/ops/oncall.md", "# Other\n")


def test_an_overwrite_that_changes_nothing_an_index_shows_leaves_it_alone(repo, monkeypatch):
    """The index block is not rendered again (nor index.md written) when the page's title and summary stay;
    a new title renders and rewrites it."""
    from gitwiki.pages import index_blocks

    wiki = _wiki(repo)
    writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the zebra rota.\n")
    front = repo.path / "wiki/index.md"
    before, stamp = front.read_bytes(), front.stat().st_mtime_ns
    rendered = []
    real = index_blocks._render
    monkeypatch.setattr(index_blocks, "_render", lambda *a, **kw: rendered.append(a) or real(*a, **kw))
    body = "# On-call\n\nPage the zebra rota.\n\n## Escalation\n\nCall the lead.\n"
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", body, overwrite=True)
    assert (report.action, report.index_files, rendered) == ("overwritten", [], [])
    assert front.read_bytes() == before and front.stat().st_mtime_ns == stamp
    assert wiki.search("escalation lead", mode="lexical").docs[0].path == "wiki/guides/ops/oncall.md"
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", "# Pager duty\n\nPage the zebra rota.\n", True)
    assert report.index_files == ["wiki/index.md"] and len(rendered) == 1
    assert "[Pager duty](guides/ops/oncall.md) — Page the zebra rota." in front.read_text()
    assert "On-call" not in front.read_text()


def test_an_overwrite_that_keeps_title_and_summary_does_not_list_the_corpus(repo, monkeypatch):
    """Listing the corpus for the index blocks asks git three times; an overwrite whose page keeps its title
    and summary (a memory store appending an entry) cannot change a block, so it is not listed. A new summary
    is, and a missing front index is scaffolded whatever changed."""
    wiki = _wiki(repo)
    writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the zebra rota.\n")
    listings = []
    real = gitcli.index_listing
    monkeypatch.setattr(gitcli, "index_listing", lambda *a: listings.append(a) or real(*a))
    body = "# On-call\n\nPage the zebra rota.\n\n## Escalation\n\nCall the lead.\n"
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", body, overwrite=True)
    assert (report.index_files, listings) == ([], [])
    assert wiki.search("escalation lead", mode="lexical").docs[0].path == "wiki/guides/ops/oncall.md"
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the yak rota.\n", True)
    assert report.index_files == ["wiki/index.md"] and listings
    assert "[On-call](guides/ops/oncall.md) — Page the yak rota." in (repo.path / "wiki/index.md").read_text()
    (repo.path / "wiki/index.md").unlink()
    report = writes.add_page(wiki, None, "guides/ops/oncall.md", "# On-call\n\nPage the yak rota.\n\nMore.\n", True)
    assert report.index_files == ["wiki/index.md"]
    front = (repo.path / "wiki/index.md").read_text()
    assert "[On-call](guides/ops/oncall.md)" in front
    emptied = front.split("<!-- GITWIKI:INDEX-START")[0] + "<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n"
    report = writes.add_page(wiki, None, "index.md", emptied, overwrite=True)  # an index page keeps its title
    assert report.index_files == ["wiki/index.md"]
    assert "[On-call](guides/ops/oncall.md)" in (repo.path / "wiki/index.md").read_text()


def test_a_page_write_parses_the_page_once_for_lint_and_index(repo, monkeypatch):
    """Lint parses the written page (part by part, each part remembered) and indexing reads the sections'
    outline from that parse, rather than parsing it again (twice the markdown-it time of every write and import)."""
    from gitwiki.markdown import chunker

    wiki = _wiki(repo)
    md = chunker.parser()
    parsed = []
    real = md.parse
    monkeypatch.setattr(md, "parse", lambda text, env=None: parsed.append(text) or real(text, env))
    body = "# Kestrel\n\nThe kestrel rota.\n\n## Nights\n\nHover [home](../index.md).\n\n## Days\n\nPerch.\n"
    report = writes.add_page(wiki, None, "guides/kestrel.md", body)
    assert "".join(text for text in parsed if text in body) == body  # each part once; the front index.md too
    assert report.findings == []
    rows = wiki.store.chunks_of([gitcli.blob_id(body.encode())])
    assert [(r.breadcrumb, r.start_line, r.end_line) for r in rows] == [
        (("Kestrel",), 1, 3),
        (("Kestrel", "Nights"), 5, 7),
        (("Kestrel", "Days"), 9, 11),
    ]


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
    report = writes.add_page(wiki, None, "guides/new.md", "# New page\n", commit=True)
    assert report.commit == repo.git("rev-parse", "HEAD").strip()
    assert repo.git("log", "-1", "--format=%s").strip() == "gitwiki: add_markdown wiki/guides/new.md"
    committed = set(repo.git("show", "--name-only", "--format=", "HEAD").split())
    assert "wiki/guides/new.md" in committed and "unrelated.txt" not in committed
    assert committed <= {"wiki/guides/new.md", *report.index_files}
    assert "A  unrelated.txt" in repo.git("status", "--porcelain")  # still staged, still not committed
    report = writes.delete_page(wiki, None, "guides/new.md", commit=True)
    assert repo.git("log", "-1", "--format=%s").strip() == "gitwiki: delete_markdown wiki/guides/new.md"
    assert "wiki/guides/new.md" not in repo.git("ls-files")


def test_the_write_path_commits_when_its_caller_says_not_when_an_adapter_setting_does(repo):
    """[mcp] commit_writes is the MCP server's setting and [memory] commit memory's: each passes its own."""
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    head = repo.git("rev-parse", "HEAD")
    assert writes.add_page(wiki, None, "guides/kept.md", "# Kept in the worktree\n").commit is None
    assert repo.git("rev-parse", "HEAD") == head
    assert writes.add_page(wiki, None, "guides/made.md", "# Committed\n", commit=True).commit != head.strip()
    assert "wiki/guides/kept.md" not in repo.git("ls-files") and "wiki/guides/made.md" in repo.git("ls-files")


def test_a_malformed_ancestor_index_refuses_the_write_and_leaves_the_worktree_as_it_was(repo):
    wiki = _wiki(repo)
    repo.write("wiki/index.md", "# Home\n\n<!-- GITWIKI:INDEX-START -->\n")  # no END marker
    guides = "# Guides\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n"
    repo.write("wiki/guides/index.md", guides)
    with pytest.raises(BlockError, match="wiki/index.md:3: INDEX-START has no INDEX-END"):
        writes.add_page(wiki, None, "guides/new.md", "# New\n")
    assert not (repo.path / "wiki/guides/new.md").exists()  # refused before anything was written
    assert (repo.path / "wiki/guides/index.md").read_text() == guides
    assert (repo.path / "wiki/index.md").read_text() == "# Home\n\n<!-- GITWIKI:INDEX-START -->\n"
    with pytest.raises(BlockError):
        writes.delete_page(wiki, None, "guides/deploy.md")
    assert (repo.path / "wiki/guides/deploy.md").read_text() == FOOTNOTED_DEPLOY


def test_a_refused_write_under_commit_writes_leaves_nothing_written_or_committed(repo, tmp_path):
    """A symlinked index.md above the page: the write is refused (-32602 over MCP) with no page left behind,
    no front index scaffolded, no commit."""
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    head = repo.git("rev-parse", "HEAD")
    outside = tmp_path / "outside.md"
    outside.write_text("# Elsewhere\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    (repo.path / "wiki/guides/index.md").symlink_to(outside)
    with pytest.raises(UsageError, match="is a symlink"):
        writes.add_page(wiki, None, "guides/ops/new.md", "# New\n", commit=True)
    assert repo.git("status", "--porcelain", "--untracked-files=all") == "?? wiki/guides/index.md\n"
    assert not (repo.path / "wiki/guides/ops").exists() and repo.git("rev-parse", "HEAD") == head
    with pytest.raises(UsageError, match="is a symlink"):
        writes.add_page(wiki, None, "guides/deploy.md", "# Replaced\n", overwrite=True, commit=True)
    assert (repo.path / "wiki/guides/deploy.md").read_text() == FOOTNOTED_DEPLOY


def test_an_ancestor_index_that_turns_bad_between_check_and_write_rolls_the_page_back(repo, monkeypatch):
    """The check before writing and the write are not one step: an index.md swapped meanwhile still
    leaves the page as it was (created: removed with the folders it made; overwritten: its old bytes)."""
    from gitwiki.fs import UnsafeFile
    from gitwiki.pages import index_blocks

    wiki = _wiki(repo)
    real = index_blocks.refresh

    def swapped(*args, **kwargs):
        result = real(*args, **kwargs)
        return result._replace(errors=[UnsafeFile("'wiki/index.md' is a symlink")])

    monkeypatch.setattr(index_blocks, "refresh", swapped)
    with pytest.raises(UnsafeFile):
        writes.add_page(wiki, None, "guides/ops/new.md", "# New\n")
    assert not (repo.path / "wiki/guides/ops").exists()
    with pytest.raises(UnsafeFile):
        writes.add_page(wiki, None, "guides/deploy.md", "# Replaced\n", overwrite=True)
    assert (repo.path / "wiki/guides/deploy.md").read_text() == FOOTNOTED_DEPLOY
    with pytest.raises(UnsafeFile):
        writes.delete_page(wiki, None, "guides/deploy.md")
    assert (repo.path / "wiki/guides/deploy.md").read_text() == FOOTNOTED_DEPLOY  # deleted, then put back


def _holding_index_lock(repo, seconds: float) -> subprocess.Popen:
    """Another process holding git's index.lock, as a running `git add` does."""
    lock = repo.path / ".git/index.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import os,time; open({str(lock)!r}, 'x'); print(flush=True); time.sleep({seconds}); os.remove({str(lock)!r})",
        ],
        stdout=subprocess.PIPE,
    )
    holder.stdout.readline()  # the lock exists from here on
    return holder


def test_commit_writes_beside_a_git_holding_index_lock(repo):
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    repo.write("unrelated.txt", "staged, not ours\n")
    repo.git("add", "unrelated.txt")
    holder = _holding_index_lock(repo, 1.0)
    report = writes.add_page(wiki, None, "guides/new.md", "# New page\n", commit=True)
    holder.wait()
    assert report.commit == repo.git("rev-parse", "HEAD").strip()
    status = repo.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == ["A  unrelated.txt"]  # the page is neither a staged deletion nor untracked
    repo.git("commit", "-qm", "the user's next commit")
    assert "wiki/guides/new.md" in repo.git("ls-files")


def test_a_stale_index_lock_keeps_the_commit_and_the_users_index(repo, monkeypatch, capsys):
    monkeypatch.setattr(gitrepo, "INDEX_LOCK_WAIT", 0.2)
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    repo.write("unrelated.txt", "staged, not ours\n")
    repo.git("add", "unrelated.txt")
    before = (repo.path / ".git/index").read_bytes()
    holder = _holding_index_lock(repo, 30)
    try:
        report = writes.add_page(wiki, None, "guides/new.md", "# New page\n", commit=True)
        assert report.commit == repo.git("rev-parse", "HEAD").strip()
        assert (repo.path / ".git/index").read_bytes() == before
        assert "git reset -q -- wiki/guides/new.md" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()


def test_commit_writes_rebuilds_on_a_head_the_user_moved(repo, monkeypatch):
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    real = gitcli.update_ref
    calls = []

    def user_commits_first(root, ref, new, old, message):
        calls.append(old)
        if len(calls) == 1:  # between gitwiki reading HEAD and moving it, another process commits
            other = {**os.environ, "GIT_INDEX_FILE": str(repo.path / ".git/other-index")}  # its own index
            repo.write("notes.txt", "mine\n")
            for args in (["read-tree", "HEAD"], ["add", "notes.txt"], ["commit", "-qm", "user's commit"]):
                subprocess.run(["git", *args], cwd=repo.path, env=other, check=True)
        return real(root, ref, new, old, message)

    monkeypatch.setattr(gitcli, "update_ref", user_commits_first)
    report = writes.add_page(wiki, None, "guides/new.md", "# New page\n", commit=True)
    assert len(calls) == 2 and calls[0] != calls[1]
    assert report.commit == repo.git("rev-parse", "HEAD").strip()
    assert repo.git("log", "-2", "--format=%s").splitlines() == [
        "gitwiki: add_markdown wiki/guides/new.md",
        "user's commit",
    ]
    files = repo.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert "notes.txt" in files and "wiki/guides/new.md" in files
    assert "wiki/" not in repo.git("status", "--porcelain")  # our pages: committed and staged alike


def test_commit_writes_never_drops_a_concurrent_git_add(repo):
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    added: list[str] = []
    done = threading.Event()

    def user_adds():
        while not done.is_set():
            name = f"user{len(added)}.txt"
            repo.write(name, "x\n")
            if subprocess.run(["git", "-C", str(repo.path), "add", name], capture_output=True).returncode == 0:
                added.append(name)

    thread = threading.Thread(target=user_adds)
    thread.start()
    try:
        for i in range(6):
            writes.add_page(wiki, None, f"p{i}.md", f"# Page {i}\n", commit=True)
    finally:
        done.set()
        thread.join()
    staged = set(repo.git("diff", "--cached", "--name-only").split())
    assert added and staged == set(added)  # every user add is still staged, nothing of ours is
    committed = repo.git("ls-tree", "-r", "--name-only", "HEAD").split()
    assert all(f"wiki/p{i}.md" in committed for i in range(6))


def test_a_symlinked_index_pointing_outside_is_never_read_or_copied(repo, tmp_path):
    wiki = _wiki(repo)
    outside = tmp_path / "outside.md"
    outside.write_text("# Private\n\nsecret-token-123\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    (repo.path / "wiki/guides/index.md").symlink_to(outside)
    with pytest.raises(UsageError, match="wiki/guides/index.md' is a symlink"):
        writes.add_page(wiki, None, "guides/new.md", "# New\n")
    assert (repo.path / "wiki/guides/index.md").is_symlink()
    assert not (repo.path / "wiki/guides/new.md").exists() and not (repo.path / "wiki/index.md").exists()
    assert "New" not in outside.read_text()


def test_lint_refuses_a_hard_linked_page_by_name(repo, cli, tmp_path):
    _wiki(repo)
    outside = tmp_path / "outside.md"
    outside.write_text("# Private\n")
    os.link(outside, repo.path / "wiki/linked.md")
    code, _, err = cli("lint", "wiki/linked.md", cwd=repo.path)
    assert code == 2 and "'wiki/linked.md' has 2 hard links" in err


def test_an_index_lock_left_by_a_killed_gitwiki_is_taken_over_at_once(repo):
    wiki = _wiki(repo, "[mcp]\ncommit_writes = true\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (repo.path / ".git/index.lock").write_text(f"{gitcli.LOCK_MARK}{dead.pid}\n")
    started = time.monotonic()
    report = writes.add_page(wiki, None, "guides/new.md", "# New page\n", commit=True)
    assert time.monotonic() - started < gitrepo.INDEX_LOCK_WAIT  # not waited for
    assert report.commit == repo.git("rev-parse", "HEAD").strip()
    assert not (repo.path / ".git/index.lock").exists() and repo.git("status", "--porcelain") == ""


def test_over_mcp_a_refused_add_markdown_is_invalid_params_and_leaves_nothing(repo, tmp_path):
    """The finding as an agent meets it: `add_markdown` below a symlinked index.md with commit_writes on
    answers -32602 and leaves no page, no scaffolded index.md and no commit."""
    from tests.mcp.client import connect, refused, run

    _wiki(repo, "[mcp]\ncommit_writes = true\n")
    head = repo.git("rev-parse", "HEAD")
    outside = tmp_path / "outside.md"
    outside.write_text("# Elsewhere\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    (repo.path / "wiki/guides/index.md").symlink_to(outside)

    async def main():
        async with connect(repo.path) as s:
            return await refused(s, "add_markdown", path="guides/new.md", content="# New\n")

    error = run(main)
    assert error.error.code == -32602 and "is a symlink" in error.error.message
    assert repo.git("status", "--porcelain", "--untracked-files=all") == "?? wiki/guides/index.md\n"
    assert repo.git("rev-parse", "HEAD") == head


def test_a_committed_index_block_lists_no_page_git_does_not_track_but_the_written_one(repo):
    """A write killed in commit mode left its page on disk, untracked; the next committing write rendered the
    block from the files there and committed it: HEAD's index.md linked a page HEAD does not have."""
    from gitwiki.markdown.index_block import END_MARKER, START_MARKER

    front = f"# Wiki\n\n{START_MARKER}\n{END_MARKER}\n"
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": front, "wiki/a.md": "# A\n"})
    repo.write("wiki/ghost.md", "# Ghost\n\nLeft by a killed write.\n")
    wiki = Wiki.open(repo.path)
    report = writes.add_page(wiki, None, "new.md", "# New\n\nCommitted.\n", commit=True)
    assert report.commit is not None and report.index_files == ["wiki/index.md"]
    committed = repo.git("show", "HEAD:wiki/index.md")
    assert "new.md" in committed and "a.md" in committed and "ghost.md" not in committed
    assert repo.git("status", "--porcelain").strip() == "?? wiki/ghost.md"
    writes.add_page(wiki, None, "other.md", "# Other\n", commit=False)  # not committing: the worktree's pages
    assert "ghost.md" in (repo.path / "wiki/index.md").read_text()
