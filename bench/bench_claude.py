"""`claude -p` with and without gitwiki: wall time, and whether gitwiki's tools are in the first request.

The real Claude Code CLI (the e2e suite's pinned version, installed from npm into its cache) answers one
prompt against the e2e suite's mock Messages API (a one-turn text answer), in set-ups of the same small wiki:

  plain   no gitwiki hooks, no MCP server
  hooks   `gitwiki hooks install`
  mcp     `claude mcp add gitwiki -- gitwiki serve`
  full    both, the documented set-up: `claude mcp add`, then `hooks install --via mcp` (a gitwiki before it:
          plain `hooks install`)
  nullhooks  hooks on the same events whose command is `true`: what Claude Code spends around a hook of its own
  nullmcp    an MCP server answering what a bridge answers (gitwiki's initialize, tool and other lists, from a
             file) in a `python -S` process: what Claude Code spends on an MCP server with gitwiki's tools

Runs are interleaved (each round runs every set-up, in a rotating order) so that all see the same load.
Prints per set-up the min and median wall, the median minus plain's, the median CPU (Claude Code and the hooks and
server it waits for; not a detached owner), and for set-ups with the MCP server the
runs whose FIRST model request already offered gitwiki's tools; the 1-minute load average before and after.
`--busy N` keeps N busy CPU loops running for the whole measurement (the target: tools in the first
request in 20 of 20 runs with 4 loops on 2 cores).

`--base DIR` adds each set-up but plain again as NAME@base, its hooks and server the gitwiki checkout at DIR (say
main's), interleaved in the same rounds. `--venv` adds them again as NAME@venv (and with `--base`, NAME@base@venv),
gitwiki run by the interpreter of a fresh `python -m venv` (no system site packages), as pipx and `uv tool` install
it: its start runs only the venv's `.pth` files, not those of this interpreter's site-packages (a sandbox's among
them; see make_venv). `--floors` times
(wall and CPU), in each round, `python -c pass` and `python -S -c pass` (the interpreter every hook and server
starts) and each hook a one-turn `claude -p` runs (SessionStart, UserPromptSubmit, Stop), fed the events Claude
Code sends, in the hooks set-up's repository (and in NAME@base's and NAME@venv's).

Usage: python bench/bench_claude.py [--runs 20] [--busy 0] [--setups plain,full] [--base DIR] [--venv] [--floors]
    [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e import claude_cli  # noqa: E402
from tests.e2e.harness import EXPECTED_TOOLS, PROMPT, Claude, make_wiki, sh, tools_report  # noqa: E402
from tests.e2e.mock_api import MockAnthropic, Turn  # noqa: E402

SETUPS = ("plain", "hooks", "mcp", "full", "nullhooks", "nullmcp")
FLOORS = ("nullhooks", "nullmcp")  # run once, not again as NAME@base or NAME@venv

# nullmcp's server: the answers by method, the initialize's protocol version echoed.
REPLAY = """import json, sys
answers = json.load(open(sys.argv[1]))
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = dict(answers["initialize"], protocolVersion=message["params"]["protocolVersion"])
    else:
        result = answers["lists"].get(method, {})
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""


def prepare(
    name: str,
    base: Path,
    binary: Path,
    url: str,
    kind: str | None = None,
    code: str | None = None,
    bin_dir: Path | None = None,
) -> tuple[Claude, Path]:
    """Set-up `kind` (by default `name`, one of SETUPS) in base/name; `code`: another checkout's gitwiki; `bin_dir`:
    where `gitwiki` and `gitwiki-hook` are found first (a venv's, from make_venv)."""
    kind = kind or name
    claude = Claude(binary, base / name / "home", url)
    if code is not None:
        claude.env["PYTHONPATH"] = code
    if bin_dir is not None:
        claude.env["PATH"] = os.pathsep.join([str(bin_dir), claude.env["PATH"]])
    repo = make_wiki(base / name / "repo", claude.env)
    if kind in ("mcp", "full"):
        claude.command("mcp", "add", "gitwiki", "--", "gitwiki", "serve", cwd=repo)
    if kind in ("hooks", "full"):
        # with the server, as docs/agent-hooks.md sets it up: the hooks calls to it (a gitwiki before --via: processes)
        via = (
            ["--via", "mcp"]
            if kind == "full" and "--via" in sh(["gitwiki", "hooks", "--help"], repo, claude.env)
            else []
        )
        sh(["gitwiki", "hooks", "install", *via], repo, claude.env)
    if kind == "nullmcp":
        from gitwiki import __version__
        from gitwiki.mcp import early

        started = early._answer(  # what a bridge answers to Claude Code's initialize
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "0"},
                    },
                }
            ).encode(),
            __version__,
        )
        assert started is not None
        answers = {"initialize": started["result"], "lists": early.early_answers(__version__)[early.HANDSHAKE]}
        (base / name / "answers.json").write_text(json.dumps(answers))
        (base / name / "replay.py").write_text(REPLAY)
        server = [sys.executable, "-S", str(base / name / "replay.py"), str(base / name / "answers.json")]
        claude.command("mcp", "add", "gitwiki", "--", *server, cwd=repo)
    if kind == "nullhooks":
        from gitwiki.agent_hooks.settings import hooks_table

        table = hooks_table()
        for groups in table.values():
            for group in groups:
                group["hooks"] = [{**hook, "command": "true"} for hook in group["hooks"]]
        (repo / ".claude").mkdir(exist_ok=True)
        (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": table}, indent=2) + "\n")
    return claude, repo


def make_venv(where: Path) -> Path:
    """A fresh venv, its bin dir returned: `python -m venv --without-pip` (pipx and `uv tool` make theirs without
    pip too), no system site packages, and gitwiki's two commands as pip writes them. gitwiki comes from PYTHONPATH,
    as in every set-up; its dependencies, installed in this interpreter's site-packages, from a path line in a `.pth`
    file: the folder goes on sys.path as if they were installed in the venv, and its own `.pth` files are not run
    (they are what a venv leaves out: here a sandbox's, which imports certifi at every interpreter start)."""
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    found = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    )
    Path(found.stdout.strip(), "gitwiki-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    for name in ("gitwiki", "gitwiki-hook"):  # plain scripts (pyproject's shared-scripts), as pip installs them
        script = where / "bin" / name
        script.write_text(f"#!{python}" + (ROOT / "scripts" / name).read_text().removeprefix("#!python"))
        script.chmod(0o755)
    return where / "bin"


@dataclass
class Rounds:
    """What interleaved rounds of `claude -p` measured, per set-up."""

    walls: dict[str, list[float]]
    first_has_tools: dict[str, int]
    load_before: float
    load_after: float
    floors: dict[str, list[float]] | None = None
    cpu: dict[str, list[float]] | None = None  # CPU seconds of each run: Claude Code, its hooks and MCP server


# The hooks one `claude -p` with a text-only answer runs, one process each (no tool call: no PreToolUse).
ONE_TURN_HOOKS = (
    ("session", {"hook_event_name": "SessionStart", "source": "startup"}),
    ("prompt", {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}),
    ("stop", {"hook_event_name": "Stop", "stop_hook_active": False}),
)


def floors(claude: Claude, repo: Path, round_: int, python: str = sys.executable) -> dict[str, float]:
    """Seconds of `python -c pass`, `python -S -c pass` and each of ONE_TURN_HOOKS' `gitwiki-hook` processes (a
    session of their own per round, as each `claude -p` is), in `repo` with `claude`'s environment."""
    import time

    event = {"session_id": f"floors-{round_}", "transcript_path": "", "cwd": str(repo), "permission_mode": "default"}
    runs = {
        "python -c pass": ([python, "-c", "pass"], b""),
        "python -S -c pass": ([python, "-S", "-c", "pass"], b""),
        **{
            f"gitwiki-hook {name}": (["gitwiki-hook", name], json.dumps({**event, **fields}).encode())
            for name, fields in ONE_TURN_HOOKS
        },
    }
    out = {}
    for name, (command, stdin) in runs.items():
        started, spent = time.perf_counter(), _children_cpu()
        subprocess.run(command, input=stdin, capture_output=True, cwd=repo, env=claude.env, check=True)
        out[name] = time.perf_counter() - started
        out[f"{name}, CPU"] = _children_cpu() - spent  # what the load does not stretch
    return out


def measure(
    setups: dict[str, tuple[Claude, Path]],
    api: MockAnthropic,
    runs: int,
    busy: int,
    before_run: Callable[[str], None] | None = None,
    floors_in: tuple[str, ...] = (),
) -> Rounds:
    """`runs` rounds, each running every set-up once in a rotating order, with `busy` CPU loops meanwhile;
    `before_run(name)` is called (untimed) before each run; `floors_in`: the set-ups whose repositories `floors`
    are timed in, once a round (the figures of KIND@base named NAME@base; of KIND@venv, with the venv's python,
    NAME@venv)."""
    names = list(setups)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    floor_times: dict[str, list[float]] = {}
    first_has_tools: dict[str, int] = dict.fromkeys(names, 0)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        load_before = os.getloadavg()[0]
        for i in range(runs):
            for where in floors_in:
                suffix = where[where.index("@") :] if "@" in where else ""
                claude, repo = setups[where]
                python = shutil.which("python", path=claude.env["PATH"]) if suffix.endswith("@venv") else sys.executable
                for name, seconds in floors(claude, repo, i, python or sys.executable).items():
                    if not suffix.startswith("@base") or name.startswith("gitwiki-hook"):
                        floor_times.setdefault(name + suffix, []).append(seconds)
            for n in names[i % len(names) :] + names[: i % len(names)]:
                claude, repo = setups[n]
                if before_run is not None:
                    before_run(n)
                api.reset([Turn(text="done")])
                spent = _children_cpu()
                run = claude.run("-p", PROMPT, cwd=repo, debug_log=False)
                walls[n].append(run.seconds)
                # the processes Claude Code waited for (not a detached owner: that one is shared by sessions)
                cpu[n].append(_children_cpu() - spent)
                requests = api.messages()
                if requests and not tools_report(requests[0], EXPECTED_TOOLS):
                    first_has_tools[n] += 1
        load_after = os.getloadavg()[0]
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return Rounds(walls, first_has_tools, load_before, load_after, floor_times or None, cpu)


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="rounds; each runs every set-up once")
    ap.add_argument("--busy", type=int, default=0, help="busy CPU loops running meanwhile")
    ap.add_argument("--setups", default="plain,full", help=f"comma-separated, from {','.join(SETUPS)}")
    ap.add_argument("--base", type=Path, help="another gitwiki checkout: its set-ups run as NAME@base beside")
    ap.add_argument(
        "--venv", action="store_true", help="the set-ups again with gitwiki run from a fresh venv, as NAME@venv"
    )
    ap.add_argument("--floors", action="store_true", help="time python's start and each one-turn hook per round")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    names = args.setups.split(",")
    if unknown := set(names) - set(SETUPS):
        ap.error(f"unknown set-ups: {sorted(unknown)}")
    if args.floors and not {"hooks", "full"} & set(names):
        ap.error("--floors times the hooks in the hooks or full set-up: name one")
    binary = claude_cli.ensure()
    base = Path(tempfile.mkdtemp(prefix="gitwiki-bench-claude-"))
    try:
        with MockAnthropic([Turn(text="done")]) as api:
            setups = {n: prepare(n, base, binary, api.url) for n in names}
            if args.base is not None:
                code = str(args.base.resolve())
                for n in [n for n in names if n not in ("plain", *FLOORS)]:
                    setups[f"{n}@base"] = prepare(f"{n}@base", base, binary, api.url, n, code)
            if args.venv:
                bin_dir = make_venv(base / "venv")
                for n in [n for n in names if n not in ("plain", *FLOORS)]:
                    setups[f"{n}@venv"] = prepare(f"{n}@venv", base, binary, api.url, n, bin_dir=bin_dir)
                    if args.base is not None:  # the base checkout's code run by the venv's interpreter too
                        code = str(args.base.resolve())
                        setups[f"{n}@base@venv"] = prepare(f"{n}@base@venv", base, binary, api.url, n, code, bin_dir)
            kind = "hooks" if "hooks" in names else "full"
            others = [f"{kind}@base"] * (args.base is not None) + [f"{kind}@venv"] * args.venv
            others += [f"{kind}@base@venv"] * (args.base is not None and args.venv)
            floors_in = (kind, *others) if args.floors else ()
            try:
                rounds = measure(setups, api, args.runs, args.busy, floors_in=floors_in)
            finally:  # the owners the sessions started outlive them ([mcp] idle_timeout): not the repos' removal
                for claude, repo in setups.values():
                    subprocess.run(["gitwiki", "serve", "--stop"], cwd=repo, env=claude.env, capture_output=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    walls, first_has_tools = rounds.walls, rounds.first_has_tools
    load_before, load_after = rounds.load_before, rounds.load_after
    plain = statistics.median(walls["plain"]) if "plain" in walls else None
    figures = {
        "claude_code": claude_cli.VERSION,
        "runs": args.runs,
        "busy_loops": args.busy,
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
        "setups": {
            n: {
                "min_s": round(min(w), 3),
                "median_s": round(statistics.median(w), 3),
                "minus_plain_s": None if plain is None else round(statistics.median(w) - plain, 3),
                "first_request_has_tools": first_has_tools[n]
                if n.split("@")[0] in ("mcp", "full", "nullmcp")
                else None,
                "cpu_median_s": round(statistics.median(rounds.cpu[n]), 3) if rounds.cpu else None,
            }
            for n, w in walls.items()
        },
        "floors": {
            n: {"min_ms": round(min(t) * 1000, 1), "median_ms": round(statistics.median(t) * 1000, 1)}
            for n, t in (rounds.floors or {}).items()
        },
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"claude code {claude_cli.VERSION}, {args.runs} interleaved rounds, {args.busy} busy loops, "
        f"load {load_before:.1f} -> {load_after:.1f}"
    )
    for n, f in figures["setups"].items():
        delta = "" if f["minus_plain_s"] is None else f"  median - plain {f['minus_plain_s']:+.2f} s"
        tools = (
            ""
            if f["first_request_has_tools"] is None
            else f"  tools in 1st request {f['first_request_has_tools']}/{args.runs}"
        )
        cpu = f"  CPU {f['cpu_median_s']:.2f} s" if f["cpu_median_s"] is not None else ""
        print(f"  {n:11} min {f['min_s']:.2f} s  median {f['median_s']:.2f} s{delta}{cpu}{tools}")
    for n, f in figures["floors"].items():
        print(f"  {n:22} min {f['min_ms']:.1f} ms  median {f['median_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
