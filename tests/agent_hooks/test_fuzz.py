"""Hook events fuzzed (hypothesis): arbitrary JSON, deep nesting, huge strings, shell commands. Every hook
answers with valid hook JSON or nothing, never raises, never logs an internal error, never hangs.

GITWIKI_FUZZ_EXAMPLES sets the examples per test (docs/reliability-writes.md gives a larger run's counts)."""

from __future__ import annotations

import itertools
import json
import os
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitwiki.agent_hooks import BY_NAME, MCP_PREFIXES
from gitwiki.agent_hooks.failures import error_lines
from gitwiki.agent_hooks.permissions import READ_TOOLS, TOPICS_DRY_RUNS, TOPICS_READ_ACTIONS, WRITE_TOOLS
from gitwiki.agent_hooks.run import run
from gitwiki.agent_hooks.shell import shell_use
from tests.agent_hooks.helpers import FIXTURES, load

EXAMPLES = int(os.environ.get("GITWIKI_FUZZ_EXAMPLES", "40"))
GUARD = 30  # seconds one example may take before it counts as a hang (a generous bound, not a speed claim)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextmanager
def no_hang():
    def hung(signum, frame):
        raise AssertionError(f"no answer within {GUARD} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(GUARD)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
# Shell-like text: the programs the ambient hook reads, quotes, operators, redirections, paths of the wiki.
shell_words = st.sampled_from(
    "cat head tail sed less bat nl awk grep rg ag ack git find fd cd sudo xargs -n -e -g -C -- 20 '1,5p' "
    "src/keys.py src wiki/deploy.md ../x /etc/hostname rollback_release KeyRing | || && ; & ( ) < > >> 2>&1 "
    "<< <<< ' \" \\ $( ` \n EOF * **/*.py".split(" ")
)
arguments = st.sampled_from("src/keys.py wiki/deploy.md rollback_release KeyRing -n 20 '1,5p' src -- -e".split())
segments = st.builds(
    lambda program, words: " ".join([program, *words]),
    st.sampled_from("cat head tail sed less bat grep rg git find cd ls".split()),
    st.lists(arguments | shell_words | st.text(max_size=12), max_size=6),
)
mcp_tools = st.builds(
    lambda prefix, tool: prefix + tool, st.sampled_from(MCP_PREFIXES), st.sampled_from(READ_TOOLS + WRITE_TOOLS)
)
commands = st.lists(segments | shell_words | st.text(max_size=12), max_size=8).map(" ".join)
huge = st.integers(min_value=0, max_value=2_000_000).map(lambda n: ("error " + "x/" * 7 + "a") * (n // 16))
strings = st.text() | commands | huge


@st.composite
def events(draw, root: str):
    drawn: dict = {
        "session_id": draw(st.sampled_from(["fuzz", "", "../../etc", "a" * 300]) | st.text(max_size=20)),
        # relative ones are taken from the test's directory, the wiki: no other repository is ever touched
        "cwd": draw(st.just(root) | st.just(root + "/src") | st.text(max_size=20).map(lambda t: t.lstrip("/"))),
        "hook_event_name": draw(st.sampled_from(["PreToolUse", "PostToolUse", "PostToolUseFailure"]) | st.text()),
        "tool_name": draw(st.sampled_from(["Read", "Edit", "Write", "Glob", "Grep", "Bash"]) | mcp_tools | st.text()),
    }
    field = st.just(root + "/src/keys.py") | st.just("src/keys.py") | strings | json_values
    drawn["tool_input"] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "file_path": field,
                "command": commands | strings | json_values,
                "pattern": field,
                "content": field,
                "old_string": field,
                "new_string": field,
                # memory_topics's, for approve-mcp: the actions it knows, or any JSON where a string goes
                "action": st.sampled_from(sorted(TOPICS_READ_ACTIONS | TOPICS_DRY_RUNS)) | json_values,
                "apply": json_values,
            },
        )
        | json_values
    )
    for key in ("tool_response", "error", "prompt", "source", "is_interrupt", "stop_hook_active"):
        if draw(st.booleans()):
            drawn[key] = draw(strings | json_values | st.fixed_dictionaries({"stdout": strings, "stderr": strings}))
    return drawn


def _check(root, answer: str) -> None:
    if answer:
        parsed = json.loads(answer)
        assert isinstance(parsed, dict) and set(parsed) <= {"hookSpecificOutput", "decision", "reason"}
    log = root / ".git" / "gitwiki" / "agent-hooks.log"
    if log.exists():  # removed, so that the next examples (and hypothesis's shrinking) start clean
        logged = log.read_text()
        log.unlink()
        raise AssertionError(logged[-3000:])


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_fuzzed_events_never_fail_or_hang(wiki, data, monkeypatch):
    monkeypatch.chdir(wiki.path)
    drawn = data.draw(events(str(wiki.path)))
    hook_type = data.draw(st.sampled_from(sorted(BY_NAME)))
    with no_hang():
        answer = run(hook_type, json.dumps(drawn).encode(), str(wiki.path))
    _check(wiki.path, answer)
    event(f"{hook_type}: {'an answer' if answer else 'no answer'}")  # --hypothesis-show-statistics


@pytest.mark.slow
@FUZZ
@given(raw=st.binary(max_size=200) | st.integers(1, 200_000).map(lambda n: b'{"a": ' + b"[" * n + b"]" * n + b"}"))
def test_raw_stdin_never_fails(wiki, raw, monkeypatch):
    monkeypatch.chdir(wiki.path)
    for hook_type in ("ambient", "post-build", "prompt"):
        with no_hang():
            _check(wiki.path, run(hook_type, raw, str(wiki.path)))


@FUZZ
@given(command=commands | st.text(), cwd=st.text(max_size=10))
def test_any_command_parses(command, cwd):
    use = shell_use(command, "/" + cwd)
    assert len(use.reads) <= 3 and len(use.patterns) <= 3
    assert all(isinstance(p, str) for p in use.reads + use.patterns)


@FUZZ
@given(output=strings)
def test_any_output_gives_at_most_three_short_lines(output):
    with no_hang():
        lines = error_lines(output)
    assert len(lines) <= 3 and all(0 < len(line) <= 200 for line in lines)


SESSIONS = itertools.count()
OUTPUTS = sorted((FIXTURES / "failures").glob("*.txt"))
# A real failure output with fuzzed text spliced in, or fuzzed text alone.
build_outputs = (
    st.builds(
        lambda path, at, text: (lambda real: real[:at] + text + real[at:])(path.read_text()),
        st.sampled_from(OUTPUTS),
        st.integers(0, 3000),
        strings,
    )
    | strings
)


@pytest.mark.slow
@FUZZ
@given(command=commands, output=build_outputs, hook_type=st.sampled_from(["ambient", "post-build", "error-context"]))
def test_fuzzed_bash_calls_never_fail_or_hang(wiki, monkeypatch, command, output, hook_type):
    """Well-formed Bash events: a fuzzed command before the call, a build's fuzzed output after it or a failed
    call's fuzzed error."""
    monkeypatch.chdir(wiki.path)
    drawn = load("pre_tool_use_bash", wiki.path, session_id=f"bash-fuzz-{next(SESSIONS)}")  # nothing seen yet
    drawn["tool_input"]["command"] = command if hook_type == "ambient" else "python -m pytest -q " + command
    drawn["tool_response"] = {"stdout": output, "stderr": "", "interrupted": False}
    drawn["error"] = output
    with no_hang():
        answer = run(hook_type, json.dumps(drawn).encode(), str(wiki.path))
    _check(wiki.path, answer)
    event(f"{hook_type}: {'an answer' if answer else 'no answer'}")


@FUZZ
@given(
    tool=mcp_tools | st.text(max_size=30),
    tool_input=st.fixed_dictionaries(
        {},
        optional={
            "action": st.sampled_from(sorted(TOPICS_READ_ACTIONS | TOPICS_DRY_RUNS)) | json_values,
            "apply": json_values,
            "query": json_values,
        },
    )
    | json_values,
)
def test_fuzzed_mcp_calls_get_allow_or_nothing_from_approve_mcp(wiki, monkeypatch, tool, tool_input):
    """Any field of any type where gitwiki's MCP tools take a string (`"action": ["clean"]` was a TypeError, exit 1)."""
    monkeypatch.chdir(wiki.path)
    drawn = {"hook_event_name": "PreToolUse", "cwd": str(wiki.path), "tool_name": tool, "tool_input": tool_input}
    answer = run("approve-mcp", json.dumps(drawn).encode(), str(wiki.path))
    _check(wiki.path, answer)
    if answer:
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
