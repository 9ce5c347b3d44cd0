"""Search across corpora: wiki-dev (87 questions, the 80 pages of the uv docs) split across two corpora and searched
as one (`ground --corpus a,b`, fused by `sources.fuse`), against the same pages in one corpus.

One repo holds `uv/` once; corpus `uv` takes every page, `half-a` the folders concepts, getting-started, pip and
index.md (38 pages), `half-b` guides and reference (42). The three corpora share the page versions, so one index
(and one embedding of each chunk) serves all. Each question is asked for the top `--depth` pages (each corpus of
the split is asked as deep); `raw` is the same split merged by the corpora's raw page scores, for comparison.

    python bench/cross_corpus_eval.py [--json] [--depth 10]
"""

from __future__ import annotations

import argparse
import sys

from benchlib import EVAL, WORK, emit, index_figures, open_wiki, timed_index, use_offline_model, write_repo
from wikidev_eval import uv_pages

from gitwiki.evaluation import evaluate, load_questions, resolve_pages

HALF_A = ("concepts", "getting-started", "pip")
HALF_B = ("guides", "reference")


def _include(folders: tuple[str, ...], extra: tuple[str, ...] = ()) -> str:
    globs = [g for f in folders for g in (f"{f}/*.md", f"{f}/**/*.md")] + list(extra)
    return "[" + ", ".join(f'"{g}"' for g in globs) + "]"


CONFIG = f"""[[corpus]]
name = "uv"
path = "uv"

[[corpus]]
name = "half-a"
path = "uv"
include = {_include(HALF_A, ("index.md",))}

[[corpus]]
name = "half-b"
path = "uv"
include = {_include(HALF_B)}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10, help="pages asked of each corpus and kept (default 10)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    work = WORK / "cross-corpus"
    pages = uv_pages(EVAL / "wiki-dev" / "uv")
    repo = write_repo(work / "repo", pages, CONFIG)
    wiki = open_wiki(repo, work / "index")
    reports, seconds = timed_index(wiki)
    sizes = {r.corpus: r.pages for r in reports}
    assert sizes["half-a"] + sizes["half-b"] == sizes["uv"], sizes  # the halves split the pages, no overlap
    questions = resolve_pages(load_questions(EVAL / "wiki-dev" / "questions-uv.jsonl"), [p for p, _ in pages], "uv/")

    def search(corpus: str, text: str, mode: str, fusion: str | None):
        depth = args.depth
        return wiki.search(
            text, corpus, mode=mode, fusion=fusion, top_files=depth, chunks_per_file=1, limit=depth, snippet_chars=1
        )

    def ranker(corpus: str):
        return lambda text, mode, fusion: [d.path for d in search(corpus, text, mode, fusion).docs]

    def raw(text: str, mode: str, fusion: str | None) -> list[str]:
        docs = [d for half in ("half-a", "half-b") for d in search(half, text, mode, fusion).docs]
        return [d.path for d in sorted(docs, key=lambda d: -d.score)][: args.depth]

    modes = (("lexical", None), ("hybrid", "score"))
    scores = []
    for label, rank in (("one", ranker("uv")), ("fused", ranker("half-a,half-b")), ("raw", raw)):
        for s in evaluate(rank, questions, modes):
            scores.append(s._replace(label=f"{label}: {s.label}"))
    result = {
        "pages": sizes,
        "depth": args.depth,
        **index_figures(wiki, reports, seconds),
        "scores": {s.label: s.figures() for s in scores},
    }
    emit(result, f"cross-corpus wiki-dev: {sizes} pages, depth {args.depth}", scores, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
