"""Fault injection for the write paths (issue 11): kill -9 at random points of `gitwiki serve` writes
and of `gitwiki pull`; a folder swapped for a symlink in a loop while pages are written; hostile
artifacts under memory and disk ceilings; two MCP servers committing beside a user's commit loop.
Each trial asserts nothing lost, nothing outside the corpus and no traceback.

Trial counts stay small in CI (the file runs in well under 90 s); `GITWIKI_RELIABILITY_TRIALS=N`
multiplies them for the bigger runs whose counts docs/reliability-writes.md publishes. Each test prints its
tally (`-s` shows it).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from gitwiki.errors import GitwikiError
from gitwiki.fs import TEMP_PREFIX
from gitwiki.index.artifact import ARCHIVE_NAME, MANIFEST_NAME
from gitwiki.index.store import DB_NAME
from gitwiki.operations import writes
from gitwiki.wiki import Wiki
from tests.helpers import GIT_ENV, ROOT, GitRepoFixture

pytestmark = pytest.mark.slow

SCALE = int(os.environ.get("GITWIKI_RELIABILITY_TRIALS", "1"))
LEXICAL = "[embeddings]\nenabled = false\n"
COMMITTING = LEXICAL + "[mcp]\ncommit_writes = true\n"
WRITES = 12  # add_markdown calls sent to each server before it is killed


def env() -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "PYTHONPATH": str(ROOT)}


def gitwiki(*args: str, cwd: Path, timeout: float = 120, limits=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gitwiki", *args],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limits,
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], env=env(), capture_output=True, text=True, check=True).stdout


def page(word: str, i: int) -> str:
    # few sections: every chunk holds the search word, and a page must not be crowded out of the candidates
    sections = "".join(f"## Part {j}\n\nThe kelpword {word} note {i}, part {j}.\n\n" for j in range(2))
    return f"# Note {word} {i}\n\n{sections}"


def new_wiki(where: Path, config: str = LEXICAL) -> Path:
    where.mkdir(parents=True)
    repo = GitRepoFixture(where)
    repo.commit("init", {".gitwiki.toml": config, "wiki/index.md": "# Home\n\nThe kelpword home.\n"})
    return repo.path


def searched(repo: Path) -> set[str]:
    """Every page `ground` finds for the word all test pages share."""
    run = gitwiki("ground", "kelpword", "--json", "--top-files", "1000", "--limit", "5000", cwd=repo)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    return {d["path"] for d in json.loads(run.stdout)["docs"]}


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


class Server:
    """`gitwiki serve` spoken to in raw JSON-RPC lines, so that a test can kill -9 it mid-call."""

    def __init__(self, repo: Path):
        self.calls: set[int] = set()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitwiki", "-C", str(repo), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
        )
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
        assert self.proc.stdout is not None
        assert json.loads(self.proc.stdout.readline())["id"] == 0  # up and answering
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def add(self, call_id: int, path: str, content: str) -> None:
        self.calls.add(call_id)
        arguments = {"path": path, "content": content, "overwrite": True}
        self.send(
            {
                "jsonrpc": "2.0",
                "id": call_id,
                "method": "tools/call",
                "params": {"name": "add_markdown", "arguments": arguments},
            }
        )

    def finish(self, kill_after: float | None = None) -> tuple[dict[int, dict], str]:
        """Kill -9 after `kill_after` seconds (None: let it answer everything and exit); the answers by
        call id (successful ones only), then the failed ones and what the server wrote to stderr."""
        lines = []
        if kill_after is not None:
            time.sleep(kill_after)
            self.proc.kill()
        else:  # read every answer before closing stdin (two went missing when it was closed early)
            assert self.proc.stdout is not None
            waiting = set(self.calls)
            while waiting and (line := self.proc.stdout.readline()):
                lines.append(line)
                waiting.discard(json.loads(line).get("id"))
        out, err = self.proc.communicate(timeout=120)
        done, failed = {}, []
        for line in [*lines, *out.splitlines()]:
            try:
                message = json.loads(line)
            except ValueError:  # the answer being written when the kill came
                failed.append(line)
                continue
            if "result" in message and not message["result"].get("isError"):
                done[message["id"]] = message
            else:
                failed.append(message)
        return done, f"{failed}\n{err.decode(errors='replace')}"


def staged_deletions(repo: Path) -> list[str]:
    return [line for line in git(repo, "status", "--porcelain").splitlines() if line.startswith("D ")]


def test_kill_9_at_random_points_of_mcp_writes(tmp_path):
    rng = random.Random(9)
    tally = Counter()
    for trial in range(6 * SCALE):
        committing = trial % 2 == 1
        repo = new_wiki(tmp_path / f"t{trial}", COMMITTING if committing else LEXICAL)
        contents = {f"notes/n{i:02}.md": page(f"t{trial}", i) for i in range(WRITES)}
        server = Server(repo)
        for call_id, (path, text) in enumerate(contents.items(), 1):
            server.add(call_id, path, text)
        done, err = server.finish(kill_after=rng.uniform(0.0, 2.5))
        assert "Traceback" not in err, err
        acknowledged = {path for call_id, path in enumerate(contents, 1) if call_id in done}
        tally["trials"] += 1
        tally["writes acknowledged"] += len(acknowledged)
        on_disk = files_under(repo / "wiki/notes") if (repo / "wiki/notes").is_dir() else {}
        pages = {p: data for p, data in on_disk.items() if not p.rsplit("/", 1)[-1].startswith(TEMP_PREFIX)}
        tally["temp files left"] += len(on_disk) - len(pages)
        partial = [p for p, data in pages.items() if data.decode() != contents[f"notes/{p}"]]
        assert not partial, partial  # a page is the whole new version or absent, never a mix
        lost = [p for p in acknowledged if f"{p.split('/')[-1]}" not in pages]
        tally["lost"] += len(lost)
        assert not lost, lost
        if committing:
            left = (repo / ".git/index.lock").exists()
            tally["index.lock left by the kill"] += left
            committed = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").split())
            missing = [p for p in acknowledged if f"wiki/{p}" not in committed]
            assert not missing, missing  # an acknowledged write is in HEAD
            assert not staged_deletions(repo), git(repo, "status", "--porcelain")
            git(repo, "fsck", "--no-progress")
        if committing and left:  # the next write takes over the lock the killed server left, at once
            wiki = Wiki.open(repo)
            started = time.monotonic()
            writes.add_page(wiki, None, "notes/after.md", page(f"t{trial}", 99), commit=True)
            wiki.close()
            assert time.monotonic() - started < 4 and not (repo / ".git/index.lock").exists()
            assert not staged_deletions(repo)
            pages["after.md"] = b""
            tally["orphaned index.lock taken over"] += 1
        found = searched(repo)  # the index after the kill: catches up, no traceback
        assert {f"wiki/notes/{p}" for p in pages} <= found
        tally["survived"] += len(acknowledged)
    print(f"\nkill -9 during serve writes: {dict(tally)}")


def test_kill_9_at_random_points_of_pull(tmp_path):
    rng = random.Random(10)
    origin = new_wiki(tmp_path / "origin")
    for i in range(60):
        (origin / f"wiki/p{i:02}.md").write_text(page("origin", i))
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "pages")
    archive = tmp_path / ARCHIVE_NAME
    assert gitwiki("artifact", "pack", "--out", str(archive), cwd=origin).returncode == 0
    expected = {f"wiki/p{i:02}.md" for i in range(60)} | {"wiki/index.md"}
    tally = Counter()
    for trial in range(6 * SCALE):
        clone = tmp_path / f"clone{trial}"
        git(origin, "clone", "-q", str(origin), str(clone))
        if trial % 2:
            assert searched(clone) == expected  # half the trials replace an index that already answers
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitwiki", "pull", "--from", str(archive)],
            cwd=clone,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(rng.uniform(0.0, 1.2))
        proc.kill()
        _, err = proc.communicate(timeout=60)
        assert b"Traceback" not in err, err
        tally["trials"] += 1
        found = searched(clone)  # whatever the kill left: an answer with every page, no traceback
        tally["survived" if found == expected else "lost"] += 1
        assert found == expected
        index_dir = clone / ".git/gitwiki"
        tally["temp dirs left in the index dir"] += len([*index_dir.glob(".pull-*"), *index_dir.glob(".unpack-*")])
        again = gitwiki("pull", "--from", str(archive), cwd=clone)
        assert again.returncode == 0, again.stderr
        assert not [*index_dir.glob(".pull-*"), *index_dir.glob(".unpack-*")]  # removed: their process is gone
    print(f"\nkill -9 during pull: {dict(tally)}")


def test_a_folder_swapped_for_a_symlink_while_pages_are_written(tmp_path):
    repo = new_wiki(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the wiki's\n")
    before = files_under(outside)
    wiki = Wiki.open(repo)
    folder = repo / "wiki/swap"
    folder.mkdir()
    stop = threading.Event()
    swaps = Counter()

    def swapper():  # the folder becomes a symlink to `outside` and back, as fast as it can
        while not stop.is_set():
            swaps["attempts"] += 1
            try:
                if folder.is_dir() and not folder.is_symlink():
                    folder.rename(repo / f"wiki/parked{swaps['attempts']}")
                folder.symlink_to(outside)
                time.sleep(0)
                folder.unlink()
                folder.mkdir()
                swaps["swaps"] += 1
            except OSError:  # the writer made the folder meanwhile: moved away next time round
                pass

    thread = threading.Thread(target=swapper)
    thread.start()
    tally = Counter()
    try:
        for i in range(150 * SCALE):
            tally["writes"] += 1
            try:
                writes.add_page(wiki, None, f"swap/deep/p{i}.md", page("swap", i), overwrite=True)
                tally["written inside"] += 1
            except GitwikiError as e:  # refused: the folder was a symlink at that moment
                assert any(w in str(e) for w in ("symlink", "moved while writing", "changed while")), e
                tally["refused"] += 1
    finally:
        stop.set()
        thread.join()
        wiki.close()
    assert files_under(outside) == before  # nothing written, no temp file left, outside the corpus
    assert not any(p.name.startswith(TEMP_PREFIX) for p in outside.rglob("*"))
    tally["outside"] = len(files_under(outside)) - len(before)
    print(f"\nsymlink swap race: {dict(tally)}, {dict(swaps)}")


# ---- hostile artifacts under ceilings ----------------------------------------------------------------


MEMORY_CEILING = 768 << 20
DISK_CEILING = 64 << 20


def ceilings():
    """In the child: address space and the largest file it may write, so a bomb that gets through kills
    the child with MemoryError or SIGXFSZ instead of the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))
    resource.setrlimit(resource.RLIMIT_FSIZE, (DISK_CEILING, DISK_CEILING))


def _tar_member(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(tarfile.USTAR_FORMAT)


def bomb(path: Path, manifest: dict, *, pax: int = 0, zeros: int = 0) -> Path:
    """A manifest, then a `pax`-byte pax header or a database of `zeros` zero bytes: a megabyte
    compressed, a gigabyte unpacked. Deflated once: after a full flush the same input deflates to the
    same bytes, so one compressed MiB of zeros is repeated (compressing a GiB costs 8 s here)."""
    size = pax or zeros
    manifest = {**manifest, "files": [{"path": DB_NAME, "size": zeros or 1, "sha256": "0" * 64}]}
    data = json.dumps(manifest).encode()
    head = _tar_member(MANIFEST_NAME, len(data)) + data + bytes(-len(data) % 512)
    head += _tar_member("././@PaxHeader", pax, tarfile.XHDTYPE) if pax else _tar_member(DB_NAME, zeros)
    tail = bytes(-size % 512 + 1024)
    chunk = bytes(1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = zlib.crc32(head)
    with path.open("wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # a gzip header
        out.write(deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH))
        block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
        for _ in range(size >> 20):
            out.write(block)
            crc = zlib.crc32(chunk, crc)
        out.write(deflate.compress(tail) + deflate.flush())
        out.write(struct.pack("<II", zlib.crc32(tail, crc), (len(head) + size + len(tail)) & 0xFFFFFFFF))
    return path


def test_hostile_artifacts_stay_under_memory_and_disk_ceilings(tmp_path):
    repo = new_wiki(tmp_path / "repo")
    archive = tmp_path / ARCHIVE_NAME
    assert gitwiki("artifact", "pack", "--out", str(archive), cwd=repo).returncode == 0
    with tarfile.open(archive, "r:gz") as tar:
        manifest = json.loads(tar.extractfile(MANIFEST_NAME).read())
    cases = {
        "1 GiB pax header": (bomb(tmp_path / "pax.tar.gz", manifest, pax=1 << 30), "tar header"),
        "1 GiB of zeros as the database": (bomb(tmp_path / "zeros.tar.gz", manifest, zeros=1 << 30), "not a SQLite"),
    }
    tally = Counter()
    for name, (path, message) in cases.items():
        for command in ("verify", "unpack"):
            run = gitwiki("artifact", command, str(path), cwd=repo, limits=ceilings)
            tally["trials"] += 1
            assert run.returncode == 4, (name, command, run.returncode, run.stderr[-500:])
            assert message in run.stderr and "Traceback" not in run.stderr, (name, run.stderr)
            tally["refused within the ceilings"] += 1
        tally[f"{name}: {path.stat().st_size >> 10} KiB compressed"] += 1
    assert not list((repo / ".git/gitwiki").glob(".unpack-*"))
    assert searched(repo) == {"wiki/index.md"}  # the local index still answers
    print(f"\nhostile artifacts under {MEMORY_CEILING >> 20} MiB / {DISK_CEILING >> 20} MiB ceilings: {dict(tally)}")


# ---- concurrent writers -------------------------------------------------------------------------------


def test_two_committing_servers_beside_a_users_commit_loop(tmp_path):
    repo = new_wiki(tmp_path / "repo", COMMITTING)
    stop = threading.Event()
    user = Counter()

    def until_done(*args: str) -> None:
        while subprocess.run(["git", "-C", str(repo), *args], env=env(), capture_output=True).returncode:
            user["git retried"] += 1  # a lock held by a gitwiki write: the user's git says so and is run again
            time.sleep(0.01)

    def user_loop():
        (repo / "src").mkdir()
        while not stop.is_set():
            name = f"src/u{user['commits']}.txt"
            (repo / name).write_text("user change\n")
            until_done("add", name)
            until_done("commit", "-qm", f"user {user['commits']}")
            user["commits"] += 1

    thread = threading.Thread(target=user_loop)
    thread.start()
    servers, contents = [], {}
    try:
        for s in range(2):
            server = Server(repo)
            for i in range(8 * SCALE):
                path = f"s{s}/n{i:02}.md"
                contents[(s, i + 1)] = (path, page(f"s{s}", i))
                server.add(i + 1, path, contents[(s, i + 1)][1])
            servers.append(server)
        results = [server.finish() for server in servers]
    finally:
        stop.set()
        thread.join()
    tally = Counter(user)
    committed = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").split())
    for s, (done, err) in enumerate(results):
        assert "Traceback" not in err, err
        for (server, call_id), (path, text) in contents.items():
            if server != s:
                continue
            tally["writes"] += 1
            assert call_id in done, (path, err[-500:])
            assert f"wiki/{path}" in committed, (
                path,
                git(repo, "log", "--format=%h %p %s", "--name-status", "-12", "--", f"wiki/{path}"),
                (repo / "wiki" / path).exists(),
                git(repo, "status", "--porcelain"),
                err[-800:],
                done[call_id]["result"].get("structuredContent"),
            )
            assert git(repo, "show", f"HEAD:wiki/{path}") == text
            tally["committed"] += 1
    user_files = {p for p in committed if p.startswith("src/")}
    assert user_files == {f"src/u{i}.txt" for i in range(user["commits"])}  # every user commit is still in HEAD
    assert not staged_deletions(repo) and git(repo, "status", "--porcelain") == ""
    git(repo, "fsck", "--no-progress")
    print(f"\ncommit_writes from two servers beside a user's commit loop: {dict(tally)}")


def test_stale_temp_files_are_never_pages(tmp_path):
    """What a kill -9 between the temp file and the rename leaves: a dot file no listing shows, removed
    by the next write into that folder once stale."""
    repo = new_wiki(tmp_path / "repo")
    (repo / "wiki/notes").mkdir()
    leftover = repo / f"wiki/notes/{TEMP_PREFIX}n1.md.0123456789ab"
    leftover.write_text(page("temp", 1)[:50])
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    assert searched(repo) == {"wiki/index.md"}
    wiki = Wiki.open(repo)
    try:
        writes.add_page(wiki, None, "notes/n2.md", page("temp", 2))
    finally:
        wiki.close()
    assert not leftover.exists()
    assert shutil.which("git") and "notes/n2.md" in git(repo, "status", "--porcelain", "--untracked-files=all")
