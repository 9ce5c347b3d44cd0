"""Claude Code hook latency (`gitwiki-hook TYPE`) on a generated 1,000-page wiki, against `python -c pass`.

docs/research/agent-hooks.md. Builds the wiki of bench_hooks.py in a temp git
repo plus 50 memory topics of 20 entries each (with `[source:]` lines) and a source file, indexes it
lexically, installs the hooks (`gitwiki hooks install`), then runs every hook type's installed command
once per round, interleaved with `python -c pass` so that both see the same machine load, for --runs
rounds. Each run uses a new session id, so dedup never shortens the work.
The gitwiki package is byte-compiled first, as an install would leave it: with PYTHONDONTWRITEBYTECODE set
(this sandbox sets it) every hook process would otherwise compile gitwiki's modules again, 20-40 ms.
Prints min and median wall time per hook and the median minus the `python -c pass` median.

Usage: python bench/bench_agent_hooks.py [--pages 1000] [--runs 15] [--baseline SRC]
  (SRC: an earlier gitwiki's source tree, e.g. `mkdir /tmp/main && git archive main | tar -x -C /tmp/main`)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_hooks import ENV, build

from gitwiki.agent_hooks import BY_NAME

SOURCE = '''"""The deploy queue."""


class DeployQueue:
    def retry_token(self, token):
        return token


def flush_cache(queue):
    return queue
'''
FAILED_TEST = "tests/test_queue.py::test_retry FAILED\nE   AssertionError: retry token cache expired\n1 failed"


def memory_pages(root: Path, topics: int = 50, entries: int = 20) -> None:
    words = ("deploy", "service", "cache", "token", "queue", "retry", "schema")
    for t in range(topics):
        lines = [f"# topic-{t:02d}", ""]
        for e in range(entries):
            w = words[(t + e) % len(words)]
            lines += [
                f"## 2026-01-{1 + e % 28:02d}T10:{e:02d}:00Z — gotcha: {w} needs care in topic {t}",
                "",
                f"gotcha: the {w} step of DeployQueue fails when the {words[e % 7]} is stale.",
                "[tags: gotcha]",
                f"[source: src/deploy_queue.py:{e + 1}@0000000]" if e % 5 == 0 else "[confidence: 0.8]",
                "",
            ]
        path = root / "wiki" / "memory" / f"topic-{t:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))
    (root / "wiki" / "memory" / "checkpoints").mkdir()
    (root / "wiki" / "memory" / "checkpoints" / "default.md").write_text(
        "# Checkpoint default\n\nSaved 2026-01-05T10:00:00Z.\n\n## Task\n\nretry tokens\n\n## Next\n\n- the cache\n"
    )


def events(root: Path) -> dict[str, dict]:
    base = {"transcript_path": "/tmp/t.jsonl", "cwd": str(root), "permission_mode": "default"}
    source = str(root / "src" / "deploy_queue.py")
    bash = {"command": "python -m pytest -q", "description": "Run tests"}
    return {
        "session": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "prompt": {**base, "hook_event_name": "UserPromptSubmit", "prompt": "why does the deploy queue retry fail?"},
        "ambient": {**base, "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": source}},
        "post-build": {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": bash,
            "tool_response": {"stdout": FAILED_TEST, "stderr": "", "interrupted": False},
        },
        "error-context": {
            **base,
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": bash,
            "error": "Exit code 1\n" + FAILED_TEST,
        },
        "pre-compact": {**base, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""},
        "stop": {**base, "hook_event_name": "Stop", "stop_hook_active": False},
        "subagent": {**base, "hook_event_name": "SubagentStart", "agent_id": "a1", "agent_type": "Explore"},
        "approve-mcp": {
            **base,
            "hook_event_name": "PreToolUse",
            "tool_name": "mcp__gitwiki__ground",
            "tool_input": {"query": "deploy"},
            "tool_use_id": "toolu_02",
        },
    }


def installed_commands(root: Path, bin_dir: Path) -> dict[str, list[str]]:
    """Hook type → the command `gitwiki hooks install` writes into .claude/settings.json, as Claude Code runs it.
    The program is the console scripts' folder beside this interpreter; when this checkout's `gitwiki-hook`
    is not installed there (a source checkout run with PYTHONPATH), the wrapper pip would write is made in
    `bin_dir`, with this interpreter in its shebang."""
    folder = Path(sys.executable).parent
    if not (folder / "gitwiki-hook").is_file():
        folder = bin_dir
        script(folder / "gitwiki-hook", "gitwiki.agent_hooks.__main__")
    subprocess.run(
        [sys.executable, "-m", "gitwiki", "hooks", "install", "--command", str(folder / "gitwiki")],
        cwd=root,
        check=True,
        capture_output=True,
    )
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    out = {}
    for groups in settings["hooks"].values():
        for group in groups:
            for entry in group["hooks"]:
                words = shlex.split(entry["command"])
                out[words[-1]] = words
    return out


def script(path: Path, module: str) -> None:
    """What pip writes for a [project.scripts] entry `module:main` (its distlib launcher, on POSIX)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{sys.executable}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {module} import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n"
    )
    path.chmod(0o755)


def baseline_commands(source: Path, root: Path, work: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The CLI form `gitwiki hook TYPE` of the gitwiki in `source` (a source tree, e.g. `git archive main`),
    through a `gitwiki` console script, with that tree on PYTHONPATH and its own copy of the index (so the
    two versions' caches in the index dir do not evict each other)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "gitwiki")], check=True)
    script(work / "bin" / "gitwiki", "gitwiki.cli")
    (work / "index").mkdir()
    shutil.copy(root / ".git" / "gitwiki" / "index.sqlite", work / "index" / "index.sqlite")
    env = {**os.environ, "PYTHONPATH": str(source), "GITWIKI_INDEX_DIR": str(work / "index")}
    return {name: [str(work / "bin" / "gitwiki"), "hook", name] for name in BY_NAME}, env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also time `gitwiki hook TYPE` of the gitwiki source tree SRC in the same rounds (before/after)",
    )
    args = ap.parse_args()
    package = Path(__file__).resolve().parent.parent / "gitwiki"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        root, work = Path(tmp) / "repo", Path(tmp) / "work"
        root.mkdir()
        build(root, args.pages, ENV)
        memory_pages(root)
        (root / "src").mkdir()
        (root / "src" / "deploy_queue.py").write_text(SOURCE)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "memory"], cwd=root, check=True, env=ENV)
        subprocess.run([sys.executable, "-m", "gitwiki", "index", "-q"], cwd=root, check=True)
        payloads = events(root)
        installed = installed_commands(root, work / "bin")
        commands: dict[str, tuple[list[str], dict, dict[str, str] | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], {}, None)
        }
        for name, event in payloads.items():
            commands[f"gitwiki-hook {name}"] = (installed[name], event, None)
        if args.baseline:
            before_cmds, before_env = baseline_commands(args.baseline.resolve(), root, work / "baseline")
            for name, event in payloads.items():
                commands[f"baseline: gitwiki hook {name}"] = (before_cmds[name], event, before_env)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        sizes: dict[str, int] = {}
        loads = [os.getloadavg()[0]]
        for i in range(args.runs + 1):  # the first round warms the page cache and is not counted
            for name, (cmd, event, env) in commands.items():
                data = json.dumps({**event, "session_id": f"bench-{i}"}).encode() if event else b""
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                done = subprocess.run(cmd, cwd=root, input=data, capture_output=True, env=env)
                wall = (time.perf_counter() - t) * 1000
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
                if done.returncode != 0 or done.stderr:
                    raise SystemExit(f"{name} exited {done.returncode}: {done.stderr.decode()}")
                if i:
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                sizes[name] = len(done.stdout)
            loads.append(os.getloadavg()[0])
        for log in (root / ".git" / "gitwiki" / "agent-hooks.log", work / "baseline" / "index" / "agent-hooks.log"):
            if log.exists():
                raise SystemExit(f"a hook logged an error:\n{log.read_text()}")
        floor, cpu_floor = statistics.median(walls["python -c pass"]), statistics.median(cpus["python -c pass"])
        print(
            f"{args.pages} pages + 50 memory topics, {args.runs} rounds, 1-minute load average "
            f"{min(loads):.1f}-{max(loads):.1f}; wall and CPU (user + sys) in ms\n"
        )
        print(
            "| command | wall min | wall median | CPU min | CPU median | median − python -c pass, wall / CPU | bytes |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, times in walls.items():
            med, cpu_med = statistics.median(times), statistics.median(cpus[name])
            extra = f"{med - floor:.0f} / {cpu_med - cpu_floor:.0f}" if name != "python -c pass" else "—"
            print(
                f"| {name} | {min(times):.0f} | {med:.0f} | {min(cpus[name]):.0f} | {cpu_med:.0f} | {extra} | "
                f"{sizes[name]} |"
            )


if __name__ == "__main__":
    main()
