"""`agent_hook` (gitwiki/mcp/hook_tool.py): Claude Code's `mcp_tool` hooks answered by the session's server. The same
answers and session state as `gitwiki-hook`, for the checkout the server serves only, and the arguments the hooks
install writes are the ones it takes."""

from __future__ import annotations

import json
import os
import threading

import pytest

from gitwiki import __version__
from gitwiki.agent_hooks import BY_NAME, HOOK_TOOL, HOOK_TOOL_FIELDS
from gitwiki.agent_hooks.run import run, served
from gitwiki.agent_hooks.settings import group_for
from gitwiki.agent_hooks.state import peek
from gitwiki.mcp import early, hook_event, lean
from gitwiki.serve import client as serve_client
from gitwiki.wiki import Wiki
from tests.agent_hooks.helpers import PAGES, context_of, load
from tests.agent_hooks.helpers import SESSION as HOOKS_SESSION


@pytest.fixture
def wiki(repo, cli, monkeypatch):
    monkeypatch.setenv(serve_client.NO_SERVER, "1")  # the hooks' search: their own, no socket in these tests
    repo.commit("wiki", PAGES)
    code, _, err = cli("index", cwd=repo.path)
    assert code == 0, err
    opened = Wiki.open(repo.path)
    yield opened
    opened.close()


def tools(wiki: Wiki, hooks=served) -> lean.LeanTools:
    schemas = early.early_answers(__version__)[early.HANDSHAKE]["tools/list"]["tools"]
    return lean.LeanTools(lean.tool_bodies(wiki, hooks), schemas, threading.Lock(), __version__)


def ask(tools: lean.LeanTools, arguments: dict) -> dict:
    """The tool's answer line, parsed: its result or error."""
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": HOOK_TOOL, "arguments": arguments}}
    line = tools.answer(message)
    assert line is not None
    return json.loads(line)


def answer_of(reply: dict) -> dict | None:
    text = reply["result"]["content"][0]["text"]
    return json.loads(text) if text else None


def arguments(name: str, event: dict) -> dict:
    """What Claude Code passes for the table the hooks install writes: each field's value as a string."""
    group = group_for(BY_NAME[name], server="gitwiki")
    given = group["hooks"][0]["input"]
    out = {"type": given.pop("type")}
    for key, value in given.items():
        field = value.removeprefix("${").removesuffix("}")
        raw = event.get(field, "")
        out[key] = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
    return out


def test_the_install_table_and_the_tool_name_the_same_hooks_and_fields():
    assert HOOK_TOOL == hook_event.HOOK_TOOL
    assert set(HOOK_TOOL_FIELDS) == set(hook_event.EVENTS)
    for name, fields in HOOK_TOOL_FIELDS.items():
        event, own = hook_event.EVENTS[name]
        assert BY_NAME[name].event == event
        assert fields == (*hook_event.COMMON, *own)
        entry = group_for(BY_NAME[name], server="wiki")["hooks"][0]
        assert entry == {
            "type": "mcp_tool",
            "server": "wiki",
            "tool": "agent_hook",
            "input": {"type": name, **{f: "${" + f + "}" for f in fields}},
            "timeout": 10,
        }
    assert group_for(BY_NAME["session"], server="wiki") == group_for(BY_NAME["session"])  # a command still


# The session the hooks' own tests play, its hook types this tool answers
SESSION = [(name, event) for name, event in HOOKS_SESSION if name in HOOK_TOOL_FIELDS]


def test_a_session_through_the_tool_answers_as_the_hooks_do(wiki):
    """One session through the tool, one by the hooks' own path: the same answers hook by hook (context for the
    prompt, the file, the failure; the permission; the reminder at the first stop, silence at the second) and the
    same session state."""
    served_by_tool = tools(wiki)
    answers = {}
    for session in ("tool", "hook"):
        events = [(name, load(event, wiki.root, session_id=session)) for name, event in SESSION]
        if session == "tool":
            answers[session] = [answer_of(ask(served_by_tool, arguments(n, e))) for n, e in events]
        else:
            answers[session] = [json.loads(run(n, json.dumps(e).encode(), str(wiki.root)) or "null") for n, e in events]
    assert answers["tool"] == answers["hook"]
    said = dict(zip((f"{n}:{e}" for n, e in SESSION), answers["tool"], strict=False))
    assert "wiki/deploy.md:3-5" in context_of(said["prompt:user_prompt_submit"])
    assert said["approve-mcp:pre_tool_use_mcp"]["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert sum(a is not None for a in answers["tool"]) >= 6
    assert answers["tool"][-2]["decision"] == "block" and "src/keys.py" in answers["tool"][-2]["reason"]
    assert answers["tool"][-1] is None
    states = {s: peek(wiki.index_dir, s) for s in answers}
    for key in ("injected", "focus", "phase", "edited", "reminded"):
        assert states["tool"][key] == states["hook"][key], key


def test_a_stop_that_is_already_continuing_says_nothing(wiki):
    served_by_tool = tools(wiki)
    edit = load("pre_tool_use_edit", wiki.root, session_id="s")
    assert ask(served_by_tool, arguments("ambient", edit))["result"]["isError"] is False
    again = load("stop", wiki.root, session_id="s", stop_hook_active=True)
    assert answer_of(ask(served_by_tool, arguments("stop", again))) is None
    assert answer_of(ask(served_by_tool, arguments("stop", load("stop", wiki.root, session_id="s")))) is not None


def test_the_plugins_command_and_the_settings_mcp_tool_answer_an_event_once(wiki):
    """The plugin's prompt hook (a command, the event's bytes) and the settings' (a call of this tool) both get
    each prompt: the second to answer stays silent, as between two command copies."""
    prompt = load("user_prompt_submit", wiki.root, session_id="both", cwd=str(wiki.root / "wiki"))
    assert "wiki/deploy.md:3-5" in context_of(json.loads(run("prompt", json.dumps(prompt).encode(), str(wiki.root))))
    assert answer_of(ask(tools(wiki), arguments("prompt", prompt))) is None
    later = load("user_prompt_submit", wiki.root, session_id="both", prompt="How is the signing key cache flushed?")
    assert answer_of(ask(tools(wiki), arguments("prompt", later))) is not None
    assert run("prompt", json.dumps(later).encode(), str(wiki.root)) == ""


def test_a_server_without_hook_code_says_nothing(wiki):
    reply = ask(tools(wiki, None), arguments("prompt", load("user_prompt_submit", wiki.root)))
    assert reply["result"]["content"][0]["text"] == "" and reply["result"]["isError"] is False


@pytest.mark.parametrize("where", ["/", "..", "{root}/../elsewhere", "{root}\0x", "{link}"])
def test_a_directory_outside_the_checkout_is_refused_and_runs_nothing(wiki, tmp_path, where):
    ran: list[str] = []
    link = wiki.root / "out"
    link.symlink_to(tmp_path, target_is_directory=True)
    given = {"type": "prompt", "prompt": "roll back", "cwd": where.format(root=wiki.root, link=link)}
    reply = ask(tools(wiki, lambda name, raw, cwd: ran.append(name) or ""), given)
    assert reply["error"]["code"] == -32602 and "agent_hook answers for" in reply["error"]["message"]
    assert ran == []


def test_a_folder_of_the_checkout_is_its_cwd(wiki):
    seen = []
    given = {"type": "prompt", "prompt": "roll back", "cwd": str(wiki.root / "wiki")}
    ask(tools(wiki, lambda name, raw, cwd: seen.append((name, json.loads(raw), cwd)) or ""), given)
    [(name, event, cwd)] = seen
    assert name == "prompt" and cwd == os.path.realpath(wiki.root / "wiki")
    assert event == {
        "session_id": "",
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "roll back",
    }
