"""The plugin installed from this repository's marketplace, alone and beside `gitwiki hooks install`.

`claude plugin marketplace add PATH` reads .claude-plugin/marketplace.json, `claude plugin install
gitwiki@gitwiki` enables plugins/gitwiki: its hooks and its MCP server (`plugin:gitwiki:gitwiki`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

import pytest

from tests.e2e.harness import (
    PLUGIN_TOOLS,
    PROMPT,
    QUERY,
    Claude,
    Project,
    Run,
    captured_events,
    expected_contexts,
    install_capture_hook,
    make_wiki,
    tools_report,
)
from tests.e2e.mock_api import Request, Turn, prompt_text, result_for, result_text, tool_names
from tests.helpers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ANSWER = "Roll back with `rollback_release`."

GROUND = "mcp__plugin_gitwiki_gitwiki__ground"


@dataclass
class Recorded:
    run: Run
    first: Request
    last: Request
    events: list[dict]


@pytest.fixture(scope="module")
def plugin_project(tmp_path_factory, claude_binary, api) -> Project:
    base = tmp_path_factory.mktemp("e2e-plugin")
    claude = Claude(claude_binary, base / "home", api.url)
    repo = make_wiki(base / "repo", claude.env)
    claude.command("plugin", "marketplace", "add", str(ROOT), cwd=repo)
    claude.command("plugin", "install", "gitwiki@gitwiki", cwd=repo)
    install_capture_hook(claude.home, base / "events")
    return Project(claude, repo, base / "events")


def answer(project: Project, api, turns: list[Turn]) -> Recorded:
    api.reset(turns)
    run = project.claude.run("-p", PROMPT, "--max-turns", "6", cwd=project.repo)
    requests = api.messages()
    assert requests, f"no main-loop request reached the mock\n{run.explain()}"
    return Recorded(run, requests[0], requests[-1], captured_events(project.events))


@pytest.fixture(scope="module")
def plugin_only(plugin_project, api) -> Recorded:
    """The plugin's `ground` called in print mode (loaded through ToolSearch, as Claude Code defers MCP tools)."""
    turns = [
        Turn(tool="ToolSearch", input={"query": f"select:{GROUND}"}, when=lambda body: GROUND not in tool_names(body)),
        Turn(tool=GROUND, input={"query": QUERY}),
        Turn(text=ANSWER),
    ]
    return answer(plugin_project, api, turns)


@pytest.fixture(scope="module")
def plugin_and_hooks(plugin_project, plugin_only, api) -> Recorded | str:
    """After `plugin_only`'s run: the project hooks installed too, or why `hooks install` refused."""
    done = subprocess.run(
        ["gitwiki", "hooks", "install"],
        cwd=plugin_project.repo,
        env=plugin_project.claude.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return done.stderr
    return answer(plugin_project, api, [Turn(text=ANSWER)])


def test_plugin_gives_the_hooks(plugin_project, plugin_only):
    text = prompt_text(plugin_only.first)
    briefing, sections = expected_contexts(plugin_only.events, plugin_project.repo, plugin_project.claude.env)
    assert briefing in text, f"the plugin's SessionStart context is not in the prompt\n{plugin_only.run.explain()}"
    assert sections in text, f"the plugin's UserPromptSubmit context is not in the prompt\n{plugin_only.run.explain()}"
    assert "agent_hook" not in str(plugin_only.first.get("tools"))  # the hooks' tool is not the model's


def test_plugin_tools_allowed_in_print_mode(plugin_only):
    result = result_for(plugin_only.last, GROUND)
    assert result is not None, f"no tool_result for {GROUND}\n{plugin_only.run.explain()}"
    text = result_text(result)
    assert not result.get("is_error") and "requested permissions" not in text, text[:500]
    assert "wiki/deploy.md" in text


def test_plugin_tools_in_the_first_request(plugin_only):
    report = tools_report(plugin_only.first, PLUGIN_TOOLS)
    assert not report, f"the plugin's tools not in the first model request: {report}\n{plugin_only.run.explain()}"


def test_plugin_and_project_hooks_give_each_context_once(plugin_project, plugin_and_hooks):
    """Either the hooks deduplicate, or `hooks install` refuses beside the enabled plugin and says why."""
    if isinstance(plugin_and_hooks, str):
        assert "plugin" in plugin_and_hooks, f"hooks install failed without naming the plugin: {plugin_and_hooks}"
        return
    text = prompt_text(plugin_and_hooks.first)
    briefing, sections = expected_contexts(plugin_and_hooks.events, plugin_project.repo, plugin_project.claude.env)
    ran = "\n".join(line for line in plugin_and_hooks.run.debug.splitlines() if "[gitwiki-hook" in line)
    assert (text.count(briefing), text.count(sections)) == (1, 1), f"SessionStart, UserPromptSubmit contexts:\n{ran}"
