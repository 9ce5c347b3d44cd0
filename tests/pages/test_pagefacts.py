"""The page-facts cache behind `gitwiki lint` and `gitwiki index-blocks`, and the git CLI those hooks use.

Extractions are counted by wrapping `pagefacts.EXTRACT` (never by timing): a run that finds a page
version in the cache must not extract anything for it.
"""

import contextlib
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from gitwiki.errors import NotFoundError, UsageError
from gitwiki.git import gitcli
from gitwiki.pages import pagefacts
from gitwiki.pages.pagefacts import FactsCache

LEXICAL = "[embeddings]\nenabled = false\n"
START, END = "<!-- GITWIKI:INDEX-START -->", "<!-- GITWIKI:INDEX-END -->"


@pytest.fixture
def extracted(monkeypatch):
    """field → the texts extracted for it during the test."""
    seen: dict[str, list[str]] = {field: [] for field in pagefacts.EXTRACT}
    for field, extract in list(pagefacts.EXTRACT.items()):

        def counting(text, read_yaml, field=field, extract=extract):
            seen[field].append(text)
            return extract(text, read_yaml)

        monkeypatch.setitem(pagefacts.EXTRACT, field, counting)
    return seen


def _wiki(repo):
    repo.commit(
        "init",
        {
            ".gitwiki.toml": LEXICAL,
            "wiki/index.md": f"# Home\n\n{START}\n{END}\n",
            "wiki/a.md": "# A\n\nAbout A. [B](b.md#intro)\n",
            "wiki/b.md": "# B\n\nAbout B.\n\n## Intro\n",
            "wiki/c.md": "# C\n\nAbout C. [A](a.md)\n",
        },
    )


def _cache(repo):
    return repo.path / ".git" / "gitwiki" / pagefacts.CACHE_NAME


def test_second_run_extracts_nothing_for_unchanged_pages(repo, cli, extracted):
    _wiki(repo)
    assert cli("index-blocks", "wiki/a.md", cwd=repo.path)[0] == 1  # the block was empty
    assert len(extracted["info"]) == 3  # a, b, c (the index itself is not listed)
    assert cli("lint", "wiki/a.md", cwd=repo.path)[0] == 0
    assert len(extracted["links"]) == 4 and len(extracted["anchors"]) == 1  # every staged page; b.md for #intro
    assert _cache(repo).is_file()
    for field in extracted:
        extracted[field].clear()
    assert cli("index-blocks", "wiki/a.md", cwd=repo.path)[:2] == (0, "")
    assert cli("lint", "wiki/a.md", cwd=repo.path)[0] == 0
    assert extracted == {"info": [], "links": [], "anchors": []}


def test_an_unchanged_block_is_not_rendered_again(repo, cli, monkeypatch):
    _wiki(repo)
    cli("index-blocks", cwd=repo.path)
    rendered = []
    from gitwiki.pages import index_blocks

    real = index_blocks._render
    monkeypatch.setattr(index_blocks, "_render", lambda *a, **kw: rendered.append(a) or real(*a, **kw))
    assert cli("index-blocks", cwd=repo.path)[:2] == (0, "")
    assert rendered == []
    (repo.path / "wiki/index.md").write_text(f"# Home\n\n{START}\nhand-edited\n{END}\n")
    assert cli("index-blocks", cwd=repo.path)[:2] == (1, "updated wiki/index.md\n")  # same inputs, other text
    assert len(rendered) == 1 and "- [A](a.md) — About A." in (repo.path / "wiki/index.md").read_text()


def test_an_edit_the_block_does_not_show_renders_nothing(repo, cli, monkeypatch):
    _wiki(repo)
    cli("index-blocks", cwd=repo.path)
    before = (repo.path / "wiki/index.md").read_bytes()
    rendered = []
    from gitwiki.pages import index_blocks

    real = index_blocks._render
    monkeypatch.setattr(index_blocks, "_render", lambda *a, **kw: rendered.append(a) or real(*a, **kw))
    repo.write("wiki/b.md", "# B\n\nAbout B.\n\n## Intro\n\nA new paragraph below the summary.\n")
    assert cli("index-blocks", "wiki/b.md", cwd=repo.path)[:2] == (0, "")
    assert rendered == [] and (repo.path / "wiki/index.md").read_bytes() == before
    repo.write("wiki/b.md", "# Bee\n\nAbout B.\n")
    assert cli("index-blocks", "wiki/b.md", cwd=repo.path)[:2] == (1, "updated wiki/index.md\n")
    assert len(rendered) == 1 and "- [Bee](b.md) — About B." in (repo.path / "wiki/index.md").read_text()


def test_after_an_edit_a_block_reads_the_titles_of_the_edited_pages_only(repo, cli, monkeypatch):
    # The block's last render is remembered with its pages' blob ids: after a commit's edits, only the
    # edited pages' old and new titles are compared, not every page's title (nor the shown-digest).
    from gitwiki.pages import index_blocks
    from gitwiki.pages.worktree_corpus import WorktreeCorpus

    _wiki(repo)
    cli("index-blocks", cwd=repo.path)
    before = (repo.path / "wiki/index.md").read_bytes()
    asked: list[str] = []
    real_info, real_render = WorktreeCorpus.info, index_blocks._render
    monkeypatch.setattr(WorktreeCorpus, "info", lambda self, path: asked.append(path) or real_info(self, path))
    monkeypatch.setattr(index_blocks, "_render", lambda *a, **kw: asked.append("rendered") or real_render(*a, **kw))
    repo.write("wiki/b.md", "# B\n\nAbout B.\n\n## Intro\n\nA new paragraph below the summary.\n")
    repo.git("add", "wiki/b.md")
    assert cli("index-blocks", "wiki/b.md", cwd=repo.path)[:2] == (0, "")
    assert asked == ["wiki/b.md"] and (repo.path / "wiki/index.md").read_bytes() == before
    repo.write("wiki/c.md", "# See\n\nAbout C. [A](a.md)\n")  # a new title: the block changes
    assert cli("index-blocks", "wiki/c.md", cwd=repo.path)[:2] == (1, "updated wiki/index.md\n")
    assert "rendered" in asked and "- [See](c.md) — About C." in (repo.path / "wiki/index.md").read_text()
    asked.clear()
    repo.write("wiki/c.md", "# See\n\nAbout C. [A](a.md)\n\n## More\n")
    assert cli("index-blocks", "wiki/c.md", cwd=repo.path)[:2] == (0, "")
    assert asked == ["wiki/c.md"]
    (repo.path / "wiki/a.md").unlink()  # another set of pages: the titles are read again
    assert cli("index-blocks", "wiki/a.md", cwd=repo.path)[:2] == (1, "updated wiki/index.md\n")
    assert "[A](a.md)" not in (repo.path / "wiki/index.md").read_text() and "rendered" in asked


def _not_a_database(path):
    path.write_bytes(b"{not json")


def _other_version(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version = 1")
        conn.commit()


def _hand_edited(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE facts SET value = '5' WHERE key LIKE 'links:%'")  # the wrong shape
        conn.execute("UPDATE facts SET value = '{bad' WHERE key LIKE 'anchors:%'")  # not JSON
        conn.execute("UPDATE stats SET value = '[1]'")
        conn.commit()


def _torn(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(path, "r+b") as f:  # every page after the first overwritten: SQLite reports a malformed file
        f.seek(4096)
        f.write(os.urandom(max(4096, path.stat().st_size - 4096)))


@pytest.mark.parametrize("damage", [_not_a_database, _other_version, _hand_edited, _torn])
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(repo, cli, damage):
    _wiki(repo)
    repo.write("wiki/lonely.md", "# Lonely\n\n[missing](nope.md) [b](b.md#nope)\n")
    repo.git("add", "-A")
    first = cli("lint", "--format", "json", cwd=repo.path)
    cli("index-blocks", cwd=repo.path)
    block = (repo.path / "wiki/index.md").read_text()
    damage(_cache(repo))
    (repo.path / "wiki/index.md").write_text(f"# Home\n\n{START}\n{END}\n")
    assert cli("lint", "--format", "json", cwd=repo.path) == first
    found = [(f["path"], f["code"]) for f in json.loads(first[1])["findings"]]
    assert found == [("wiki/c.md", "GW007"), *(("wiki/lonely.md", code) for code in ("GW007", "GW005", "GW006"))]
    assert cli("index-blocks", cwd=repo.path)[:2] == (1, "updated wiki/index.md\n")
    assert (repo.path / "wiki/index.md").read_text() == block
    with contextlib.closing(sqlite3.connect(_cache(repo))) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == pagefacts.VERSION
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM facts WHERE key LIKE 'links:%'").fetchone()[0] == 5


def test_an_edited_page_gets_fresh_facts(repo, cli, monkeypatch):
    monkeypatch.setattr(pagefacts, "RACY_NS", -(10**18))  # trust fresh stats too, to show they are checked
    _wiki(repo)
    cli("index-blocks", cwd=repo.path)
    assert "- [B](b.md) — About B." in (repo.path / "wiki/index.md").read_text()
    page = repo.path / "wiki/b.md"
    before = page.stat()
    page.write_text("# X\n\nAbout X.\n\n## Intro\n")  # same size; mtime set back below, ctime cannot be
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cli("index-blocks", cwd=repo.path)[0] == 1
    assert "- [X](b.md) — About X." in (repo.path / "wiki/index.md").read_text()
    # Lint: a page that starts linking to c.md makes it no orphan any more.
    code, out, _ = cli("lint", "--format", "json", "wiki/c.md", cwd=repo.path)
    assert [f["code"] for f in json.loads(out)["findings"]] == ["GW007"]
    repo.write("wiki/a.md", "# A\n\nAbout A. [B](b.md#intro) [C](c.md)\n")
    repo.git("add", "wiki/a.md")
    assert json.loads(cli("lint", "--format", "json", "wiki/c.md", cwd=repo.path)[1])["findings"] == []


def test_other_pages_are_seen_as_staged_not_as_in_the_worktree(repo, cli):
    _wiki(repo)
    cli("lint", cwd=repo.path)  # fill the cache with the committed versions
    repo.write("wiki/b.md", "# B\n\n## Renamed\n")  # unstaged: lint must still see ## Intro
    repo.write("wiki/c.md", "# C\n")  # unstaged: c.md still links to a.md as staged
    assert cli("lint", "wiki/a.md", cwd=repo.path)[:2] == (0, "")
    repo.git("add", "wiki/b.md", "wiki/c.md")
    code, out, _ = cli("lint", "wiki/a.md", cwd=repo.path)
    assert code == 1 and "GW006 no heading or anchor #intro in wiki/b.md" in out and "GW007" in out


def test_lint_reads_the_index_a_hook_is_given(repo, cli, monkeypatch):
    _wiki(repo)
    repo.write("wiki/a.md", "# A\n\n[D](d.md)\n")
    repo.write("wiki/d.md", "# D\n\n[A](a.md)\n")
    assert cli("lint", "wiki/a.md", cwd=repo.path)[0] == 1  # d.md is not staged
    alt = repo.path / ".git" / "other-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(alt)}
    subprocess.run(["git", "read-tree", "HEAD"], cwd=repo.path, env=env, check=True)
    subprocess.run(["git", "add", "wiki/d.md"], cwd=repo.path, env=env, check=True)
    monkeypatch.chdir(repo.path)
    monkeypatch.setenv("GIT_INDEX_FILE", os.path.relpath(alt))  # relative, as git may pass it
    assert cli("lint", "wiki/a.md", cwd=repo.path)[:2] == (0, "")


def test_front_matter_read_before_costs_no_yaml_import(repo):
    """A commit that leaves a page's front matter alone is linted without importing PyYAML; findings are
    the same. Front matter JSON cannot hold as YAML gave it (a date) is read by YAML each time."""
    _wiki(repo)
    pages = {
        "wiki/a.md": "---\ntitle: A\ntags: [x, y]\n---\n# A\n",
        "wiki/b.md": "---\nbad: [x\n---\n# B\n\n## Intro\n",
    }
    for path, text in pages.items():
        repo.write(path, text)
    repo.git("add", "-A")

    def lint(path: str) -> tuple[str, bool]:
        probe = f"import sys; from gitwiki.cli import main\nmain(['lint', {path!r}])\nprint('yaml' in sys.modules)\n"
        done = subprocess.run([sys.executable, "-c", probe], cwd=repo.path, capture_output=True, text=True)
        *findings, imported = done.stdout.splitlines()
        return "\n".join(findings), imported == "True"

    for path in pages:
        first = lint(path)
        assert first[1]
        repo.write(path, pages[path] + "\nMore text.\n")  # a new blob, the same front matter
        assert lint(path) == (first[0], False)
    assert "wiki/b.md:2:1: GW008 front matter is not valid YAML" in lint("wiki/b.md")[0]
    repo.write("wiki/a.md", "---\ndate: 2024-01-01\n---\n# A\n")
    assert lint("wiki/a.md") == ("", True) and lint("wiki/a.md") == ("", True)


def test_git_cli_listings_skip_symlinks_submodules_and_ignored_files(repo):
    repo.write(".gitignore", "drafts/\n")
    repo.commit("init", {"a.md": "# A\n", "drafts/x.md": "# X\n"})
    (repo.path / "link.md").symlink_to("a.md")
    blob = repo.git("rev-parse", "HEAD:a.md").strip()
    repo.git(
        "update-index", "--add", "--cacheinfo", f"160000,{repo.git('rev-parse', 'HEAD').strip()},mod"
    )  # a submodule
    repo.git("add", "link.md")
    assert gitcli.staged_files(repo.path) == {
        ".gitignore": repo.git("rev-parse", "HEAD:.gitignore").strip(),
        "a.md": blob,
    }
    assert gitcli.staged_files(repo.path, ["drafts", "a.md"]) == {"a.md": blob}
    repo.write("b.md", "# B\n")
    listing = gitcli.index_listing(repo.path, "")
    # the submodule, not checked out, differs from its entry: a page listing looks at it on disk
    same = {".gitignore": listing.same[".gitignore"], "a.md": blob}
    assert listing == gitcli.IndexListing(same, ["b.md", "mod"], frozenset({"b.md"}))  # b.md: git has no entry
    assert gitcli.read_blobs(repo.path, [blob]) == {blob: b"# A\n"}
    assert gitcli.blob_id(b"# A\n") == blob


def test_git_cli_errors_say_what_to_do(repo, tmp_path, monkeypatch):
    with pytest.raises(NotFoundError, match="not inside a git repository; run `git init`"):
        gitcli.discover(tmp_path / "nowhere")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with pytest.raises(NotFoundError, match="bare repository"):
        gitcli.discover(bare)
    checkout = gitcli.discover(repo.path)
    assert checkout == (repo.path.resolve(), (repo.path / ".git").resolve(), (repo.path / ".git").resolve())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="git command is not installed"):
        gitcli.discover(repo.path)


def test_cache_file_round_trip_and_pruning(tmp_path, monkeypatch):
    cache = FactsCache.load(tmp_path)
    assert cache.get("links", "b1", lambda: "[x](x.md) [w](https://w) [s](#s) [q](?q)") == ["x.md"]
    assert cache.get("info", "b1", lambda: "") == [None, None]
    cache.remember_render("k", "d")
    cache.save()
    again = FactsCache.load(tmp_path)
    assert again.missing("links", ["b1", "b2"]) == ["b2"]
    assert again.get("links", "b1", lambda: pytest.fail("must come from the file")) == ["x.md"]
    assert again.rendered("k") == "d"
    for blob in ("b2", "b3"):
        again.get("links", blob, lambda: "")
    again.save()
    assert _keys(tmp_path, "facts") == {"links:b1", "info:b1", "links:b2", "links:b3"}
    # A row is dropped once no run has used it for KEEP_DAYS; a run marks what it reads as used.
    later = pagefacts.today() + pagefacts.KEEP_DAYS
    monkeypatch.setattr(pagefacts, "today", lambda: later)
    third = FactsCache.load(tmp_path)
    assert third.get("links", "b1", lambda: pytest.fail("still cached")) == ["x.md"]
    third.get("links", "b4", lambda: "")
    third.save()
    assert _keys(tmp_path, "facts") == {"links:b1", "info:b1", "links:b2", "links:b3", "links:b4"}
    monkeypatch.setattr(pagefacts, "today", lambda: later + 1)
    fourth = FactsCache.load(tmp_path)
    assert fourth.get("links", "b1", lambda: pytest.fail("still cached")) == ["x.md"]
    fourth.save()  # b1's links were used the day before: kept; the rest last used KEEP_DAYS + 1 ago
    assert _keys(tmp_path, "facts") == {"links:b1", "links:b4"} and _keys(tmp_path, "renders") == set()


@pytest.mark.parametrize("bulk", [pagefacts.BULK, 0])
def test_missing_marks_the_rows_it_finds_used_by_key_or_in_bulk(tmp_path, monkeypatch, bulk):
    # Above BULK blobs, `missing` scans the rows' keys instead of reading them: the answer and the rows it
    # keeps from pruning must be the same.
    monkeypatch.setattr(pagefacts, "BULK", bulk)
    cache = FactsCache.load(tmp_path)
    cache.get("links", "b1", lambda: "[x](x.md)")
    assert cache.get("links", "b2", lambda: pagefacts.decode(b"\x00binary")) is None
    cache.get("links", "b5", lambda: "")
    cache.save()
    later = pagefacts.today() + pagefacts.KEEP_DAYS
    monkeypatch.setattr(pagefacts, "today", lambda: later)
    third = FactsCache.load(tmp_path)
    assert third.missing("links", ["b1", "b2", "b3", "b1"]) == ["b3"]
    third.save()
    monkeypatch.setattr(pagefacts, "today", lambda: later + 1)
    fourth = FactsCache.load(tmp_path)
    assert fourth.missing("links", ["b1", "b2"]) == []
    fourth.save()  # b1 and b2 were used the day before: kept; b5 last used KEEP_DAYS + 1 ago
    assert _keys(tmp_path, "facts") == {"links:b1", "unreadable:b2"}


def _keys(index_dir, table) -> set[str]:
    with contextlib.closing(sqlite3.connect(index_dir / pagefacts.CACHE_NAME)) as conn:
        return {key for (key,) in conn.execute(f"SELECT key FROM {table}")}


def test_a_version_bump_empties_the_cache_and_the_old_json_file_goes(tmp_path, monkeypatch):
    (tmp_path / pagefacts.LEGACY_NAME).write_text('{"version": 2, "facts": {}}')
    cache = FactsCache.load(tmp_path)
    cache.get("links", "b1", lambda: "[x](x.md)")
    cache.save()
    assert not (tmp_path / pagefacts.LEGACY_NAME).exists()
    assert FactsCache.load(tmp_path).missing("links", ["b1"]) == []
    monkeypatch.setattr(pagefacts, "VERSION", pagefacts.VERSION + 1)
    bumped = FactsCache.load(tmp_path)
    assert bumped.missing("links", ["b1"]) == ["b1"]
    assert bumped.get("links", "b1", lambda: "[y](y.md)") == ["y.md"]
    bumped.save()
    assert _keys(tmp_path, "facts") == {"links:b1"}
    assert FactsCache.load(tmp_path).get("links", "b1", lambda: pytest.fail("cached")) == ["y.md"]


_WRITER = """
import sys, time
from pathlib import Path
from gitwiki.pages.pagefacts import FactsCache
index_dir, name, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.01)
for round in range(20):
    cache = FactsCache.load(index_dir)
    for i in range(50):
        cache.get("links", f"{name}-{round}-{i}", lambda: f"[p](p{i}.md)")
    cache.remember_render(f"{name}-{round}", "digest")
    cache.save()
print("done")
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), name, str(go)], stdout=subprocess.PIPE, text=True
        )
        for name in ("one", "two")
    ]
    go.touch()
    assert [p.communicate(timeout=300)[0] for p in procs] == ["done\n", "done\n"]
    assert len(_keys(tmp_path, "facts")) == 2 * 20 * 50 and len(_keys(tmp_path, "renders")) == 40
    cache = FactsCache.load(tmp_path)
    assert cache.missing("links", [f"{n}-{r}-{i}" for n in ("one", "two") for r in range(20) for i in range(50)]) == []
    assert cache.get("links", "two-19-7", lambda: pytest.fail("cached")) == ["p7.md"]


def test_a_read_only_index_dir_costs_speed_not_a_failure(tmp_path):
    (tmp_path / "missing").write_text("a file where the dir should be")
    cache = FactsCache.load(tmp_path / "missing")
    assert cache.get("links", "b", lambda: "[x](x.md)") == ["x.md"]
    assert cache.get("links", "b", lambda: pytest.fail("kept in memory")) == ["x.md"]
    cache.save()
