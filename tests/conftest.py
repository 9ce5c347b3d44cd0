"""Fixtures over tests.helpers: isolated environment, a real git repo, the CLI entry point in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import GitRepoFixture, isolate


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No user config or cache, no real model download, no index dir leaking between tests."""
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def repo(tmp_path) -> GitRepoFixture:
    path = tmp_path / "repo"
    path.mkdir()
    return GitRepoFixture(path)


@pytest.fixture
def cli(capsys):
    """Run the real entry point in-process: cli(args, cwd) -> (exit code, stdout, stderr)."""
    from gitwiki.cli import main

    def run(*args: str, cwd: Path):
        code = main(["-C", str(cwd), *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
