"""What the model sees through the real Claude Code CLI, in print mode, after the documented set-up.

One `claude -p --output-format stream-json` run plays an agent against the mock API: load gitwiki's `ground`
and `read_markdown` (through ToolSearch when Claude Code defers MCP tools), call them, read and edit a file,
run a failing test, answer. Every request body is recorded, so each test below asserts on what the model would have been shown.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e import claude_cli
from tests.e2e.harness import (
    EXPECTED_TOOLS,
    PROMPT,
    QUERY,
    Run,
    captured_events,
    expected_contexts,
    paragraph,
    sh,
    stream_events,
    tools_report,
)
from tests.e2e.mock_api import (
    Request,
    Turn,
    prompt_text,
    result_for,
    result_text,
    tool_names,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GROUND = "mcp__gitwiki__ground"
READ = "mcp__gitwiki__read_markdown"
FIXTURES = Path(__file__).parent.parent / "agent_hooks" / "fixtures" / "claude_code_events"
ANSWER = "Roll back with `rollback_release` and the previous tag."


def scenario(repo: Path) -> list[Turn]:
    source = str(repo / "src" / "release.py")
    return [
        # Claude Code 2.1 announces MCP tools by name and the model loads their schema with ToolSearch.
        Turn(
            tool="ToolSearch",
            input={"query": f"select:{GROUND},{READ}"},
            when=lambda body: GROUND not in tool_names(body),
        ),
        Turn(tool=GROUND, input={"query": QUERY}),
        Turn(tool=READ, input={"path": "deploy.md#rollback"}),
        Turn(tool="Read", input={"file_path": source}),
        Turn(
            tool="Edit", input={"file_path": source, "old_string": "return tag", "new_string": "return tag  # previous"}
        ),
        Turn(
            tool="Bash",
            input={"command": "python -m pytest -q -p no:cacheprovider test_release.py", "description": "Run the test"},
        ),
        Turn(text=ANSWER),
    ]


@dataclass
class Session:
    run: Run
    requests: list[Request]  # the agent loop's request bodies, in order
    events: list[dict]  # what the capture hook received, in order
    repo: Path
    env: dict[str, str]
    home: Path


@pytest.fixture(scope="module")
def session(project, api) -> Session:
    api.reset(scenario(project.repo))
    run = project.claude.run(
        "-p",
        PROMPT,
        "--output-format",
        "stream-json",
        "--verbose",
        "--max-turns",
        "12",
        "--allowedTools",
        "Read,Edit,Bash",
        cwd=project.repo,
    )
    return Session(
        run, api.messages(), captured_events(project.events), project.repo, project.claude.env, project.claude.home
    )


def first(session: Session) -> Request:
    assert session.requests, f"no main-loop request reached the mock\n{session.run.explain()}"
    return session.requests[0]


def result_of(session: Session, tool: str) -> dict:
    """The tool_result Claude Code sent back for the scenario's call of `tool`."""
    result = result_for(session.requests[-1], tool)
    assert result is not None, f"no tool_result for a {tool} call\n{session.run.explain()}"
    return result


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_gitwiki_tools_in_the_first_request(session):
    report = tools_report(first(session), EXPECTED_TOOLS)
    assert not report, f"gitwiki tools not in the first model request: {report}\n{session.run.explain()}"


def test_hook_context_in_the_first_request(session):
    """The SessionStart briefing and the prompt's wiki sections reach the model with the first request."""
    text = prompt_text(first(session))
    briefing, sections = expected_contexts(session.events, session.repo, session.env)
    assert briefing in text, f"SessionStart context not in the prompt:\n{briefing}"
    assert sections in text, f"UserPromptSubmit context not in the prompt:\n{sections}"


def test_the_hooks_are_calls_to_the_server_the_model_is_not_offered(session):
    """`hooks install` after `claude mcp add` makes the prompt, tool and stop hooks mcp_tool hooks: Claude Code
    calls the session's server for each event they match (no process each), every call answered, and `agent_hook`
    is not among the model's tools."""
    settings = json.loads((session.repo / ".claude" / "settings.json").read_text())
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop"):
        for group in settings["hooks"][event]:
            assert group["hooks"][0]["type"] == "mcp_tool" and group["hooks"][0]["tool"] == "agent_hook", event
    assert settings["hooks"]["SessionStart"][0]["hooks"][0]["type"] == "command"
    tools = re.compile(r"Read|Edit|Write|Glob|Grep|Bash|mcp__gitwiki__.*")
    matched = [
        e
        for e in session.events
        if e["hook_event_name"] in ("UserPromptSubmit", "PostToolUseFailure", "Stop")
        or (e["hook_event_name"] == "PreToolUse" and tools.fullmatch(e["tool_name"]))
        or (e["hook_event_name"] == "PostToolUse" and e["tool_name"] == "Bash")
    ]
    calls = re.findall(r"Hooks: mcp_tool calling gitwiki/agent_hook", session.run.debug)
    assert len(calls) == len(matched) >= 8, session.run.explain()
    assert "mcp__gitwiki__agent_hook" not in json.dumps(first(session)), "the hooks' tool was offered to the model"
    assert not re.search(r"Hook \w+(:\w+)? \(\w+\) error", session.run.debug), session.run.explain()


def test_ground_result_is_the_text_outline(session):
    """The model reads the ripgrep-style outline written for it, not the JSON document, and no more of it than
    `gitwiki ground` prints for the same query."""
    text = result_text(result_of(session, GROUND))
    outline = sh(["gitwiki", "ground", QUERY], session.repo, session.env)
    assert not is_json(text), f"the model was shown JSON ({len(text)} chars), not the outline:\n{text[:600]}"
    assert "wiki/deploy.md" in text
    assert len(text) <= len(outline), f"{len(text)} chars shown, `gitwiki ground` prints {len(outline)}:\n{text}"


def test_read_markdown_result_is_the_section_text(session):
    text = result_text(result_of(session, READ))
    assert "To roll back a release, run `rollback_release`" in text, f"the model was shown:\n{text[:600]}"
    assert not is_json(text), f"the model was shown JSON, not the page:\n{text[:600]}"


def test_no_permission_denial_in_print_mode(session):
    for tool in (GROUND, READ):
        result = result_of(session, tool)
        text = result_text(result)
        assert not result.get("is_error"), f"{tool} failed in print mode: {text[:500]}"
        assert "requested permissions" not in text and "haven't granted" not in text, text[:500]
    final = stream_events(session.run.stdout)[-1]
    denied = [d for d in final.get("permission_denials", []) if "gitwiki" in d.get("tool_name", "")]
    assert not denied, denied


def test_stream_json_shows_the_call_and_its_result(session):
    events = stream_events(session.run.stdout)
    calls = [
        block
        for e in events
        if e.get("type") == "assistant"
        for block in e["message"]["content"]
        if block.get("type") == "tool_use" and block.get("name") == GROUND
    ]
    assert calls, [e.get("type") for e in events]
    results = [
        block
        for e in events
        if e.get("type") == "user" and isinstance(e["message"]["content"], list)
        for block in e["message"]["content"]
        if block.get("type") == "tool_result" and block.get("tool_use_id") == calls[0]["id"]
    ]
    assert results and "wiki/deploy.md" in result_text(results[0])
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "success", events[-1]
    assert events[-1]["result"] == ANSWER


def test_server_instructions_not_truncated(session):
    cut = [line for line in session.run.debug.splitlines() if re.search(r"instructions truncated", line, re.I)]
    assert not cut, cut
    # the last request: the instructions come with the server's connection, which may follow the first one
    text = prompt_text(session.requests[-1])
    assert "gitwiki serves the markdown wiki" in text, "gitwiki's server instructions never reached the prompt"
    assert "[truncated]" not in text, paragraph(text, "[truncated]")


def test_server_ends_on_sigint(session):
    """Claude Code stops a stdio server with SIGINT and waits 100 ms before SIGTERM."""
    stops = [line for line in session.run.debug.splitlines() if "SIGINT" in line or "SIGTERM" in line]
    assert stops and not [line for line in stops if "SIGINT failed" in line], "\n".join(stops)


def test_mcp_list_shows_gitwiki_connected(project):
    out = project.claude.command("mcp", "list", cwd=project.repo)
    assert re.search(r"^gitwiki: gitwiki serve - .*Connected", out, re.M), out


def test_recorded_hook_events_match_this_claude_code(session):
    """The committed events (tests/agent_hooks/fixtures/claude_code_events) have the fields this Claude Code
    sends; GITWIKI_E2E_RECORD=1 rewrites them from this run."""
    recorded = fixture_events(session)
    if record_requested():
        write_fixtures(recorded)
    assert {"session_start", "user_prompt_submit", "stop"} <= set(recorded), sorted(recorded)
    for name, event in recorded.items():
        path = FIXTURES / f"{name}.json"
        assert path.is_file(), f"no fixture {path.name} for an event this Claude Code sends (GITWIKI_E2E_RECORD=1)"
        committed = json.loads(path.read_text())
        assert sorted(committed) == sorted(event), f"{path.name}: fields changed, re-record with GITWIKI_E2E_RECORD=1"


def record_requested() -> bool:
    return os.environ.get("GITWIKI_E2E_RECORD") == "1"


def fixture_events(session: Session) -> dict[str, dict]:
    """The first event of each kind (event, and tool for tool events), tmp paths replaced by placeholders:
    {root} the repository (as tests/agent_hooks/conftest.py's `load` expects), {home} the isolated HOME,
    {project} the repository as Claude Code names its transcript folder."""
    named: dict[str, dict] = {}
    for event in session.events:
        name = snake(event["hook_event_name"])
        if "tool_name" in event:
            name += "_" + snake(event["tool_name"].replace("__", "_"))
        if name not in named:
            text = json.dumps(event).replace(str(session.repo), "{root}").replace(str(session.home), "{home}")
            text = text.replace(re.sub(r"[^A-Za-z0-9]", "-", str(session.repo)), "{project}")  # transcript dir
            named[name] = json.loads(text)
    return named


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def write_fixtures(events: dict[str, dict]) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for old in FIXTURES.glob("*.json"):
        old.unlink()
    for name, event in events.items():
        (FIXTURES / f"{name}.json").write_text(json.dumps(event, indent=2, ensure_ascii=False) + "\n")
    (FIXTURES / "README.md").write_text(README.format(version=claude_cli.VERSION, package=claude_cli.PACKAGE))


README = """\
# Claude Code hook events

Recorded from Claude Code {version} (`{package}` from npm) by tests/e2e/test_claude_code.py with
`GITWIKI_E2E_RECORD=1`: the first event of each kind in one `claude -p` session against the mock Messages API
(a ToolSearch, gitwiki's `ground` and `read_markdown`, Read, Edit, a failing pytest run through Bash,
the answer).
Placeholders: `{{root}}` the repository, `{{home}}` the isolated HOME, `{{project}}` Claude
Code's name for the repository's transcript folder. `load("claude_code_events/NAME", root)` in
tests/agent_hooks/conftest.py reads them; the e2e test fails when this Claude Code sends other fields.
"""
