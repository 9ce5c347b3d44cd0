"""Fixtures of the real-client suite: the pinned Claude Code CLI, one mock Messages API per module, and a
wiki repo set up exactly as docs/agent-hooks.md and docs/mcp.md say, with a capture hook on every event."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from tests.e2e import claude_cli
from tests.e2e.harness import MADE, Project, documented_setup, sh
from tests.e2e.mock_api import MockAnthropic


@pytest.fixture(scope="session")
def claude_binary(pytestconfig) -> Path:
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        # Uncaptured, so that the line ensure() says before a download reaches the terminal (the report
        # header said it already; tests/conftest.py).
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            return claude_cli.ensure()
    except claude_cli.Unavailable as exc:
        pytest.skip(f"Claude Code {claude_cli.VERSION} unavailable: {exc}")


@pytest.fixture(scope="module")
def api():
    with MockAnthropic(log=lambda line: print(f"mock api: {line}", file=sys.stderr)) as mock:
        yield mock


@pytest.fixture(scope="module")
def project(tmp_path_factory, claude_binary, api) -> Project:
    return documented_setup(tmp_path_factory.mktemp("e2e"), claude_binary, api.url, capture=True)


@pytest.fixture(scope="module", autouse=True)
def stop_owners():
    """`gitwiki serve --stop` in every wiki the module made: no owner outlives the tests that started it."""
    yield
    while MADE:
        repo, env = MADE.pop()
        if repo.is_dir():
            sh(["gitwiki", "serve", "--stop"], repo, env)
