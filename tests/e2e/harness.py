"""Driving the real Claude Code CLI against the mock Messages API, in a wiki repo set up as the docs say.

Everything runs in subprocesses with an explicit environment (an isolated HOME, the worktree's gitwiki first
on PATH and PYTHONPATH), so module-scoped fixtures do not depend on the per-test environment conftest.py sets.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.claude_cli import cache_dir
from tests.helpers import GIT_ENV, MODEL_DIR, MODEL_NAME, ROOT

RUN_TIMEOUT = 120  # one `claude -p` run: ~2-4 s here, but a loaded host stretches it
SETUP_TIMEOUT = 120

PROMPT = "How do we roll back a release?"
QUERY = "roll back a release"  # what the scenario asks gitwiki's ground tool

# A sample of gitwiki's tools (search, reading, memory) that must be offered from the first turn; the plugin's
# server is named `plugin_gitwiki_gitwiki` instead of `gitwiki`.
TOOL_SAMPLE = ("ground", "read_markdown", "outline_markdown", "read_many", "list_corpora", "memory_search")
EXPECTED_TOOLS = {f"mcp__gitwiki__{name}" for name in TOOL_SAMPLE}
PLUGIN_TOOLS = {f"mcp__plugin_gitwiki_gitwiki__{name}" for name in TOOL_SAMPLE}

# A small wiki: the rollback page the prompt is about, pages it should not pick, a memory topic, and a code
# file with a failing test for the tool calls the scenario makes.
PAGES = {
    "wiki/index.md": "# Wiki\n\nHow this service is built, shipped and operated.\n",
    "wiki/deploy.md": (
        "# Deploy\n\n## Release\n\nTag the commit and run `ship_release`.\n\n"
        "## Rollback\n\nTo roll back a release, run `rollback_release` with the previous tag.\n"
    ),
    "wiki/keys.md": "# Keys\n\n## Rotation\n\nSigning keys rotate every month; old ones stay valid a week.\n",
    "wiki/memory/release.md": (
        "# release\n\n## 2026-01-02T10:00:00Z — gotcha: rollback needs the previous tag\n\n"
        "gotcha: `rollback_release` without a tag rolls back to the first release.\n"
        "[tags: gotcha]\n[source: src/release.py:1]\n"
    ),
    "src/release.py": "def rollback_release(tag):\n    return tag\n",
    "test_release.py": (
        "from src.release import rollback_release\n\n\n"
        "def test_rollback_keeps_the_tag():\n"
        '    assert rollback_release("v2") == "v1", "rollback_release kept the old tag"\n'
    ),
}

# Every hook event this Claude Code version knows, for the capture hook.
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Stop",
    "SessionEnd",
)


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    debug: str  # the --debug-file log
    seconds: float

    def explain(self) -> str:
        """For assertion messages: how the CLI ended and the log lines that mention gitwiki or MCP."""
        lines = [line for line in self.debug.splitlines() if "gitwiki" in line or "MCP" in line]
        return (
            f"claude {' '.join(self.args)} -> exit {self.returncode} in {self.seconds:.1f} s\n"
            f"stderr: {self.stderr[-1500:]}\ndebug (gitwiki/MCP lines):\n" + "\n".join(lines[-40:])
        )


class Claude:
    """The CLI with an isolated HOME and the mock API's URL; `run()` keeps a debug log per call."""

    def __init__(self, binary: Path, home: Path, api_url: str):
        self.binary = binary
        self.home = home
        self.logs = home / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        (home / "tmp").mkdir(exist_ok=True)
        self.env = environment(home)
        self.env |= {"ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "test"}
        self._runs = 0

    def run(
        self, *args: str, cwd: Path, timeout: float = RUN_TIMEOUT, check: bool = True, debug_log: bool = True
    ) -> Run:
        """`claude ARGS` in `cwd`; with `debug_log` (the default) its --debug-file log is kept for diagnostics."""
        self._runs += 1
        debug = self.logs / f"debug-{self._runs}.log"
        argv = [str(self.binary), *args, *(["--debug-file", str(debug)] if debug_log else [])]
        started = time.monotonic()
        # Its own process group, so that a run past the timeout is ended with the MCP servers and hooks it started.
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            stderr += f"\n(killed after the {timeout} s timeout)"
        run = Run(
            list(args),
            proc.returncode,
            stdout,
            stderr,
            debug.read_text(errors="replace") if debug.exists() else "",
            time.monotonic() - started,
        )
        if check:
            assert run.returncode == 0, run.explain()
        return run

    def command(self, *args: str, cwd: Path, timeout: float = SETUP_TIMEOUT) -> str:
        """A management command (`mcp add`, `plugin install`, `mcp list`): no debug log, must succeed."""
        done = subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"claude {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done.stdout


@dataclass
class Project:
    claude: Claude
    repo: Path
    events: Path  # where the capture hook writes


def documented_setup(base: Path, binary: Path, api_url: str, capture: bool) -> Project:
    """`gitwiki init`, `gitwiki index`, `claude mcp add gitwiki -- gitwiki serve`, `gitwiki hooks install --via mcp`
    (the hooks calls to that server); with `capture`, the capture hook on every event too (user settings, answering
    nothing). The plugin's suite has the hooks as processes."""
    claude = Claude(binary, base / "home", api_url)
    repo = make_wiki(base / "repo", claude.env)
    claude.command("mcp", "add", "gitwiki", "--", "gitwiki", "serve", cwd=repo)
    sh(["gitwiki", "hooks", "install", "--via", "mcp"], repo, claude.env)
    if capture:
        install_capture_hook(claude.home, base / "events")
    return Project(claude, repo, base / "events")


def environment(home: Path) -> dict[str, str]:
    """The process environment for gitwiki and Claude Code: no settings, caches or credentials of the user
    running the tests, no variables of an enclosing Claude Code session, and this checkout's gitwiki."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "XDG_", "GITWIKI_"))
        and k not in ("PYTHONPATH", "HOME", "PYTHONDONTWRITEBYTECODE")
    }
    # The interpreter's own bin dir first, so `gitwiki` and `gitwiki-hook` are the commands installed for the
    # Python running the tests (not a pyenv shim or another install), importing this checkout via PYTHONPATH.
    path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env |= {
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),  # Claude Code's session notes and sockets, otherwise left in /tmp
        "PATH": path,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        # Byte-compiled like an installed gitwiki (a sandbox's PYTHONDONTWRITEBYTECODE would make every hook and
        # server start compile gitwiki again), with the bytecode kept out of the checkout.
        "PYTHONPYCACHEPREFIX": str(cache_dir() / "pycache"),
        "HF_HUB_OFFLINE": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        # 2.1.332 cuts an MCP server's instructions and tool descriptions at 4,096 characters, other 2.1 versions
        # at 2,048 ("Server instructions truncated from 2197 to 2048 chars"): hold gitwiki to the stricter limit.
        "CLAUDE_CODE_MAX_MCP_DESCRIPTION_LENGTH": "2048",
        **GIT_ENV,
    }
    if MODEL_DIR is not None:
        env |= {"GITWIKI_MODEL_PATH": str(MODEL_DIR), "GITWIKI_MODEL": MODEL_NAME}
    return env


def sh(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = SETUP_TIMEOUT) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(argv)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


# Every wiki made, with its environment: the owner a session starts there outlives the session by design
# ([mcp] idle_timeout), so the suite stops it when the module ends (conftest.py's `stop_owners`).
MADE: list[tuple[Path, dict[str, str]]] = []


def make_wiki(path: Path, env: dict[str, str]) -> Path:
    """A git repo with PAGES committed, `gitwiki init` and `gitwiki index` run: the docs' first two steps."""
    path.mkdir(parents=True)
    MADE.append((path, env))
    sh(["git", "init", "-q", "-b", "main"], path, env)
    for rel, text in PAGES.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text, encoding="utf-8")
    sh(["git", "add", "-A"], path, env)
    sh(["git", "commit", "-q", "-m", "wiki"], path, env)
    sh(["gitwiki", "init"], path, env)
    sh(["gitwiki", "index"], path, env)
    return path


def install_capture_hook(home: Path, events_dir: Path) -> None:
    """A user-settings hook on every event that keeps the event JSON it receives (one file per call, named by
    time so the order survives) and answers nothing."""
    events_dir.mkdir(parents=True, exist_ok=True)
    script = home / "capture-hook.sh"
    script.write_text(f'#!/bin/sh\ncat > "{events_dir}/$(date +%s%N)-$$.json"\n')
    script.chmod(0o755)
    settings_path = home / ".claude" / "settings.json"
    settings_path.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    group = {"hooks": [{"type": "command", "command": str(script), "timeout": 10}]}
    settings["hooks"] = {event: [group] for event in HOOK_EVENTS}
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")


def captured_events(events_dir: Path) -> list[dict]:
    """The events the capture hook kept, oldest first; emptied so the next run starts fresh."""
    events = []
    for path in sorted(events_dir.glob("*.json"), key=lambda p: int(p.name.split("-")[0])):
        events.append(json.loads(path.read_text()))
        path.unlink()
    return events


def hook_context(hook_type: str, event: dict, cwd: Path, env: dict[str, str]) -> str:
    """What `gitwiki-hook TYPE` adds to the context for this event (empty when it answers nothing)."""
    done = subprocess.run(
        ["gitwiki-hook", hook_type],
        input=json.dumps(event),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return ""
    return json.loads(done.stdout).get("hookSpecificOutput", {}).get("additionalContext", "")


def stream_events(stdout: str) -> list[dict]:
    """`--output-format stream-json`: one JSON object per line."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def paragraph(text: str, needle: str) -> str:
    """The paragraph of `text` around `needle` (empty when absent), for assertion messages."""
    at = text.find(needle)
    if at < 0:
        return ""
    start = text.rfind("\n\n", 0, at) + 2
    end = text.find("\n\n", at)
    return text[start : end if end >= 0 else None]


def tools_report(body: dict, expected: set[str]) -> str:
    """Empty when every expected tool is offered in this request; else what is missing and what the prompt
    says instead (Claude Code names MCP servers that are 'still connecting')."""
    from tests.e2e.mock_api import prompt_text, tool_names, visible_tools

    missing = expected - visible_tools(body)
    if not missing:
        return ""
    waiting = paragraph(prompt_text(body), "still connecting")
    return f"missing {sorted(missing)}; request tools {tool_names(body)}; prompt says {waiting!r}"


def expected_contexts(events: list[dict], repo: Path, env: dict[str, str]) -> tuple[str, str]:
    """The SessionStart briefing and the prompt's sections `gitwiki-hook` gives for the recorded events,
    replayed under a fresh session id, whose state the recorded session's later calls have not touched."""
    by_name = {e["hook_event_name"]: e for e in reversed(events)}  # the first of each
    fresh = {"session_id": f"e2e-replay-{uuid.uuid4()}"}
    briefing = hook_context("session", {**by_name["SessionStart"], **fresh}, repo, env)
    sections = hook_context("prompt", {**by_name["UserPromptSubmit"], **fresh}, repo, env)
    assert "corpus wiki" in briefing and "wiki/deploy.md" in sections, (briefing, sections)
    return briefing, sections
