"""What every agent session pays for gitwiki, measured from outside: spawn, memory, warm calls, `claude -p`.

Black-box: it spawns `gitwiki serve` as an MCP client does (in the repository, the console script, a raw JSON-RPC
client over stdio: `initialize`, then `tools/call`) and reads /proc, so the same script measures any checkout's
gitwiki with no change (--base DIR runs that checkout's code through PYTHONPATH). The wiki is the first 1,000
English tldr pages, bench_mcp.py's repo and index (indexed beforehand with the offline MiniLM model). In
interleaved rounds (the order of the variants rotating per round):

  spawn → first search   from the spawn to the answer of the first `ground` (its default mode, hybrid), sent once
                         `initialize` is answered: with no session of the checkout running ("no owner"), and while
                         another session of the same checkout is up and has answered a search ("owner up"); beside
                         with no owner, a first `ground` in lexical mode too (the kind of search qmd's `lex` query
                         is; the owner still loads the model beside it); beside
                         the floors, spawned in the same rounds: `python -c` echoing a line, the MCP SDK's no-op
                         server (`initialize` + its tool), and qmd's server (`initialize` + a BM25 `query`)
  RSS                    VmRSS (/proc/PID/status) summed over every process of a session: its process tree, and
                         any process carrying this run's tag in its environment (an owner that left the session's
                         tree), read 0.5 s after the last answer: five sessions of the one repository started
                         one after another, each once the one before has answered its first search (the first
                         alone: "one session"; each later one's own tree: "a later session's own"; all five),
                         qmd's server and launcher, the SDK's no-op server and the echo; for one and five
                         sessions also PSS (/proc/PID/smaps_rollup: each page shared by n processes counted 1/n,
                         so the interpreter's and libraries' file pages the bridges share with the owner count once)
  a bridge's start       the CPU (user + system, from the kernel's accounting of the reaped process) of a later
                         session's whole life when a client sends `initialize` and `tools/list` and ends its input,
                         while an owner is up (a first session held open): what a `claude -p` pays for gitwiki's
                         MCP server when no tool is called; beside `python -c pass`'s CPU, spawned in the same rounds
                         (--bridge-rounds)
  warm p50               lexical and hybrid `ground` over the first session and over a second one of the same
                         checkout, interleaved question by question with qmd's lexical `query` and the SDK's no-op;
                         each question is asked in every round by both sessions, so most calls find the owner's
                         kept query vector: the p50 of each question's first ask (per mode) is reported too.
                         qmd's `lex` search ANDs every word of the question, so for most tldr questions it answers
                         "No results found" (61 bytes of text against gitwiki's five pages, 2.4 KB): the warm
                         lexical p50 of both is also given over only the questions qmd finds pages for
  claude -p              bench_claude.py's rounds (Claude Code against the mock Messages API): plain, full (hooks +
                         MCP server) with no owner, and full while a `gitwiki serve` of that repository is up; quiet
                         and with --busy `python -c 'while 1: pass'` loops

"no owner" is made sure of: between variants every session is closed and, when `gitwiki serve --help` offers
`--stop`, the checkout's owner is stopped with it; gitwiki processes left with this run's tag in that checkout are
waited for (and ended by pid after 15 s, counted in the output). The load average is recorded around each part.
docs/research/sessions.md has the figures of a run and how to install qmd with node 22 from npm.

qmd (npm `@tobilu/qmd`, node >= 22): --qmd PATH/TO/qmd and, when the node on PATH is older, --qmd-node PATH/TO/node;
it gets its own HOME (--qmd-home, by default under GITWIKI_BENCH_WORK), where the wiki's pages are added as the
collection `wiki` on the first run. Offline its expansion, vector and rerank models cannot be downloaded, so its
query is one `lex` search with `rerank: false`: BM25 against BM25.

    python bench/bench_sessions.py [--rounds 5] [--bridge-rounds 15] [--warm-rounds 2] [--claude-rounds 5] [--busy 2]
        [--base DIR] [--qmd QMD [--qmd-node NODE]] [--parts spawn,bridge,warm,claude] [--venv] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_index import questions, tldr_pages
from bench_mcp import NOOP_SERVER
from benchlib import ROOT, WORK, compiled, corpus_config, open_wiki, timed_index, use_offline_model, write_repo

QUERY = "list files in a directory"
TAG = "SESSBENCH_RUN"  # no GITWIKI_ prefix: the environment the server compares stays the user's
REPLY_TIMEOUT = 120.0
ECHO = "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush(); sys.stdin.read()"
PARTS = ("spawn", "bridge", "warm", "claude")
SETTLE = 0.5  # seconds between the last answer and reading RSS: background warm-up finishing
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_sessions", "version": "1"}}


# ---- a raw JSON-RPC client over a spawned process's stdio


class Session:
    """One spawned MCP server, spoken to line by line; `started` is taken just before the spawn."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.command = command
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._buffer = b""
        self._id = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def since_spawn(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def readline(self, timeout: float = REPLY_TIMEOUT) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise SystemExit(f"{self.command}: no answer within {timeout:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SystemExit(f"{self.command}: closed stdout (exit {self.process.poll()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, dict[str, Any]]:
        """(ms from sending to the answer, the result); notifications and other ids in between are skipped."""
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            message["params"] = params
        sent = time.perf_counter()
        self.send(message)
        while True:
            answer = json.loads(self.readline())
            if answer.get("id") == self._id:
                break
        elapsed = (time.perf_counter() - sent) * 1000
        if "error" in answer:
            raise SystemExit(f"{self.command} {method}: {answer['error']}")
        return elapsed, answer["result"]

    def initialize(self) -> float:
        """ms from the spawn to the answer of `initialize` (notifications/initialized sent after it)."""
        self.request("initialize", HELLO)
        ms = self.since_spawn()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return ms

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, str]:
        """(ms, the answer's text) of one tools/call."""
        ms, result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{self.command} {tool}: {result.get('content')}")
        content = result.get("content") or [{}]
        return ms, str(content[0].get("text", ""))

    def close(self, wait: float = 5.0) -> None:
        """Close its stdin (how a client ends a stdio session) and give it `wait` s to exit; gitwiki's are
        closed with no wait and left to `Bench.settle` (an owner may linger on purpose)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        if self.process.stdout is not None:
            self.process.stdout.close()


def cpu_ms(command: list[str], env: dict[str, str], cwd: Path, messages: list[dict[str, Any]]) -> float:
    """The CPU (user + system) of one run of `command`, its whole life: `messages` on its stdin, then the end of
    it; its answers (two at most) read and dropped."""
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        process.stdin.close()
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here, with its accounting
    return (usage.ru_utime + usage.ru_stime) * 1000


# ---- /proc: process trees, tags, RSS


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree(pids: list[int]) -> set[int]:
    """The processes `pids` and all their descendants, alive now."""
    children = _children()
    out: set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in out or not Path(f"/proc/{pid}").exists():
            continue
        out.add(pid)
        todo += children.get(pid, [])
    return out


def tagged(tag: str, needle: bytes = b"", cwds: set[Path] | None = None) -> set[int]:
    """Processes whose environment carries TAG=tag (whose command line holds `needle`, whose working
    directory is one of `cwds`)."""
    marker = f"{TAG}={tag}".encode()
    out = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes()
            cmdline = Path(entry.path, "cmdline").read_bytes()
            cwd = Path(os.readlink(Path(entry.path, "cwd"))) if cwds is not None else None
        except OSError:
            continue
        if marker in environ.split(b"\0") and needle in cmdline and (cwds is None or cwd in cwds):
            out.add(int(entry.name))
    return out


def rss_mib(pids: set[int], field: str = "VmRSS:", where: str = "status") -> float:
    total_kib = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/{where}").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith(field):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def pss_mib(pids: set[int]) -> float:
    return rss_mib(pids, "Pss:", "smaps_rollup")


# ---- the bench


@dataclass
class Bench:
    repo: Path
    code: str  # the PYTHONPATH of the gitwiki under test
    tag: str
    qmd: list[str] | None
    qmd_env: dict[str, str]
    samples: dict[str, list[float]] = field(default_factory=dict)
    killed: int = 0
    loads: dict[str, list[float]] = field(default_factory=dict)
    bin_dir: Path | None = None  # --venv: gitwiki's console scripts and python there (bench_claude.make_venv)

    def __post_init__(self) -> None:
        self.env = {**os.environ, "PYTHONPATH": self.code, TAG: self.tag}
        self.python = sys.executable
        if self.bin_dir is not None:
            self.env["PATH"] = f"{self.bin_dir}{os.pathsep}{self.env.get('PATH', '')}"
            self.python = str(self.bin_dir / "python")
        console = Path(self.python).parent / "gitwiki"
        # The console script, as `claude mcp add gitwiki -- gitwiki serve` runs it; `python -m` would put the
        # current directory before PYTHONPATH.
        self.gitwiki = [str(console)] if console.is_file() else [self.python, "-m", "gitwiki"]
        help_text = subprocess.run(
            [*self.gitwiki, "serve", "--help"], cwd=self.repo, env=self.env, capture_output=True, text=True
        ).stdout
        self.can_stop = "--stop" in help_text

    def add(self, name: str, value: float) -> None:
        self.samples.setdefault(name, []).append(value)

    def load(self, moment: str) -> None:
        self.loads[moment] = [round(x, 2) for x in os.getloadavg()]

    def serve(self, env: dict[str, str] | None = None, cwd: Path | None = None) -> Session:
        return Session([*self.gitwiki, "serve"], env or self.env, cwd or self.repo)

    def settle(self, *places: tuple[Path, dict[str, str]]) -> None:
        """No gitwiki process of this run left in these checkouts (by default the wiki's): each one's owner
        stopped (where `serve --stop` exists), the rest waited for, and after 15 s ended by pid."""
        places = places or ((self.repo, self.env),)
        for cwd, env in places:
            if self.can_stop:
                subprocess.run([*self.gitwiki, "serve", "--stop"], cwd=cwd, env=env, capture_output=True, timeout=60)
        cwds = {cwd.resolve() for cwd, _ in places}
        deadline = time.monotonic() + 15
        while (left := tagged(self.tag, b"gitwiki", cwds)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not left:
            return
        self.killed += len(left)
        for pid in left:
            with contextlib.suppress(OSError):
                print(f"ending {pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()!r}", file=sys.stderr)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in tagged(self.tag, b"gitwiki", cwds):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            time.sleep(1.0)

    def session_rss(self, sessions: list[Session], measure: Callable[[set[int]], float] = rss_mib) -> float:
        return measure(tree([s.pid for s in sessions]) | tagged(self.tag, b"gitwiki"))

    def first_search(self, session: Session, name: str, **arguments: str) -> None:
        self.add(f"{name}_initialize_ms", session.initialize())
        session.call("ground", {"query": QUERY, **arguments})
        self.add(f"{name}_first_search_ms", session.since_spawn())

    # -- the variants of a spawn round

    def echo(self) -> None:
        session = Session([self.python, "-c", ECHO], dict(os.environ))
        session.send({"echo": 1})
        session.readline()
        self.add("echo_first_line_ms", session.since_spawn())
        time.sleep(SETTLE)
        self.add("echo_rss_mib", rss_mib(tree([session.pid])))
        session.close()

    def noop(self) -> None:
        session = Session([sys.executable, "-c", NOOP_SERVER], dict(os.environ))
        self.add("sdk_noop_initialize_ms", session.initialize())
        session.call("noop", {})
        self.add("sdk_noop_first_call_ms", session.since_spawn())
        time.sleep(SETTLE)
        self.add("sdk_noop_rss_mib", rss_mib(tree([session.pid])))
        session.close()

    def lexical_first(self) -> None:
        """No owner, a first search of the kind qmd's `lex` query is (BM25 only): the owner still starts loading
        the model beside it, as it does for every spawn."""
        session = self.serve()
        self.first_search(session, "no_owner_lexical", mode="lexical")
        session.close(wait=0)
        self.settle()

    def qmd_first(self) -> None:
        assert self.qmd is not None
        session = Session([*self.qmd, "mcp"], self.qmd_env)
        self.add("qmd_initialize_ms", session.initialize())
        session.call("query", qmd_lex(QUERY))
        self.add("qmd_first_search_ms", session.since_spawn())
        time.sleep(SETTLE)
        self.add("qmd_rss_mib", rss_mib(tree([session.pid])))
        session.close()

    def sessions(self) -> None:
        """Five sessions of the checkout, one after another: the first with no owner, each later one while the
        earlier ones are up (each spawned once the one before has answered its first search)."""
        sessions: list[Session] = []
        for i in range(5):
            session = self.serve()
            sessions.append(session)
            self.first_search(session, "owner_up" if i else "no_owner")
            time.sleep(SETTLE)
            if i == 0:
                self.add("one_session_rss_mib", self.session_rss(sessions))
                self.add("one_session_pss_mib", self.session_rss(sessions, pss_mib))
            else:
                self.add("later_session_own_rss_mib", rss_mib(tree([session.pid])))
        self.add("five_sessions_rss_mib", self.session_rss(sessions))
        self.add("five_sessions_pss_mib", self.session_rss(sessions, pss_mib))
        for session in sessions:
            session.close(wait=0)
        self.settle()

    def spawn_rounds(self, rounds: int) -> None:
        variants: list[Callable[[], None]] = [self.echo, self.noop, self.sessions, self.lexical_first]
        if self.qmd:
            variants.append(self.qmd_first)
        self.settle()
        self.load("spawn_before")
        for i in range(rounds):
            for variant in variants[i % len(variants) :] + variants[: i % len(variants)]:
                variant()
        self.load("spawn_after")

    def bridge_rounds(self, rounds: int) -> None:
        """A later session's start, owner up, and `python -c pass`, `rounds` times each, alternating."""
        self.settle()
        holder = self.serve()
        holder.initialize()
        holder.call("ground", {"query": QUERY})
        self.load("bridge_before")
        opening = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
        for _ in range(rounds):
            self.add("bridge_start_cpu_ms", cpu_ms([*self.gitwiki, "serve"], self.env, self.repo, opening))
            self.add("python_pass_cpu_ms", cpu_ms([self.python, "-c", "pass"], self.env, self.repo, []))
        self.load("bridge_after")
        holder.close(wait=0)
        self.settle()

    def warm(self, rounds: int, gap: float) -> int:
        """Warm calls over two sessions of the checkout (and qmd, the SDK's no-op); the number of questions
        whose answer differed between the two sessions."""
        first, second = self.serve(), None
        noop = Session([sys.executable, "-c", NOOP_SERVER], dict(os.environ))
        qmd = Session([*self.qmd, "mcp"], self.qmd_env) if self.qmd else None
        first.initialize()
        first.call("ground", {"query": "warm up"})
        second = self.serve()
        second.initialize()
        noop.initialize()
        variants: list[tuple[str, Session, str, Callable[[str], dict[str, Any]]]] = [
            ("sdk_noop", noop, "noop", lambda q: {}),
            ("warm_lexical_first", first, "ground", lambda q: {"query": q, "mode": "lexical"}),
            ("warm_hybrid_first", first, "ground", lambda q: {"query": q, "mode": "hybrid"}),
            ("warm_lexical_second", second, "ground", lambda q: {"query": q, "mode": "lexical"}),
            ("warm_hybrid_second", second, "ground", lambda q: {"query": q, "mode": "hybrid"}),
        ]
        if qmd:
            qmd.initialize()
            variants.append(("qmd_warm_lexical", qmd, "query", qmd_lex))
        for _, session, tool, args in variants:  # the model, the vectors, the first-call costs
            session.call(tool, args("warm up"))
        answers: dict[tuple[str, str], str] = {}
        asked: set[tuple[str, str]] = set()  # (mode, question) the owner has answered: later asks find it kept
        timed: list[tuple[str, str, float]] = []  # (variant, question, ms) of every call
        self.load("warm_before")
        turn = 0
        for _ in range(rounds):
            for q in questions():
                turn += 1
                for name, session, tool, args in variants[turn % len(variants) :] + variants[: turn % len(variants)]:
                    ms, answers[name, q] = session.call(tool, args(q))
                    self.add(f"{name}_ms", ms)
                    timed.append((name, q, ms))
                    if name.startswith("warm_") and (mode := name.split("_")[1], q) not in asked:
                        asked.add((mode, q))
                        self.add(f"warm_{mode}_new_ms", ms)  # its first ask: no query vector kept yet
                    time.sleep(gap / 1000)
        self.load("warm_after")
        self.same_work(answers, timed)
        for session in (first, second):
            session.close(wait=0)
        for session in (noop, *([qmd] if qmd else [])):
            session.close()
        self.settle()
        return sum(
            answers[f"warm_{mode}_first", q] != answers[f"warm_{mode}_second", q]
            for mode in ("lexical", "hybrid")
            for q in questions()
        )

    def same_work(self, answers: dict[tuple[str, str], str], timed: list[tuple[str, str, float]]) -> None:
        """The answers' text sizes, and the warm lexical calls of gitwiki and qmd over the questions qmd finds pages
        for (its AND of every word finds none for most): the two answering alike."""
        for (name, _), text in answers.items():
            if name in ("warm_lexical_first", "qmd_warm_lexical"):
                self.add(f"{name}_bytes", len(text.encode()))
        found = {q for (name, q), text in answers.items() if name == "qmd_warm_lexical" and not text.startswith("No ")}
        if not any(name == "qmd_warm_lexical" for name, _, _ in timed):
            return
        self.add("qmd_questions_found", len(found))
        for name, q, ms in timed:
            if q in found and name in ("qmd_warm_lexical", "warm_lexical_first", "warm_lexical_second"):
                self.add("qmd_warm_lexical_found_ms" if name.startswith("qmd") else "warm_lexical_found_ms", ms)


def qmd_lex(query: str) -> dict[str, Any]:
    return {"searches": [{"type": "lex", "query": query}], "limit": 5, "rerank": False}


def qmd_setup(qmd: str, node: str | None, home: Path, pages: Path) -> tuple[list[str], dict[str, str]]:
    """qmd's command and environment, its home holding the wiki's pages as the collection `wiki`."""
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": f"{home}/.cache", "XDG_CONFIG_HOME": f"{home}/.config"}
    command = [qmd]
    if node:
        env["PATH"] = os.pathsep.join([str(Path(node).parent), env.get("PATH", "")])
        command = [node, qmd]
    home.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run([*command, "collection", "list"], env=env, capture_output=True, text=True, timeout=120)
    if "wiki" not in listed.stdout:
        subprocess.run(
            [*command, "collection", "add", str(pages), "--name", "wiki"],
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
    return command, env


# ---- claude -p, through bench_claude.py


def claude_rounds(bench: Bench, rounds: int, busy: int) -> dict[str, Any]:
    """`claude -p` medians per set-up, quiet and with `busy` loops; minus plain's median in the same rounds."""
    import bench_claude

    from tests.e2e import claude_cli
    from tests.e2e.mock_api import MockAnthropic, Turn

    binary = claude_cli.ensure()
    base = Path(tempfile.mkdtemp(prefix="gitwiki-bench-sessions-"))
    out: dict[str, Any] = {"claude_code": claude_cli.VERSION, "rounds": rounds}
    holder: Session | None = None
    setups: dict[str, tuple[Any, Path]] = {}
    try:
        with MockAnthropic([Turn(text="done")]) as api:
            setups = {
                "plain": bench_claude.prepare("plain", base, binary, api.url, code=bench.code),
                **{
                    name: bench_claude.prepare(name, base, binary, api.url, "full", bench.code, bench.bin_dir)
                    for name in ("full_no_owner", "full_owner_up")
                },
            }
            for claude, _ in setups.values():
                claude.env[TAG] = bench.tag
            claude, repo = setups["full_owner_up"]
            holder = bench.serve(claude.env, repo)  # the session already up in that checkout
            holder.initialize()
            holder.call("ground", {"query": "roll back a release"})

            def before_run(name: str) -> None:
                if name == "full_no_owner" and bench.can_stop:  # the owner the last run left behind
                    claude, repo = setups[name]
                    bench.settle((repo, claude.env))

            for loops in (0, busy) if busy else (0,):
                measured = bench_claude.measure(setups, api, rounds, loops, before_run)
                plain = statistics.median(measured.walls["plain"])
                out[f"busy_{loops}"] = {
                    "load_before_after": [round(measured.load_before, 2), round(measured.load_after, 2)],
                    **{
                        name: {
                            "min_s": round(min(walls), 3),
                            "median_s": round(statistics.median(walls), 3),
                            "minus_plain_s": round(statistics.median(walls) - plain, 3),
                            "first_request_has_tools": measured.first_has_tools[name] if name != "plain" else None,
                            "cpu_median_s": round(statistics.median(measured.cpu[name]), 3) if measured.cpu else None,
                        }
                        for name, walls in measured.walls.items()
                    },
                }
    finally:
        if holder is not None:
            holder.close(wait=0)
        bench.settle(*((repo, claude.env) for claude, repo in setups.values()))
        shutil.rmtree(base, ignore_errors=True)
    return out


# ---- the report


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 2),
        "median": round(statistics.median(ordered), 2),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
        "n": len(ordered),
    }


def number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def table(result: dict[str, Any]) -> Iterator[str]:
    """The figures as a markdown table, each beside its floor or peer from the same run."""
    s = result["samples"]

    def load(part: str) -> str:
        before, after = result["loads"].get(f"{part}_before"), result["loads"].get(f"{part}_after")
        return f"load {before[0]} → {after[0]}" if before and after else "not run"

    yield (
        f"gitwiki of {result['code']}{' (from a venv)' if result.get('venv') else ''}, {result['utc']} UTC,"
        f" {result['seconds']} s; load average (1 / 5 / 15 min)"
        f" {result['load_start']} at the start, {result['load_end']} at the end; {result['rounds']} spawn rounds"
        f" ({load('spawn')}), warm n = {s.get('sdk_noop_ms', {}).get('n', 0)} ({load('warm')});"
        f" `serve --stop`: {result['can_stop']}"
    )
    yield ""
    yield "| measure | gitwiki | floor or peer, same run | target |"
    yield "|---|---|---|---|"
    yield from spawn_rows(s, result) if "no_owner_first_search_ms" in s else ()
    if "bridge_start_cpu_ms" in s:
        yield (
            f"| CPU of a later session's start, owner up (`initialize`, `tools/list`, end of input; {load('bridge')})"
            f" | {mm(s, 'bridge_start_cpu_ms')} | `python -c pass` {mm(s, 'python_pass_cpu_ms')} | |"
        )
    yield from warm_rows(s) if "sdk_noop_ms" in s else ()
    yield from claude_rows(result)
    if result["answers_differing"]:
        yield f"answers differing between the two warm sessions: {result['answers_differing']}"
    if result["killed"]:
        yield f"processes ended by pid after 15 s: {result['killed']}"


def mm(s: dict[str, dict[str, float]], name: str, unit: str = "ms") -> str:
    """min / median"""
    return f"{number(s[name]['min'])} / {number(s[name]['median'])} {unit}" if name in s else "—"


def p50(s: dict[str, dict[str, float]], name: str) -> str:
    return f"{number(s[name]['median'])} ms" if name in s else "—"


def spawn_rows(s: dict[str, dict[str, float]], result: dict[str, Any]) -> Iterator[str]:
    floors = f"`python -c` echo {mm(s, 'echo_first_line_ms')}; SDK no-op server {mm(s, 'sdk_noop_first_call_ms')}"
    yield (
        f"| spawn → first search, no owner (min / median) | {mm(s, 'no_owner_first_search_ms')} | {floors};"
        f" qmd {mm(s, 'qmd_first_search_ms')} | ≤ qmd's |"
    )
    yield (
        f"| spawn → first lexical search, no owner (BM25 only, as qmd's `lex`) |"
        f" {mm(s, 'no_owner_lexical_first_search_ms')} | qmd {mm(s, 'qmd_first_search_ms')} | ≤ qmd's |"
    )
    yield f"| spawn → first search, owner up | {mm(s, 'owner_up_first_search_ms')} | as above | ≤ 100 ms |"
    yield (
        f"| spawn → `initialize` answered | no owner {mm(s, 'no_owner_initialize_ms')}; owner up"
        f" {mm(s, 'owner_up_initialize_ms')} | SDK no-op server {mm(s, 'sdk_noop_initialize_ms')};"
        f" qmd {mm(s, 'qmd_initialize_ms')} | |"
    )
    yield (
        f"| RSS, one session | {mm(s, 'one_session_rss_mib', 'MiB')} | python idle {mm(s, 'echo_rss_mib', 'MiB')};"
        f" SDK no-op server {mm(s, 'sdk_noop_rss_mib', 'MiB')}; qmd server + launcher {mm(s, 'qmd_rss_mib', 'MiB')} |"
        " ≤ qmd's |"
    )
    yield (
        f"| RSS of a later session's own processes, owner up | {mm(s, 'later_session_own_rss_mib', 'MiB')} |"
        f" python idle {mm(s, 'echo_rss_mib', 'MiB')} | ≤ 30 MiB |"
    )
    yield (
        f"| RSS, five sessions of one repository | {mm(s, 'five_sessions_rss_mib', 'MiB')}"
        f" ({result['five_over_one_rss']} × one, medians); PSS {mm(s, 'five_sessions_pss_mib', 'MiB')} against one"
        f" session's {mm(s, 'one_session_pss_mib', 'MiB')} | | ≤ 1.3 × one |"
    )


def warm_rows(s: dict[str, dict[str, float]]) -> Iterator[str]:
    yield (
        f"| warm lexical p50, first / second session | {p50(s, 'warm_lexical_first_ms')} /"
        f" {p50(s, 'warm_lexical_second_ms')} | SDK no-op {p50(s, 'sdk_noop_ms')};"
        f" qmd {p50(s, 'qmd_warm_lexical_ms')} | ≤ qmd's |"
    )
    yield (
        f"| warm hybrid p50, first / second session | {p50(s, 'warm_hybrid_first_ms')} /"
        f" {p50(s, 'warm_hybrid_second_ms')} | | ≤ 10 ms |"
    )
    yield (
        f"| warm p50 of each question's first ask, lexical / hybrid | {p50(s, 'warm_lexical_new_ms')} /"
        f" {p50(s, 'warm_hybrid_new_ms')} | qmd {p50(s, 'qmd_warm_lexical_ms')} | as above |"
    )
    if "qmd_questions_found" in s:
        yield (
            f"| warm lexical p50 over the {s['qmd_questions_found']['median']:.0f} questions qmd finds pages for (both"
            f" sessions) | {p50(s, 'warm_lexical_found_ms')} | qmd {p50(s, 'qmd_warm_lexical_found_ms')}; answer text"
            f" {s['warm_lexical_first_bytes']['median']:.0f} / {s['qmd_warm_lexical_bytes']['median']:.0f} bytes"
            " (gitwiki / qmd, medians of all questions) | ≤ qmd's |"
        )


def claude_rows(result: dict[str, Any]) -> Iterator[str]:
    for key, figures in (result.get("claude") or {}).items():
        if not key.startswith("busy_"):
            continue
        plain = figures["plain"]
        yield (
            f"| `claude -p` with gitwiki − without, {key.split('_')[1]} busy loops, load"
            f" {figures['load_before_after'][0]} → {figures['load_before_after'][1]}: no owner / owner up"
            f" | {figures['full_no_owner']['minus_plain_s']:+.2f} / {figures['full_owner_up']['minus_plain_s']:+.2f} s"
            f" (tools in the 1st request {figures['full_no_owner']['first_request_has_tools']} /"
            f" {figures['full_owner_up']['first_request_has_tools']} of {result['claude']['rounds']})"
            f"{_cpu(figures)} | without (plain) {plain['min_s']:.2f} / {plain['median_s']:.2f} s | ≤ +0.25 s |"
        )


def _cpu(figures: dict[str, Any]) -> str:
    """The runs' median CPU (Claude Code and what it waits for), when the figures have it."""
    names = ("plain", "full_no_owner", "full_owner_up")
    if any(figures[n].get("cpu_median_s") is None for n in names):
        return ""
    return "; CPU " + " / ".join(f"{figures[n]['cpu_median_s']:.2f}" for n in names) + " s (without / no owner / up)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved spawn and RSS rounds")
    parser.add_argument("--bridge-rounds", type=int, default=15, help="a later session's starts timed (CPU)")
    parser.add_argument("--warm-rounds", type=int, default=2, help="times each tldr question is asked warm")
    parser.add_argument("--gap", type=float, default=10.0, help="ms between two warm calls")
    parser.add_argument("--claude-rounds", type=int, default=5, help="`claude -p` rounds, quiet and busy each")
    parser.add_argument("--busy", type=int, default=2, help="busy CPU loops for the second `claude -p` block (0: none)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, from {','.join(PARTS)}")
    parser.add_argument("--base", help="the checkout whose gitwiki is measured (its PYTHONPATH); this one by default")
    parser.add_argument("--qmd", default=os.environ.get("QMD"), help="qmd's executable (default $QMD; none: no qmd)")
    parser.add_argument("--qmd-node", default=os.environ.get("QMD_NODE"), help="a node >= 22 to run qmd with")
    parser.add_argument("--qmd-home", default=str(WORK / "sessions" / "qmd-home"), help="qmd's HOME (its index)")
    parser.add_argument(
        "--venv",
        action="store_true",
        help="run gitwiki (and the echo floor) with the python of a fresh venv, as pipx and `uv tool` install it: "
        "without this interpreter's site-packages `.pth` files (bench_claude.make_venv)",
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args()
    parts = args.parts.split(",")
    if unknown := set(parts) - set(PARTS):
        parser.error(f"unknown parts: {sorted(unknown)}")
    use_offline_model()
    started = time.time()
    load_start = [round(x, 2) for x in os.getloadavg()]
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")  # sets GITWIKI_INDEX_DIR for the sessions
    reports, seconds = timed_index(wiki)
    wiki.close()
    print(f"pre-index: {reports[0].pages} pages in {seconds:.1f} s", file=sys.stderr)
    qmd, qmd_env = (None, dict(os.environ))
    if args.qmd:
        qmd, qmd_env = qmd_setup(args.qmd, args.qmd_node, Path(args.qmd_home), repo / "wiki")
    code = str(Path(args.base).resolve()) if args.base else str(ROOT)
    compiled(code)
    bin_dir = None
    if args.venv:
        from bench_claude import make_venv

        bin_dir = make_venv(Path(tempfile.mkdtemp(prefix="gitwiki-bench-venv-")) / "venv")
    bench = Bench(repo, code, uuid.uuid4().hex, qmd, qmd_env, bin_dir=bin_dir)
    try:
        if "spawn" in parts:
            bench.spawn_rounds(args.rounds)
            print(f"spawn rounds done at {time.time() - started:.0f} s", file=sys.stderr)
        if "bridge" in parts:
            bench.bridge_rounds(args.bridge_rounds)
            print(f"bridge rounds done at {time.time() - started:.0f} s", file=sys.stderr)
        differing = None
        if "warm" in parts:
            differing = bench.warm(args.warm_rounds, args.gap)
            print(f"warm rounds done at {time.time() - started:.0f} s", file=sys.stderr)
        claude = claude_rounds(bench, args.claude_rounds, args.busy) if "claude" in parts else None
    finally:
        bench.settle()
    samples = {name: summary(values) for name, values in bench.samples.items()}
    result = {
        "code": code,
        "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        "seconds": round(time.time() - started),
        "rounds": args.rounds,
        "venv": args.venv,
        "can_stop": bench.can_stop,
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "loads": bench.loads,
        "samples": samples,
        "five_over_one_rss": (
            round(samples["five_sessions_rss_mib"]["median"] / samples["one_session_rss_mib"]["median"], 2)
            if "spawn" in parts
            else None
        ),
        "answers_differing": differing,
        "killed": bench.killed,
        "claude": claude,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(table(result)))


if __name__ == "__main__":
    main()
