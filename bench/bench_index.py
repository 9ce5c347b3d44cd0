"""Index and query costs of the core, each through the real path (git repo → Wiki / `gitwiki` CLI).

Parts (default: speed, incremental, latency; `rss` is long — run it on its own, in the background):
  speed        embed the same chunk texts with bare fastembed vs `Wiki.index` end to end (ratio)
  incremental  1,000 tldr pages: no-change index and a one-page change, in-process
  latency      the same wiki: warm p50/p95 of hybrid and lexical queries, cold `gitwiki ground` CLI
  rss          index and query the first 20,000 tldr pages (all languages), report peak RSS
  mixed        100 pages in wiki/ of a 20,000-file repo: warm lexical query (the worktree check's cost)
  watch        20,000 tldr pages: warm query as `gitwiki serve` runs it (watched folders) vs a status per
               query vs no worktree at all (the floor), each in its own process, asked in turn; each query
               round also edits a page on disk and checks the very next query finds it. `--against
               /work/main` adds a watched process on that checkout's package (an A/B in the same run)

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

TLDR = EVAL / "tldr"
FLOOR_BATCH = 32


def tldr_pages(count: int, english_only: bool) -> list[tuple[str, str]]:
    folders = [TLDR / "pages"] if english_only else sorted(TLDR.glob("pages*"))
    paths = sorted(p for folder in folders for p in folder.rglob("*.md"))[:count]
    return [(str(p.relative_to(TLDR)), p.read_text(encoding="utf-8")) for p in paths]


def questions() -> list[str]:
    from tldr_eval import load_questions  # it imports gitwiki: a `--watch-worker --code DIR` must choose first

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

    from gitwiki.index.embed import _register_if_unknown
    from gitwiki.index.store import embed_text
    from gitwiki.markdown.chunker import parse_page
    from gitwiki.operations.evaluation import load_beir

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
        if config.model_path:
            _register_if_unknown(config.model, config.model_path)
        model = TextEmbedding(model_name=config.model, specific_model_path=config.model_path, threads=config.threads)
        # batches of 32, as this floor was always measured (fastembed's default 256 grew past 7 GiB)
        vectors = list(model.passage_embed(ordered, batch_size=FLOOR_BATCH))
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
        "floor_batch_size": FLOOR_BATCH,
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

# Each variant is its own process holding one Wiki, as `gitwiki serve` does: three Wikis in one process
# (three copies of the 25,000 x 384 vectors, one heap, one garbage collector) measured a hybrid p50 of
# 31.2 ms where the same query on one Wiki alone took 12.6 ms (docs/research/scale.md).
VARIANTS = {"watched": True, "status": True, "floor": False}  # name → searches the worktree
# Between two questions, as an agent's calls come seconds apart: with fastembed's sessions onnxruntime's
# threads spin after a query embedding and, with no pause, took the CPU from the next variant's process
# (hybrid p50 45-50 ms against 18 ms, the minima the same).
PAUSE = 0.05


def watch(args) -> dict:
    """The serve path at 20,000 pages. Vectors: the chunks the embedding cache lacks get random unit vectors
    (embedding 25,000 chunks takes 20 minutes; the dense scan costs the same whatever the values); the query
    embedding is the real model's. The parent asks the variant processes in turn, one query at a time, the
    order rotating per question, so each sees the same load; `--against DIR` adds a `watched` process
    running the gitwiki package of another checkout (main), whose answers must be the same."""
    import numpy as np

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
    chunks = store.counts()["chunks"]
    target = repo / sorted(p for p in store.pages("watch") if p.startswith("pages/common/"))[0]
    wiki.close()
    workers = {name: Worker(repo, name, None) for name in VARIANTS}
    if args.against:
        workers["against_watched"] = Worker(repo, "watched", args.against)
    qs = questions()
    original = target.read_text(encoding="utf-8")
    samples: dict[str, list[tuple[float, float]]] = {}
    differ = 0
    try:
        for mode in ("lexical", "hybrid"):
            for worker in workers.values():
                worker.ask(qs[0], mode)  # the model, the matrix, the first status
            for r in range(args.rounds):
                for i, q in enumerate(qs):
                    names = list(workers)
                    names = names[i % len(names) :] + names[: i % len(names)]
                    answers = {name: workers[name].ask(q, mode) for name in names}
                    for name, (wall, cpu, _) in answers.items():
                        samples.setdefault(f"{name}_{mode}", []).append((wall, cpu))
                    if "against_watched" in answers:
                        differ += answers["against_watched"][2] != answers["watched"][2]
                # An in-place edit, then at once a query: each watched process must see it.
                word = f"zqxfresh{mode}{r}"
                with open(target, "a", encoding="utf-8") as f:
                    f.write(f"\n{word}\n")
                for name, worker in workers.items():
                    if worker.variant == "watched":
                        wall, _, top = worker.ask(word, "lexical", top=True)
                        assert top == str(target.relative_to(repo)), (name, word, top)
                        samples.setdefault(f"{name}_after_edit", []).append((wall, 0.0))
    finally:
        target.write_text(original, encoding="utf-8")
        for worker in workers.values():
            worker.close()
    out: dict[str, object] = {"pages": len(pages), "chunks": chunks, "rounds": args.rounds}
    if args.against:
        out["answers_differing_from_against"] = differ
    for key, pairs in samples.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        out[f"{key}_ms"] = f"{ms(min(walls))} / {ms(statistics.median(walls))} / {ms(percentile(walls, 95))}"
        if not key.endswith("after_edit"):
            out[f"{key}_cpu_ms"] = f"{ms(min(cpus))} / {ms(statistics.median(cpus))}"
    out["load_average"] = os.getloadavg()
    return out


class Worker:
    """One variant's process (`--watch-worker`): reads a query per line, answers with its timings."""

    def __init__(self, repo: Path, variant: str, code: str | None) -> None:
        self.variant = variant
        command = [sys.executable, __file__, "--watch-worker", variant, "--repo", str(repo)]
        env = {**os.environ, "GITWIKI_INDEX_DIR": str(WORK / "watch" / "index")}
        if code:
            command += ["--code", code]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self._proc.stdout is not None and self._proc.stdout.readline().strip() == "ready", variant

    def ask(self, query: str, mode: str, top: bool = False) -> tuple[float, float, str]:
        """(wall s, the query thread's CPU s, the answer: its first path with `top`, else a digest of its JSON)"""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        time.sleep(PAUSE)
        self._proc.stdin.write(json.dumps({"q": query, "mode": mode, "top": top}) + "\n")
        self._proc.stdin.flush()
        wall, cpu, answer = json.loads(self._proc.stdout.readline())
        return wall, cpu, answer

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


def watch_worker(variant: str, repo: str, code: str | None) -> int:
    import hashlib

    if code:  # the package of another checkout, for an A/B in the same run
        sys.path.insert(0, code)
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(repo)
    if variant == "watched":
        assert wiki.watch()
    print("ready", flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        started, cpu = time.perf_counter(), time.thread_time()
        found = wiki.search(asked["q"], mode=asked["mode"], worktree=VARIANTS[variant])
        wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
        if asked["top"]:
            answer = found.docs[0].path if found.docs else ""
        else:
            answer = hashlib.sha1(json.dumps(found.to_json(), sort_keys=True).encode()).hexdigest()
        print(json.dumps([wall, cpu, answer]), flush=True)
    wiki.close()
    return 0


PARTS = {"speed": speed, "incremental": incremental, "latency": latency, "rss": rss, "mixed": mixed, "watch": watch}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="speed,incremental,latency", help=f"comma-separated: {', '.join(PARTS)}")
    ap.add_argument("--rss-pages", type=int, default=20000, help="pages for the rss and watch parts")
    ap.add_argument("--rounds", type=int, default=3, help="query rounds over the 30 questions (watch part)")
    ap.add_argument("--against", metavar="DIR", help="watch part: also time the gitwiki package in checkout DIR")
    ap.add_argument("--watch-worker", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--repo", help=argparse.SUPPRESS)
    ap.add_argument("--code", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.watch_worker:
        use_offline_model()
        return watch_worker(args.watch_worker, args.repo, args.code)
    use_offline_model()
    os.environ.pop("GITWIKI_INDEX_DIR", None)
    results = {}
    for part in args.parts.split(","):
        results[part] = PARTS[part](args)
        print(json.dumps({part: results[part]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
