"""The error hooks: the failure messages of the common toolchains, from their real output
(tests/agent_hooks/fixtures/failures, README there says which were captured and which hand-written), and
matching that stays linear in the output's size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gitwiki.agent_hooks.failures import BUILD_COMMAND, error_lines
from tests.agent_hooks.helpers import FIXTURES, context_of, load
from tests.helpers import ROOT

OUTPUTS = FIXTURES / "failures"

EXPECTED = {
    "pytest_q": ["AssertionError: holiday freeze not enforced on", "KeyError: 'signing'"],
    "pytest": ["AssertionError: holiday freeze not enforced on", "KeyError: 'signing'"],
    "unittest": [
        "KeyError: 'signing key cache is stale after rotation'",
        "AssertionError: != holiday freeze not enforced",
    ],
    "python_traceback": ["KeyError: 'rollback_tag'"],
    "mypy": [
        'Incompatible return value type (got "int", expected "str") [return-value]',
        'Incompatible types in assignment (expression has type "str", variable has type "int") [assignment]',
    ],
    "ruff": ["F401 `os` imported but unused"],
    "ruff_concise": ["F401 `os` imported but unused"],
    "cargo_test": [
        "holiday freeze not enforced in December",
        "assertion `left == right` failed: signing key cache is stale after rotation",
    ],
    "cargo_build": [
        "error[E0308]: mismatched types",
        "error[E0425]: cannot find function `rollback_release` in this scope",
    ],
    "tsc": [
        "error TS2322: Type 'string' is not assignable to type 'number'.",
        "error TS2322: Type 'number' is not assignable to type 'string'.",
    ],
    "tsc_pretty": [
        "error TS2322: Type 'string' is not assignable to type 'number'.",
        "error TS2322: Type 'number' is not assignable to type 'string'.",
    ],
    # jest prints a thrown Error's message alone under the test's title; `expect(received)…` is its matcher
    "jest": ["signing key cache is stale after rotation"],
    # no message: the assertion's details and the test's name
    "pytest_bare": [
        "assert False == True",
        "+ where False = rollout_window(20)",
        "test_rollout_window_closes_on_the_twentieth",
    ],
    "vitest": ["expected false to be true Object.is equality", "signing key cache is stale after rotation"],
    "npm_missing_script": ['Missing script: "build"'],
    "npm_err_legacy": ['Missing script: "build"'],
    "go_test": ["holiday freeze not enforced in December"],
    "go_build": ["undefined: rollbackRelease"],
}


def test_every_captured_output_has_its_expectation():
    assert {p.stem for p in OUTPUTS.glob("*.txt")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_failure_message_of_each_toolchain(name):
    assert error_lines((OUTPUTS / f"{name}.txt").read_text()) == EXPECTED[name]


def test_a_cut_pytest_summary_counts_when_no_e_line_is_shown():
    output = "FAILED t.py::test_freeze - AssertionError: holiday freeze n...\n1 failed in 0.1s\n"  # --tb=no
    assert error_lines(output) == ["AssertionError: holiday freeze"]


def test_output_no_toolchain_explains_gives_its_last_error_like_lines():
    output = "deploying to /srv/app at 0x7f3a\ncannot rotate: signing key cache is stale (3 entries)\nretry timed out after 30s\ndone\n"
    assert error_lines(output) == ["retry timed out after", "cannot rotate: signing key cache is stale entries)"]


@pytest.mark.parametrize(
    "command",
    ["python -m pytest -q", "python -m unittest", "cd app && npm test", "cargo build", "go test ./...", "make"],
)
def test_build_commands(command):
    assert BUILD_COMMAND.search(command)


@pytest.mark.parametrize("command", ["ls -la", "git status", "cat Makefile", "echo cargo-cult"])
def test_other_commands(command):
    assert not BUILD_COMMAND.search(command)


@pytest.fixture
def freeze_wiki(wiki, cli):
    wiki.commit(
        "freeze",
        {
            "wiki/freeze.md": "# Release freeze\n\n## Holidays\n\nThe holiday freeze is enforced by "
            "`freeze_enforced`: no deploys from Dec 20 to Jan 2.\n"
        },
    )
    assert cli("index", cwd=wiki.path)[0] == 0
    return wiki


def test_a_failing_pytest_q_gets_the_notes_on_its_assertion(freeze_wiki, hook):
    event = load("post_tool_use_bash", freeze_wiki.path)
    event["tool_response"]["stdout"] = (OUTPUTS / "pytest_q.txt").read_text()
    text = context_of(hook("post-build", event, freeze_wiki.path)[1])
    assert text.startswith("gitwiki notes on this error (AssertionError: holiday freeze not enforced on):\n")
    assert "wiki/freeze.md" in text


# One line of 10 MB with error words in it (a minified bundle, a base64 blob in an assertion): the old pattern
# rescanned word runs from every position (0.5 s at 10,000 characters, 31 s at 100,000).
HUGE = 10 * 1024 * 1024
GUARD = 60  # seconds; a generous bound on a loaded 2-core machine, not a speed claim


@pytest.mark.slow
@pytest.mark.parametrize("hook_type", ["post-build", "error-context"])
def test_ten_megabytes_on_one_line_do_not_stall_the_hook(wiki, hook_type):
    blob = "error " + "QUJD" * (HUGE // 4) + " AssertionError: signing key cache is stale " + "a" * 1000
    if hook_type == "post-build":
        event = load("post_tool_use_bash", wiki.path)
        event["tool_response"] = {"stdout": blob, "stderr": "", "interrupted": False}
    else:
        event = load("post_tool_use_failure", wiki.path, error=blob)
    done = subprocess.run(
        [sys.executable, "-m", "gitwiki.agent_hooks", hook_type],
        input=json.dumps(event).encode(),
        capture_output=True,
        cwd=wiki.path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=GUARD,
    )
    assert done.returncode == 0 and done.stderr == b""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_toolchains_failure_is_seen_without_an_exit_status(wiki, hook, name):
    """Claude Code's Bash response carries no exit status: the output itself must say the run failed (tsc's
    `error TS…` and ruff's `Found 1 error.` once did not), which puts the session in its Debug phase."""
    event = load("post_tool_use_bash", wiki.path, session_id=f"phase-{name}")
    event["tool_response"] = {"stdout": (OUTPUTS / f"{name}.txt").read_text(), "stderr": "", "interrupted": False}
    hook("post-build", event, wiki.path)
    state = json.loads((wiki.path / ".git" / "gitwiki" / "agent-sessions" / f"phase-{name}.json").read_text())
    assert state["phase"] == "Debug"
