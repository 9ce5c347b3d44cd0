"""Where Claude Code has gitwiki's MCP server registered (gitwiki/agent_hooks/registration.py): the user's and the
project's servers in ~/.claude.json, a shared `.mcp.json` once the user approved it; nothing else, and nothing from
files that do not parse."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks.registration import registered_server, runs_gitwiki_serve

GITWIKI = {"command": "gitwiki", "args": ["serve"]}


@pytest.fixture
def claude(tmp_path, monkeypatch):
    """write(state): Claude Code's ~/.claude.json (under CLAUDE_CONFIG_DIR) holding `state`."""
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return lambda state: (config / ".claude.json").write_text(state if isinstance(state, str) else json.dumps(state))


@pytest.fixture
def root(tmp_path):
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


@pytest.mark.parametrize(
    "config, runs",
    [
        (GITWIKI, True),
        ({"type": "stdio", "command": "/home/u/.local/bin/gitwiki", "args": ["serve", "--alone"]}, True),
        ({"command": "uvx", "args": ["--from", "gitwiki-search", "gitwiki", "serve"]}, True),
        ({"command": "python", "args": ["-m", "gitwiki", "serve"]}, True),
        ({"command": "gitwiki", "args": ["ground", "serve"]}, False),
        ({"command": "qmd", "args": ["mcp"]}, False),
        ({"type": "http", "url": "http://localhost/gitwiki/serve"}, False),
        ({"command": "gitwiki", "args": "serve"}, False),
        ("gitwiki serve", False),
    ],
)
def test_a_server_is_gitwikis_when_its_command_line_runs_gitwiki_serve(config, runs):
    assert runs_gitwiki_serve(config) is runs


def test_the_projects_own_registration_then_the_users(claude, root):
    claude({"mcpServers": {"mine": GITWIKI}, "projects": {str(root): {"mcpServers": {"qmd": {"command": "qmd"}}}}})
    assert registered_server(root, []) == "mine"
    claude({"mcpServers": {"mine": GITWIKI}, "projects": {str(root): {"mcpServers": {"wiki": GITWIKI}}}})
    assert registered_server(root, []) == "wiki"
    claude({"projects": {"/other": {"mcpServers": {"wiki": GITWIKI}}}})
    assert registered_server(root, []) is None


def test_a_shared_mcp_json_counts_once_the_user_approved_it(claude, root):
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"gitwiki": GITWIKI}}))
    settings = root / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    claude({})
    assert registered_server(root, [settings]) is None  # Claude Code would not start it
    settings.write_text(json.dumps({"enabledMcpjsonServers": ["other"]}))
    assert registered_server(root, [settings]) is None
    settings.write_text(json.dumps({"enabledMcpjsonServers": ["gitwiki"]}))
    assert registered_server(root, [settings]) == "gitwiki"
    settings.write_text("{}")
    claude({"projects": {str(root): {"enableAllProjectMcpServers": True}}})
    assert registered_server(root, [settings]) == "gitwiki"


@pytest.mark.parametrize("text", ["", "{", "[1]", '{"projects": []}', '{"mcpServers": {"w": 5}}', "\xff", "[" * 5000])
def test_files_that_do_not_parse_register_nothing(claude, root, text):
    claude(text)
    (root / ".mcp.json").write_text(text)
    assert registered_server(root, [root / ".mcp.json"]) is None


@pytest.mark.parametrize("kind", ["fifo", "zero", "outside", "folder"])
def test_a_mcp_json_that_is_no_regular_file_of_the_checkout_registers_nothing_and_never_hangs(
    claude, root, tmp_path, kind
):
    """`.mcp.json` comes with the checkout: a FIFO (whose read would block), a link to /dev/zero (whose read would
    not end), a link out of the repository or a folder is read as nothing, at once."""
    claude({"projects": {str(root): {"enableAllProjectMcpServers": True}}})
    shared = root / ".mcp.json"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"mcpServers": {"gitwiki": GITWIKI}}))
    if kind == "fifo":
        os.mkfifo(shared)
    elif kind == "zero":
        shared.symlink_to("/dev/zero")
    elif kind == "outside":
        shared.symlink_to(outside)
    else:
        shared.mkdir()
    assert registered_server(root, [root / ".claude" / "settings.local.json"]) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.sampled_from(["gitwiki", "serve", "stdio"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["mcpServers", "projects", "command", "args", "type", "enabledMcpjsonServers", "x"])
            | st.text(max_size=6),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(state=_JSON, shared=_JSON)
def test_any_json_in_either_file_gives_a_name_or_none(claude, root, state, shared):
    """`.mcp.json` comes with the checkout: whatever it holds, the answer is a server's name or None."""
    claude(state)
    (root / ".mcp.json").write_text(json.dumps(shared))
    found = registered_server(root, [root / ".mcp.json"])
    assert found is None or isinstance(found, str)
