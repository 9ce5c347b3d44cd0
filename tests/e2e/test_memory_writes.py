"""Memory writes in print mode with the hooks as `gitwiki hooks install` puts them (no `--allow-writes`).

Under `claude -p` nobody answers a permission prompt: a tool Claude Code would ask for is refused. A store,
a checkpoint (writes that only add) must run; a delete (it removes) must still be asked for, so refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import Project, documented_setup, stream_events
from tests.e2e.mock_api import Turn, result_for, result_text, tool_names

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STORE = "mcp__gitwiki__memory_store"
TOPICS = "mcp__gitwiki__memory_topics"
EDIT = "mcp__gitwiki__memory_edit"
NOTE = "gotcha: the staging rollback needs the tag before the broken release, not the broken one"


@pytest.fixture(scope="module")
def project(tmp_path_factory, claude_binary, api) -> Project:
    """The documented set-up (init, index, hooks install, mcp add), without the capture hook."""
    return documented_setup(tmp_path_factory.mktemp("e2e-memory"), claude_binary, api.url, capture=False)


def test_a_memory_store_in_print_mode_is_stored_without_a_prompt(project, api):
    api.reset(
        [
            Turn(
                tool="ToolSearch",
                input={"query": f"select:{STORE},{TOPICS},{EDIT}"},
                when=lambda body: STORE not in tool_names(body),
            ),
            Turn(tool=STORE, input={"topic": "rollbacks", "text": NOTE}),
            Turn(tool=TOPICS, input={"action": "checkpoint", "task": "fix the staging rollback"}),
            Turn(tool=EDIT, input={"action": "delete", "topic": "rollbacks", "index": 1}),
            Turn(text="Stored."),
        ]
    )
    run = project.claude.run(
        "-p", "Remember what we learned about rollbacks.", "--output-format", "stream-json", "--verbose",
        "--max-turns", "10", cwd=project.repo,
    )  # fmt: skip
    last = api.messages()[-1]
    stored = result_for(last, STORE)
    assert stored is not None and not stored.get("is_error"), run.explain()
    assert result_text(stored).startswith("stored rollbacks:1"), result_text(stored)
    page = project.repo / "wiki" / "memory" / "rollbacks.md"
    assert NOTE in page.read_text(), run.explain()  # the delete below was refused: the entry is there
    checkpoint = result_for(last, TOPICS)
    assert checkpoint is not None and not checkpoint.get("is_error"), result_text(checkpoint or {})
    assert "fix the staging rollback" in Path(project.repo / "wiki/memory/checkpoints/default.md").read_text()
    # The hook said why, in Claude Code's own log.
    assert "a memory write that only adds" in run.debug, run.explain()
    final = stream_events(run.stdout)[-1]
    denied = {d.get("tool_name") for d in final.get("permission_denials", [])}
    assert denied == {EDIT}, (denied, run.explain())
    deleted = result_for(last, EDIT)
    assert deleted is not None and deleted.get("is_error"), result_text(deleted or {})
