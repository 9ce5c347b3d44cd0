"""MCP tool latencies, measured the way an agent pays them: `gitwiki serve` as a subprocess, the SDK's stdio client.

The wiki is the first 1,000 English tldr pages (the same repo as bench_index.py), indexed beforehand
with the offline MiniLM model, so the numbers are the server's own cost, not the first build.

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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    from gitwiki.ground import GroundRequest
    from gitwiki.serve_client import ask

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
    args = parser.parse_args()
    use_offline_model()
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")
    reports, seconds = timed_index(wiki)
    wiki.close()
    print(f"pre-index: {reports[0].pages} pages in {seconds:.1f} s (model {reports[0].model})", file=sys.stderr)

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
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
