"""The real-client suite says what its first run downloads, how big it is and where it goes, before it does: in
pytest's output (the report header, or a line of its own under -q) and on stderr when the install starts."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.e2e import claude_cli
from tests.helpers import ROOT, fake_program


def test_the_notice_names_package_version_size_place_and_how_to_skip(tmp_path, monkeypatch):
    monkeypatch.setenv("GITWIKI_E2E_CACHE", str(tmp_path / "cache"))
    assert not claude_cli.is_installed()
    line = claude_cli.notice()
    assert f"{claude_cli.PACKAGE}@{claude_cli.VERSION}" in line and "npm" in line
    assert "MB download" in line and "MB installed" in line
    assert str(tmp_path / "cache" / f"claude-code-{claude_cli.VERSION}") in line
    assert "-m 'not e2e'" in line


def test_the_install_says_so_on_stderr_before_npm_runs(tmp_path, monkeypatch, capfd):
    """A registry that cannot be reached: the notice is out before npm is, and the suite then skips."""
    bin_dir = tmp_path / "bin"
    fake_program(bin_dir, "npm", 'echo "npm started" >&2\necho "npm error code ENOTFOUND" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GITWIKI_E2E_CACHE", str(tmp_path / "cache"))
    with pytest.raises(claude_cli.Unavailable, match="unreachable"):
        claude_cli.ensure()
    assert capfd.readouterr().err.splitlines()[0] == f"gitwiki: {claude_cli.notice()}"


@pytest.mark.parametrize(
    ("args", "markexpr", "selected"),
    [
        ([], "", True),
        (["tests"], "", True),
        (["tests/e2e/test_load.py::test_tools_in_the_first_request_with_busy_cpus"], "", True),
        (["tests/test_fs.py"], "", False),
        ([], "not e2e", False),
        ([], "not slow", False),
        ([], "e2e", True),
        (["tests"], "slow and not e2e", False),
    ],
)
def test_the_notice_is_given_when_the_run_takes_in_the_e2e_suite(monkeypatch, args, markexpr, selected):
    monkeypatch.chdir(ROOT)
    config = SimpleNamespace(args=args, option=SimpleNamespace(markexpr=markexpr))
    assert claude_cli.selected(config) is selected


def test_pytest_prints_the_notice_before_the_tests_even_under_q(tmp_path):
    """The wiring, once (which runs are told is the parametrized test above)."""
    env = {**os.environ, "GITWIKI_E2E_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "tests/e2e/test_mock_api.py"]
    out = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True).stdout
    first = out.splitlines()[0]  # before the collected tests
    assert first.startswith("gitwiki: the e2e tests install") and str(tmp_path / "cache") in first, out
