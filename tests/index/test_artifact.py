"""Index archives: pack → verify → unpack round trip, and every refusal of a hostile archive."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.errors import StoreError
from gitwiki.index.artifact import ARCHIVE_NAME, MANIFEST_NAME, pack, verify
from gitwiki.index.store import DB_NAME
from tests.helpers import needs_model
from tests.index.archives import doctored, manifest_bytes, read_archive, regular, write_archive

LEXICAL = "[embeddings]\nenabled = false\n"


@pytest.fixture
def wiki_repo(repo, cli):
    repo.write(".gitwiki.toml", LEXICAL)
    for i in range(4):
        repo.write(
            f"wiki/page{i}.md", f"# Page {i}\n\nThe walrus number {i} sings.\n\n## Details\n\nKelp forest {i}.\n"
        )
    repo.commit("pages")
    code, _, err = cli("index", "-q", cwd=repo.path)
    assert code == 0, err
    return repo


@pytest.fixture
def archive(wiki_repo, cli, tmp_path):
    out = tmp_path / ARCHIVE_NAME
    code, _, err = cli("artifact", "pack", "--out", str(out), cwd=wiki_repo.path)
    assert code == 0, err
    return out


def index_db(repo):
    return repo.path / ".git" / "gitwiki" / DB_NAME


def digest(path):
    """What the index holds and which file it is: equal means untouched (WAL checkpoints aside)."""

    conn = sqlite3.connect(path)
    try:
        content = [list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")) for table in ("states", "pages", "blobs")]
    finally:
        conn.close()
    return path.stat().st_ino, hashlib.sha256(repr(content).encode()).hexdigest()


def oversized_pax_header(genuine, path, declared=1 << 30):
    """The manifest, then a pax header declaring `declared` bytes of which the archive holds 1 KiB."""
    manifest, _ = read_archive(genuine)
    data = manifest_bytes(manifest)
    head = tarfile.TarInfo(MANIFEST_NAME)
    head.size = len(data)
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, declared
    raw = head.tobuf(tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)
    raw += pax.tobuf(tarfile.USTAR_FORMAT) + b"9 a=bcdef\n".ljust(1024, b"\0")
    path.write_bytes(gzip.compress(raw))
    return path


def zeros_bomb(genuine, path, size):
    """A manifest declaring a database of `size` bytes, all zeros: tiny compressed, huge unpacked."""
    manifest, _ = read_archive(genuine)
    manifest["files"] = [{"path": DB_NAME, "size": size, "sha256": "0" * 64}]
    head = tarfile.TarInfo(DB_NAME)
    head.size = size
    with gzip.open(path, "wb", compresslevel=1) as out:
        data = manifest_bytes(manifest)
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size = len(data)
        out.write(info.tobuf(tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512))
        out.write(head.tobuf(tarfile.USTAR_FORMAT))
        zeros = bytes(1 << 20)
        for _ in range(size >> 20):
            out.write(zeros)
        out.write(bytes(1024))
    return path


def test_round_trip(wiki_repo, archive, cli, tmp_path):
    manifest, _ = read_archive(archive)
    assert manifest["format"] == "gitwiki-index" and manifest["format_version"] == 1
    assert manifest["model"] is None and manifest["dim"] is None
    (corpus,) = manifest["corpora"]
    assert corpus["name"] == "wiki" and corpus["pages"] == 4 and corpus["chunks"] == 8
    assert corpus["commit"] == wiki_repo.git("rev-parse", "HEAD").strip()
    assert corpus["tree"] == wiki_repo.git("rev-parse", "HEAD:wiki").strip()
    (entry,) = manifest["files"]
    with tarfile.open(archive, "r:gz") as tar:
        assert [m.name for m in tar.getmembers()] == [MANIFEST_NAME, DB_NAME]
        data = tar.extractfile(DB_NAME).read()
    assert entry == {"path": DB_NAME, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    code, out, _ = cli("artifact", "verify", str(archive), cwd=tmp_path)
    assert code == 0 and "OK" in out and "4 pages, 8 chunks" in out

    # A fresh clone without any index gets it from the archive and searches at once.
    clone = tmp_path / "clone"
    wiki_repo.git("clone", "-q", str(wiki_repo.path), str(clone))
    code, out, err = cli("artifact", "unpack", str(archive), cwd=clone)
    assert code == 0, err
    code, out, _ = cli("index", "--json", cwd=clone)
    assert json.loads(out)[0]["up_to_date"] is True  # nothing to parse: the archive is HEAD's index
    code, out, _ = cli("ground", "--json", "walrus number 2", cwd=clone)
    assert json.loads(out)["docs"][0]["path"] == "wiki/page2.md"
    assert not list((clone / ".git" / "gitwiki").glob(".unpack-*"))
    # Shipped in the schema gitwiki versions before the vectors' keys index accept; the install has it again.
    assert _indexes(data) == ["chunks_blob"]
    installed = sqlite3.connect(clone / ".git" / "gitwiki" / DB_NAME)
    assert "vectors_keys" in {
        row[0] for row in installed.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    }
    installed.close()


def _indexes(database: bytes) -> list[str]:
    """The named indexes a database file defines."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(database)
    names = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql NOT NULL"))
    conn.close()
    return names


def test_uncommitted_pages_are_not_shipped(wiki_repo, cli, tmp_path):

    wiki_repo.write("wiki/draft.md", "# Draft\n\nThe zanzibar merger is confidential.\n")
    code, out, _ = cli("ground", "--json", "zanzibar merger", cwd=wiki_repo.path)
    assert json.loads(out)["docs"][0]["path"] == "wiki/draft.md"  # parsed into the local store
    out_path = tmp_path / "a.tar.gz"
    assert cli("artifact", "pack", "--out", str(out_path), cwd=wiki_repo.path)[0] == 0
    _, db = read_archive(out_path)
    (tmp_path / "db.sqlite").write_bytes(db)
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    assert conn.execute("SELECT count(*) FROM chunks WHERE text LIKE '%zanzibar%'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'zanzibar'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 8
    conn.close()


def test_pack_refuses_an_empty_index(repo, tmp_path):
    from gitwiki.wiki import Wiki

    repo.write(".gitwiki.toml", LEXICAL)
    repo.commit("config only")
    wiki = Wiki.open(repo.path)
    with pytest.raises(StoreError, match="run `gitwiki index` first"):
        pack(wiki.index_dir, tmp_path / "x.tar.gz")
    wiki.close()


def test_pack_json_reports_path_and_counts(wiki_repo, cli, tmp_path):
    code, out, _ = cli("artifact", "pack", "--json", cwd=wiki_repo.path)
    report = json.loads(out)
    assert code == 0
    assert report["path"] == str(wiki_repo.path / ".git" / "gitwiki" / ARCHIVE_NAME)
    assert report["manifest"]["corpora"][0]["pages"] == 4
    assert verify(wiki_repo.path / ".git" / "gitwiki" / ARCHIVE_NAME).corpora[0].chunks == 8


def hostile_archives(genuine, tmp_path):
    """name → (archive, expected message fragment); each breaks exactly one rule."""
    manifest, db = read_archive(genuine)
    good = manifest_bytes(manifest)

    def build(name, *members):
        return write_archive(tmp_path / f"{name}.tar.gz", [regular(MANIFEST_NAME, good), *members])

    def with_manifest(name, changed, db_data=db):
        return write_archive(
            tmp_path / f"{name}.tar.gz", [regular(MANIFEST_NAME, manifest_bytes(changed)), regular(DB_NAME, db_data)]
        )

    def link(kind, target):
        info = tarfile.TarInfo(DB_NAME)
        info.type, info.linkname = kind, target
        return info, None

    def device(kind):
        info = tarfile.TarInfo(DB_NAME)
        info.type, info.devmajor, info.devminor = kind, 1, 3
        return info, None

    cases = {
        "absolute": (build("absolute", regular("/tmp/evil", b"x")), "absolute path"),
        "dotdot": (build("dotdot", regular("../evil", b"x")), "parent references"),
        "nested-dotdot": (build("nested", regular("a/../../evil", b"x")), "parent references"),
        "symlink": (build("symlink", link(tarfile.SYMTYPE, "/etc/passwd")), "refusing link"),
        "hardlink": (build("hardlink", link(tarfile.LNKTYPE, MANIFEST_NAME)), "refusing link"),
        "chardev": (build("chardev", device(tarfile.CHRTYPE)), "device"),
        "blockdev": (build("blockdev", device(tarfile.BLKTYPE)), "device"),
        "fifo": (build("fifo", device(tarfile.FIFOTYPE)), "device"),
        "unlisted": (build("unlisted", regular(DB_NAME, db), regular("extra.sh", b"#!/bin/sh\n")), "does not list"),
        "sha256": (build("sha", regular(DB_NAME, db[:-1] + bytes([db[-1] ^ 1]))), "sha256"),
        "format": (with_manifest("format", {**manifest, "format_version": 99}), "archive format 99"),
        "schema": (with_manifest("schema", {**manifest, "schema_version": 99}), "schema 99"),
        "not-gitwiki": (with_manifest("foreign", {**manifest, "format": "other"}), "does not describe"),
        "size-lie": (
            with_manifest("size", {**manifest, "files": [{**manifest["files"][0], "size": 10}]}),
            "manifest says 10",
        ),
        "manifest-not-first": (
            write_archive(tmp_path / "order.tar.gz", [regular(DB_NAME, db), regular(MANIFEST_NAME, good)]),
            "first member must be manifest.json",
        ),
        "missing-db": (build("missing"), "truncated"),
        "duplicate": (build("dup", regular(DB_NAME, db), regular(DB_NAME, db)), "second copy"),
        "counts": (
            with_manifest("counts", {**manifest, "corpora": [{**manifest["corpora"][0], "pages": 5}]}),
            "does not match the manifest",
        ),
        "not-gzip": ((tmp_path / "plain.tar.gz"), "not a readable"),
        "trigger": (
            doctored(
                genuine,
                tmp_path / "trigger.tar.gz",
                "CREATE TRIGGER wipe AFTER INSERT ON blobs BEGIN DELETE FROM pages; END;",
            ),
            "trigger wipe",
        ),
        "view": (doctored(genuine, tmp_path / "view.tar.gz", "CREATE VIEW v AS SELECT 1;"), "view v"),
        "extra-index": (
            doctored(genuine, tmp_path / "xindex.tar.gz", "CREATE INDEX extra ON pages(blob);"),
            "index extra",
        ),
        "changed-vector-keys": (
            doctored(
                genuine,
                tmp_path / "keys.tar.gz",
                "CREATE INDEX vectors_keys ON vectors(hash);",
            ),
            "changed definitions",
        ),
        "changed-table": (
            doctored(genuine, tmp_path / "alter.tar.gz", "ALTER TABLE meta ADD COLUMN x;"),
            "changed definitions",
        ),
        "stored-dotdot": (
            doctored(
                genuine,
                tmp_path / "passwd.tar.gz",
                "UPDATE pages SET path = '../../../../etc/passwd.md' WHERE path = 'wiki/page0.md';",
            ),
            "parent references",
        ),
        "stored-absolute": (
            doctored(
                genuine,
                tmp_path / "abs.tar.gz",
                "UPDATE pages SET path = '/etc/passwd.md' WHERE path = 'wiki/page0.md';",
            ),
            "absolute path",
        ),
        "stored-nul": (
            doctored(
                genuine,
                tmp_path / "nul.tar.gz",
                "UPDATE pages SET path = 'wiki/a' || char(0) || '.md' WHERE path = 'wiki/page0.md';",
            ),
            "control characters",
        ),
        "stored-backslash": (
            doctored(
                genuine,
                tmp_path / "bs.tar.gz",
                "UPDATE pages SET path = 'wiki\\..\\..\\x.md' WHERE path = 'wiki/page0.md';",
            ),
            "absolute path",
        ),
        "stored-git": (
            doctored(
                genuine,
                tmp_path / "git.tar.gz",
                "UPDATE pages SET path = 'wiki/.git/hooks.md' WHERE path = 'wiki/page0.md';",
            ),
            "points into .git",
        ),
        "stored-git-upper": (
            doctored(
                genuine,
                tmp_path / "gitupper.tar.gz",
                "UPDATE pages SET path = 'wiki/.GIT/config.md' WHERE path = 'wiki/page0.md';",
            ),
            "points into .git",
        ),
        "stored-not-a-page": (
            doctored(
                genuine,
                tmp_path / "notpage.tar.gz",
                "UPDATE pages SET path = 'wiki/run.sh' WHERE path = 'wiki/page0.md';",
            ),
            "not a markdown page",
        ),
        "breadcrumb-not-json": (
            doctored(genuine, tmp_path / "crumb.tar.gz", "UPDATE chunks SET breadcrumb = 'not json' WHERE ord = 0;"),
            "not a JSON list of strings",
        ),
        "tags-wrong-type": (
            doctored(genuine, tmp_path / "tags.tar.gz", "UPDATE blobs SET tags = X'00ff';"),
            "wrong type",
        ),
        "pax-header": (oversized_pax_header(genuine, tmp_path / "pax.tar.gz"), "1073741824-byte tar header"),
        "zeros-bomb": (zeros_bomb(genuine, tmp_path / "bomb.tar.gz", 8 << 20), "is not a SQLite database"),
        # A second listed member was copied whole before its sha256 was checked (1 MB of archive, 1 GiB written);
        # a negative size let the declared total pass --max-bytes.
        "listed-extra": (
            with_manifest("extra", {**manifest, "files": [*manifest["files"], {**manifest["files"][0], "path": "j"}]}),
            "must list index.sqlite alone",
        ),
        "negative-size": (
            with_manifest("negative", {**manifest, "files": [{**manifest["files"][0], "size": -1}]}),
            "must list index.sqlite alone",
        ),
        "created-nan": (with_manifest("nan", {**manifest, "created_at": float("nan")}), "must list index.sqlite"),
        # Well-formed SQLite that quick_check passes, and every full-text query failed after the install
        "fts-version": (
            doctored(genuine, tmp_path / "fts.tar.gz", "INSERT OR REPLACE INTO fts_config VALUES ('version', 99);"),
            "integrity check",
        ),
    }
    (tmp_path / "plain.tar.gz").write_bytes(b"this is no archive at all")
    return cases


def test_an_archive_with_the_vector_keys_index_is_accepted_too(archive, tmp_path):
    """Archives are packed without it (older gitwiki versions refuse it); one that has it, as a live index does,
    is still a gitwiki index."""
    keyed = doctored(archive, tmp_path / "keyed.tar.gz", "CREATE INDEX vectors_keys ON vectors(model, hash);")
    assert verify(keyed).corpora == verify(archive).corpora


def test_every_refusal_leaves_the_local_index_untouched(wiki_repo, archive, cli, tmp_path):
    before = digest(index_db(wiki_repo))
    evil = tmp_path / "evil"
    evil.mkdir()
    for name, (path, message) in hostile_archives(archive, evil).items():
        code, out, err = cli("artifact", "unpack", str(path), cwd=wiki_repo.path)
        assert code == 4, (name, code, err)
        assert message in err, (name, err)
        assert err.startswith("gitwiki: error: ") and "Traceback" not in err, name
        code, _, err = cli("artifact", "verify", str(path), cwd=tmp_path)
        assert code == 4 and message in err, (name, err)
        assert digest(index_db(wiki_repo)) == before, name
        assert not list(index_db(wiki_repo).parent.glob(".unpack-*")), name
    assert not (tmp_path / "evil" / "tmp").exists() and not (tmp_path / "evil.sh").exists()
    code, out, _ = cli("ground", "--json", "kelp forest 3", cwd=wiki_repo.path)
    assert code == 0 and json.loads(out)["docs"][0]["path"] == "wiki/page3.md"


def test_size_limit(wiki_repo, archive, cli):
    before = digest(index_db(wiki_repo))
    code, _, err = cli("artifact", "unpack", "--max-bytes", "1000", str(archive), cwd=wiki_repo.path)
    assert code == 4 and "over the limit of 1000" in err
    assert digest(index_db(wiki_repo)) == before
    code, _, err = cli("artifact", "verify", "--max-bytes", "0", str(archive), cwd=wiki_repo.path)
    assert code == 2 and "--max-bytes" in err


def test_model_mismatch_needs_accept_model(wiki_repo, archive, cli, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)
    before = digest(index_db(wiki_repo))
    wiki_repo.write(".gitwiki.toml", '[embeddings]\nenabled = true\nmodel = "example/other-model"\n')
    code, _, err = cli("artifact", "unpack", str(archive), cwd=wiki_repo.path)
    assert code == 2
    assert "built with no model (lexical only)" in err and "example/other-model" in err and "--accept-model" in err
    assert digest(index_db(wiki_repo)) == before
    code, out, err = cli("artifact", "unpack", "--accept-model", str(archive), cwd=wiki_repo.path)
    assert code == 0, err
    assert "installed" in out


def test_unpack_replaces_a_live_wal_index(wiki_repo, archive, cli):
    """The old database's WAL must not be replayed onto the new one."""

    wiki_repo.commit("more", {"wiki/extra.md": "# Extra\n\nOtters hold hands.\n"})
    assert cli("index", "-q", cwd=wiki_repo.path)[0] == 0
    holder = sqlite3.connect(index_db(wiki_repo))  # keeps -wal/-shm alive like a running `gitwiki serve`
    try:
        code, _, err = cli("artifact", "unpack", str(archive), cwd=wiki_repo.path)
        assert code == 0, err
    finally:
        holder.close()
    code, out, _ = cli("status", "--json", cwd=wiki_repo.path)
    (corpus,) = json.loads(out)["corpora"]
    assert corpus["pages"] == 4 and corpus["fresh"] is False  # the archive's state, one commit behind HEAD
    code, out, _ = cli("ground", "--json", "otters hold hands", cwd=wiki_repo.path)
    assert json.loads(out)["docs"][0]["path"] == "wiki/extra.md"  # caught up on first use


def test_unpack_removes_what_killed_runs_left_in_the_index_dir(wiki_repo, archive, cli):
    index_dir = index_db(wiki_repo).parent
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphans = [index_dir / f".{kind}-{dead.pid}-x1" for kind in ("pack", "unpack", "pull")]
    live = index_dir / f".unpack-{os.getpid()}-x2"  # a run still going (this process)
    for folder in (*orphans, live):
        folder.mkdir()
        (folder / DB_NAME).write_bytes(b"partial")
    code, _, err = cli("artifact", "unpack", str(archive), cwd=wiki_repo.path)
    assert code == 0, err
    assert not any(o.exists() for o in orphans) and live.is_dir()


# ---- what an archive holds: path names and rows (hypothesis) -----------------------------------------

GIT_SPELLINGS = st.builds(
    lambda case, tail, ignorable: (
        "".join(ch.upper() if up else ch for ch, up in zip(".git", case, strict=True)) + ignorable + tail
    ),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from(["", ".", " ", ". .", "..."]),
    st.sampled_from(["", "\u200c", "\ufeff"]),
) | st.sampled_from(["GIT~1", "git~1", "Git~1"])
SAFE_PART = st.text(alphabet="abcxyz-_", min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(before=st.lists(SAFE_PART, max_size=3), dot_git=GIT_SPELLINGS, after=st.lists(SAFE_PART, max_size=2))
def test_a_page_path_through_git_in_any_spelling_is_refused(before, dot_git, after):
    """Every case variant of .git, with the trailing dots or spaces Windows drops, the code points HFS+
    ignores, or the 8.3 name, at any depth: refused like a local page path into .git."""
    from gitwiki.index.artifact import check_page_path

    path = "/".join([*before, dot_git, *after, "page.md"])
    with pytest.raises(StoreError, match="points into .git|refusing path|refusing absolute"):
        check_page_path(path, None, "a.tar.gz")


@settings(max_examples=500, deadline=None)
@given(
    path=st.text(max_size=40) | st.lists(st.sampled_from(["wiki", ".git", ".GIT", "..", ".", "", "a.md"])).map("/".join)
)
def test_any_stored_path_is_accepted_as_a_page_or_refused_in_one_error(path):
    from gitwiki.index.artifact import check_page_path

    try:
        check_page_path(path, "wiki", "a.tar.gz")
    except StoreError:
        return
    parts = path.split("/")
    assert parts[0] == "wiki" and ".." not in parts and path.lower().endswith((".md", ".markdown"))
    assert not any(p.casefold().rstrip(". ") == ".git" for p in parts)


def test_every_case_variant_of_git_is_refused_at_every_depth():
    """The whole product the strategy above samples: 8 case variants x 5 tails x 3 ignorable code points,
    plus the 8.3 names, as the first, a middle and the last folder."""
    from gitwiki.index.artifact import check_page_path

    spellings = [
        "".join(ch.upper() if up else ch for ch, up in zip(".git", case, strict=True)) + ignorable + tail
        for case in itertools.product([False, True], repeat=4)
        for tail in ["", ".", " ", ". .", "..."]
        for ignorable in ["", "\u200c", "\ufeff"]
    ] + ["GIT~1", "git~1", "Git~1"]
    refused = 0
    for spelling in set(spellings):
        for path in (f"{spelling}/p.md", f"wiki/{spelling}/hooks/p.md", f"wiki/a/{spelling}/p.md"):
            with pytest.raises(StoreError, match="points into .git"):
                check_page_path(path, None, "a.tar.gz")
            refused += 1
    assert refused == 3 * (8 * 5 * 3 + 3)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(SAFE_PART, min_size=1, max_size=4), suffix=st.sampled_from([".md", ".MD", ".markdown"]))
def test_a_plain_page_path_inside_its_corpus_is_accepted(parts, suffix):
    from gitwiki.index.artifact import check_page_path

    path = "wiki/" + "/".join(parts) + suffix
    check_page_path(path, "wiki", "a.tar.gz")
    with pytest.raises(StoreError, match="outside its corpus folder"):
        check_page_path(path, "docs", "a.tar.gz")


# (table, column, SQL value) this gitwiki never writes: each must be refused on verify, never installed. (A
# number in a TEXT column is stored as text, which reads back; a blob is not.)
POISONED_VALUES = st.one_of(
    st.tuples(
        st.sampled_from([("chunks", "breadcrumb"), ("blobs", "tags")]),
        st.sampled_from(
            [
                "'not json'",
                "'{}'",
                "'\"text\"'",
                "'[1, 2]'",
                "'[null]'",
                "'[\"a\", {}]'",
                "'['",
                "X'5b5d'",
                "7",
                "'NaN'",
            ]
            + ["'[\"\\ud800\"]'"]
        ),
    ),
    st.tuples(
        st.sampled_from([("chunks", "ord"), ("chunks", "level"), ("chunks", "start_line"), ("chunks", "end_line")]),
        st.sampled_from(["'x'", "1.5", "X'01'"]),
    ),
    st.tuples(
        st.sampled_from([("chunks", "text"), ("chunks", "hash"), ("blobs", "title"), ("pages", "blob")]),
        st.sampled_from(["X'00'", "X''"]),
    ),
    st.tuples(st.just(("meta", "value")), st.sampled_from(["'x'", "X'31'"])),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(poison=POISONED_VALUES)
def test_an_archive_with_a_value_this_gitwiki_never_writes_is_refused(archive, tmp_path_factory, poison):
    """Non-JSON or wrong-typed columns pass quick_check (they are well-formed SQLite) and would fail every
    query that reads them: verify refuses them with the table named."""
    (table, column), value = poison
    where = " WHERE key = 'schema_version'" if table == "meta" else ""
    out = tmp_path_factory.mktemp("poisoned") / "p.tar.gz"
    doctored(archive, out, f"UPDATE {table} SET {column} = {value}{where};")
    with pytest.raises(StoreError, match="holds rows this gitwiki cannot read"):
        verify(out)


def test_pack_on_a_full_disk_is_one_error_and_leaves_no_partial_archive(wiki_repo, tmp_path, monkeypatch):
    import errno

    from gitwiki.index import artifact

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(artifact, "_add_bytes", full)
    out = tmp_path / "out" / ARCHIVE_NAME
    with pytest.raises(StoreError, match="its disk is full; free space and retry"):
        pack(wiki_repo.path / ".git" / "gitwiki", out)
    assert not list(out.parent.iterdir())


@needs_model
def test_pack_of_one_corpus_asks_vectors_of_that_corpus_only(repo, cli, tmp_path):
    """The action's `corpus:` input indexes one corpus and packs it: the other, never indexed, was "missing its
    vectors" (exit 5, blaming a model that had loaded)."""
    two = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[[corpus]]\nname = "notes"\npath = "notes"\n'
    repo.commit("two", {".gitwiki.toml": two, "wiki/a.md": "# A\n\nalpha\n", "notes/n.md": "# N\n\nbeta\n"})
    code, out, err = cli(
        "artifact", "pack", "--corpus", "notes", "--json", "--out", str(tmp_path / "n.tgz"), cwd=repo.path
    )
    assert code == 0, err
    assert [c["name"] for c in json.loads(out)["manifest"]["corpora"]] == ["notes"]
