"""gitwiki.pages.pages: path safety, line-range reads, atomic writes, listings."""

from __future__ import annotations

import os
import time

import pytest

from gitwiki import fs
from gitwiki.config import CorpusConfig
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.pages import pages
from tests.helpers import FOOTNOTED_DEPLOY

WIKI = CorpusConfig(name="wiki", path="wiki", exclude=("drafts/**",))


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "wiki/guides").mkdir(parents=True)
    (tmp_path / "wiki/guides/deploy.md").write_text(FOOTNOTED_DEPLOY)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.md").write_text("# Secret\n")
    return tmp_path


@pytest.mark.parametrize(
    "path, reason",
    [
        ("../outside/secret.md", "contains '..'"),
        ("guides/../../outside/secret.md", "contains '..'"),
        ("/etc/passwd.md", "is absolute"),
        ("C:/Windows/x.md", "is absolute"),
        ("guides/notes.txt", "not a markdown page"),
        ("guides/deploy", "not a markdown page"),
        (".git/config.md", "points into .git"),
        ("guides/.GIT/config.md", "points into .git"),  # the same folder on a case-insensitive filesystem
        ("drafts/idea.md", "not part of corpus"),
        ("", "empty"),
        ("a\x00b.md", "NUL"),
    ],
)
def test_locate_refuses_paths_that_leave_the_corpus_or_are_not_pages(tree, path, reason):
    with pytest.raises(UsageError, match=reason):
        pages.locate(tree, WIKI, path)


def test_locate_refuses_symlinks_that_lead_outside(tree):
    (tree / "wiki/escape").symlink_to(tree / "outside")
    (tree / "wiki/guides/link.md").symlink_to(tree / "outside/secret.md")
    (tree / "wiki/dangling.md").symlink_to(tree / "outside/new.md")
    for path in ("escape/secret.md", "escape/new.md", "guides/link.md", "dangling.md"):
        with pytest.raises(UsageError, match="outside corpus"):
            pages.locate(tree, WIKI, path)


def test_locate_refuses_writing_through_a_symlink_inside_the_corpus(tree):
    (tree / "wiki/alias.md").symlink_to(tree / "wiki/guides/deploy.md")
    assert pages.locate(tree, WIKI, "alias.md").path == "alias.md"  # reading is fine
    with pytest.raises(UsageError, match="symlink"):
        pages.locate(tree, WIKI, "alias.md", for_write=True)


def test_locate_normalizes_and_takes_repo_relative_paths_for_reads_and_writes(tree):
    ref = pages.locate(tree, WIKI, "./guides//deploy.md")
    assert (ref.path, ref.repo_path, ref.file) == (
        "guides/deploy.md",
        "wiki/guides/deploy.md",
        tree / "wiki/guides/deploy.md",
    )
    assert pages.locate(tree, WIKI, "wiki/guides/deploy.md") == ref  # as search prints it
    new = pages.locate(tree, WIKI, "wiki/guides/new.md", for_write=True)
    assert new == pages.locate(tree, WIKI, "guides/new.md", for_write=True)
    assert new.repo_path == "wiki/guides/new.md"
    # A folder named like the corpus inside it: the path that starts with the corpus folder is repo-relative.
    (tree / "wiki/wiki").mkdir()
    assert pages.locate(tree, WIKI, "wiki/x.md", for_write=True).repo_path == "wiki/x.md"
    assert pages.locate(tree, WIKI, "wiki/wiki/x.md", for_write=True).repo_path == "wiki/wiki/x.md"


def test_read_page_line_ranges_are_verbatim_and_checked(tree):
    ref = pages.locate(tree, WIKI, "guides/deploy.md")
    whole = pages.read_page(ref)
    assert whole.text == FOOTNOTED_DEPLOY and (whole.start_line, whole.end_line, whole.total_lines) == (1, 12, 12)
    part = pages.read_page(ref, 5, 7)
    assert part.text == "## Rollback\n\nUse helm.[^src]\n"
    assert pages.read_page(ref, 12, 99).text == "[^src]: Ops handbook.\n"
    with pytest.raises(UsageError, match="past the end"):
        pages.read_page(ref, 13)
    with pytest.raises(UsageError, match="start_line ≤ end_line"):
        pages.read_page(ref, 5, 4)
    with pytest.raises(UsageError, match="smaller line range"):
        pages.read_page(ref, max_bytes=20)
    assert pages.read_page(ref, 1, 1, max_bytes=20).text == "# Deploy\n"


def test_read_page_missing_or_not_utf8(tree):
    with pytest.raises(NotFoundError, match="list_files"):
        pages.read_page(pages.locate(tree, WIKI, "guides/nope.md"))
    (tree / "wiki/latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(UsageError, match="not valid UTF-8"):
        pages.read_page(pages.locate(tree, WIKI, "latin1.md"))


def test_write_page_creates_refuses_existing_overwrites_and_limits_size(tree):
    ref = pages.locate(tree, WIKI, "new/deep/page.md", for_write=True)
    assert pages.write_page(ref, "# New\n") is True
    assert ref.file.read_text() == "# New\n"
    with pytest.raises(UsageError, match="overwrite: true"):
        pages.write_page(ref, "# Again\n")
    assert pages.write_page(ref, "# Again\n", overwrite=True) is False
    assert ref.file.read_text() == "# Again\n"
    with pytest.raises(UsageError, match="over the 10-byte limit"):
        pages.write_page(ref, "x" * 11, overwrite=True, max_bytes=10)
    assert ref.file.read_text() == "# Again\n"
    assert [p.name for p in ref.file.parent.iterdir()] == ["page.md"]  # no temp files left behind
    pages.remove_page(ref)
    with pytest.raises(NotFoundError, match="nothing to delete"):
        pages.remove_page(ref)


def test_list_files_and_tree(tree):
    repo_paths = ["wiki/index.md", "wiki/guides/deploy.md", "wiki/guides/ops/oncall.md", "wiki/ref/api.md"]
    files = pages.list_files(tree, WIKI, repo_paths)
    assert [f.path for f in files] == ["guides/deploy.md", "guides/ops/oncall.md", "index.md", "ref/api.md"]
    assert files[0].absolute_path == str(tree / "wiki/guides/deploy.md")
    assert [f.path for f in pages.list_files(tree, WIKI, repo_paths, "guides/*")] == [
        "guides/deploy.md",
        "guides/ops/oncall.md",
    ]
    assert [f.path for f in pages.list_files(tree, WIKI, repo_paths, "**/oncall.md")] == ["guides/ops/oncall.md"]
    with pytest.raises(UsageError, match="at most 1000 characters"):  # fnmatch's regex of 50,000 '[' took 54 s
        pages.list_files(tree, WIKI, repo_paths, "[" * 50_000)

    root = pages.tree(tree, WIKI, files)
    assert (root["path"], root["pages"], [f["path"] for f in root["files"]]) == ("", 4, ["index.md"])
    guides = root["subdirs"][0]
    assert (guides["path"], guides["pages"], guides["absolute_path"]) == ("guides", 2, str(tree / "wiki/guides"))
    assert guides["subdirs"][0]["files"] == [
        {"path": "guides/ops/oncall.md", "absolute_path": str(tree / "wiki/guides/ops/oncall.md")}
    ]
    shallow = pages.tree(tree, WIKI, files, depth=1)
    assert shallow["subdirs"][0]["pages"] == 2 and shallow["subdirs"][0]["files"] == []
    sub = pages.tree(tree, WIKI, files, "guides")
    assert (sub["path"], sub["pages"], [f["path"] for f in sub["files"]]) == ("guides", 2, ["guides/deploy.md"])
    with pytest.raises(NotFoundError, match="no pages under 'nope'"):
        pages.tree(tree, WIKI, files, "nope")
    with pytest.raises(UsageError, match="without '..'"):
        pages.tree(tree, WIKI, files, "../outside")


@pytest.mark.parametrize(
    "path, reason",
    [("a" * 256 + ".md", "over 255 bytes"), ("é" * 130 + ".md", "over 255 bytes"), ("d/" * 2100 + "p.md", "over 4096")],
    ids=["long name", "long multibyte name", "long path"],
)
def test_locate_refuses_over_long_paths_with_the_reason(tree, path, reason):
    with pytest.raises(UsageError, match=reason):
        pages.locate(tree, WIKI, path, for_write=True)


def test_symlinked_and_hard_linked_pages_are_neither_read_nor_written(tree):
    (tree / "wiki/alias.md").symlink_to(tree / "wiki/guides/deploy.md")
    os.link(tree / "outside/secret.md", tree / "wiki/guides/hard.md")
    with pytest.raises(UsageError, match="symlink"):
        pages.read_page(pages.locate(tree, WIKI, "alias.md"))
    hard = pages.locate(tree, WIKI, "guides/hard.md", for_write=True)
    for attempt in (
        lambda: pages.read_page(hard),
        lambda: pages.write_page(hard, "# Changed\n", overwrite=True),
        lambda: pages.remove_page(hard),
    ):
        with pytest.raises(UsageError, match="2 hard links"):
            attempt()
    assert (tree / "outside/secret.md").read_text() == "# Secret\n"
    assert (tree / "wiki/guides/hard.md").exists()


def test_a_folder_swapped_for_a_symlink_after_locate_is_refused_at_the_write(tree):
    ref = pages.locate(tree, WIKI, "guides/new.md", for_write=True)
    (tree / "wiki/guides").rename(tree / "wiki/moved")
    (tree / "wiki/guides").symlink_to(tree / "outside")  # the swap, after the path was checked
    with pytest.raises(UsageError, match="symlink"):
        pages.write_page(ref, "# New\n")
    assert sorted(os.listdir(tree / "outside")) == ["secret.md"]


def test_delete_removes_the_folders_it_empties_but_never_the_corpus_root(tree):
    for path in ("a/b/c/only.md", "top.md"):
        pages.write_page(pages.locate(tree, WIKI, path, for_write=True), "# x\n")
    (tree / "wiki/a/keep.txt").write_text("not a page, not ours\n")
    pages.remove_page(pages.locate(tree, WIKI, "a/b/c/only.md", for_write=True))
    assert not (tree / "wiki/a/b").exists() and (tree / "wiki/a/keep.txt").exists()
    (tree / "wiki/guides/deploy.md").unlink()
    (tree / "wiki/guides").rmdir()
    (tree / "wiki/a/keep.txt").unlink()
    (tree / "wiki/a").rmdir()
    pages.remove_page(pages.locate(tree, WIKI, "top.md", for_write=True))
    assert (tree / "wiki").is_dir() and os.listdir(tree / "wiki") == []


def test_a_killed_writes_temp_file_is_never_a_page_and_is_cleaned_by_the_next_write(tree):
    stale = tree / f"wiki/guides/{fs.TEMP_PREFIX}deploy.md.0123456789ab"
    fresh = tree / f"wiki/guides/{fs.TEMP_PREFIX}other.md.ba9876543210"  # another writer's, in flight
    stale.write_text("half a page")
    fresh.write_text("half a page")
    old = time.time() - fs.STALE_TEMP_SECONDS - 1
    os.utime(stale, (old, old))
    with pytest.raises(UsageError, match="not a markdown page"):
        pages.locate(tree, WIKI, f"guides/{stale.name}")
    pages.write_page(pages.locate(tree, WIKI, "guides/new.md", for_write=True), "# New\n")
    assert not stale.exists() and fresh.exists()


def test_folder_summaries_come_from_index_md_description_or_first_paragraph(tmp_path):
    files = [pages.ListedPage(p, "") for p in ("index.md", "a/index.md", "a/x.md", "a/b/y.md", "c/index.md")]
    texts = {
        "index.md": "# Home\n\nThe whole wiki.\n",
        "a/index.md": "---\ndescription: Section A.\n---\n# A\n\nNot this.\n",
        "c/index.md": "# C\n",
    }
    node = pages.tree(tmp_path, CorpusConfig(name="w", path=""), files)
    read = []
    pages.add_folder_summaries(node, {f.path for f in files}, lambda p: read.append(p) or texts[p])
    summaries = {node["path"]: node["summary"]} | {s["path"]: s["summary"] for s in node["subdirs"]}
    assert summaries == {"": "The whole wiki.", "a": "Section A.", "c": None}
    assert node["subdirs"][0]["subdirs"][0]["summary"] is None  # a/b has no index.md and is not read
    assert sorted(read) == ["a/index.md", "c/index.md", "index.md"]


def test_a_page_with_a_nul_is_not_written(tree):
    """Binary to git and to the index: an agent's add_markdown would have taken the page out of search."""
    ref = pages.locate(tree, WIKI, "nul.md", for_write=True)
    with pytest.raises(UsageError, match="NUL"):
        pages.write_page(ref, "# A\n\nx\x00y\n")
    assert not (tree / "wiki/nul.md").exists()


def test_a_page_is_written_at_most_63_folders_deep(tree):
    """A 2,000-deep add_markdown was a RecursionError after the page was written; libgit2 stops at 100."""
    with pytest.raises(UsageError, match="at most 63"):
        pages.locate(tree, WIKI, "d/" * 64 + "p.md", for_write=True)
    assert pages.locate(tree, WIKI, "d/" * 63 + "p.md", for_write=True).path.count("/") == 63
