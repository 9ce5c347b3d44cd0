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
    assert reads <= set(TOPIC_ACTIONS) and not reads & permissions.TOPICS_ADD_ACTIONS
    # the rest write: checkpoint only adds (a new page; the older one stays in git); import (it replaces
    # checkpoints), reindex (the index) and clear_checkpoint (a page deleted) ask
    assert permissions.TOPICS_ADD_ACTIONS == {"checkpoint"}
    assert set(TOPIC_ACTIONS) - reads - permissions.TOPICS_ADD_ACTIONS == {"import", "reindex", "clear_checkpoint"}
    assert set(permissions.ADD_TOOLS) < set(permissions.WRITE_TOOLS)
    from gitwiki.mcp.memory import MemoryTools

    parameters = inspect.signature(MemoryTools.memory_topics).parameters
    assert parameters["action"].default == permissions.TOPICS_DEFAULT_ACTION
    assert parameters["apply"].default is False  # clean and compact are dry runs unless asked


READ = "gitwiki: a read-only tool of the gitwiki MCP server"
ADD = permissions.ADD_REASON


@pytest.mark.parametrize(
    ("tool", "arguments", "decision"),
    [
        ("memory_search", {"query": "lock"}, READ),
        ("memory_topics", {}, READ),  # list, the default action
        ("memory_topics", {"action": "compact"}, READ),  # a dry run
        # memory writes that only add: allowed, in every mode (a PreToolUse answer, so under -p too)
        ("memory_store", {"topic": "t", "text": "x"}, ADD),
        ("memory_store", {"topic": "t", "text": "x", "force": True, "scope": "personal"}, ADD),
        ("memory_batch", {"entries": [{"topic": "t", "text": "x"}]}, ADD),
        ("memory_topics", {"action": "checkpoint", "task": "ship it"}, ADD),
        # writes that remove or rewrite: no answer, so Claude Code asks unless --allow-writes' rules allow them
        ("memory_edit", {"action": "append", "topic": "t", "text": "x"}, None),
        ("memory_edit", {"action": "delete", "topic": "t", "all": True}, None),
        ("memory_edit", {"action": "rename", "topic": "t", "to": "u"}, None),
        ("memory_edit", {"action": "merge", "topic": "t", "into": "u"}, None),
        ("memory_topics", {"action": "clean", "apply": True}, None),
        ("memory_topics", {"action": "compact", "apply": True}, None),
        ("memory_topics", {"action": "clear_checkpoint"}, None),
        ("memory_topics", {"action": "import", "data": {"topics": []}}, None),
        ("memory_topics", {"action": "reindex"}, None),
        ("memory_topics", {"action": ["checkpoint"], "task": "x"}, None),
        ("add_markdown", {"path": "x.md", "content": "# x"}, None),
        ("delete_markdown", {"path": "x.md"}, None),
        ("index", {}, None),
    ],
)
@pytest.mark.parametrize("prefix", ["mcp__gitwiki__", "mcp__plugin_gitwiki_gitwiki__"])
def test_approve_mcp_decides_per_tool_and_action(prefix, tool, arguments, decision):
    answer = permissions.approve({"tool_name": prefix + tool, "tool_input": arguments})
    if decision is None:
        assert answer is None
    else:
        assert answer == {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": decision,
            }
        }


def test_hooks_status_reports_memory_adds_allowed_by_the_hook_unless_a_rule_of_yours_decides(
    repo, cli, tmp_path, monkeypatch
):
    repo.commit("start")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    (tmp_path / "claude").mkdir()
    assert cli("hooks", "install", cwd=repo.path)[0] == 0
    line = "MCP memory adds (memory_store, memory_batch, topics checkpoint):"
    assert f"{line} allowed by the approve-mcp hook\n" in cli("hooks", "status", cwd=repo.path)[1]
    user = tmp_path / "claude" / "settings.json"
    user.write_text(json.dumps({"permissions": {"deny": ["mcp__gitwiki__memory_store"]}}))
    out = cli("hooks", "status", cwd=repo.path)[1]
    assert f"{line} allowed by the approve-mcp hook except 1 your rules decide" in out
    assert f"memory_store: denied by your deny rule in {user}" in out
    assert cli("hooks", "uninstall", cwd=repo.path)[0] == 0
    assert f"{line} asked\n" in cli("hooks", "status", cwd=repo.path)[1]


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
