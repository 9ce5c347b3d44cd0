"""A damaged, read-only, full or busy index (issue 11, items 3, 12 and 14): it is detected, moved aside and
rebuilt, or it answers from its last committed state; never a traceback, never "up to date" over lost pages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitwiki.errors import StoreError
from gitwiki.index.artifact import pack
from gitwiki.index.store import DAMAGED_MARK, DAMAGED_SUFFIX, DB_NAME, HOLDER_NAME
from gitwiki.wiki import Wiki
from tests.helpers import ROOT, GitRepoFixture, isolate

LEXICAL = "[embeddings]\nenabled = false\n"
PAGES = 60


@pytest.fixture(scope="module")
def indexed_once(tmp_path_factory) -> Path:
    """PAGES pages committed and indexed by the CLI once per module (per xdist worker): every test damages
    its own copy of it (`indexed`), so none pays the index run in its setup."""
    base = tmp_path_factory.mktemp("indexed")
    (base / "repo").mkdir()
    repo = GitRepoFixture(base / "repo")
    repo.write(".gitwiki.toml", LEXICAL)
    for i in range(PAGES):
        repo.write(f"p{i}.md", f"# Page {i}\n\n" + f"The deploy runbook number {i} says: roll forward.\n" * 40)
    repo.commit("pages")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, base)
        assert cli("index", cwd=repo.path)[0] == 0
    return repo.path


@pytest.fixture
def indexed(indexed_once, tmp_path) -> GitRepoFixture:
    return GitRepoFixture.copied(indexed_once, tmp_path / "repo")


def cli(*args: str, cwd) -> tuple[int, str, str]:
    """The CLI in its own process: each run opens and closes the index as a user's commands do."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "gitwiki", *args], cwd=cwd, capture_output=True, text=True, env=env)
    return run.returncode, run.stdout, run.stderr


def db(repo):
    return repo.path / ".git/gitwiki" / DB_NAME


def damage_data_pages(path):
    """Overwrite the start of every page in the middle third of the file, leaving its header and schema."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        for offset in range(size // 3 // 4096 * 4096, 2 * size // 3, 4096):
            f.seek(offset)
            f.write(b"\xa5" * 600)


def found(repo) -> set[str]:
    code, out, err = cli(
        "ground", "deploy", "runbook", "--json", "--top-files", str(PAGES), "--limit", "1000", cwd=repo.path
    )
    assert code == 0, err
    return {d["path"] for d in json.loads(out)["docs"]}


def test_damaged_data_pages_are_not_called_up_to_date(indexed):
    damage_data_pages(db(indexed))
    code, out, err = cli("status", "--check", cwd=indexed.path)
    assert code == 4 and "index check: damaged" in out and "gitwiki index --rebuild" in out
    code, out, err = cli("index", cwd=indexed.path)
    assert code == 0 and "up to date" not in out and f"{PAGES} added" in out
    assert err.count("moved aside") == 1 and "Traceback" not in err
    assert (db(indexed).parent / (DB_NAME + DAMAGED_SUFFIX)).is_file()  # kept for a look, not deleted
    assert found(indexed) == {f"p{i}.md" for i in range(PAGES)}  # nothing lost after the rebuild
    assert cli("status", "--check", cwd=indexed.path)[0] == 0


def test_a_query_over_damage_is_one_clear_error(indexed):
    damage_data_pages(db(indexed))
    code, out, err = cli(
        "ground", "deploy", "runbook", "--json", "--top-files", str(PAGES), "--limit", "1000", cwd=indexed.path
    )
    if code == 0:  # the damage missed what this query reads: a clean answer is fine
        assert json.loads(out)["docs"]
    else:
        assert code == 4 and "is damaged" in err and "gitwiki index --rebuild" in err and "Traceback" not in err


def test_a_file_that_is_not_a_database_is_moved_aside_on_open(indexed):
    db(indexed).write_bytes(b"this is not sqlite" * 500)
    code, out, err = cli("ground", "deploy", "--json", cwd=indexed.path)
    assert code == 0 and "moved aside to index.sqlite.damaged" in err
    assert (db(indexed).parent / (DB_NAME + DAMAGED_SUFFIX)).read_bytes().startswith(b"this is not sqlite")


def test_rebuild_on_request_says_what_it_did_to_a_healthy_index(indexed):
    """A rebuild asked for keeps the old file as index.sqlite.previous and says so, without calling it
    damaged or warning about it."""
    code, out, err = cli("index", "--rebuild", cwd=indexed.path)
    assert code == 0 and f"{PAGES} added" in out and "rebuilding it as asked" in err
    assert "damaged" not in err and "warning" not in err and "index.sqlite.previous" in err, err
    assert (db(indexed).parent / (DB_NAME + ".previous")).is_file()
    assert not (db(indexed).parent / (DB_NAME + DAMAGED_SUFFIX)).exists()


def test_pack_never_ships_damage(indexed, tmp_path):
    damage_data_pages(db(indexed))
    with pytest.raises(StoreError, match="is damaged"):
        pack(db(indexed).parent, tmp_path / "direct.tar.gz")
    assert not (tmp_path / "direct.tar.gz").exists()
    code, out, err = cli("artifact", "pack", "--out", str(tmp_path / "a.tar.gz"), cwd=indexed.path)
    assert code == 0 and "moved aside" in err and f"{PAGES} pages" in out  # the command rebuilds first


def test_full_disk_is_one_error_and_the_old_index_keeps_answering(indexed, capsys):
    wiki = Wiki.open(indexed.path)
    before = wiki.store.counts()
    pages = wiki.store.conn.execute("PRAGMA page_count").fetchone()[0]
    wiki.store.conn.execute(f"PRAGMA max_page_count = {pages}")  # what a full disk looks like to SQLite
    indexed.commit("more", {f"new{i}.md": f"# New {i}\n\n" + "deploy runbook text " * 400 for i in range(20)})
    with pytest.raises(StoreError, match="full") as raised:
        wiki.index()
    assert "rollback" not in str(raised.value).lower()  # SQLite's own error, not a failed ROLLBACK
    assert wiki.store.counts() == before
    result = wiki.search("deploy runbook", top_files=PAGES, limit=PAGES)
    assert len(result.docs) == PAGES and result.commit != indexed.git("rev-parse", "HEAD").strip()
    assert "answering from the index as of commit" in capsys.readouterr().err
    wiki.close()


def _hold_lock(index_dir, seconds: float) -> subprocess.Popen:
    code = (
        "import sys, time; from pathlib import Path; from gitwiki.index.store import writer_lock\n"
        f"with writer_lock(Path({str(index_dir)!r})):\n"
        "    print('held', flush=True); time.sleep(float(sys.argv[1]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(seconds)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_readers_do_not_wait_for_a_writer_and_writers_say_for_whom(indexed):
    index_dir = db(indexed).parent
    old_head = indexed.git("rev-parse", "HEAD").strip()
    indexed.commit("new", {"late.md": "# Late\n\nA deploy runbook written later.\n"})
    holder = _hold_lock(index_dir, 3)
    try:
        started = time.monotonic()
        code, out, err = cli("ground", "deploy", "--json", cwd=indexed.path)
        assert code == 0 and time.monotonic() - started < 2
        assert json.loads(out)["commit"] == old_head
        assert f"gitwiki (pid {holder.pid}) is writing it" in err
        code, out, err = cli("index", cwd=indexed.path)  # waits for the holder, and says so once
        assert code == 0 and "1 added" in out
        assert err.count(f"waiting for gitwiki (pid {holder.pid})") == 1
    finally:
        holder.wait(10)
    assert not (index_dir / HOLDER_NAME).exists()


def test_uncommitted_pages_do_not_make_a_reader_wait_for_a_writer(indexed):
    indexed.write("draft.md", "# Draft\n\nAn uncommitted deploy runbook.\n")
    holder = _hold_lock(db(indexed).parent, 15)
    try:
        started = time.monotonic()
        code, out, err = cli("ground", "deploy", "--json", "--top-files", "100", cwd=indexed.path)
        assert code == 0 and time.monotonic() - started < 8  # OVERLAY_WAIT (2 s) plus start-up, not 15 s
        assert "draft.md" not in {d["path"] for d in json.loads(out)["docs"]}
        assert "without uncommitted pages" in err and f"gitwiki (pid {holder.pid})" in err
    finally:
        holder.kill()
        holder.wait()


def test_a_writer_killed_holding_the_lock_gets_its_index_checked(indexed):
    index_dir = db(indexed).parent
    holder = _hold_lock(index_dir, 60)
    holder.kill()
    holder.wait()
    assert (index_dir / HOLDER_NAME).read_text().strip() == str(holder.pid)
    damage_data_pages(db(indexed))
    code, out, err = cli("ground", "deploy", "--json", cwd=indexed.path)  # opening after a crash checks
    assert code == 0 and "moved aside" in err and "damaged" in err
    assert not (index_dir / HOLDER_NAME).exists()


def _read_only_mount_works() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_mount_works(), reason="needs root and unshare for a read-only bind mount")
def test_a_read_only_index_answers(indexed):
    index_dir = db(indexed).parent
    indexed.write("draft.md", "# Draft\n\nAn uncommitted deploy runbook.\n")
    script = (
        f"mount --bind {index_dir} {index_dir} && mount -o remount,bind,ro {index_dir} || exit 99\n"
        f"{sys.executable} -m gitwiki ground deploy --json --top-files 100 --limit 1000 --committed; echo rc=$?\n"
        f"{sys.executable} -m gitwiki ground deploy --json --top-files 100 --limit 1000; echo rc=$?\n"
        f"{sys.executable} -m gitwiki index; echo rc=$?\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], cwd=indexed.path, capture_output=True, text=True, env=env
    )
    assert "rc=99" not in run.stdout, run.stderr
    outputs = [line for line in run.stdout.splitlines() if line.startswith("{")]
    codes = [line for line in run.stdout.splitlines() if line.startswith("rc=")]
    assert codes == ["rc=0", "rc=0", "rc=0"], run.stderr  # the index is current: up to date, no lock needed
    assert all(len(json.loads(o)["docs"]) == PAGES for o in outputs)  # the committed pages, draft not searched
    assert "Traceback" not in run.stderr and "Read-only file system" in run.stderr and "up to date" in run.stdout


def poison_breadcrumbs(path, value="not json"):
    """Rows SQLite finds well-formed but this gitwiki never writes: quick_check passes them."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("UPDATE chunks SET breadcrumb = ?", (value,))
    conn.commit()
    conn.close()


def test_a_row_that_does_not_decode_is_found_marked_and_rebuilt(indexed):
    """A breadcrumb that is not JSON (quick_check passes it): a query stops with the damaged-index error
    instead of a JSONDecodeError traceback and marks the index, and the next index run moves it aside and
    rebuilds it from git instead of saying "up to date"."""
    poison_breadcrumbs(db(indexed))
    code, out, err = cli("ground", "deploy runbook", cwd=indexed.path)
    assert code == 4 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "is damaged" in err and "gitwiki index --rebuild" in err
    assert (db(indexed).parent / DAMAGED_MARK).is_file()
    code, out, err = cli("index", cwd=indexed.path)
    assert code == 0 and f"{PAGES} added" in out and "moved aside to index.sqlite.damaged" in err, out + err
    assert not (db(indexed).parent / DAMAGED_MARK).exists()
    assert found(indexed) == {f"p{i}.md" for i in range(PAGES)}
    code, out, _ = cli("status", "--check", cwd=indexed.path)
    assert code == 0 and "index check: ok" in out


def test_status_check_finds_a_row_that_does_not_decode_and_the_next_open_rebuilds(indexed):
    poison_breadcrumbs(db(indexed), '{"not": "a list"}')
    code, out, err = cli("status", "--check", cwd=indexed.path)
    assert code == 4 and "index check: damaged" in out and "not a JSON list of strings" in out, out + err
    assert "gitwiki index --rebuild" in out and (db(indexed).parent / DAMAGED_MARK).is_file()
    code, out, err = cli("ground", "--json", "deploy", "runbook", "--top-files", str(PAGES), cwd=indexed.path)
    assert code == 0 and "moved aside to index.sqlite.damaged" in err, err  # rebuilt on open, then answered
    assert found(indexed) == {f"p{i}.md" for i in range(PAGES)}


def test_a_query_in_a_long_lived_process_recovers_at_the_next_index(indexed):
    """The same in one process (the MCP server's case): the query raises the damaged-index error and the next
    `Wiki.index` there sees the mark and rebuilds."""
    wiki = Wiki.open(indexed.path)
    wiki.search("deploy runbook", mode="lexical")
    poison_breadcrumbs(db(indexed), '["a", 1]')
    with pytest.raises(StoreError, match="not a JSON list of strings"):
        wiki.search("deploy runbook", mode="lexical")
    (report,) = wiki.index()
    assert report.added == PAGES
    assert wiki.search("deploy runbook", mode="lexical").docs
    wiki.close()


def test_pack_never_ships_rows_it_cannot_read(indexed, tmp_path):
    poison_breadcrumbs(db(indexed))
    with pytest.raises(StoreError, match="not a JSON list of strings"):
        pack(db(indexed).parent, tmp_path / "poisoned.tar.gz")
    assert not (tmp_path / "poisoned.tar.gz").exists()


def limited_cli(*args: str, cwd, fsize: int) -> tuple[int, str, str]:
    """The CLI under `ulimit -f`: a write past `fsize` bytes fails with EFBIG (Python ignores SIGXFSZ)."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "gitwiki", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize)),
    )
    return run.returncode, run.stdout, run.stderr


def test_a_file_size_limit_is_one_error_naming_it_and_the_index_stays_usable(indexed):
    """`ulimit -f` below what the index grows to: one line (exit 4) naming the limit, not a
    sqlite3.OperationalError traceback; the last committed index still answers, and without the limit
    the next index run completes."""
    more = {
        f"q{i}.md": f"# Runbook {i}\n\n" + f"The rollback runbook number {i} says: roll back.\n" * 60 for i in range(80)
    }
    indexed.commit("more pages", more)
    size = db(indexed).stat().st_size
    code, out, err = limited_cli("index", cwd=indexed.path, fsize=size + 64 * 1024)
    assert code == 4 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "file size limit" in err and "ulimit -f" in err, err
    assert found(indexed) >= {f"p{i}.md" for i in range(PAGES)}  # the old state answers (and catches up)
    code, out, err = cli("status", "--check", cwd=indexed.path)
    assert code == 0 and "index check: ok" in out, out + err
    out_file = indexed.path.parent / "a.tar.gz"
    code, out, err = limited_cli(
        "artifact", "pack", "--out", str(out_file), cwd=indexed.path, fsize=db(indexed).stat().st_size // 2
    )
    assert code == 4 and "Traceback" not in err and "ulimit -f" in err and not out_file.exists(), err


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_an_index_file_that_is_a_directory_or_a_fifo_is_one_error_naming_the_fix(indexed, kind):
    """A directory where index.sqlite goes was an sqlite3.OperationalError traceback from every command; a FIFO
    would block SQLite's first read. Neither is moved aside unasked (it may hold anything); the error names both
    ways out, and `index --rebuild` takes the second."""
    index_dir = indexed.path / ".git" / "gitwiki"
    for found in index_dir.glob(DB_NAME + "*"):
        found.unlink()
    path = index_dir / DB_NAME
    if kind == "directory":
        path.mkdir()
        (path / "kept.txt").write_text("someone's file\n")
    else:
        os.mkfifo(path)
    for args in (["ground", "deploy", "--no-server"], ["status"], ["index"]):
        code, out, err = cli(*args, cwd=indexed.path)
        assert code == 4 and "Traceback" not in err, err
        assert (
            err.count("\n") == 1
            and "gitwiki index --rebuild" in err
            and f"rm{' -r' * (kind == 'directory')} {path}" in err
        )
    code, _, err = cli("index", "--rebuild", cwd=indexed.path)
    assert code == 0, err
    aside = index_dir / (DB_NAME + ".previous")
    assert path.is_file() and (aside / "kept.txt").is_file() if kind == "directory" else aside.exists()
    assert "p1.md" in cli("ground", "deploy runbook number 1", "--no-server", cwd=indexed.path)[1]
    assert cli("index", "--rebuild", cwd=indexed.path)[0] == 0  # a file set aside over the directory set aside
    assert aside.is_file()
