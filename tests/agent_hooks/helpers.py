"""The hook tests' wiki (pages, memory, a source file), the recorded Claude Code events under fixtures/, and what
a hook answered as context."""

from __future__ import annotations

import json
from pathlib import Path

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


def context_of(answer: dict | None) -> str:
    assert answer is not None
    return answer["hookSpecificOutput"]["additionalContext"]


# Each hook type `gitwiki hooks install` registers, on the events it gets, in the order of a session that edits a
# file and compacts: the session's state carries from one to the next.
SESSION = (
    ("session", "session_start"),
    ("prompt", "user_prompt_submit"),
    ("ambient", "pre_tool_use_read"),
    ("ambient", "pre_tool_use_grep"),
    ("ambient", "pre_tool_use_bash"),
    ("ambient", "pre_tool_use_edit"),
    ("approve-mcp", "pre_tool_use_mcp"),
    ("post-build", "post_tool_use_bash"),
    ("error-context", "post_tool_use_failure"),
    ("subagent", "subagent_start"),
    ("stop", "stop"),
    ("pre-compact", "pre_compact"),
    ("session", "session_start_compact"),
    ("stop", "stop"),
)
