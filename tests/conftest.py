"""Fixtures over tests.helpers: isolated environment, a real git repo, the CLI entry point in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from tests.e2e import claude_cli
from tests.helpers import MODEL_CACHE, MODEL_DIR, ROOT, GitRepoFixture, isolate

# No per-example deadline: on a shared 2-core machine a first example that imports a module can take 0.7 s, and a
# deadline there fails a test for the machine's load, not for the code. Hanging is bounded by the tests themselves.
settings.register_profile("gitwiki", deadline=None)
settings.load_profile("gitwiki")


def pytest_configure(config):
    """Byte-compile gitwiki once, in the main process: the tests start hundreds of gitwiki processes, and where
    PYTHONDONTWRITEBYTECODE is set (as on the CI machine) an editable install never gets its .pyc files, so each
    process compiled every module it imported again (a fresh clone's suite: 4:19 against 3:40)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the main process has done it
        return
    import compileall

    compileall.compile_dir(ROOT / "gitwiki", quiet=2)
    _int8_model_made()


def _int8_model_made() -> None:
    """The test model runs as gitwiki's int8 copy, written on its first load (~2 s on a fresh machine): written
    here, once, so that no test's time bound pays for it."""
    if MODEL_DIR is None:
        return
    import os

    from gitwiki.index import model_copy

    before = os.environ.get("GITWIKI_MODEL_CACHE")
    os.environ["GITWIKI_MODEL_CACHE"] = MODEL_CACHE
    try:
        model_copy.make(MODEL_DIR / "model.onnx", quantized=True)
    finally:
        if before is None:
            del os.environ["GITWIKI_MODEL_CACHE"]
        else:
            os.environ["GITWIKI_MODEL_CACHE"] = before


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: at least 4 workers. The tests spend about half their time waiting on the git, gitwiki and server
    processes they start, so on the 2-core CI machine two workers left a core idle (5:00, 108-127% CPU) and four
    keep both busy (3:41, 194%), 2026-11-28."""
    import os

    return max(4, os.cpu_count() or 1)


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


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """HOME in a tmp dir: where a user config's `~/kb` personal memory is made (tests.memory.helpers.user_config)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _e2e_download_notice(config: pytest.Config) -> str | None:
    if hasattr(config, "workerinput") or claude_cli.is_installed() or not claude_cli.selected(config):
        return None
    return f"gitwiki: {claude_cli.notice()}"


def pytest_report_header(config: pytest.Config) -> str | None:
    """Said before any test runs: the e2e suite's first run downloads Claude Code (tests/e2e/claude_cli.py)."""
    return _e2e_download_notice(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """`-q` hides the report header: the download notice is then written on its own, still before any test."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    line = _e2e_download_notice(session.config)
    if line and reporter is not None and not reporter.showheader:
        reporter.write_line(line, yellow=True)
