"""gitwiki.pages.worktree_corpus: which files are a corpus's pages on disk, their blob ids and titles."""

import os

from gitwiki.config import Config, CorpusConfig
from gitwiki.git import gitcli
from gitwiki.pages.pagefacts import FactsCache
from gitwiki.pages.worktree_corpus import PageInfo, WorktreeCorpus
from tests.helpers import edited_every_way

WIKI = CorpusConfig("wiki", "wiki", exclude=("drafts/**",))
CONFIG = Config(corpora=(WIKI,))


def test_pages_are_what_git_lists_minus_ignored_dot_folders_symlinks_and_excluded(repo):
    repo.write(".gitignore", "wiki/private/\n")
    for path in ("wiki/index.md", "wiki/a/b.md", "wiki/private/p.md", "wiki/.hidden/h.md", "wiki/drafts/d.md"):
        repo.write(path, "# x\n")
    repo.write("wiki/notes.txt", "not a page\n")
    repo.write("other/o.md", "# outside the corpus folder\n")
    os.symlink("index.md", repo.path / "wiki/link.md")
    repo.commit(files={"wiki/gone.md": "# tracked, then deleted from disk\n"})
    (repo.path / "wiki/gone.md").unlink()
    repo.write("wiki/untracked.md", "# not added yet\n")

    listing = WorktreeCorpus(repo.path, WIKI, CONFIG)

    assert listing.pages == ["wiki/a/b.md", "wiki/index.md", "wiki/untracked.md"]
    assert listing.index_files() == ["wiki/index.md"]


def test_blob_ids_are_gits_and_info_falls_back_to_the_file_name(repo):
    repo.write("wiki/titled.md", "---\ndescription: Meta.\n---\n# Titled\n")
    repo.write("wiki/plain-notes.md", "Just a paragraph.\n")
    repo.commit()
    listing = WorktreeCorpus(repo.path, WIKI, CONFIG)
    assert listing.blob("wiki/titled.md") == repo.git("rev-parse", "HEAD:wiki/titled.md").strip()
    assert listing.info("wiki/titled.md") == PageInfo("Titled", "Meta.")
    assert listing.info("wiki/plain-notes.md") == PageInfo("plain-notes", "Just a paragraph.")


def test_forget_drops_what_was_known_about_a_rewritten_page(repo):
    repo.write("wiki/a.md", "# Before\n")
    facts = FactsCache()
    listing = WorktreeCorpus(repo.path, WIKI, CONFIG, facts)
    assert listing.info("wiki/a.md").title == "Before"
    repo.write("wiki/a.md", "# After, and longer\n")
    assert listing.info("wiki/a.md").title == "Before"  # cached for the life of the listing
    listing.forget("wiki/a.md")
    assert listing.info("wiki/a.md").title == "After, and longer"
    assert listing.blob("wiki/a.md") == repo.git("hash-object", "wiki/a.md").strip()


def _full_scan(repo, monkeypatch) -> None:
    """The listing before git's index was asked: every listed file `lstat`-ed and hashed."""
    listed = gitcli._paths(repo.path, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    monkeypatch.setattr(gitcli, "index_listing", lambda root, folder: gitcli.IndexListing({}, sorted(set(listed))))


def test_blob_ids_from_the_index_give_what_a_full_scan_gives(repo, monkeypatch):
    from gitwiki.pages.index_blocks import rewrite

    edited_every_way(repo)
    racy = repo.git("ls-files", "-s", "wiki/h.md").split()[1]
    assert racy != repo.git("hash-object", "wiki/h.md").strip()  # the racy edit is really unstaged
    index = (repo.path / "wiki/index.md").read_text()

    def seen() -> tuple[list[str], dict[str, str], str]:
        listing = WorktreeCorpus(repo.path, WIKI, CONFIG)
        return listing.pages, {p: listing.blob(p) for p in listing.pages}, rewrite(index, "wiki/index.md", listing)

    new = seen()
    with monkeypatch.context() as patched:
        _full_scan(repo, patched)
        old = seen()
    assert new == old
    assert new[1]["wiki/h.md"] == repo.git("hash-object", "wiki/h.md").strip()
    assert new[1]["wiki/g.md"] == repo.git("hash-object", "wiki/g.md").strip()
    assert "[H, edited, racy](h.md)" in new[2] and "F2" not in new[2] and "[F](f2.md)" in new[2]
    assert new[0] == sorted(f"wiki/{n}.md" for n in ("a", "a2", "b", "e2", "f2", "g", "h", "i", "j", "index"))
