"""Index and query costs of the core, each through the real path (git repo → Wiki / `gitwiki` CLI).

Parts (default: speed, incremental, latency; `rss` is long — run it on its own, in the background):
  speed        embed the same chunk texts with bare fastembed vs `Wiki.index` end to end (ratio)
  incremental  1,000 tldr pages: no-change index and a one-page change, in-process
  latency      the same wiki: warm p50/p95 of hybrid and lexical queries, cold `gitwiki ground` CLI
  rss          index and query the first 20,000 tldr pages (all languages), report peak RSS
  mixed        100 pages in wiki/ of a 20,000-file repo: warm lexical query (the worktree check's cost)
  watch        20,000 tldr pages: warm query as `gitwiki serve` runs it (watched folders) vs a status per
               query vs no worktree at all (the floor), interleaved; each query round also edits a page
               on disk and checks the very next query finds it

    python bench/bench_index.py --parts speed,incremental,latency
    python bench/bench_index.py --parts rss
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import EVAL, WORK, corpus_config, git, open_wiki, timed_index, use_offline_model, write_repo
from tldr_eval import load_questions

TLDR = EVAL / "tldr"


def tldr_pages(count: int, english_only: bool) -> list[tuple[str, str]]:
    folders = [TLDR / "pages"] if english_only else sorted(TLDR.glob("pages*"))
    paths = sorted(p for folder in folders for p in folder.rglob("*.md"))[:count]
    return [(str(p.relative_to(TLDR)), p.read_text(encoding="utf-8")) for p in paths]


def questions() -> list[str]:
    return [q.text for q in load_questions(TLDR / "questions.jsonl")]


def fresh_wiki(name: str, pages: list[tuple[str, str]], corpus_path: str):
    """A committed repo of `pages` with an empty index dir (nothing cached)."""
    work = WORK / name
    repo = write_repo(work / "repo", pages, corpus_config(name, corpus_path))
    shutil.rmtree(work / "index", ignore_errors=True)
    return repo, open_wiki(repo, work / "index")


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# ---- (a) index speed -------------------------------------------------------------------------------


def speed(_args) -> dict:
    """Bare fastembed on the exact texts `gitwiki index` embeds, then `Wiki.index` from an empty index."""
    from fastembed import TextEmbedding

    from gitwiki.embed import _register_if_unknown
    from gitwiki.evaluation import load_beir
    from gitwiki.markdown.chunker import parse_page
    from gitwiki.store import embed_text

    pages = load_beir(EVAL / "cranfield").pages
    texts = list(
        dict.fromkeys(
            embed_text(c.breadcrumb, c.text, parsed.title)
            for parsed in (parse_page(t) for _, t in pages)
            for c in parsed.chunks
        )
    )
    repo, wiki = fresh_wiki("speed", pages, "wiki")
    config = wiki.config.embeddings

    def bare(ordered: list[str]) -> float:
        started = time.perf_counter()
        _register_if_unknown(TextEmbedding, config)
        model = TextEmbedding(model_name=config.model, specific_model_path=config.model_path, threads=config.threads)
        vectors = list(
            model.passage_embed(ordered, batch_size=config.batch_size)
        )  # fastembed's default 256 grew past 7 GiB
        assert len(vectors) == len(texts)
        return time.perf_counter() - started

    in_order = bare(texts)
    # gitwiki embeds shortest first (less padding per batch); this isolates its own overhead from that gain.
    by_length = bare(sorted(texts, key=len))

    reports, end_to_end = timed_index(wiki)
    assert reports[0].embedded == len(texts), (reports[0].embedded, len(texts))
    return {
        "pages": len(pages),
        "chunks_embedded": len(texts),
        "bare_fastembed_s": round(in_order, 1),
        "bare_fastembed_sorted_by_length_s": round(by_length, 1),
        "gitwiki_index_s": round(end_to_end, 1),
        "ratio": round(end_to_end / in_order, 3),
        "ratio_to_sorted": round(end_to_end / by_length, 3),
        "batch_size": config.batch_size,
    }


# ---- (b) incremental ---------------------------------------------------------------------------------


def incremental(args) -> dict:
    repo, wiki = fresh_wiki("incr", tldr_pages(1000, english_only=True), "pages")
    _, full = timed_index(wiki)
    no_change = []
    for _ in range(20):
        reports, seconds = timed_index(wiki)
        assert reports[0].up_to_date
        no_change.append(seconds)
    edits = []
    paths = sorted(wiki.store.pages("incr"))[::200][:5]
    for i, path in enumerate(paths):
        target = repo / path
        target.write_text(
            target.read_text(encoding="utf-8") + f"\n- Benchmark edit {i}:\n\n`true {i}`\n", encoding="utf-8"
        )
        git(repo, "commit", "-q", "-am", f"edit {path}")
        reports, seconds = timed_index(wiki)
        assert reports[0].changed == 1 and reports[0].parsed == 1, reports[0]
        edits.append((seconds, reports[0].embedded))
    args.incr_repo = repo
    return {
        "pages": 1000,
        "chunks": wiki.store.counts()["chunks"],
        "full_index_s": round(full, 1),
        "no_change_ms_median": ms(statistics.median(no_change)),
        "no_change_ms_max": ms(max(no_change)),
        "one_page_change_ms_median": ms(statistics.median(s for s, _ in edits)),
        "one_page_change_ms_max": ms(max(s for s, _ in edits)),
        "chunks_embedded_per_change": sorted({n for _, n in edits}),
    }


# ---- (c) query latency -------------------------------------------------------------------------------


def latency(args) -> dict:
    repo = getattr(args, "incr_repo", None) or WORK / "incr" / "repo"
    if not (repo / ".git").is_dir():
        raise SystemExit("run the incremental part first (it builds the 1,000-page wiki)")
    wiki = open_wiki(repo, WORK / "incr" / "index")
    qs = questions()
    out = {}
    for mode in ("lexical", "hybrid"):
        wiki.search(qs[0], mode=mode)  # load the model and the vector matrix once
        times = []
        for _ in range(3):
            for q in qs:
                started = time.perf_counter()
                wiki.search(q, mode=mode)
                times.append(time.perf_counter() - started)
        out[f"warm_{mode}_ms_p50"] = ms(statistics.median(times))
        out[f"warm_{mode}_ms_p95"] = ms(percentile(times, 95))
    # The console script beside this interpreter, as a venv runs it (a pyenv shim would add its own start-up).
    exe = Path(sys.executable).with_name("gitwiki")
    if not exe.is_file():
        sys.exit(f"no gitwiki console script beside {sys.executable}; pip install -e .")
    for mode in ("lexical", "hybrid"):
        times = []
        for q in qs[:7]:
            started = time.perf_counter()
            subprocess.run(
                [str(exe), "-C", str(repo), "ground", q, "--mode", mode, "--json"], check=True, capture_output=True
            )
            times.append(time.perf_counter() - started)
        out[f"cold_cli_{mode}_s_median"] = round(
            statistics.median(times[1:]), 3
        )  # the first run warms the OS file cache
        out[f"cold_cli_{mode}_s_max"] = round(max(times[1:]), 3)
    return out


# ---- (d) peak RSS at 20,000 pages -------------------------------------------------------------------


def rss(args) -> dict:
    pages = tldr_pages(args.rss_pages, english_only=False)
    repo, wiki = fresh_wiki("rss", pages, "")
    reports, seconds = timed_index(wiki)
    after_index = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for mode in ("hybrid", "lexical"):
        for q in questions():
            started = time.perf_counter()
            wiki.search(q, mode=mode)
            times.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "pages": len(pages),
        "chunks": wiki.store.counts()["chunks"],
        "index_s": round(seconds, 1),
        "embedded": reports[0].embedded,
        "index_mb": round(wiki.store.size_bytes() / 2**20, 1),
        "peak_rss_after_index_mib": round(after_index / 1024),
        "peak_rss_mib": round(peak / 1024),
        "query_ms_p50": ms(statistics.median(times)),
    }


# ---- (e) a small wiki in a big code repo --------------------------------------------------------------


def mixed(_args) -> dict:
    """100 tldr pages under wiki/ beside 20,000 source files: the worktree check must not cost the whole repo."""
    code = [(f"src/m{i % 200}/f{i}.py", f"x = {i}\n") for i in range(20000)]
    pages = [(f"wiki/{Path(p).name}", text) for p, text in tldr_pages(100, english_only=True)]
    work = WORK / "mixed"
    repo = write_repo(work / "repo", code + pages, corpus_config("mixed", "wiki", embeddings=False))
    wiki = open_wiki(repo, work / "index")
    wiki.index()
    times = []
    for q in questions() * 2:
        started = time.perf_counter()
        wiki.search(q, mode="lexical")
        times.append(time.perf_counter() - started)
    return {
        "tracked_files": len(code) + len(pages) + 1,
        "pages": len(pages),
        "warm_lexical_ms_p50": ms(statistics.median(times)),
    }


# ---- (f) warm queries at 20,000 pages, watched ------------------------------------------------------


def watch(args) -> dict:
    """The serve path at 20,000 pages. Vectors: the chunks the embedding cache lacks get random unit vectors
    (embedding 25,000 chunks takes 20 minutes; the dense scan costs the same whatever the values); the query
    embedding is the real model's."""
    import numpy as np

    from gitwiki.wiki import Wiki

    pages = tldr_pages(args.rss_pages, english_only=False)
    work = WORK / "watch"
    repo = write_repo(work / "repo", pages, corpus_config("watch", ""))
    wiki = open_wiki(repo, work / "index")
    wiki.index(lexical=True)
    model = wiki.embedder()
    store = wiki.store
    blobs = set(store.pages("watch").values())
    need = store.missing_vectors(model.model_id, blobs)
    rng = np.random.default_rng(0)
    for start in range(0, len(need), 2000):
        batch = need[start : start + 2000]
        matrix = rng.standard_normal((len(batch), model.dim)).astype(np.float32)
        with store.lock(), store.write():
            store.put_vectors(model.model_id, [h for h, _ in batch], matrix / np.linalg.norm(matrix, axis=1)[:, None])
    assert wiki.index()[0].embedded == 0
    watched = Wiki.open(repo)
    assert watched.watch()
    plain = Wiki.open(repo)
    committed = Wiki.open(repo)  # its own Wiki: the floor must not share the status wiki's caches
    qs = questions()
    target = repo / sorted(p for p in wiki.store.pages("watch") if p.startswith("pages/common/"))[0]
    original = target.read_text(encoding="utf-8")
    samples: dict[str, list[float]] = {}
    try:
        for mode in ("lexical", "hybrid"):
            for _, w, worktree in (("watched", watched, True), ("status", plain, True), ("floor", committed, False)):
                w.search(qs[0], mode=mode, worktree=worktree)  # the model, the matrix, the first status
            for r in range(args.rounds):
                for q in qs:
                    for name, w, worktree in (
                        ("watched", watched, True),
                        ("status", plain, True),
                        ("floor", committed, False),
                    ):
                        started = time.perf_counter()
                        w.search(q, mode=mode, worktree=worktree)
                        samples.setdefault(f"{name}_{mode}", []).append(time.perf_counter() - started)
                # An in-place edit, then at once a query: the watched wiki must see it.
                word = f"zqxfresh{mode}{r}"
                with open(target, "a", encoding="utf-8") as f:
                    f.write(f"\n{word}\n")
                started = time.perf_counter()
                hit = watched.search(word, mode="lexical")
                samples.setdefault("watched_after_edit", []).append(time.perf_counter() - started)
                assert hit.docs[0].path == str(target.relative_to(repo)), (word, hit.docs[:1])
    finally:
        target.write_text(original, encoding="utf-8")
        watched.close()
    out = {"pages": len(pages), "chunks": store.counts()["chunks"], "rounds": args.rounds}
    for key, values in samples.items():
        out[f"{key}_ms_min"] = ms(min(values))
        out[f"{key}_ms_p50"] = ms(statistics.median(values))
        out[f"{key}_ms_p95"] = ms(percentile(values, 95))
    return out


PARTS = {"speed": speed, "incremental": incremental, "latency": latency, "rss": rss, "mixed": mixed, "watch": watch}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="speed,incremental,latency", help=f"comma-separated: {', '.join(PARTS)}")
    ap.add_argument("--rss-pages", type=int, default=20000, help="pages for the rss and watch parts")
    ap.add_argument("--rounds", type=int, default=3, help="query rounds over the 30 questions (watch part)")
    args = ap.parse_args(argv)
    use_offline_model()
    os.environ.pop("GITWIKI_INDEX_DIR", None)
    results = {}
    for part in args.parts.split(","):
        results[part] = PARTS[part](args)
        print(json.dumps({part: results[part]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
