"""Warm `ground` in-process: the tool body a checkout's owner runs for each MCP call, without the stdio hops.

The 1,000-page tldr wiki of bench_mcp.py (its repo and index, the offline MiniLM model), watched and with BM25's
postings kept as `gitwiki serve` has them; each tldr question asked in turn through `WikiTools.ground` (search,
footer notes, outline), --gap ms apart (as between an agent's calls), in three ways:

  lexical         mode lexical
  hybrid          mode hybrid, the query's vector kept from an earlier round when there is one (query_vectors)
  hybrid_embed    mode hybrid with the kept vectors dropped before each call: the model runs every time

With --base DIR the same runs in a process of that checkout's code, the two alternating --processes times, so
both see the same load. Prints min / p50 per way and checkout (and the p50 of the calling thread's CPU time, which
a loaded host's scheduling moves less), the load average before and after, as JSON, and whether the two
checkouts' answers (the outline text) were the same.

    python bench/bench_ground_warm.py [--rounds 3] [--gap 10] [--base /work/main] [--processes 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WAYS = ("lexical", "hybrid", "hybrid_embed")


def measure(code: str, rounds: int, gap: float) -> dict[str, object]:
    from benchlib import WORK, corpus_config, open_wiki, timed_index, use_offline_model, write_repo

    sys.path.insert(0, code)  # ahead of benchlib's own checkout: the code measured
    from bench_index import questions, tldr_pages

    use_offline_model()
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")
    timed_index(wiki)  # nothing to do when bench_mcp.py or bench_sessions.py indexed it
    watching = wiki.watch()
    # as the owner's warm-up leaves it: BM25 from kept postings (a checkout without them ignores both)
    wiki.resident = True
    getattr(wiki.searcher, "keep_postings", lambda: None)()
    from gitwiki.mcp.server import WikiTools

    tools = WikiTools(wiki)
    queries = getattr(wiki.searcher, "queries", None)
    qs = questions()
    for way in WAYS:
        tools.ground("warm up", mode=way.split("_")[0])
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}  # the calling thread's CPU time: less of the load's noise
    answers: dict[str, list[str]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for q in qs:
            for way in WAYS:
                if way == "hybrid_embed" and queries is not None:  # this query's vector only
                    queries._vectors.pop((wiki.embedder().model_id, q), None)
                time.sleep(gap / 1000)
                started, started_cpu = time.perf_counter(), time.thread_time()
                text = tools.ground(q, mode=way.split("_")[0]).text
                times[way].append((time.perf_counter() - started) * 1000)
                cpu[way].append((time.thread_time() - started_cpu) * 1000)
                answers[way].append(text)
    wiki.close()
    return {
        "watching": watching,
        "ms": {
            w: {
                "min": round(min(t), 3),
                "p50": round(statistics.median(t), 3),
                "cpu_p50": round(statistics.median(cpu[w]), 3),
                "n": len(t),
            }
            for w, t in times.items()
        },
        "answers": answers,
    }


def run_in(code: str, rounds: int, gap: float) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": code}
    out = subprocess.run(
        [sys.executable, __file__, "--code", code, "--rounds", str(rounds), "--gap", str(gap), "--one"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gap", type=float, default=10.0, help="ms before each call")
    parser.add_argument("--base", help="another checkout, measured in alternating processes")
    parser.add_argument("--processes", type=int, default=3, help="processes per checkout with --base")
    parser.add_argument("--code", help=argparse.SUPPRESS)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        sys.path.insert(0, str(HERE))
        print(json.dumps(measure(args.code, args.rounds, args.gap)))
        return
    codes = {"this": str(HERE.parent), **({"base": str(Path(args.base).resolve())} if args.base else {})}
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in codes}
    for i in range(args.processes if args.base else 1):
        for name in list(codes)[i % len(codes) :] + list(codes)[: i % len(codes)]:
            runs[name].append(run_in(codes[name], args.rounds, args.gap))
    summary = {}
    for name, done in runs.items():
        summary[name] = {
            way: {
                "min": min(r["ms"][way]["min"] for r in done),  # type: ignore[index]
                "p50 of each process": [r["ms"][way]["p50"] for r in done],  # type: ignore[index]
                "CPU p50 of each process": [r["ms"][way].get("cpu_p50") for r in done],  # type: ignore[index]
            }
            for way in WAYS
        }
    same = len(runs) < 2 or all(r["answers"] == runs["this"][0]["answers"] for r in runs["base"])
    report = {"code": codes, "load": [load_before, os.getloadavg()], "ms": summary, "same_answers": same}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
