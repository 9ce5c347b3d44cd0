"""The LanceDB export at scale: full vs incremental export time, and ANN vs exact search on all 38,404 tldr pages.

All of tldr (`pages/` and every `pages.<lang>/`, folder layout kept) is committed to one git repo and indexed
with the offline MiniLM model (real vectors; the index dir keeps its embedding cache between runs). Then:

- export: a full export to a fresh table, then an incremental one after editing a few pages, then one with
  nothing changed, each beside a floor (opening the table and counting its rows) measured in the same run;
- ANN: recall@10 of the ANN index (IVF-PQ, built above `[storage] ann_min_rows`) against exact (brute-force)
  search for held-out query vectors (real page vectors, perturbed), and the query latency of both.

Long (embedding 38k pages takes most of an hour on a loaded 2-core host): run it in the background with nice,
never in CI.

    nice python bench/bench_lance.py [--pages N] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from benchlib import EVAL, WORK, corpus_config, git, open_wiki, timed_index, use_offline_model, write_repo

EDITS = 5  # pages changed per incremental export


def all_pages(tldr: Path, limit: int | None) -> list[tuple[str, str]]:
    paths = sorted(tldr.glob("pages*/**/*.md"))[:limit]
    return [(str(p.relative_to(tldr)), p.read_text(encoding="utf-8")) for p in paths]


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, (time.perf_counter() - started) * 1000


def figures(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {
        "min": round(ordered[0], 2),
        "median": round(statistics.median(ordered), 2),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def floor_ms(uri: str) -> float:
    """Opening the table and counting its rows: what any export pays before it can tell what changed."""
    from gitwiki.lance_index import TABLE, connect

    return timed(lambda: connect(uri).open_table(TABLE).count_rows())[1]


def exports(wiki, repo: Path, uri: str, rounds: int) -> dict:
    """A full export to a fresh table, then `rounds` of (edit EDITS pages, index, export) and (export again)."""
    from gitwiki.lance_index import export

    shutil.rmtree(uri, ignore_errors=True)
    full = export(wiki.store, uri, ann_min_rows=10**12)
    result: dict = {"rows": full.rows, "full_s": round(full.seconds, 2), "incremental_s": [], "unchanged_s": []}
    result["floor_ms"] = [round(floor_ms(uri), 1)]
    pages = sorted(p.relative_to(repo).as_posix() for p in repo.glob("pages*/**/*.md"))
    base = git(repo, "rev-parse", "HEAD").strip()
    try:
        for r in range(rounds):
            for rel in random.Random(r).sample(pages, EDITS):
                with (repo / rel).open("a", encoding="utf-8") as f:
                    f.write(f"\n- Benchmark edit {r}:\n\n`echo {r}`\n")
            git(repo, "commit", "-q", "-am", f"bench edit {r}")
            wiki.index()
            changed = export(wiki.store, uri, ann_min_rows=10**12)
            same = export(wiki.store, uri, ann_min_rows=10**12)
            assert changed.inserted and not same.inserted, (changed, same)
            result["incremental_s"].append(round(changed.seconds, 2))
            result["unchanged_s"].append(round(same.seconds, 2))
            result["floor_ms"].append(round(floor_ms(uri), 1))
            result["changed_rows"] = changed.inserted + changed.deleted
    finally:
        git(repo, "reset", "-q", "--hard", base)
        wiki.index()
    return result


def ann(exact_uri: str, ann_uri: str, queries: list, refine: int) -> dict:
    """recall@10 of the IVF-PQ index against exact search, and both latencies, interleaved per query."""
    from lancedb.index import IvfPq

    from gitwiki.lance_index import TABLE, connect

    shutil.rmtree(ann_uri, ignore_errors=True)
    shutil.copytree(exact_uri, ann_uri)
    indexed = connect(ann_uri).open_table(TABLE)
    _, build_ms = timed(indexed.create_index, "vector", config=IvfPq(distance_type="cosine"), replace=True)
    exact = connect(exact_uri).open_table(TABLE)
    tiny = connect(ann_uri + "-floor").create_table(TABLE, data=exact.search().limit(1).to_arrow(), mode="overwrite")

    def top(table, vector, refine_factor=None):
        search = table.search(vector, vector_column_name="vector").distance_type("cosine").select(["key"]).limit(10)
        if refine_factor:
            search = search.refine_factor(refine_factor)
        return [row["key"] for row in search.to_list()]

    ms: dict[str, list[float]] = {"floor (1-row table)": [], "exact": [], "ivf_pq": [], f"ivf_pq refine {refine}": []}
    recall: dict[str, list[float]] = {"ivf_pq": [], f"ivf_pq refine {refine}": []}
    for vector in queries:
        ms["floor (1-row table)"].append(timed(top, tiny, vector)[1])
        truth, t = timed(top, exact, vector)
        ms["exact"].append(t)
        for name, factor in (("ivf_pq", None), (f"ivf_pq refine {refine}", refine)):
            found, t = timed(top, indexed, vector, factor)
            ms[name].append(t)
            recall[name].append(len(set(found) & set(truth)) / len(truth))
    return {
        "build_s": round(build_ms / 1000, 1),
        "recall@10": {k: round(statistics.mean(v), 3) for k, v in recall.items()},
        "ms": {k: figures(v) for k, v in ms.items()},
    }


def query_vectors(wiki, pages: list[tuple[str, str]], count: int) -> list:
    """Real queries: the `>` summary line of random pages, embedded with the model the index used."""
    summaries = [line[2:] for _, text in pages for line in text.splitlines() if line.startswith("> ")]
    chosen = random.Random(16).sample(summaries, count)
    embedder = wiki.embedder()
    return [embedder.embed_query(text) for text in chosen]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tldr", type=Path, default=EVAL / "tldr")
    ap.add_argument("--work", type=Path, default=WORK / "tldr-all")
    ap.add_argument("--pages", type=int, help="only the first N pages (default: all 38,404)")
    ap.add_argument("--rounds", type=int, default=3, help="incremental exports measured")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--refine", type=int, default=10, help="the refine factor tried beside plain IVF-PQ")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    pages = all_pages(args.tldr, args.pages)
    repo = write_repo(args.work / "repo", pages, corpus_config("tldr", ""))
    wiki = open_wiki(repo, args.work / "index")
    reports, seconds = timed_index(wiki)
    load = [os.getloadavg()[0]]
    result = {
        "pages": len(pages),
        "index_s": round(seconds, 1),
        "embedded": sum(r.embedded for r in reports),
        "export": exports(wiki, repo, str(args.work / "lance-exact"), args.rounds),
    }
    load.append(os.getloadavg()[0])
    vectors = query_vectors(wiki, pages, args.queries)
    result["ann"] = ann(str(args.work / "lance-exact"), str(args.work / "lance-ann"), vectors, args.refine)
    load.append(os.getloadavg()[0])
    result["load"] = load
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        e, a = result["export"], result["ann"]
        print(f"{result['pages']} pages, {e['rows']} rows; load {', '.join(f'{x:.1f}' for x in load)}")
        print(
            f"export: full {e['full_s']} s; incremental ({EDITS} pages, {e.get('changed_rows')} rows) "
            f"{e['incremental_s']} s; unchanged {e['unchanged_s']} s; floor (open + count) {e['floor_ms']} ms"
        )
        print(f"IVF-PQ build {a['build_s']} s; recall@10 {a['recall@10']}")
        for name, f in a["ms"].items():
            print(f"  {name:<22} min {f['min']:>7} ms  median {f['median']:>7} ms  p95 {f['p95']:>7} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
