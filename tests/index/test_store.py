"""The index survives damage: a corrupt or foreign-schema database is rebuilt from git."""

import ast
import json
import re
import sqlite3
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.errors import StoreError
from gitwiki.index import store as store_mod
from gitwiki.index import tokens
from gitwiki.index.store import connection
from gitwiki.wiki import Wiki
from tests.helpers import ROOT

PAGES = {"wiki/a.md": "# Alpha\n\nApples and apricots.\n", ".gitwiki.toml": "[embeddings]\nenabled = false\n"}


def indexed(repo):
    repo.commit("pages", PAGES)
    wiki = Wiki.open(repo.path)
    wiki.index()
    return wiki


def test_corrupt_database_is_rebuilt_from_git(repo, capfd):
    wiki = indexed(repo)
    db = wiki.index_dir / store_mod.DB_NAME
    wiki.close()
    for suffix in ("-wal", "-shm"):
        (wiki.index_dir / (store_mod.DB_NAME + suffix)).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    again = Wiki.open(repo.path)
    assert [d.path for d in again.search("apricots").docs] == ["wiki/a.md"]
    assert "rebuilding it from git" in capfd.readouterr().err


def test_deleted_index_dir_is_rebuilt(repo):
    import shutil

    wiki = indexed(repo)
    wiki.close()
    shutil.rmtree(wiki.index_dir)
    assert [d.path for d in Wiki.open(repo.path).search("apples").docs] == ["wiki/a.md"]


def test_other_schema_version_is_rebuilt(repo, capfd):
    wiki = indexed(repo)
    wiki.store.conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    wiki.close()
    again = Wiki.open(repo.path)
    assert again.store.states() == []  # nothing carried over from the foreign schema
    assert [d.path for d in again.search("apples").docs] == ["wiki/a.md"]
    assert "schema 999" in capfd.readouterr().err


def test_index_dir_is_in_git_common_dir(repo):
    wiki = indexed(repo)
    assert wiki.index_dir == (repo.path / ".git" / "gitwiki").resolve()
    assert not repo.git("status", "--porcelain")  # nothing the user could commit by accident


def test_busy_writer_lock_is_a_clear_error(repo):
    wiki = indexed(repo)
    held, release = threading.Event(), threading.Event()

    def holder():
        with store_mod.writer_lock(wiki.index_dir):
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    try:
        with pytest.raises(StoreError, match="busy"):
            with store_mod.writer_lock(wiki.index_dir, timeout=0.1):
                pass
    finally:
        release.set()
        t.join()


def test_failed_update_leaves_previous_state(repo, monkeypatch):
    wiki = indexed(repo)
    before = wiki.store.state("wiki")
    repo.commit("more", {"wiki/b.md": "# Beta\n\nBananas.\n"})

    def explode(*args, **kwargs):
        raise RuntimeError("crash mid-index")

    monkeypatch.setattr(store_mod.Store, "set_state", explode)
    with pytest.raises(RuntimeError):
        wiki.index()
    monkeypatch.undo()
    assert wiki.store.state("wiki") == before
    conn = sqlite3.connect(wiki.index_dir / store_mod.DB_NAME)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert [d.path for d in Wiki.open(repo.path).search("bananas").docs] == ["wiki/b.md"]


def test_switching_to_wal_waits_for_a_connection_that_holds_the_file(tmp_path):
    """A busy answer to the journal-mode switch is retried until the holder lets go, and one that
    outlasts the patience is an error with the next step (CI saw a concurrent `memory store` fail with
    'database is locked')."""
    path = tmp_path / "index.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    opener = sqlite3.connect(path, isolation_level=None, timeout=0.05, factory=connection.IndexConnection)
    with pytest.raises(store_mod.IndexLocked, match="retry when it has finished"):
        connection._set_wal(opener, patience=0.2)
    threading.Timer(0.3, holder.commit).start()
    connection._set_wal(opener, patience=5)
    assert opener.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_rows_of_an_older_tokenizer_are_re_tokenized_on_open_and_vectors_kept(repo, capfd):
    repo.commit("pages", {**PAGES, "wiki/tar.md": "# tar\n\n- E[x]tract a g[z]ipped archive.\n"})
    wiki = Wiki.open(repo.path)
    wiki.index()
    conn = wiki.store.conn
    # As a version-1 index wrote it: no tokens_version, "E[x]tract" indexed as e, x, tract.
    conn.execute("DELETE FROM meta WHERE key = 'tokens_version'")
    conn.execute("UPDATE fts SET body = 'e x tract g z ip archiv' WHERE body LIKE '%extract%'")
    conn.execute("INSERT INTO vectors VALUES ('some-model', 'some-hash', x'00')")
    assert [d.path for d in wiki.search("extract gzipped", mode="lexical").docs] == []
    states = wiki.store.states()
    wiki.close()
    again = Wiki.open(repo.path)
    assert again.store.conn.execute("SELECT value FROM meta WHERE key = 'tokens_version'").fetchone() == (
        tokens.TOKENS_VERSION,
    )
    assert again.store.states() == states  # not rebuilt from git
    assert again.store.conn.execute("SELECT count(*) FROM vectors").fetchone() == (1,)
    assert [d.path for d in again.search("extract gzipped", mode="lexical").docs] == ["wiki/tar.md"]
    assert [d.path for d in again.search("apricots", mode="lexical").docs] == ["wiki/a.md"]
    assert "moved aside" not in capfd.readouterr().err


def test_an_index_of_tokens_version_2_finds_dunder_names_after_open_and_after_an_edit(repo):
    repo.commit("pages", {**PAGES, "wiki/exports.md": "# Exports\n\nName the public API in `__all__`.\n"})
    wiki = Wiki.open(repo.path)
    wiki.index()
    conn = wiki.store.conn
    # As version 2 wrote it: `__all__` was the stop word "all", so the row holds nothing of it.
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'tokens_version'")
    conn.execute("UPDATE fts SET body = 'name public api' WHERE body LIKE '%dunderal%'")
    assert wiki.search("__all__", mode="lexical").docs == []
    wiki.close()
    again = Wiki.open(repo.path)
    assert [d.path for d in again.search("__all__", mode="lexical").docs] == ["wiki/exports.md"]
    again.close()
    # An incremental run after the rebuild: the edited page's new row and the untouched one both answer.
    repo.commit("edit", {"wiki/a.md": "# Alpha\n\nApples, apricots and `__init__.py`.\n"})
    third = Wiki.open(repo.path)
    third.index()
    assert [d.path for d in third.search("__init__", mode="lexical").docs] == ["wiki/a.md"]
    assert [d.path for d in third.search("__all__", mode="lexical").docs] == ["wiki/exports.md"]
    third.close()


JSON_TEXT = st.one_of(
    st.text(max_size=40),
    st.builds(
        json.dumps,
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=3),
            max_leaves=8,
        ),
    ),
    st.sampled_from(['["\\ud800"]', "[NaN]", '["a",]', "['a']", "[", "", " [] "]),
)


@settings(max_examples=500, deadline=None)
@given(raw=JSON_TEXT)
def test_a_stored_list_decodes_to_strings_or_is_damage(tmp_path_factory, raw):
    """Whatever a breadcrumb or tag column holds, reading it gives a tuple of printable strings or the
    damaged-index error, never another exception; and what this gitwiki writes always reads back."""
    where = tmp_path_factory.mktemp("index")
    try:
        value = store_mod.string_list(raw, where)
    except store_mod.IndexDamaged:
        assert (where / store_mod.DAMAGED_MARK).is_file()
        return
    assert isinstance(value, tuple) and all(isinstance(v, str) for v in value)
    "".join(value).encode("utf-8")  # printable: no lone surrogate


@settings(max_examples=300, deadline=None)
@given(crumbs=st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)))
def test_what_this_gitwiki_writes_reads_back(tmp_path_factory, crumbs):
    assert store_mod.string_list(json.dumps(crumbs), tmp_path_factory.mktemp("index")) == tuple(crumbs)


SQL = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|ROLLBACK|VACUUM|WITH)\b")
# pagefacts.sqlite is a file of its own, read by key so that the hooks stay off the search index
OWN_DATABASES = {"pages/pagefacts.py"}


def sql_outside_the_store(package):
    """(module, statement) for each SQL string literal of a module outside `store/` and the own databases."""
    found = []
    for file in sorted(package.rglob("*.py")):
        rel = file.relative_to(package)
        if rel.parts[:2] == ("index", "store") or rel.as_posix() in OWN_DATABASES:
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                found.append((rel.as_posix(), node.value[:60]))
    return found


def test_every_sql_statement_against_the_index_is_in_the_store_package(tmp_path):
    assert sql_outside_the_store(ROOT / "gitwiki") == []
    (tmp_path / "index" / "store").mkdir(parents=True)
    (tmp_path / "index" / "store" / "pages.py").write_text('conn.execute("SELECT blob FROM blobs")\n')
    (tmp_path / "search.py").write_text('conn.execute(f"DELETE FROM fts WHERE rowid = {x}")\n')
    assert sql_outside_the_store(tmp_path) == [("search.py", "DELETE FROM fts WHERE rowid = ")]


def test_an_index_made_before_the_vector_keys_gets_them_at_an_open_that_can_write(repo):
    """Missing vectors are looked up in the narrow `vectors_keys` index; one made before it is read as before (the
    same answer) until an open that can take the writer lock adds it."""
    import numpy as np

    repo.commit("pages", {**PAGES, "wiki/b.md": "# Beta\n\n## One\n\nBananas.\n\n## Two\n\nBlueberries.\n"})
    wiki = Wiki.open(repo.path)
    wiki.index()
    store = wiki.store
    assert store.vector_keys == " INDEXED BY vectors_keys"
    blobs = [row[0] for row in store.conn.execute("SELECT DISTINCT blob FROM chunks")]
    hashes = [row[0] for row in store.conn.execute("SELECT hash FROM chunks ORDER BY id")]
    store.put_vectors("m", hashes[:1], np.zeros((1, 2), "float32"))  # one chunk has a vector for model m
    missing = sorted(store.missing_vectors("m", blobs))
    assert [h for h, _ in missing] == sorted(set(hashes[1:])) and missing
    store.conn.execute("DROP INDEX vectors_keys")  # as an index made before it
    wiki.close()

    held, done = threading.Event(), threading.Event()

    def writer():  # another writer at work (the lock is re-entrant within one thread)
        with store_mod.writer_lock(wiki.index_dir):
            held.set()
            done.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(30)
        busy = Wiki.open(repo.path)  # cannot add it, and does not wait for the lock
        assert busy.store.vector_keys == ""
        assert sorted(busy.store.missing_vectors("m", blobs)) == missing
        busy.close()
    finally:
        done.set()
        thread.join()

    again = Wiki.open(repo.path)
    assert again.store.vector_keys == " INDEXED BY vectors_keys"
    assert sorted(again.store.missing_vectors("m", blobs)) == missing
    again.close()
