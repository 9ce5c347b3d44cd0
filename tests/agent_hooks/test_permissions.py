"""The permission table (agent_hooks/permissions.py) against the tools the MCP server really registers."""

from __future__ import annotations

import inspect
import json
import subprocess

import pytest

from gitwiki.agent_hooks import permissions


def test_the_table_lists_every_server_tool_by_its_read_only_hint():
    from gitwiki.mcp import memory as mcp_memory
    from gitwiki.mcp import server as mcp_server

    tools = {**mcp_server.TOOLS, **mcp_memory.TOOLS}
    assert set(permissions.READ_TOOLS) == {name for name, hints in tools.items() if hints.read_only_hint}
    assert set(permissions.WRITE_TOOLS) == {name for name, hints in tools.items() if not hints.read_only_hint}


def test_every_memory_topics_action_is_classified():
    from gitwiki.memory.actions import TOPIC_ACTIONS

    reads = permissions.TOPICS_READ_ACTIONS | permissions.TOPICS_DRY_RUNS
    assert reads <= set(TOPIC_ACTIONS)
    # the rest write: import, reindex (the index), checkpoint and clear_checkpoint (pages)
    assert set(TOPIC_ACTIONS) - reads == {"import", "reindex", "checkpoint", "clear_checkpoint"}
    from gitwiki.mcp.memory import MemoryTools

    parameters = inspect.signature(MemoryTools.memory_topics).parameters
    assert parameters["action"].default == permissions.TOPICS_DEFAULT_ACTION
    assert parameters["apply"].default is False  # clean and compact are dry runs unless asked


MISTYPED = [["clean"], {"list": True}, 5, None, True, "", "\u0000"]


@pytest.mark.parametrize("action", MISTYPED, ids=repr)
def test_a_mistyped_memory_topics_action_is_no_answer_and_exit_0(repo, action):
    """The hook's console script, as Claude Code runs it: a list where the action's string goes made it exit 1
    with a TypeError traceback (Claude Code shows that to the user on every such call)."""
    repo.commit("start")
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "cwd": str(repo.path),
        "tool_name": "mcp__gitwiki__memory_topics",
        "tool_input": {"action": action, "apply": action},
    }
    done = subprocess.run(
        ["gitwiki-hook", "approve-mcp"], input=json.dumps(event).encode(), capture_output=True, cwd=repo.path
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == b""  # no decision: Claude Code applies the user's rules and asks as usual
    assert not (repo.path / ".git" / "gitwiki" / "agent-hooks.log").exists()


@pytest.mark.parametrize(
    ("rule", "matches"),
    [
        ("mcp__gitwiki__memory_edit", True),
        ("mcp__gitwiki", True),
        ("mcp__gitwiki__*", True),
        ("mcp__gitwiki__memory_*", True),
        (" mcp__gitwiki__memory_edit ", True),
        ("mcp__gitwiki__memory_editor", False),
        ("mcp__gitwikix", False),
        ("mcp__other__*", False),
        ("mcp__git*", False),
        ("Bash", False),
    ],
)
def test_a_permission_rule_names_a_tool_itself_its_server_or_a_wildcard_over_it(rule, matches):
    assert permissions.rule_matches(rule, "mcp__gitwiki__memory_edit") is matches


def test_hooks_status_reports_a_write_the_users_own_rule_denies(repo, cli, tmp_path, monkeypatch):
    """`hooks status` said "MCP writes (7 tools): allowed" though a deny rule in the user settings (which
    Claude Code applies before any allow) refused memory_edit."""
    repo.commit("start")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    (tmp_path / "claude").mkdir()
    user = tmp_path / "claude" / "settings.json"
    user.write_text(
        json.dumps({"permissions": {"deny": ["mcp__gitwiki__memory_edit"], "ask": ["mcp__gitwiki__ground"]}})
    )
    assert cli("hooks", "install", "--allow-writes", cwd=repo.path)[0] == 0
    code, out, _ = cli("hooks", "status", cwd=repo.path)
    assert code == 0
    assert "MCP writes (7 tools): 6 of 7 allowed" in out
    assert f"memory_edit: denied by your deny rule in {user}" in out
    assert "MCP reads: allowed by the approve-mcp hook except 1 your rules decide" in out
    assert f"ground: asked by your ask rule in {user}" in out
    project = repo.path / ".claude" / "settings.json"  # a project rule over the whole server counts too
    data = json.loads(project.read_text())
    project.write_text(json.dumps({**data, "permissions": {"deny": ["mcp__gitwiki"]}}))
    out = cli("hooks", "status", cwd=repo.path)[1]
    assert "MCP writes (7 tools): 0 of 7 allowed" in out and "index: denied by your deny rule in" in out
    user.unlink()
    project.write_text(json.dumps(data))
    assert "MCP writes (7 tools): allowed" in cli("hooks", "status", cwd=repo.path)[1]


def test_a_hook_without_a_repository_that_fails_logs_and_answers_nothing(repo, monkeypatch):
    """approve-mcp runs its handler before any repository code: a failure there escaped as a traceback."""
    from gitwiki.agent_hooks.run import run

    repo.commit("start")

    def broken(event):
        raise TypeError("a field of an unexpected type")

    monkeypatch.setattr(permissions, "approve", broken)
    event = {"cwd": str(repo.path), "tool_name": "mcp__gitwiki__ground", "tool_input": {}}
    assert run("approve-mcp", json.dumps(event).encode(), str(repo.path)) == ""
    logged = (repo.path / ".git" / "gitwiki" / "agent-hooks.log").read_text()
    assert "gitwiki hook approve-mcp" in logged and "TypeError: a field of an unexpected type" in logged
