"""Shared test helpers: real git repos in tmp dirs (git CLI, fixed author env) and the offline model.

Importable as `tests.helpers` from any test module; conftest.py only turns them into fixtures.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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


def find_model_dir() -> Path | None:
    for candidate in (os.environ.get("GITWIKI_MODEL_PATH"), ROOT.parent / "shared/models/all-MiniLM-L6-v2-onnx"):
        if candidate and Path(candidate, "model.onnx").is_file():
            return Path(candidate).resolve()
    return None


MODEL_DIR = find_model_dir()
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
needs_model = pytest.mark.skipif(
    MODEL_DIR is None, reason="offline model ../shared/models/all-MiniLM-L6-v2-onnx not found"
)


class GitRepoFixture:
    """A real git repository with helpers to write pages and commit them."""

    def __init__(self, path: Path):
        self.path = path
        self.git("init", "-q", "-b", "main")

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
