"""The real pre-commit against this repository as a hooks repo (pre-commit builds a venv and pip-installs gitwiki).

The venv sees the test interpreter's site-packages (VIRTUALENV_SYSTEM_SITE_PACKAGES), so pip installs
only gitwiki itself; it still needs the package index for the build backend, so the tests skip with a
reason when that is unreachable.
"""

import os
import shutil
import socket
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from tests.helpers import GIT_ENV, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]
LEXICAL = "[embeddings]\nenabled = false\n"


def _index_reachable() -> bool:
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    host = urlparse(url)
    try:
        socket.create_connection((host.hostname, host.port or 443), timeout=5).close()
        return True
    except OSError:
        return False


def _git(cwd, *args):
    return subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory):
    """A committed snapshot of this checkout (tracked and new files): try-repo only carries tracked changes."""
    if not _index_reachable():
        pytest.skip("the package index is unreachable: pre-commit cannot pip-install gitwiki into its hook env")
    dest = tmp_path_factory.mktemp("hooks") / "gitwiki"
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    return dest


@pytest.fixture
def env(tmp_path_factory, monkeypatch):
    # One hook env for the run: under xdist the workers share the run's temp root (pre-commit locks its store).
    base = tmp_path_factory.getbasetemp()
    home = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "pre-commit-home"
    monkeypatch.setenv("PRE_COMMIT_HOME", str(home))
    monkeypatch.setenv("VIRTUALENV_SYSTEM_SITE_PACKAGES", "1")
    return {**os.environ, **GIT_ENV}


def _pre_commit(cwd, env, *args):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _commit(cwd, env):
    """`git commit` with the hooks' output (git prints it on stderr) as the result's stdout."""
    return subprocess.run(
        ["git", "commit", "-m", "pages"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _config(hooks_repo) -> str:
    """The hooks repo at its commit with all three hooks: both tests' runs share one hook env (keyed by repo and
    rev), so pre-commit builds the venv and pip-installs gitwiki once."""
    rev = _git(hooks_repo, "rev-parse", "HEAD").strip()
    hooks = "\n".join(f"      - id: {h}" for h in ("gitwiki-lint", "gitwiki-index-blocks", "gitwiki-index"))
    return f"repos:\n  - repo: {hooks_repo}\n    rev: {rev}\n    hooks:\n{hooks}\n"


def test_lint_all_files_reports_file_line_col(repo, hooks_repo, env):
    pages = {"wiki/index.md": "# Home\n\n[A](a.md)\n", "wiki/a.md": "# A\n\n[gone](gone.md)\n"}
    repo.commit("init", {".gitwiki.toml": LEXICAL, ".pre-commit-config.yaml": _config(hooks_repo), **pages})
    done = _pre_commit(repo.path, env, "run", "gitwiki-lint", "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wiki/a.md:3:1: GW005 link to missing page 'gone.md'" in done.stdout


def test_commit_runs_lint_and_fixer_then_post_commit_index(repo, hooks_repo, env, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL, ".pre-commit-config.yaml": _config(hooks_repo)})
    done = _pre_commit(repo.path, env, "install", "--hook-type", "pre-commit", "--hook-type", "post-commit")
    assert done.returncode == 0, done.stderr

    repo.write("wiki/index.md", "# Home\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    repo.write("wiki/a.md", "# A\n\nAbout A.\n")
    _git(repo.path, "add", "-A")
    first = _commit(repo.path, env)
    assert first.returncode != 0  # the fixer rewrote index.md
    assert "gitwiki index blocks" in first.stdout and "files were modified by this hook" in first.stdout
    assert "- [A](a.md) — About A." in (repo.path / "wiki/index.md").read_text()

    repo.write("wiki/a.md", "# A\n\nAbout A.\n\n### Too deep\n")
    _git(repo.path, "add", "-A")
    second = _commit(repo.path, env)
    assert second.returncode != 0
    assert "wiki/a.md:5:1: GW003 heading level jumps from H1 to H3" in second.stdout

    repo.write("wiki/a.md", "# A\n\nAbout A.\n\n## Fine\n")
    _git(repo.path, "add", "-A")
    third = _commit(repo.path, env)
    assert third.returncode == 0, third.stdout
    head = _git(repo.path, "rev-parse", "HEAD").strip()
    code, out, _ = cli("status", "--json", cwd=repo.path)  # the post-commit hook ran in the foreground
    assert code == 0 and f'"indexed_commit": "{head}"' in out
