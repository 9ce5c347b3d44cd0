"""MCP tool latencies, measured the way an agent pays them: `gitwiki serve` as a subprocess, the SDK's stdio client.

The wiki is the first 1,000 English tldr pages (the same repo as bench_index.py), indexed beforehand
with the offline MiniLM model, so the numbers are the server's own cost, not the first build.

  spawn        a raw JSON-RPC client as Claude Code behaves: spawn `python -m gitwiki serve`, send initialize (with
               --stateless: server/discover, as Claude Code 2.1.332 does); once it is answered send
               notifications/initialized, tools/list and a (hybrid) ground at once; the times from
               the spawn to each answer, min and median over --spawn-rounds, interleaved with a floor (spawn → a
               `python -c` that echoes the first line) and, with --base, the other checkout; --busy N runs N
               `python -c "while 1: pass"` loops meanwhile (the load of the figures in docs/research/mcp-startup.md)
  start        spawn `python -m gitwiki serve` → initialize answered (median of --starts runs)
  first call   the first `ground` (hybrid), sent --first-after seconds after the spawn (default 1 s: the
               server loads the model in the background from its start, so this should cost a warm query)
  warm         p50/p95 of `ground` (hybrid and lexical) over the tldr questions, and of
               read_markdown / list_files / add_markdown (overwrite) on the same server, interleaved:
               add_markdown with a new title each time (index.md re-rendered) and with the same title
               and summary each time (index.md left as it is); read_markdown is the round-trip floor;
               beside them, interleaved, the SDK floor: a no-op tool on a bare MCPServer, the same SDK
               over the same stdio
  cold CLI     a fresh `gitwiki ground` process (hybrid) while a `gitwiki serve` of the repo is up (it asks the
               server over its socket) and with --no-server, interleaved with `python -c pass` and
               `gitwiki --version` (min and median of --cli-rounds)

  --base DIR   the same start, first-call and cold-CLI runs, interleaved, with the gitwiki package of another
               checkout (e.g. /work/main: A/B in one run on a noisy host)

    python bench/bench_mcp.py [--queries 200] [--starts 3] [--cli-rounds 10] [--base DIR]
    python bench/bench_mcp.py --spawn-only --spawn-rounds 10 [--busy 2] [--base DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import anyio
from bench_index import questions, tldr_pages
from benchlib import ROOT, WORK, corpus_config, git, open_wiki, timed_index, use_offline_model, write_repo
from mcp import ClientSession, StdioServerParameters, stdio_client

# The SDK's own cost per call: a server with one tool that does nothing.
NOOP_SERVER = """
from mcp.server.mcpserver import MCPServer

def noop() -> str:
    return "ok"

app = MCPServer("noop", log_level="WARNING")
app.add_tool(noop, name="noop")
app.run("stdio")
"""
NOOP = StdioServerParameters(command=sys.executable, args=["-c", NOOP_SERVER], env=dict(os.environ))


def code_env(base: str | None = None) -> dict[str, str]:
    """The environment that runs this checkout's gitwiki, or with `base` another checkout's."""
    return {**os.environ, "PYTHONPATH": base or str(ROOT)}


def params(repo, base: str | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gitwiki", "-C", str(repo), "serve"], env=code_env(base)
    )


async def timed(session, name: str, **arguments) -> float:
    started = time.perf_counter()
    result = await session.call_tool(name, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise SystemExit(f"{name} failed: {result.content}")
    return elapsed


async def cold(repo, first_after: float, base: str | None = None) -> tuple[float, float, str]:
    """(ms to `initialize`, ms of the first `ground`, the server's own account of its warm-up)."""
    server = params(repo, base)
    server.args += ["--log-level", "INFO"]  # the warm-up's line: how long the model and the corpora took
    with tempfile.TemporaryFile("w+") as log:
        started = time.perf_counter()
        async with stdio_client(server, errlog=log) as streams, ClientSession(*streams) as session:
            await session.initialize()
            start_ms = (time.perf_counter() - started) * 1000
            await anyio.sleep(max(0.0, first_after - (time.perf_counter() - started)))
            first_ms = await timed(session, "ground", query="list files in a directory")
        log.seek(0)
        warm_line = next((line.split("warm: ", 1)[1].strip() for line in log if "warm: " in line), "")
    return start_ms, first_ms, warm_line


async def warm(repo, qs: list[str], page: str) -> dict[str, list[float]]:
    names = (
        "sdk_noop",
        "hybrid",
        "lexical",
        "read_markdown",
        "list_files",
        "add_markdown",
        "add_markdown_same_listing",
    )
    out: dict[str, list[float]] = {k: [] for k in names}
    async with (
        stdio_client(params(repo)) as streams,
        ClientSession(*streams) as session,
        stdio_client(NOOP) as noop_streams,
        ClientSession(*noop_streams) as noop,
    ):
        await session.initialize()
        await noop.initialize()
        await timed(session, "ground", query="warm up")
        for q in qs:
            out["sdk_noop"].append(await timed(noop, "noop"))
            out["hybrid"].append(await timed(session, "ground", query=q))
            out["lexical"].append(await timed(session, "ground", query=q, mode="lexical"))
        # New page versions in every run: the index dir is kept between runs, and a version indexed before
        # (the page, or index.md listing it) would not be parsed or embedded again.
        run = os.urandom(4).hex()
        for i in range(20):
            out["read_markdown"].append(await timed(session, "read_markdown", path=page))
            out["list_files"].append(await timed(session, "list_files"))
            out["add_markdown"].append(
                await timed(
                    session,
                    "add_markdown",
                    path="bench/scratch.md",
                    content=f"# Scratch {i} {run}\n\nbench write {i}\n",
                    overwrite=True,
                )
            )
            # The same title and summary each time: what index.md shows does not change.
            out["add_markdown_same_listing"].append(
                await timed(
                    session,
                    "add_markdown",
                    path="bench/steady.md",
                    content=f"# Steady {run}\n\nbench write.\n\nwrite {i}\n",
                    overwrite=True,
                )
            )
        for path in ("bench/scratch.md", "bench/steady.md"):
            await session.call_tool("delete_markdown", {"path": path})
    return out


async def cold_cli(repo, qs: list[str], rounds: int, base: str | None) -> dict[str, list[float]]:
    """Fresh processes, interleaved, while a warm `gitwiki serve` of `repo` runs."""
    from gitwiki.operations.ground import GroundRequest
    from gitwiki.serve.client import ask

    gitwiki = [sys.executable, "-m", "gitwiki", "-C", str(repo)]
    runs = {
        "python_c_pass": lambda q: [sys.executable, "-c", "pass"],
        "gitwiki_version": lambda q: [*gitwiki, "--version"],
        "ground_server": lambda q: [*gitwiki, "ground", q],
        "ground_no_server": lambda q: [*gitwiki, "ground", q, "--no-server"],
        "ground_no_server_lexical": lambda q: [*gitwiki, "ground", q, "--no-server", "--mode", "lexical"],
    }
    envs = {name: code_env() for name in runs}
    if base is not None:
        for name in ("gitwiki_version", "ground_no_server", "ground_no_server_lexical"):
            runs[f"{name}_base"] = runs[name]
            envs[f"{name}_base"] = code_env(base)
    out: dict[str, list[float]] = {name: [] for name in runs}
    async with stdio_client(params(repo)) as streams, ClientSession(*streams) as session:
        await session.initialize()
        await timed(session, "ground", query="warm up")  # the model and the index are loaded
        served = ask(str(repo), GroundRequest(qs[0]))
        local = await anyio.run_process(runs["ground_no_server"](qs[0]))
        if served is None or served.stdout != local.stdout.decode():
            raise SystemExit("the server did not answer the CLI, or answered differently")
        for i in range(rounds):
            for name, command in runs.items():
                started = time.perf_counter()
                await anyio.run_process(command(qs[i % len(qs)]), env=envs[name])
                out[name].append((time.perf_counter() - started) * 1000)
    return out


ECHO = "import sys; sys.stdout.write(sys.stdin.readline()); sys.stdout.flush()"


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


# Claude Code 2.1.332's first message and the envelope of each of its requests (protocol 2026-07-28).
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def spawn_once(
    command: list[str], env: dict[str, str], echo: bool = False, stateless: bool = False
) -> dict[str, float]:
    """ms from the spawn to the answers of initialize (or server/discover), tools/list and the first ground (or to
    the echo)."""
    client = {"name": "bench", "version": "1"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    envelope = {"_meta": STATELESS_META} if stateless else {}
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    first = ("server/discover", envelope) if stateless else ("initialize", init)
    process.stdin.write(_line({"jsonrpc": "2.0", "id": 0, "method": first[0], "params": first[1]}))
    process.stdin.flush()
    times: dict[str, float] = {}
    names = {0: "initialize", 1: "tools_list", 2: "first_ground"}
    while len(times) < (1 if echo else 3):
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"{command} closed stdout after {times}")
        if echo:
            times["echo"] = (time.perf_counter() - started) * 1000
            break
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"{command}: {answer}")
        times[names[answer["id"]]] = (time.perf_counter() - started) * 1000
        if answer["id"] == 0:
            ground = {"name": "ground", "arguments": {"query": "list files in a directory"}, **envelope}
            process.stdin.write(
                (b"" if stateless else _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                + _line(
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", **({"params": envelope} if envelope else {})}
                )
                + _line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ground})
            )
            process.stdin.flush()
    process.stdin.close()
    process.wait(timeout=60)
    return times


def spawn_times(
    repo, rounds: int, busy: int, base: str | None, stateless: bool = False
) -> dict[str, dict[str, dict[str, float]]]:
    """Interleaved spawns of the floor, this checkout's server and the base's, with `busy` CPU loops running."""
    serve = [sys.executable, "-m", "gitwiki", "-C", str(repo), "serve"]
    runs = {"floor_echo": ([sys.executable, "-c", ECHO], code_env(), True), "gitwiki": (serve, code_env(), False)}
    if base is not None:
        runs["gitwiki_base"] = (serve, code_env(base), False)
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(busy)]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in runs}
    try:
        time.sleep(1.0 if busy else 0.0)
        for _ in range(rounds):
            for name, (command, env, echo) in runs.items():
                for key, ms in spawn_once(command, env, echo, stateless).items():
                    samples[name].setdefault(key, []).append(ms)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return {
        name: {k: {"min": round(min(v)), "median": round(statistics.median(v)), "n": len(v)} for k, v in d.items()}
        for name, d in samples.items()
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--cli-rounds", type=int, default=10, help="fresh CLI processes of each kind")
    parser.add_argument("--first-after", type=float, default=1.0, help="seconds from spawn to the first ground")
    parser.add_argument("--base", help="another checkout whose gitwiki runs beside this one's (A/B), e.g. /work/main")
    parser.add_argument("--skip-warm", action="store_true", help="only the start, first-call and cold-CLI runs")
    parser.add_argument("--spawn-rounds", type=int, default=10, help="interleaved spawns of each kind")
    parser.add_argument("--busy", type=int, default=0, help="busy CPU loops running during the spawn runs")
    parser.add_argument("--spawn-only", action="store_true", help="only the spawn runs")
    parser.add_argument(
        "--stateless", action="store_true", help="spawn runs speak protocol 2026-07-28 (server/discover first)"
    )
    args = parser.parse_args()
    use_offline_model()
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")
    reports, seconds = timed_index(wiki)
    wiki.close()
    print(f"pre-index: {reports[0].pages} pages in {seconds:.1f} s (model {reports[0].model})", file=sys.stderr)

    spawns = spawn_times(repo, args.spawn_rounds, args.busy, args.base, args.stateless)
    if args.spawn_only:
        loads = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps({"pages": reports[0].pages, "busy": args.busy, "spawn_ms": spawns, "load_average": loads}))
        return
    starts, base_starts = [], []
    for _ in range(args.starts):
        starts.append(anyio.run(cold, repo, args.first_after))
        if args.base:
            base_starts.append(anyio.run(cold, repo, args.first_after, args.base))
    samples = {} if args.skip_warm else anyio.run(warm, repo, questions()[: args.queries], pages[0][0])
    cli = anyio.run(cold_cli, repo, questions(), args.cli_rounds, args.base)
    git(repo, "clean", "-fdq")  # the front index.md the writes scaffolded; the repo is reused next run
    summary = {
        "pages": reports[0].pages,
        **{
            f"{name}{suffix}": value
            for suffix, runs in (("", starts), ("_base", base_starts))
            if runs
            for name, value in (
                ("start_ms_median", round(statistics.median(s for s, _, _ in runs), 1)),
                ("start_ms_min", round(min(s for s, _, _ in runs), 1)),
                (f"first_ground_{args.first_after:g}s_after_start_ms", [round(f, 1) for _, f, _ in runs]),
                ("warm_up", [w for _, _, w in runs]),
            )
        },
        **{
            f"{name}_ms": {"p50": round(pct(v, 0.5), 2), "p95": round(pct(v, 0.95), 2), "n": len(v)}
            for name, v in samples.items()
        },
        "cold_cli_ms": {
            name: {"min": round(min(v)), "median": round(statistics.median(v)), "n": len(v)} for name, v in cli.items()
        },
        "spawn_ms": spawns,
        "busy": args.busy,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
