"""The LanceDB export at scale: full vs incremental export time, and ANN vs exact search on all 38,404 tldr pages.

All of tldr (`pages/` and every `pages.<lang>/`, folder layout kept) is committed to one git repo and indexed
with the offline MiniLM model (real vectors; the index dir keeps its embedding cache between runs). Then:

- export: a full export to a fresh table, then an incremental one after editing a few pages, then one with
  nothing changed, each beside a floor (opening the table and counting its rows) measured in the same run;
- ANN: recall@10 of the ANN index (IVF-HNSW-SQ, built above `[storage] ann_min_rows`) and of the IVF-PQ it
  replaced against exact (brute-force) search, for real queries (the `>` summary lines of random pages, embedded
  with the index's model), and the latency of each: the raw vector query beside a 1-row table's (the floor), and
  `LanceReader`'s hybrid search.

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
    from gitwiki.search.lance_index import TABLE, connect

    return timed(lambda: connect(uri).open_table(TABLE).count_rows())[1]


def exports(wiki, repo: Path, uri: str, rounds: int) -> dict:
    """A full export to a fresh table, then `rounds` of (edit EDITS pages, index, export) and (export again)."""
    import lancedb  # noqa: F401 (imported here so the first export's time is the export's, 1.3-3 s less)

    from gitwiki.search.lance_index import export

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
            result["unchanged_s"].append(round(same.seconds, 3))
            result["floor_ms"].append(round(floor_ms(uri), 1))
            result["changed_rows"] = changed.inserted + changed.deleted
    finally:
        git(repo, "reset", "-q", "--hard", base)
        wiki.index()
    return result


def ann(wiki, exact_uri: str, ann_uri: str, texts: list[str], refine: int) -> dict:
    """recall@10 of the ANN indexes against exact search and their latencies, interleaved per query: the raw
    vector query — the IVF-HNSW-SQ index `export` builds at two `ef`, and IVF-PQ (what it built before) with
    lancedb's default probes and more, with and without a refine — and `LanceReader`'s hybrid search (query
    embedding, tag check, FTS, vectors, fusion)."""
    from lancedb.index import IvfPq

    from gitwiki.config import SearchConfig
    from gitwiki.search.lance_index import TABLE, LanceReader, connect, export
    from gitwiki.search.searcher import SearchOptions

    shutil.rmtree(ann_uri, ignore_errors=True)
    built = export(wiki.store, ann_uri, ann_min_rows=0)
    assert built.ann_index, built
    exact, indexed = connect(exact_uri).open_table(TABLE), connect(ann_uri).open_table(TABLE)
    tiny = connect(ann_uri + "-floor").create_table(TABLE, data=exact.search().limit(1).to_arrow(), mode="overwrite")
    pq = connect(ann_uri + "-pq").create_table(TABLE, data=exact.to_arrow(), mode="overwrite")
    started = time.perf_counter()
    pq.create_index("vector", config=IvfPq(distance_type="cosine"))
    pq_build_s = time.perf_counter() - started
    embedder = wiki.embedder()
    vectors = [embedder.embed_query(text) for text in texts]

    def top(table, vector, refine_factor=None, nprobes=None, ef=None):
        search = table.search(vector, vector_column_name="vector").distance_type("cosine").select(["key"]).limit(10)
        if refine_factor:
            search = search.refine_factor(refine_factor)
        if nprobes:
            search = search.nprobes(nprobes)
        if ef:
            search = search.ef(ef)
        return [row["key"] for row in search.to_list()]

    variants = {
        "ivf_pq": (pq, {}),
        f"ivf_pq refine {refine}": (pq, {"refine_factor": refine}),
        f"ivf_pq nprobes 50 refine {refine}": (pq, {"refine_factor": refine, "nprobes": 50}),
        "ivf_hnsw_sq ef 50": (indexed, {"ef": 50}),
        "ivf_hnsw_sq ef 150": (indexed, {"ef": 150}),
    }
    ms: dict[str, list[float]] = {"floor (1-row table)": [], "exact": [], **{name: [] for name in variants}}
    recall: dict[str, list[float]] = {name: [] for name in variants}
    for vector in vectors:
        ms["floor (1-row table)"].append(timed(top, tiny, vector)[1])
        truth, t = timed(top, exact, vector)
        ms["exact"].append(t)
        for name, (table, settings) in variants.items():
            found, t = timed(top, table, vector, **settings)
            ms[name].append(t)
            recall[name].append(len(set(found) & set(truth)) / len(truth))
    options = SearchOptions.build(SearchConfig(), mode="hybrid")
    readers = {"reader hybrid, exact": LanceReader(exact_uri), "reader hybrid, ivf_hnsw_sq": LanceReader(ann_uri)}
    for text in texts[:50]:
        for name, reader in readers.items():
            ms.setdefault(name, []).append(timed(reader.search, text, "tldr", options, embedder)[1])
    return {
        "full_export_with_index_s": round(built.seconds, 1),
        "ivf_pq_build_s": round(pq_build_s, 1),
        "recall@10": {k: round(statistics.mean(v), 3) for k, v in recall.items()},
        "ms": {k: figures(v) for k, v in ms.items()},
    }


def query_texts(pages: list[tuple[str, str]], count: int) -> list[str]:
    """Real queries: the `>` summary line of random pages (embedded with the index's model when asked)."""
    summaries = [line[2:] for _, text in pages for line in text.splitlines() if line.startswith("> ")]
    return random.Random(16).sample(summaries, count)


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
    texts = query_texts(pages, args.queries)
    result["ann"] = ann(wiki, str(args.work / "lance-exact"), str(args.work / "lance-ann"), texts, args.refine)
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
        built = f"IVF-PQ built in {a['ivf_pq_build_s']} s"
        print(f"full export with IVF-HNSW-SQ {a['full_export_with_index_s']} s; {built}")
        print(f"recall@10 {a['recall@10']}")
        for name, f in a["ms"].items():
            print(f"  {name:<34} min {f['min']:>7} ms  median {f['median']:>7} ms  p95 {f['p95']:>7} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
