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
