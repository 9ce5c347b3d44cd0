"""Fixtures over tests.helpers: isolated environment, a real git repo, the CLI entry point in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import MODEL_DIR, MODEL_NAME, GitRepoFixture

# No per-example deadline: on a shared 2-core machine a first example that imports a module can take 0.7 s, and a
# deadline there fails a test for the machine's load, not for the code. Hanging is bounded by the tests themselves.
settings.register_profile("gitwiki", deadline=None)
settings.load_profile("gitwiki")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No user config or cache, no real model download, no index dir leaking between tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # [[repository]] caches
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("GITWIKI_INDEX_DIR", raising=False)
    if MODEL_DIR is not None:
        monkeypatch.setenv("GITWIKI_MODEL_PATH", str(MODEL_DIR))
        monkeypatch.setenv("GITWIKI_MODEL", MODEL_NAME)
    else:
        monkeypatch.delenv("GITWIKI_MODEL_PATH", raising=False)


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
