"""A wiki repo with memory and a source file, indexed lexically, and `hook(...)`: the real entry point with a
recorded Claude Code event (tests/agent_hooks/fixtures) on stdin."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

PAGES = {
    ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n',
    "wiki/deploy.md": "# Deploy\n\n## Rollback\n\nTo roll back a release, run `rollback_release` with the previous tag.\n",
    "wiki/crypto.md": "# Crypto\n\n## Key ring\n\nThe `KeyRing` class holds the active signing keys in memory.\n",
    "wiki/keys.md": "# Keys\n\n## Rotation policy\n\nSigning keys rotate every month; old ones stay valid a week.\n",
    "wiki/architecture.md": "# Architecture\n\n## Layout\n\nSigning lives in src/keys.py, next to the deploy code.\n",
    "wiki/legacy.md": "# Legacy\n\n## Unwrapping\n\n`legacy_unwrap` is kept for v1 archives; do not call it elsewhere.\n",
    "wiki/cache.md": "# Cache\n\n## Stale entries\n\nA signing key cache that is stale after rotation means the cache was not flushed.\n",
    "wiki/memory/keys.md": (
        "# keys\n\n## 2026-01-02T10:00:00Z — gotcha: rotation order\n\n"
        "gotcha: rotation must flush the cache first.\n[tags: gotcha]\n[source: src/keys.py:3@0123abc]\n"
    ),
    "wiki/memory/checkpoints/default.md": (
        "# Checkpoint default\n\nSaved 2026-01-03T09:00:00Z.\n\n## Task\n\nfix key rotation\n\n"
        "## Next\n\n- write the rotation test\n"
    ),
    "src/keys.py": (
        "import os\n\n\ndef rotate_signing_key(ring):\n    return legacy_unwrap(ring)\n\n\nclass KeyRing:\n    pass\n"
    ),
}


def load(name: str, root: Path, **changes) -> dict:
    text = (FIXTURES / f"{name}.json").read_text().replace("{root}", str(root))
    return {**json.loads(text), **changes}


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


def context_of(answer: dict | None) -> str:
    assert answer is not None
    return answer["hookSpecificOutput"]["additionalContext"]
