"""Shared test helpers: real git repos in tmp dirs (git CLI, fixed author env) and the offline model.

Importable as `tests.helpers` from any test module; conftest.py only turns them into fixtures.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
}


# A checkout that searches by words only (no model needed): most tests' `.gitwiki.toml`.
LEXICAL = "[embeddings]\nenabled = false\n"
# Two deploy pages with footnotes: the MCP and socket tests search "rollback", the page and write tests read the
# continued and the named footnote.
DEPLOY = "# Deploy\n\nWe roll out with kubectl.[^1]\n\n## Rollback\n\nUse helm rollback to undo a release.\n\n[^1]: The runbook, section 3.\n"
FOOTNOTED_DEPLOY = "# Deploy\n\nWe roll out with kubectl.[^1]\n\n## Rollback\n\nUse helm.[^src]\n\n[^1]: The runbook, section 3.\n    Continued here.\n\n[^src]: Ops handbook.\n"
# `GITWIKI_RELIABILITY_TRIALS=N` runs the fuzz and fault-injection tests with N times their examples.
SCALE = int(os.environ.get("GITWIKI_RELIABILITY_TRIALS", "1"))


def find_model_dir() -> Path | None:
    for candidate in (os.environ.get("GITWIKI_MODEL_PATH"), ROOT.parent / "shared/models/all-MiniLM-L6-v2-onnx"):
        if candidate and Path(candidate, "model.onnx").is_file():
            return Path(candidate).resolve()
    return None


MODEL_DIR = find_model_dir()
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# The test model's copies (gitwiki.index.model_copy), one set for every test: a copy per test's cache would be
# 90 MB and an int8 quantization (~2 s) each.
MODEL_CACHE = os.path.join(tempfile.gettempdir(), f"gitwiki-tests-models-{os.getuid()}")
needs_model = pytest.mark.skipif(
    MODEL_DIR is None,
    reason="needs an embedding model: set GITWIKI_MODEL_PATH to a local ONNX model directory (model.onnx and its "
    f"tokenizer files) and GITWIKI_MODEL to its name ({MODEL_NAME}), or put it at "
    "../shared/models/all-MiniLM-L6-v2-onnx",
)


def isolate(monkeypatch: pytest.MonkeyPatch, base: Path) -> None:
    """No user config or cache, no real model download, no index dir from outside: what every test runs in
    (conftest's isolated_env), and what a module- or session-scoped fixture builds its template in."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))  # [[repository]] caches
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("GITWIKI_INDEX_DIR", raising=False)
    # Each `gitwiki serve` a test starts serves alone: an owner outlives its session (docs/mcp.md), and would
    # outlive the test. tests/test_serve_owner.py clears this.
    monkeypatch.setenv("GITWIKI_SERVE_ALONE", "1")
    # One fast-load copy of the test model for every test (gitwiki.index.model_copy): a serve's warm-up writes it
    # once, where a copy per test's cache would be 90 MB each.
    monkeypatch.setenv("GITWIKI_MODEL_CACHE", MODEL_CACHE)
    if MODEL_DIR is not None:
        monkeypatch.setenv("GITWIKI_MODEL_PATH", str(MODEL_DIR))
        monkeypatch.setenv("GITWIKI_MODEL", MODEL_NAME)
    else:
        monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)


class GitRepoFixture:
    """A real git repository with helpers to write pages and commit them."""

    def __init__(self, path: Path):
        self.path = path
        self.git("init", "-q", "-b", "main")

    @classmethod
    def copied(cls, template: Path, dest: Path) -> GitRepoFixture:
        """A copy of a repository built once (by a module- or session-scoped fixture), its index dir included,
        for a test to change freely; git's stat cache is refreshed for the copy's new inodes and ctimes."""
        shutil.copytree(template, dest, symlinks=True)
        repo = cls.__new__(cls)
        repo.path = dest
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=dest, capture_output=True)
        return repo

    @classmethod
    def existing(cls, path: Path) -> GitRepoFixture:
        """The helpers over a checkout that exists already (a clone)."""
        repo = cls.__new__(cls)
        repo.path = path
        return repo

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV}
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True, text=True).stdout

    def write(self, rel: str, text: str) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def commit(self, message: str = "update", files: dict[str, str] | None = None) -> str:
        for rel, text in (files or {}).items():
            self.write(rel, text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


class SynonymEmbedder:
    """Reads 'kappa' in a text as the meaning of 'omega' in a query: dense evidence with no shared word
    (`embed.EMBEDDERS["synonyms"]`; its other axis counts 'filler')."""

    model_id = "synonyms"
    dim = 2

    def __init__(self, config: Any) -> None:
        pass

    def _vector(self, meaning: int, other: int) -> Any:
        import numpy as np

        v = np.array([meaning, other + 0.1], dtype=np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self._vector(t.count("kappa"), t.count("filler")) for t in texts])

    def embed_query(self, text: str) -> Any:
        return self._vector(text.count("omega"), 0)


class FakeCrossEncoder:
    """Scores a text by how many times it says 'zebra': a cross-encoder's interface (`rerank.LOADER`), no model."""

    model_id = "fake/cross-encoder"
    calls: list[tuple[str, int]] = []

    def __init__(self, model: str):
        assert model == "fake/cross-encoder"

    def scores(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append((query, len(texts)))
        return [float(t.lower().count("zebra")) * 4 - 2 for t in texts]


def numbered_page(i: int, word: str = "walrus") -> str:
    """Page `i` of a small wiki, one sentence naming `word`: what the index, pull and archive tests search for."""
    return f"# Page {i}\n\nThe {word} number {i} sings at dawn.\n"


def fake_program(folder: Path, name: str, script: str) -> Path:
    """A shell script `name` in `folder` (made if missing), standing in for a real program on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(0o755)
    return program


def edited_every_way(repo: GitRepoFixture) -> None:
    """A wiki whose worktree and index differ from HEAD and each other in every way a hook meets."""
    pages = {f"wiki/{name}.md": f"# {name.title()}\n\nAbout {name}, see [a](a.md).\n" for name in "abcdefghij"}
    # links the orphan check must resolve however they are written
    pages["wiki/i.md"] += "[b](./b.md#top) [j](j.md?x=1) [up](../wiki/) [g](%67.md) [f](f.md/) [d](d.md)\n"
    pages["wiki/index.md"] = "# Wiki\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n"
    repo.write(".gitignore", "wiki/ignored.md\n")
    repo.commit("init", pages)
    repo.git("config", "core.trustctime", "false")  # so the racy edit below keeps the entry's stat data
    repo.write("wiki/a.md", "# A, staged\n")
    repo.git("add", "wiki/a.md")
    repo.write("wiki/b.md", "# B, unstaged\n")
    repo.write("wiki/a2.md", "# Untracked\n")
    repo.write("wiki/ignored.md", "# Ignored\n")
    (repo.path / "wiki/c.md").unlink()  # deleted, not staged
    repo.git("rm", "-q", "wiki/d.md")  # deleted and staged
    repo.git("mv", "wiki/e.md", "wiki/e2.md")  # renamed by git
    os.rename(repo.path / "wiki/f.md", repo.path / "wiki/f2.md")  # renamed on disk only
    repo.git("update-index", "--assume-unchanged", "wiki/g.md")
    repo.write("wiki/g.md", "# G, edited behind an assume-unchanged entry\n")
    (repo.path.parent / "secret.md").write_text("# Secret\n")
    os.link(repo.path.parent / "secret.md", repo.path / "wiki/hard.md")  # an untracked hard link: left out
    os.symlink("b.md", repo.path / "wiki/link.md")
    # Racy: same size and mtime as the staged entry, written in the index's own timestamp tick, so only
    # hashing the file tells git it changed.
    racy = repo.path / "wiki/h.md"
    repo.write("wiki/h.md", "# H, staged, racy\n")
    repo.git("add", "wiki/h.md")
    st = racy.stat()
    racy.write_text("# H, edited, racy\n")
    os.utime(racy, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(repo.path / ".git/index", ns=(st.st_atime_ns, st.st_mtime_ns))


def hostile_commit(path: Path) -> str:
    """A commit on main of the repo at `path` whose tree holds `..`, `.git`, `.GIT` and `GIT~1` folders
    beside pages: git writes such trees (`git mktree`) and transports them, though it refuses to check them
    out."""

    def git(*args: str, input: str = "") -> str:
        env = {**os.environ, **GIT_ENV}
        return subprocess.run(["git", *args], cwd=path, env=env, input=input, capture_output=True, text=True).stdout

    blob = git("hash-object", "-w", "--stdin", input="# X\n\nsecret\n").strip()
    page = git("hash-object", "-w", "--stdin", input="# Page\n\nnot a secret\n").strip()
    inner = git("mktree", input=f"100644 blob {blob}\tx.md\n").strip()
    wiki = git(
        "mktree",
        input="".join(f"040000 tree {inner}\t{name}\n" for name in ("..", ".git", ".GIT", "GIT~1", "ok"))
        + f"100644 blob {page}\tpage.md\n",
    ).strip()
    root = git("mktree", input=f"040000 tree {wiki}\twiki\n").strip()
    commit = git("commit-tree", root, "-m", "hostile").strip()
    git("update-ref", "refs/heads/main", commit)
    return commit


def python_prints(code: str, *flags: str) -> list[str]:
    """The words a fresh interpreter running `code` prints (it must succeed): what it imported, and how."""
    import sys

    run = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def peak_rss(pid: int) -> int:
    """A live process's peak resident memory so far, in bytes (Linux: VmHWM)."""
    return int(Path(f"/proc/{pid}/status").read_text().split("VmHWM:")[1].split()[0]) * 1024


@contextlib.contextmanager
def socket_server(path: Path, hooks: Any = None) -> Iterator[Any]:
    """A socket server in this process over its own `Wiki` of the repo at `path` (what `gitwiki serve` starts),
    running the hook requests sent to it with `hooks` (as `gitwiki serve` passes `agent_hooks.run.served`)."""
    from gitwiki.serve.server import SocketServer
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(path)
    listening = SocketServer.listen(wiki, threading.Lock(), hooks=hooks)
    assert listening is not None
    try:
        yield listening
    finally:
        listening.close()
        wiki.close()


@contextlib.contextmanager
def hung_socket(path: Path) -> Iterator[None]:
    """A socket at `path` whose connections are queued and never accepted or answered: a stopped owner."""
    import socket

    path.parent.mkdir(parents=True, exist_ok=True)
    hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hung.bind(str(path))
    hung.listen(4)
    try:
        yield
    finally:
        hung.close()
        path.unlink()
