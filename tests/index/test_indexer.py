"""The git-keyed index: work done is counted, and only what changed is parsed or embedded."""

import pytest

from gitwiki.operations.status import status
from gitwiki.wiki import Wiki
from tests.helpers import needs_model

PAGES = {
    "wiki/keys.md": "# Keys\n\n## Rotate\n\nRotate the signing key every 90 days with vault.\n\n## "
    "Revoke\n\nRevoke leaked keys at once.\n",
    "wiki/deploy.md": "# Deploy\n\nWe deploy with argo to the kubernetes cluster.\n",
    "wiki/team/onboarding.md": "# Onboarding\n\nNew hires get a laptop and a hardware token.\n",
    "README.md": "# Not in the corpus\n",
}

pytestmark = needs_model


@pytest.fixture
def wiki(repo):
    repo.commit("pages", PAGES)
    return Wiki.open(repo.path)


def only(reports):
    assert len(reports) == 1
    return reports[0]


def test_first_index_parses_and_embeds_every_chunk(wiki):
    r = only(wiki.index())
    assert (r.pages, r.added, r.changed, r.deleted, r.parsed) == (3, 3, 0, 0, 3)
    assert r.embedded == wiki.store.counts()["chunks"] == 4
    assert r.model == "sentence-transformers/all-MiniLM-L6-v2@int8"  # gitwiki's int8 copy of it, the default


def test_the_other_weights_of_the_model_embed_every_chunk_again_under_their_own_model_id(wiki, repo):
    wiki.index()
    repo.commit("float32", {".gitwiki.toml": '[embeddings]\nweights = "fp32"\n'})
    switched = Wiki.open(repo.path)
    said = status(switched).text()  # the corpus tree did not move: "fresh", and the model says what comes
    assert "configured model sentence-transformers/all-MiniLM-L6-v2: the next `gitwiki index`" in said
    fp32 = only(switched.index())
    assert (fp32.model, fp32.embedded) == ("sentence-transformers/all-MiniLM-L6-v2", 4)
    assert "configured model" not in status(switched).text()


def test_unchanged_tree_does_no_work(wiki, repo):
    wiki.index()
    repo.commit("empty commit")  # new commit, same corpus tree
    r = only(wiki.index())
    assert r.up_to_date and (r.parsed, r.embedded) == (0, 0)
    assert r.commit == repo.git("rev-parse", "HEAD").strip()


def test_one_page_edit_reembeds_only_that_page(wiki, repo):
    wiki.index()
    repo.commit("edit", {"wiki/deploy.md": "# Deploy\n\nWe deploy with helm now.\n"})
    r = only(wiki.index())
    assert (r.added, r.changed, r.deleted, r.parsed, r.embedded) == (0, 1, 0, 1, 1)


def test_rename_and_revert_embed_nothing(wiki, repo):
    wiki.index()
    repo.git("mv", "wiki/deploy.md", "wiki/shipping.md")
    repo.commit("rename")
    r = only(wiki.index())
    assert (r.added, r.deleted, r.parsed, r.embedded) == (1, 1, 0, 0)
    original = PAGES["wiki/keys.md"]
    repo.commit("edit", {"wiki/keys.md": original + "\nMore text.\n"})
    assert only(wiki.index()).embedded == 1
    repo.commit("revert", {"wiki/keys.md": original})
    r = only(wiki.index())
    assert r.changed == 1 and r.embedded == 0  # vectors are cached by content hash


def test_delete_removes_page_from_results(wiki, repo):
    wiki.index()
    assert wiki.search("argo kubernetes").docs[0].path == "wiki/deploy.md"
    repo.git("rm", "-q", "wiki/deploy.md")
    repo.commit("delete")
    r = only(wiki.index())
    assert r.deleted == 1
    assert all(d.path != "wiki/deploy.md" for d in wiki.search("argo kubernetes").docs)


def test_model_change_reembeds_without_mixing_vectors(wiki, repo, monkeypatch):
    wiki.index()
    before = wiki.store.counts()["vectors"]
    # The same ONNX files under another model id stand in for a different model.
    monkeypatch.setenv("GITWIKI_MODEL", "local/minilm-copy")
    other = Wiki.open(repo.path)
    r = only(other.index())
    assert r.model == "local/minilm-copy" and r.embedded == 4
    assert other.store.counts()["vectors"] == before + 4
    result = other.search("rotate signing key", mode="dense")
    assert result.mode == "dense" and result.docs[0].path == "wiki/keys.md"


def test_lexical_index_then_hybrid_fills_vectors(wiki):
    r = only(wiki.index(lexical=True))
    assert (r.parsed, r.embedded, r.model) == (3, 0, None)
    r = only(wiki.index())
    assert (r.parsed, r.embedded) == (0, 4)


def test_include_exclude_globs(repo):
    repo.commit("pages", {**PAGES, "wiki/drafts/wip.md": "# WIP\n", "wiki/notes.txt": "not markdown"})
    repo.write(
        ".gitwiki.toml",
        '[[corpus]]\nname = "w"\npath = "wiki"\nexclude = ["drafts/*"]\n[embeddings]\nenabled = false\n',
    )
    wiki = Wiki.open(repo.path)
    wiki.index()
    assert sorted(wiki.store.pages("w")) == ["wiki/deploy.md", "wiki/keys.md", "wiki/team/onboarding.md"]


def test_unborn_head_indexes_nothing_and_worktree_pages_are_found(repo):
    repo.write("wiki/new.md", "# New\n\nAn uncommitted page about gardening.\n")
    wiki = Wiki.open(repo.path)
    r = only(wiki.index())
    assert (r.pages, r.commit) == (0, "")
    result = wiki.search("gardening")
    assert result.docs[0].path == "wiki/new.md" and result.dirty == ("wiki/new.md",)


def test_a_page_with_sub_second_stamps_is_known_by_them_a_tick_after_its_write(repo, monkeypatch):
    """Back-to-back memory stores rewrite a topic page within 2 s of the last: on a filesystem that keeps
    sub-second timestamps the overlay trusts a stamp once it is 100 ms old, where whole-second stamps still
    wait 2 s (a write within the same second could keep them)."""
    import os
    import time

    from gitwiki.index import indexer

    repo.commit(
        "pages", {**PAGES, ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'}
    )
    reads: list[str] = []
    real = indexer.read_page_file
    monkeypatch.setattr(indexer, "read_page_file", lambda root, path: reads.append(path) or real(root, path))
    wiki = Wiki.open(repo.path)
    repo.write("wiki/fine.md", "# Fine\n\nThe heron fishes at dawn.\n")
    repo.write("wiki/whole.md", "# Whole\n\nThe otter swims.\n")
    whole = repo.path / "wiki/whole.md"
    second = time.time_ns() // 1_000_000_000 * 1_000_000_000
    os.utime(whole, ns=(second, second))  # as a filesystem of whole seconds stamps it
    fine = (repo.path / "wiki/fine.md").stat()
    if not (fine.st_mtime_ns % 1_000_000_000 and fine.st_ctime_ns % 1_000_000_000):
        pytest.skip("this filesystem keeps whole-second timestamps")
    time.sleep(0.3)
    wiki.view()
    assert sorted(reads) == ["wiki/fine.md", "wiki/whole.md"]
    reads.clear()
    wiki.view()
    assert reads == ["wiki/whole.md"]
    wiki.close()


def test_the_overlay_reads_again_only_pages_whose_stamp_moved(repo, monkeypatch):
    """An uncommitted page read once is known by its stamp from then on (a long-lived server re-read every
    uncommitted page on each write); a write to it, even one keeping its size and mtime, a swap for a
    symlink or its version gone from the index makes the next view read it again."""
    import os

    from gitwiki.index import indexer

    repo.commit(
        "pages", {**PAGES, ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'}
    )
    monkeypatch.setattr(indexer, "SETTLED_NS", 0)  # every read is settled: no need to wait in a test
    monkeypatch.setattr(indexer, "SETTLED_FINE_NS", 0)
    reads: list[str] = []
    real = indexer.read_page_file
    monkeypatch.setattr(indexer, "read_page_file", lambda root, path: reads.append(path) or real(root, path))
    wiki = Wiki.open(repo.path)
    repo.write("wiki/a.md", "# A\n\nThe heron fishes at dawn.\n")
    repo.write("wiki/b.md", "# B\n\nThe otter swims.\n")
    assert set(wiki.view().dirty) == {"wiki/a.md", "wiki/b.md"} and sorted(reads) == ["wiki/a.md", "wiki/b.md"]
    reads.clear()
    repo.write("wiki/b.md", "# B\n\nThe otter dives.\n")
    wiki.view()
    assert reads == ["wiki/b.md"]
    reads.clear()
    a = repo.path / "wiki/a.md"
    before = a.stat()
    a.write_text("# A\n\nThe egret fishes at dusk.\n")  # in place, same size, mtime set back
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert wiki.search("egret dusk", mode="lexical").docs[0].path == "wiki/a.md" and reads == ["wiki/a.md"]
    reads.clear()
    wiki.view()
    assert reads == []
    blob = wiki.view().pages["wiki/a.md"]
    with wiki.store.lock(), wiki.store.write():
        wiki.store.drop([blob])
    assert wiki.search("egret dusk", mode="lexical").docs[0].path == "wiki/a.md" and reads == ["wiki/a.md"]
    outside = repo.path.parent / "outside.md"
    outside.write_text("# Secret\n\nThe egret password.\n")
    a.unlink()
    a.symlink_to(outside)
    view = wiki.view()
    assert view.pages.get("wiki/a.md") is None and "wiki/a.md" in view.dirty
    wiki.close()
