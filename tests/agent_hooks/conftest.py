"""A wiki repo with memory and a source file, indexed lexically, and `hook(...)`: the real entry point with a
recorded Claude Code event (tests/agent_hooks/fixtures) on stdin."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tests.agent_hooks.helpers import PAGES


@pytest.fixture
def wiki(repo, cli):
    repo.commit("wiki", PAGES)
    code, _, err = cli("index", cwd=repo.path)
    assert code == 0, err
    return repo


@pytest.fixture
def hook(capsys, monkeypatch):
    """hook(type, event or raw bytes, cwd) -> (exit code, parsed answer or None), through `gitwiki-hook`, the
    entry point `gitwiki hooks install` writes (`cli=True`: through `gitwiki hook`, the CLI form)."""
    from gitwiki.agent_hooks.__main__ import answer
    from gitwiki.cli import main

    def run(hook_type: str, event, cwd: Path, cli: bool = False):
        raw = event if isinstance(event, bytes) else json.dumps(event).encode()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        if cli:
            code = main(["-C", str(cwd), "hook", hook_type])
        else:
            monkeypatch.chdir(cwd)
            code = answer([hook_type])
        out = capsys.readouterr()
        assert out.err == ""
        return code, (json.loads(out.out) if out.out.strip() else None)

    return run
