"""Shared plumbing for the benchmarks: data sets written as real git repos, and a Wiki over them.

Every benchmark goes through the real git-keyed path (pages committed to a repo, `Wiki.index`,
`Wiki.search`), never a shortcut into the store. Work dirs live under /tmp by default and are reused:
a repo whose pages are unchanged is not rewritten, and the index dir keeps its embedding cache, so a
second run only re-embeds chunk texts that changed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# shared/ sits beside the main checkout; a worktree elsewhere names it with GITWIKI_BENCH_SHARED.
SHARED = Path(os.environ.get("GITWIKI_BENCH_SHARED", ROOT.parent / "shared"))
EVAL = SHARED / "eval"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WORK = Path(os.environ.get("GITWIKI_BENCH_WORK", "/tmp/gitwiki-bench"))
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}

sys.path.insert(0, str(ROOT))


def use_offline_model() -> None:
    """Point gitwiki at the offline MiniLM model unless the caller chose another one."""
    if "GITWIKI_MODEL_PATH" not in os.environ and (MODEL_DIR / "model.onnx").is_file():
        os.environ["GITWIKI_MODEL_PATH"] = str(MODEL_DIR)
        os.environ["GITWIKI_MODEL"] = MODEL_NAME
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def compiled(code: str | Path) -> None:
    """Byte-compile the gitwiki tree at `code` that spawned processes will import: where PYTHONDONTWRITEBYTECODE
    is set (this sandbox sets it) a tree never written a `.pyc` for, or one whose sources changed since, is
    compiled from source in every process, 50-150 ms of each start (an installed gitwiki is compiled once)."""
    import compileall

    compileall.compile_dir(str(Path(code) / "gitwiki"), quiet=1)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def write_repo(repo: Path, pages: Iterable[tuple[str, str]], config: str) -> Path:
    """A git repo holding exactly `pages` (path, text) and `.gitwiki.toml`, committed; reused when identical."""
    from gitwiki.operations.evaluation import write_corpus_repo

    return write_corpus_repo(repo, list(pages), config)


def corpus_config(name: str, path: str, embeddings: bool = True) -> str:
    text = f'[[corpus]]\nname = "{name}"\npath = "{path}"\n'
    return text if embeddings else text + "\n[embeddings]\nenabled = false\n"


def open_wiki(repo: Path, index_dir: Path):
    """A Wiki over `repo` whose index lives in `index_dir` (kept between runs for its vector cache)."""
    from gitwiki.wiki import Wiki

    os.environ["GITWIKI_INDEX_DIR"] = str(index_dir)
    return Wiki.open(repo)


def reset_text_index(wiki) -> None:
    """Forget parsed pages, chunks and FTS rows but keep cached vectors.

    Blobs are content-addressed, so an index built by an older chunker or tokenizer would otherwise be
    reused as it is; a benchmark must measure the code as it stands now.
    """
    store = wiki.store
    with store.lock(), store.write():
        for table in ("fts", "chunks", "blobs", "pages", "states"):
            store.conn.execute(f"DELETE FROM {table}")


def timed_index(wiki, lexical: bool = False):
    started = time.perf_counter()
    reports = wiki.index(lexical=lexical)
    return reports, time.perf_counter() - started


def index_figures(wiki, reports, seconds: float) -> dict:
    """What every eval script reports about the index it built: chunks, time, chunks embedded."""
    return {
        "chunks": wiki.store.counts()["chunks"],
        "index_seconds": round(seconds, 1),
        "embedded": sum(r.embedded for r in reports),
    }


def emit(result: dict, headline: str, scores, as_json: bool) -> None:
    """An eval script's result: the whole dict as JSON, or its headline and the score table."""
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{headline}; index {result['index_seconds']} s, embedded {result['embedded']}")
        print_scores(scores)


def median_ms(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 1)


def print_result(result: dict, as_json: bool) -> None:
    """A bench's flat result: the dict as JSON, or one `key value` line each."""
    if as_json:
        print(json.dumps(result, indent=2))
        return
    width = max(map(len, result)) + 1
    for key, value in result.items():
        print(f"{key:{width}} {value}")


def print_scores(scores) -> None:
    """The figures of `gitwiki.operations.evaluation.ModeScore`s as a table."""
    width = max([18, *(len(s.label) for s in scores)])
    print(f"{'method':<{width}} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7} {'nDCG@10':>8} {'R@100':>6} {'ms/q':>7}")
    for s in scores:
        print(
            f"{s.label:<{width}} {s.hit1:>6.3f} {s.hit5:>6.3f} {s.mrr10:>7.3f} {s.ndcg10:>8.4f} {s.recall100:>6.3f} "
            f"{s.ms_per_query:>7.1f}"
        )


MODES = (("lexical", None), ("dense", None), ("hybrid", "rrf"), ("hybrid", "score"))
