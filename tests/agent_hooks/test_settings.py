"""`gitwiki hooks install|uninstall|status` on settings files that already hold other hooks."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks import HOOK_TYPES, permissions
from gitwiki.agent_hooks.settings import command_for, hooks_table, install, status, uninstall
from tests.helpers import ROOT

OTHER = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash.sh", "timeout": 30}]},
            {"matcher": "Read", "hooks": [{"type": "command", "command": "echo read"}]},
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        "Notification": [],
    },
    "model": "opus",
}


def _settings(repo) -> dict:
    return json.loads((repo.path / ".claude" / "settings.json").read_text())


WRITES = permissions.write_rules()


def test_install_then_uninstall_gives_back_the_file_byte_for_byte(repo, cli):
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    original = json.dumps(OTHER, indent=2)
    target.write_text(original)
    code, out, _ = cli("hooks", "install", cwd=repo.path)
    assert code == 0
    assert out.splitlines()[0] == f"settings: {target}"
    assert all(f"  {h.name} ({h.event}): installed" in out for h in HOOK_TYPES)
    local = repo.path / ".claude" / "settings.local.json"
    assert (
        "  MCP reads: allowed by the approve-mcp hook\n"
        "  MCP memory adds (memory_store, memory_batch, topics checkpoint): allowed by the approve-mcp hook\n"
        f"  MCP writes (7 tools): asked (rules in {local})\n"
    ) in out
    installed = _settings(repo)
    assert installed["permissions"] == OTHER["permissions"] and installed["model"] == "opus"
    assert not local.exists()
    assert installed["hooks"]["PreToolUse"][:2] == OTHER["hooks"]["PreToolUse"]
    assert installed["hooks"]["PreToolUse"][2] == {
        "matcher": "Read|Edit|Write|Glob|Grep|Bash",
        "hooks": [{"type": "command", "command": "gitwiki-hook ambient", "timeout": 10}],
    }
    assert installed["hooks"]["Stop"][0] == OTHER["hooks"]["Stop"][0]
    once = target.read_bytes()
    cli("hooks", "install", cwd=repo.path)
    assert target.read_bytes() == once  # idempotent

    assert out.splitlines()[-1] == "next: gitwiki index (the hooks read the index and never build it)"
    cli("index", cwd=repo.path)
    assert "next:" not in cli("hooks", "install", cwd=repo.path)[1]

    code, out, _ = cli("hooks", "uninstall", cwd=repo.path)
    assert code == 0 and "  prompt (UserPromptSubmit): missing" in out and "  MCP reads: asked" in out
    assert target.read_text() == original
    assert not (repo.path / ".claude" / "gitwiki-hooks.json").exists()


def test_install_into_a_missing_file_and_uninstall_leaves_no_file(repo, cli):
    repo.commit("start")
    cli("hooks", "install", "--command", "/opt/gw/bin/gitwiki", cwd=repo.path)
    assert _settings(repo) == {"hooks": hooks_table("/opt/gw/bin/gitwiki")}
    cli("hooks", "uninstall", cwd=repo.path)
    assert not (repo.path / ".claude" / "settings.json").exists()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""  # nothing left behind
    (repo.path / ".claude" / "settings.json").write_text("{}")  # the user's own empty file stays
    cli("hooks", "install", "--command", "/opt/gw/bin/gitwiki", cwd=repo.path)
    cli("hooks", "uninstall", cwd=repo.path)
    assert (repo.path / ".claude" / "settings.json").read_text() == "{}"


def test_allow_writes_adds_the_write_rules_where_an_untrusted_workspace_reads_them(repo, cli):
    """Claude Code ignores .claude/settings.json's permission rules in a workspace not trusted yet (every
    `claude -p` in a fresh checkout): the write rules go to settings.local.json, which it honours there."""
    repo.commit("start")
    local = repo.path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"permissions": {"allow": ["Bash(make:*)"]}}\n')
    code, out, _ = cli("hooks", "install", "--allow-writes", cwd=repo.path)
    assert code == 0 and "  MCP writes (7 tools): allowed (rules in" in out
    assert json.loads(local.read_text())["permissions"]["allow"] == ["Bash(make:*)", *WRITES]
    assert WRITES == [f"mcp__gitwiki__{t}" for t in permissions.WRITE_TOOLS]
    assert "permissions" not in _settings(repo)
    cli("hooks", "install", cwd=repo.path)
    assert local.read_text() == '{"permissions": {"allow": ["Bash(make:*)"]}}\n'
    cli("hooks", "install", "--allow-writes", cwd=repo.path)
    cli("hooks", "uninstall", cwd=repo.path)
    assert local.read_text() == '{"permissions": {"allow": ["Bash(make:*)"]}}\n'


def test_with_user_the_write_rules_go_to_the_user_settings(repo, cli, tmp_path, monkeypatch):
    repo.commit("start")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    cli("hooks", "install", "--user", "--allow-writes", cwd=repo.path)
    user = json.loads((tmp_path / "claude" / "settings.json").read_text())
    assert user["permissions"]["allow"] == WRITES and user["hooks"] == hooks_table()
    cli("hooks", "uninstall", "--user", cwd=repo.path)
    assert not (tmp_path / "claude" / "settings.json").exists()  # install made it


def test_an_entry_of_ours_removed_by_hand_is_added_again(tmp_path):
    target = tmp_path / "settings.json"
    install(target, target)
    data = json.loads(target.read_text())
    del data["hooks"]["Stop"]
    target.write_text(json.dumps(data))
    install(target, target)
    assert json.loads(target.read_text())["hooks"]["Stop"] == hooks_table()["Stop"]
    uninstall(target, target)
    assert not target.exists()


def test_the_command_is_gitwiki_hook_beside_the_program():
    ambient = HOOK_TYPES[2]
    assert command_for(ambient) == "gitwiki-hook ambient"
    assert command_for(ambient, "/opt/gw/bin/gitwiki") == "/opt/gw/bin/gitwiki-hook ambient"
    # not one path to gitwiki: the CLI form, which the lean entry point cannot stand in for
    assert command_for(ambient, "uvx --from gitwiki-search gitwiki") == "uvx --from gitwiki-search gitwiki hook ambient"
    assert command_for(ambient, "/opt/gw/bin/gw") == "/opt/gw/bin/gw hook ambient"


USERS_OWN = {
    "hooks": {
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "gitwiki hook session && /usr/local/bin/my-notify"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "/opt/tools/gitwiki-hook stop --notify-slack"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "gitwiki-hook ambient"}]}],
    }
}


def test_commands_that_merely_run_a_gitwiki_hook_are_the_users_and_stay(tmp_path):
    """Only what install wrote and recorded is ours: a user's command that runs gitwiki-hook (with more after
    it, other arguments, another matcher) is neither replaced, reported installed nor removed."""
    target = tmp_path / "settings.json"
    original = json.dumps(USERS_OWN, indent=2) + "\n"
    target.write_text(original)
    found = status(target, target)
    assert {s.name: s.state for s in found.hooks}["stop"] == "missing"
    assert found.others == [
        "SessionStart: gitwiki hook session && /usr/local/bin/my-notify",
        "Stop: /opt/tools/gitwiki-hook stop --notify-slack",
        "PreToolUse: gitwiki-hook ambient",
    ]
    install(target, target)
    assert len(status(target, target).others) == 3
    after = json.loads(target.read_text())
    assert after["hooks"]["SessionStart"][0] == USERS_OWN["hooks"]["SessionStart"][0]
    assert after["hooks"]["Stop"][0] == USERS_OWN["hooks"]["Stop"][0]
    assert after["hooks"]["PreToolUse"][0] == USERS_OWN["hooks"]["PreToolUse"][0]
    uninstall(target, target)
    assert target.read_text() == original


def test_entries_the_user_had_before_install_stay_after_uninstall(tmp_path):
    """An entry identical to ours that the user wrote first is not added twice, and uninstall leaves it."""
    target = tmp_path / "settings.json"
    stop = {"hooks": [{"type": "command", "command": "gitwiki-hook stop", "timeout": 10}]}
    original = json.dumps({"permissions": {"allow": ["mcp__gitwiki__ground"]}, "hooks": {"Stop": [stop]}}) + "\n"
    target.write_text(original)
    found = {s.name: s.state for s in status(target, target).hooks}
    assert found["stop"] == "yours" and found["prompt"] == "missing"
    install(target, target)
    data = json.loads(target.read_text())
    assert data["hooks"]["Stop"] == [stop] and data["permissions"]["allow"] == ["mcp__gitwiki__ground"]
    assert {s.name: s.state for s in status(target, target).hooks}["stop"] == "yours"
    uninstall(target, target)
    assert target.read_text() == original


def test_status_reports_a_copy_of_ours_as_duplicated(tmp_path):
    target = tmp_path / "settings.json"
    install(target, target)
    data = json.loads(target.read_text())
    data["hooks"]["Stop"].append(data["hooks"]["Stop"][0])
    target.write_text(json.dumps(data))
    found = {s.name: s.state for s in status(target, target).hooks}
    assert found["stop"] == "duplicated" and found["session"] == "installed"
    uninstall(target, target)
    assert json.loads(target.read_text())["hooks"]["Stop"] == data["hooks"]["Stop"][:1]  # the copy is the user's


def test_another_command_replaces_ours(tmp_path):
    target = tmp_path / "settings.json"
    install(target, target)
    install(target, target, "/opt/gw/bin/gitwiki")
    commands = [e["command"] for gs in json.loads(target.read_text())["hooks"].values() for g in gs for e in g["hooks"]]
    assert sorted(commands) == sorted(f"/opt/gw/bin/gitwiki-hook {h.name}" for h in HOOK_TYPES)


@pytest.mark.parametrize(
    "text",
    [
        '{"hooks": {"Stop": [',
        '{"hooks": []}',
        '{"hooks": {"Stop": {"command": "x"}}}',
        "[]",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": "\\ud800"}',
        '{"permissions": {"allow": "x"}}',
        "[" * 5000 + "]" * 5000,
    ],
)
def test_malformed_settings_are_reported_and_never_overwritten(repo, cli, text):
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_text(text)
    for action in ("install", "uninstall", "status"):
        code, _, err = cli("hooks", action, cwd=repo.path)
        assert code == 2, text
        assert err.startswith(f"gitwiki: error: {target}") and "gitwiki leaves it as it is" in err
        assert target.read_text() == text


def test_settings_that_are_not_utf8_are_reported(repo, cli):
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_bytes(b'{"a": "\xff"}')
    code, _, err = cli("hooks", "install", cwd=repo.path)
    assert code == 2 and "is not UTF-8" in err and target.read_bytes() == b'{"a": "\xff"}'


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_settings_that_are_no_regular_file_are_reported_at_once(repo, cli, kind):
    """A checkout's `.claude/settings.json` that is a FIFO (a read would block) or a link to /dev/zero (a read would
    not end): each action says so and exits 2; so do the local settings beside it, which status reads for rules."""
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    os.mkfifo(target) if kind == "fifo" else target.symlink_to("/dev/zero")
    for action in ("install", "uninstall", "status"):
        code, _, err = cli("hooks", action, cwd=repo.path)
        assert (
            code == 2 and err.startswith(f"gitwiki: error: settings file '{target}'") and "not a regular file" in err
        ), err
    target.unlink()
    local = repo.path / ".claude" / "settings.local.json"
    os.mkfifo(local) if kind == "fifo" else local.symlink_to("/dev/zero")
    code, out, err = cli("hooks", "status", cwd=repo.path)
    assert code == 2 and err.startswith(f"gitwiki: error: settings file '{local}'") and "not a regular file" in err, err


def test_numbers_out_of_double_range_survive_install(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text('{"big": 1e400, "tiny": 5e-400}')
    install(target, target)
    assert target.read_text().startswith('{"big": 1e400, "tiny": 5e-400, "hooks": {')
    uninstall(target, target)
    assert target.read_text() == '{"big": 1e400, "tiny": 5e-400}'


NUMBER_TEXT = st.sampled_from(["1e400", "-0", "0.10", "1E+2", "12345678901234567890123", "-5e-400"])
JSON_KEYS = st.sampled_from(["hooks", "permissions", "allow", "Stop", "PreToolUse", "matcher", "x", "é"]) | st.text(
    st.characters(exclude_categories=["Cs"]), max_size=5
)
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | NUMBER_TEXT.map(lambda t: f"\x00{t}\x00")
    | st.text(max_size=6).filter(lambda t: "\x00" not in t and not any("\ud800" <= c <= "\udfff" for c in t))
)
ANY = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_KEYS, inner, max_size=3), max_leaves=12
)
GROUP = st.fixed_dictionaries(
    {
        "hooks": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.just("command"),
                    "command": st.sampled_from(
                        ["gitwiki-hook stop", "gitwiki-hook ambient", "gitwiki hook session && x", "echo hi"]
                    ),
                }
            ),
            max_size=2,
        )
    },
    optional={"matcher": st.sampled_from(["Bash", "Read|Edit|Write|Glob|Grep|Bash", "*"])},
)
SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.dictionaries(
            st.sampled_from([h.event for h in HOOK_TYPES] + ["Notification"]), st.lists(GROUP, max_size=2)
        ),
        "permissions": st.fixed_dictionaries(
            {},
            optional={
                "allow": st.lists(st.sampled_from([*WRITES, "Bash", "mcp__gitwiki__ground"]), max_size=3),
                "deny": ANY,
            },
        ),
        "model": ANY,
        "env": st.dictionaries(JSON_KEYS, ANY, max_size=3),
    },
)
LAYOUT = st.sampled_from([{}, {"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"separators": (",", ":")}])


def _text(data: dict, layout: dict) -> str:
    """`data` as JSON with the \\x00-marked strings written as the raw numbers they stand for."""
    import re

    return re.sub(r'"\\u0000([^"\\]*)\\u0000"', r"\1", json.dumps(data, ensure_ascii=False, **layout))


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SETTINGS, LAYOUT, st.booleans(), st.booleans())
def test_install_then_uninstall_on_any_settings_gives_the_same_bytes(tmp_path, data, layout, writes, newline):
    target = tmp_path / "settings.json"
    original = _text(data, layout) + ("\n" if newline else "")
    target.write_text(original)
    install(target, target, allow_writes=writes)
    installed = target.read_text()
    assert {s.state for s in status(target, target).hooks} <= {"installed", "duplicated", "yours"}
    install(target, target, allow_writes=writes)
    assert target.read_text() == installed
    uninstall(target, target)
    assert target.read_text() == original
    assert not (tmp_path / "gitwiki-hooks.json").exists()


def test_user_settings_honour_claude_config_dir(repo, cli, tmp_path, monkeypatch):
    repo.commit("start")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    code, out, _ = cli("hooks", "install", "--user", cwd=repo.path)
    assert code == 0 and out.startswith(f"settings: {tmp_path / 'claude' / 'settings.json'}")
    assert not (repo.path / ".claude").exists()


def test_the_plugin_registers_the_same_hooks():
    plugin = json.loads((ROOT / "plugins" / "gitwiki" / "hooks" / "hooks.json").read_text())
    assert plugin == {"description": plugin["description"], "hooks": hooks_table()}


def test_the_plugin_registers_the_mcp_server_as_mcp_config_prints_it(repo, cli):
    repo.commit("start")
    code, out, _ = cli("mcp", "config", "--project", cwd=repo.path)
    assert code == 0
    assert json.loads((ROOT / "plugins" / "gitwiki" / ".mcp.json").read_text()) == json.loads(out)


def test_the_marketplace_lists_the_plugin_at_this_version():
    from gitwiki import __version__

    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    entry = market["plugins"][0]
    manifest = json.loads((ROOT / entry["source"] / ".claude-plugin" / "plugin.json").read_text())
    assert entry["name"] == manifest["name"] == "gitwiki"
    assert entry["version"] == manifest["version"] == __version__
    skill = (ROOT / entry["source"] / "skills" / "gitwiki" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: gitwiki\ndescription: ")


def test_install_says_when_the_plugin_is_enabled_too(repo, cli, tmp_path, monkeypatch):
    repo.commit("start")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    (tmp_path / "claude").mkdir()
    user = tmp_path / "claude" / "settings.json"
    user.write_text(json.dumps({"enabledPlugins": {"gitwiki@gitwiki": True, "other@x": True}}))
    code, out, _ = cli("hooks", "install", cwd=repo.path)
    assert code == 0
    assert f"note: the gitwiki plugin is enabled in {user}: its hooks run beside these" in out
    user.write_text(json.dumps({"enabledPlugins": {"gitwiki@gitwiki": False}}))
    assert "note:" not in cli("hooks", "status", cwd=repo.path)[1]


def test_uninstall_where_nothing_was_installed_creates_nothing(repo, cli):
    repo.commit("start")
    code, out, _ = cli("hooks", "uninstall", cwd=repo.path)
    assert code == 0 and "  session (SessionStart): missing" in out
    assert not (repo.path / ".claude").exists()


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
def test_settings_keep_their_line_ends_through_install_and_uninstall(tmp_path, newline):
    """A settings file saved with Windows line ends: found by a re-check, install rewrote every CRLF as LF
    (the file was read in text mode) and uninstall left it so."""
    target = tmp_path / "settings.json"
    original = newline.join(["{", '  "model": "opus",', '  "hooks": {', '    "Stop": []', "  }", "}", ""]).encode()
    target.write_bytes(original)
    install(target, target)
    installed = target.read_bytes()
    if newline == "\r\n":
        assert installed.count(b"\n") == installed.count(b"\r\n")  # what we added follows the file's line ends
    assert json.loads(installed)["model"] == "opus"
    uninstall(target, target)
    assert target.read_bytes() == original


def _register(tmp_path, monkeypatch, state: dict) -> None:
    """Claude Code's own state file (~/.claude.json, here under CLAUDE_CONFIG_DIR) holding `state`."""
    config = tmp_path / "claude-config"
    config.mkdir(exist_ok=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    (config / ".claude.json").write_text(json.dumps(state))


def test_via_mcp_the_hooks_are_calls_to_the_registered_server(repo, cli, tmp_path, monkeypatch):
    """`claude mcp add wiki -- /opt/bin/gitwiki serve` registered it for this project: install says so, and with
    `--via mcp` every hook but three becomes an mcp_tool hook of that server (no process each); `--via command`
    turns them back, status notes a server since removed, and uninstall gives the file back byte for byte."""
    repo.commit("start")
    server = {"type": "stdio", "command": "/opt/bin/gitwiki", "args": ["serve"], "env": {}}
    _register(tmp_path, monkeypatch, {"projects": {str(repo.path): {"mcpServers": {"wiki": server}}}})
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    original = json.dumps(OTHER, indent=2)
    target.write_text(original)
    code, out, _ = cli("hooks", "install", cwd=repo.path)
    assert (
        code == 0
        and "tip: Claude Code runs gitwiki's MCP server (wiki) here: with --via mcp the hooks are calls" in out
    )
    assert _settings(repo)["hooks"]["UserPromptSubmit"] == [hooks_table()["UserPromptSubmit"][0]]
    code, out, _ = cli("hooks", "install", "--via", "mcp", cwd=repo.path)
    assert code == 0 and "tip:" not in out and "note:" not in out
    assert "  prompt (UserPromptSubmit): installed, answered by the MCP server wiki\n" in out
    assert "  stop (Stop): installed, answered by the MCP server wiki\n" in out
    assert "  ambient (PreToolUse): installed, answered by the MCP server wiki\n" in out
    assert "  session (SessionStart): installed\n" in out
    installed = _settings(repo)
    [prompt] = installed["hooks"]["UserPromptSubmit"]
    assert prompt["hooks"][0]["type"] == "mcp_tool" and prompt["hooks"][0]["server"] == "wiki"
    assert installed["hooks"]["Stop"][0] == OTHER["hooks"]["Stop"][0]  # the user's own stays first
    assert installed["hooks"]["Stop"][1]["hooks"][0]["input"]["stop_hook_active"] == "${stop_hook_active}"
    assert installed["hooks"]["SessionStart"][0]["hooks"][0]["type"] == "command"  # it runs beside the server's start
    code, out, _ = cli("hooks", "status", cwd=repo.path)
    assert "  prompt (UserPromptSubmit): installed, answered by the MCP server wiki\n" in out and "yours" not in out
    code, out, _ = cli("hooks", "install", "--via", "command", cwd=repo.path)
    assert "  prompt (UserPromptSubmit): installed\n" in out
    assert _settings(repo)["hooks"]["UserPromptSubmit"] == [hooks_table()["UserPromptSubmit"][0]]
    cli("hooks", "install", "--via", "mcp", cwd=repo.path)
    _register(tmp_path, monkeypatch, {})  # `claude mcp remove wiki`: status says what the hooks now miss
    code, out, _ = cli("hooks", "status", cwd=repo.path)
    assert "note: the hooks call the MCP server wiki, which Claude Code does not have registered" in out
    code, out, _ = cli("hooks", "uninstall", cwd=repo.path)
    assert code == 0 and target.read_text() == original


def test_without_a_registration_via_mcp_names_gitwiki_and_says_it_is_missing(repo, cli, tmp_path, monkeypatch):
    repo.commit("start")
    elsewhere = {"mcpServers": {"w": {"command": "gitwiki", "args": ["serve"]}}}
    _register(tmp_path, monkeypatch, {"projects": {"/elsewhere": elsewhere}})
    code, out, _ = cli("hooks", "install", cwd=repo.path)
    assert code == 0 and "tip:" not in out and "note:" not in out
    assert _settings(repo)["hooks"] == hooks_table()
    code, out, _ = cli("hooks", "install", "--via", "mcp", cwd=repo.path)
    assert _settings(repo)["hooks"] == hooks_table(server="gitwiki")
    assert "  prompt (UserPromptSubmit): installed, answered by the MCP server gitwiki\n" in out
    assert "note: the hooks call the MCP server gitwiki, which Claude Code does not have registered" in out
