"""Warm MCP `ground` beside its floors, interleaved in one run: what a noisy shared host still lets one compare.

One client per server, all up at once, over the SDK's stdio client: `gitwiki serve` of the 1,000-page tldr wiki
(bench_mcp.py's repo and index), the SDK's no-op server (bench_mcp.NOOP_SERVER) and, with --base, another
checkout's `gitwiki serve`, with --qmd, qmd's MCP server over the same pages. Each round asks every question of
every variant once, the order of the variants rotating per question, --gap ms apart. Variants:

  noop              the SDK's own round trip (a tool that returns "ok")
  read_markdown     gitwiki's floor on the same server: a 1.1 KB page read whole (the SDK, gitwiki's tool
                    wrapper and its stdio threads); not list_corpora, which asks git for the worktree status
                    and took longer than a lexical `ground` (8.3 against 7.2 ms p50)
  lexical / hybrid  `ground` with mode lexical / hybrid (and the same on --base's server)
  qmd_lexical       qmd's `query` tool with one `lex` search and `rerank: false` (BM25 only: offline, its
                    expansion, `vec` and rerank models cannot be downloaded, and a plain `query` waits on them)

qmd (npm `@tobilu/qmd`, node >= 22 on PATH) needs the same pages as a collection first, in its own home:
    HOME=DIR XDG_CACHE_HOME=DIR/.cache XDG_CONFIG_HOME=DIR/.config qmd collection add REPO/wiki --name wiki
and --qmd-home DIR then gives its server that home.

Prints min / p50 / p95 per variant and the load average before and after, as JSON.

    python bench/bench_mcp_warm.py [--rounds 4] [--gap 20] [--base /work/main] [--qmd PATH/TO/qmd --qmd-home DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack

import anyio
from bench_index import questions, tldr_pages
from bench_mcp import NOOP, params
from benchlib import WORK, corpus_config, open_wiki, timed_index, use_offline_model, write_repo
from mcp import ClientSession, StdioServerParameters, stdio_client

MODES = ("lexical", "hybrid")
FLOOR_PAGE = "pages/common/7za.md"


async def connect(stack: AsyncExitStack, server: StdioServerParameters) -> ClientSession:
    streams = await stack.enter_async_context(stdio_client(server))
    session = await stack.enter_async_context(ClientSession(*streams))
    await session.initialize()
    return session


async def call(session: ClientSession, name: str, arguments: dict) -> tuple[float, str]:
    """(ms, the answer's text and structured content)"""
    started = time.perf_counter()
    result = await session.call_tool(name, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise SystemExit(f"{name} failed: {result.content}")
    return elapsed, json.dumps([result.content[0].model_dump(), result.structured_content], sort_keys=True)


def qmd_server(qmd: str, home: str | None) -> StdioServerParameters:
    env = dict(os.environ)
    if home:
        env.update(HOME=home, XDG_CACHE_HOME=f"{home}/.cache", XDG_CONFIG_HOME=f"{home}/.config")
    return StdioServerParameters(command=qmd, args=["mcp"], env=env)


async def run(repo, qs: list[str], rounds: int, gap: float, base: str | None, qmd: StdioServerParameters | None):
    async with AsyncExitStack() as stack:
        sessions = {"gitwiki": await connect(stack, params(repo)), "noop": await connect(stack, NOOP)}
        if base:
            sessions["base"] = await connect(stack, params(repo, base))
        if qmd:
            sessions["qmd"] = await connect(stack, qmd)
        variants = [
            ("noop", "noop", "noop", lambda q: {}),
            ("read_markdown", "gitwiki", "read_markdown", lambda q: {"path": FLOOR_PAGE}),
        ]
        for server, prefix in (("gitwiki", ""), ("base", "base_")):
            if server in sessions:
                variants += [
                    (f"{prefix}lexical", server, "ground", lambda q: {"query": q, "mode": "lexical"}),
                    (f"{prefix}hybrid", server, "ground", lambda q: {"query": q, "mode": "hybrid"}),
                ]
        if qmd:
            variants.append(
                (
                    "qmd_lexical",
                    "qmd",
                    "query",
                    lambda q: {"searches": [{"type": "lex", "query": q}], "limit": 5, "rerank": False},
                )
            )
        for _, server, tool, args in variants:  # warm: the model, the vectors, the first-call costs
            await call(sessions[server], tool, args("warm up"))
        out: dict[str, list] = {name: [] for name, *_ in variants}
        answers: dict[tuple[str, str], str] = {}
        turn = 0
        for _ in range(rounds):
            for q in qs:
                turn += 1
                for name, server, tool, args in variants[turn % len(variants) :] + variants[: turn % len(variants)]:
                    ms, answers[name, q] = await call(sessions[server], tool, args(q))
                    out[name].append(ms)
                    await anyio.sleep(gap / 1000)
    if base:  # the same question, the same answer from both checkouts (a speed-up must not change one)
        out["answers_differing_from_base"] = [
            f"{mode}: {q}" for (mode, q), a in answers.items() if mode in MODES and a != answers[f"base_{mode}", q]
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4, help="times each question is asked of each variant")
    parser.add_argument("--gap", type=float, default=20.0, help="ms between two calls")
    parser.add_argument("--base", help="another checkout whose `gitwiki serve` runs beside this one's (A/B)")
    parser.add_argument("--qmd", help="a qmd executable whose `qmd mcp` has the same pages as a collection")
    parser.add_argument("--qmd-home", help="HOME (and XDG dirs) of that qmd: where its index is")
    args = parser.parse_args()
    use_offline_model()
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")
    timed_index(wiki)
    wiki.close()
    before = os.getloadavg()
    samples = anyio.run(
        run, repo, questions(), args.rounds, args.gap, args.base, args.qmd and qmd_server(args.qmd, args.qmd_home)
    )
    print(
        json.dumps(
            {
                "ms_min_p50_p95": {
                    name: [
                        round(min(v), 2),
                        round(statistics.median(v), 2),
                        round(sorted(v)[int(0.95 * (len(v) - 1))], 2),
                    ]
                    for name, v in samples.items()
                    if name != "answers_differing_from_base"
                },
                "n": len(samples["noop"]),
                "answers_differing_from_base": samples.get("answers_differing_from_base"),
                "load_average_before_after": [[round(x, 2) for x in before], [round(x, 2) for x in os.getloadavg()]],
                "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            },
            indent=None,
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
