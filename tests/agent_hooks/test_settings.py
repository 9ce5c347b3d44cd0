"""`gitwiki hooks install|uninstall|status` on settings files that already hold other hooks."""

from __future__ import annotations

import json

from gitwiki.agent_hooks import HOOK_TYPES
from gitwiki.agent_hooks.settings import command_for, hook_type_of, hooks_table
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


def test_install_then_uninstall_restores_the_other_hooks(repo, cli):
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps(OTHER, indent=2))
    code, out, _ = cli("hooks", "install", cwd=repo.path)
    assert code == 0
    assert out.splitlines()[0] == f"settings: {target}"
    assert all(f"  {h.name} ({h.event}): installed" in out for h in HOOK_TYPES)
    installed = _settings(repo)
    assert installed["permissions"] == OTHER["permissions"] and installed["model"] == "opus"
    assert installed["hooks"]["PreToolUse"][:2] == OTHER["hooks"]["PreToolUse"]
    assert installed["hooks"]["PreToolUse"][2] == {
        "matcher": "Read|Edit|Write|Glob|Grep",
        "hooks": [{"type": "command", "command": "gitwiki-hook ambient", "timeout": 10}],
    }
    assert installed["hooks"]["Stop"][0] == OTHER["hooks"]["Stop"][0]

    cli("hooks", "install", cwd=repo.path)
    assert _settings(repo) == installed  # idempotent

    assert out.splitlines()[-1] == "next: gitwiki index (the hooks read the index and never build it)"
    cli("index", cwd=repo.path)
    assert "next:" not in cli("hooks", "install", cwd=repo.path)[1]

    code, out, _ = cli("hooks", "uninstall", cwd=repo.path)
    assert code == 0 and "  prompt (UserPromptSubmit): missing" in out
    assert _settings(repo) == OTHER


def test_install_into_a_missing_file_and_uninstall_leaves_an_empty_object(repo, cli):
    repo.commit("start")
    cli("hooks", "install", "--command", "/opt/gw/bin/gitwiki", cwd=repo.path)
    assert _settings(repo) == {"hooks": hooks_table("/opt/gw/bin/gitwiki")}
    cli("hooks", "uninstall", cwd=repo.path)
    assert _settings(repo) == {}


def test_the_command_is_gitwiki_hook_beside_the_program():
    ambient = HOOK_TYPES[2]
    assert command_for(ambient) == "gitwiki-hook ambient"
    assert command_for(ambient, "/opt/gw/bin/gitwiki") == "/opt/gw/bin/gitwiki-hook ambient"
    # not one path to gitwiki: the CLI form, which the lean entry point cannot stand in for
    assert command_for(ambient, "uvx gitwiki") == "uvx gitwiki hook ambient"
    assert command_for(ambient, "/opt/gw/bin/gw") == "/opt/gw/bin/gw hook ambient"


def test_hook_type_of_knows_the_commands_of_this_and_earlier_versions():
    for command, expected in (
        ("gitwiki-hook prompt", "prompt"),
        ('"/opt/gw/bin/gitwiki-hook" post-build', "post-build"),
        ("/mnt/c/gw/gitwiki-hook.exe stop", "stop"),
        ("gitwiki hook stop", "stop"),  # the CLI form, written before gitwiki-hook existed
        ("/usr/local/bin/gitwiki hook approve-mcp", "approve-mcp"),
        ("uvx gitwiki hook session", "session"),
        ("gitwiki-hook", None),
        ("gitwiki-hook deploy", None),
        ("gitwiki hook", None),
        ("mytool hook stop", None),
        ("gitwiki ground hook", None),
        ("~/bin/check-bash.sh", None),
        (None, None),
    ):
        assert hook_type_of(command) == expected, command


def test_installs_of_the_cli_form_are_recognised_replaced_and_removed(repo, cli):
    """Settings an earlier gitwiki wrote (`gitwiki hook TYPE`): status sees them, install swaps them for
    `gitwiki-hook TYPE` without leaving a duplicate, uninstall removes them."""
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    earlier = json.loads(json.dumps(OTHER))
    for h in HOOK_TYPES:
        group = {"matcher": h.matcher} if h.matcher else {}
        group["hooks"] = [{"type": "command", "command": f"/opt/gw/bin/gitwiki hook {h.name}", "timeout": 10}]
        earlier["hooks"].setdefault(h.event, []).append(group)
    target.write_text(json.dumps(earlier))
    code, out, _ = cli("hooks", "status", cwd=repo.path)
    assert code == 0 and all(f"  {h.name} ({h.event}): installed" in out for h in HOOK_TYPES), out

    code, out, _ = cli("hooks", "install", "--command", "/opt/gw/bin/gitwiki", cwd=repo.path)
    assert code == 0 and all(f"  {h.name} ({h.event}): installed" in out for h in HOOK_TYPES), out
    commands = [e["command"] for groups in _settings(repo)["hooks"].values() for g in groups for e in g["hooks"]]
    assert sorted(c for c in commands if "gitwiki" in c) == sorted(
        f"/opt/gw/bin/gitwiki-hook {h.name}" for h in HOOK_TYPES
    )

    target.write_text(json.dumps(earlier))
    cli("hooks", "uninstall", cwd=repo.path)
    assert _settings(repo) == OTHER


def test_status_reports_changed_and_duplicated_entries(repo, cli):
    repo.commit("start")
    cli("hooks", "install", cwd=repo.path)
    data = _settings(repo)
    data["hooks"]["PreToolUse"][0]["matcher"] = "Read"
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "gitwiki hook stop"}]})
    (repo.path / ".claude" / "settings.json").write_text(json.dumps(data))
    code, out, _ = cli("hooks", "status", cwd=repo.path)
    assert "  ambient (PreToolUse): changed" in out
    assert "  stop (Stop): duplicated" in out
    assert "  session (SessionStart): installed" in out


def test_malformed_settings_are_reported_and_never_overwritten(repo, cli):
    repo.commit("start")
    target = repo.path / ".claude" / "settings.json"
    target.parent.mkdir()
    for text in ('{"hooks": {"Stop": [', '{"hooks": []}', '{"hooks": {"Stop": {"command": "x"}}}', "[]"):
        target.write_text(text)
        code, _, err = cli("hooks", "install", cwd=repo.path)
        assert code == 2, text
        assert err.startswith(f"gitwiki: error: {target}") and "gitwiki leaves it as it is" in err
        assert target.read_text() == text


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
