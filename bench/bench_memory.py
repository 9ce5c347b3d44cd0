"""Memory tool latencies in a warm `gitwiki serve`, over the SDK's stdio client, as an agent pays them.

The repo holds 1,000 entries over 50 topic pages (committed, indexed beforehand with the offline MiniLM
model) and a 3-page wiki. On one server, after a warm-up call of each tool:

  floor    p50/p95 of an MCP ping and of memory_read of a one-entry topic: the protocol and tool-call
           round trip every figure below includes; and `embed`: embedding one entry's text with the same
           model in the bench process (what store pays the model, without the server)
  store    memory_store of a new entry (dedup check, page write, index blocks, re-index, embedding
           the entry) into a random topic
  search   memory_search of 2–3 words (hybrid relevance × confidence × recency)
  brief    memory_brief of one topic (summary tier), of a glob over 10 topics, and the meta-briefing

    python bench/bench_memory.py [--stores 100] [--searches 200] [--briefs 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

import anyio
from benchlib import WORK, corpus_config, git, open_wiki, timed_index, use_offline_model, write_repo
from mcp import ClientSession, StdioServerParameters, stdio_client

from gitwiki.memory.entry import Entry, render_page

TOPICS = 50
ENTRIES = 1000
PREFIXES = ("gotcha: ", "decision: ", "invariant: ", "perf: ", "how-to: ", "gap: ", "architecture: ", "")
WORDS = """index writer lock page chunk blob tree commit embedding vector query token cache server client
hook worktree branch merge rebase config corpus search rank fusion lexical dense model thread process
latency memory topic entry checkpoint session brief stale source diff export import schema sqlite wal
fsync rename atomic retry timeout queue batch stream parser heading anchor link lint orphan front matter
deploy release rollback build test fixture mock fault error message exit code json contract""".split()


def entry_text(rng: random.Random, n: int) -> str:
    words = rng.sample(WORDS, 12)
    return f"{rng.choice(PREFIXES)}{' '.join(words[:8])} (note {n}); {' '.join(words[8:])}."


def memory_pages(rng: random.Random) -> list[tuple[str, str]]:
    topics: dict[str, list[Entry]] = {f"area-{t:02d}": [] for t in range(TOPICS)}
    names = list(topics)
    for n in range(ENTRIES):
        name = names[n % TOPICS]
        stamp = f"2026-{1 + n % 11:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z"
        text = entry_text(rng, n)
        tags = ("gotcha",) if text.startswith("gotcha") else ()
        topics[name].append(Entry(name, stamp, text, tags, confidence=0.5 + (n % 5) / 10))
    return [(f"wiki/memory/{name}.md", render_page(name, entries)) for name, entries in topics.items()]


def params(repo) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "gitwiki", "-C", str(repo), "serve"], env=dict(os.environ)
    )


async def timed(session, name: str, **arguments) -> float:
    started = time.perf_counter()
    result = await session.call_tool(name, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise SystemExit(f"{name} failed: {result.content}")
    return elapsed


async def run(repo, args) -> dict[str, list[float]]:
    rng = random.Random(7)
    out: dict[str, list[float]] = {
        k: [] for k in ("ping", "read", "store", "search", "brief_topic", "brief_glob", "brief_meta")
    }
    async with stdio_client(params(repo)) as streams, ClientSession(*streams) as session:
        await session.initialize()
        await timed(session, "memory_store", topic="tiny", text="one entry for the floor")
        await timed(session, "memory_search", query="warm up the model")
        await timed(session, "memory_brief", query="area-00")
        for _ in range(50):
            started = time.perf_counter()
            await session.send_ping()
            out["ping"].append((time.perf_counter() - started) * 1000)
            out["read"].append(await timed(session, "memory_read", topic="tiny"))
        for i in range(args.stores):
            text = f"{entry_text(rng, 10_000 + i)} stored by the benchmark"
            out["store"].append(
                await timed(session, "memory_store", topic=f"area-{rng.randrange(TOPICS):02d}", text=text)
            )
        for _ in range(args.searches):
            out["search"].append(
                await timed(session, "memory_search", query=" ".join(rng.sample(WORDS, rng.choice((2, 3)))))
            )
        for _ in range(args.briefs):
            out["brief_topic"].append(await timed(session, "memory_brief", query=f"area-{rng.randrange(TOPICS):02d}"))
            out["brief_glob"].append(await timed(session, "memory_brief", query=f"area-{rng.randrange(5)}*"))
            out["brief_meta"].append(await timed(session, "memory_brief"))
    return out


def embed_floor(n: int) -> list[float]:
    from gitwiki.index.embed import load_embedder
    from gitwiki.wiki import Wiki

    embedder = load_embedder(Wiki.open(WORK / "memory" / "repo").config.embeddings)
    assert embedder is not None
    rng = random.Random(11)
    embedder.embed_documents(["warm up"])
    out = []
    for i in range(n):
        text = entry_text(rng, 20_000 + i)
        started = time.perf_counter()
        embedder.embed_documents([f"area-00 > 2026-11-23T00:00:00Z — {text}\n{text}"])
        out.append((time.perf_counter() - started) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=int, default=100)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--briefs", type=int, default=100)
    args = parser.parse_args()
    use_offline_model()
    wiki_pages = [
        ("wiki/index.md", "# Home\n\nThe project wiki.\n"),
        ("wiki/deploy.md", "# Deploy\n\nWe deploy with argo.\n"),
        ("wiki/faq.md", "# FAQ\n\nAsk the platform team.\n"),
    ]
    pages = wiki_pages + memory_pages(random.Random(1))
    repo = write_repo(WORK / "memory" / "repo", pages, corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "memory" / "index")
    reports, seconds = timed_index(wiki)
    wiki.prune(keep=set())  # page versions left by earlier runs' stores
    wiki.close()
    print(f"pre-index: {reports[0].pages} pages in {seconds:.1f} s (model {reports[0].model})", file=sys.stderr)
    try:
        samples = anyio.run(run, repo, args)
        samples["embed"] = embed_floor(args.stores)
    finally:
        # The session's owner outlives it ([mcp] idle_timeout): a next run would be served by this run's process,
        # its code and its state, and the repo is reset under it.
        stop = [sys.executable, "-m", "gitwiki", "-C", str(repo), "serve", "--stop"]
        subprocess.run(stop, env=dict(os.environ), stdout=subprocess.DEVNULL, check=False)
        git(repo, "checkout", "-q", "--", ".")  # the repo is reused by the next run: drop the stored entries
        git(repo, "clean", "-fdq")
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "entries": ENTRIES,
        "topics": TOPICS,
        **{
            f"{name}_ms": {
                "p50": round(pct(v, 0.5), 2),
                "p95": round(pct(v, 0.95), 2),
                "mean": round(statistics.fmean(v), 2),
                "n": len(v),
            }
            for name, v in samples.items()
        },
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
