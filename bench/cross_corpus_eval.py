"""Search across corpora: wiki-dev (87 questions, the 80 pages of the uv docs) split across two corpora and searched
as one (`ground --corpus a,b`, fused by `sources.fuse`), against the same pages in one corpus.

One repo holds `uv/` once; corpus `uv` takes every page, `half-a` the folders concepts, getting-started, pip and
index.md (38 pages), `half-b` guides and reference (42), and `splitK-J` (K = 2, 4, 8; J < K) the pages dealt round
by round in path order, page i to corpus i mod K. Every corpus shares the page versions, so one index (and one
embedding of each chunk) serves all. Each question is asked for the top `--depth` pages. `fused` is the product
(`ground --corpus a,b,...`); for comparison, the same split merged other ways, each corpus asked on its own:
`raw` by the corpora's raw page scores; `dbsf@N`, `minmax@N` with each corpus asked N pages (`--pool`) and
normalized by `ranking.dbsf` or `ranking.min_max` before the cut (`dbsf@50` is what `fuse` did for every list of
corpora before they were searched as one view).

`--separate` also deals the pages into K = 2, 4, 8 SEPARATE git repositories (`sepK-J`), declared as path
[[repository]] entries and synced, each into an index file of its own: `sepK` searches their K `repo:sepK-J:wiki`
corpora together (`sources.search_shards`: BM25 with the statistics of all K indexes, one fusion), `sepK dbsf@N`
merges them searched one by one (what a search over several indexes did before).

    python bench/cross_corpus_eval.py [--json] [--depth 10] [--separate]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from benchlib import EVAL, WORK, emit, index_figures, open_wiki, timed_index, use_offline_model, write_repo
from wikidev_eval import wiki_set

from gitwiki.operations.evaluation import evaluate, load_questions, resolve_pages
from gitwiki.search.ranking import dbsf, min_max

HALF_A = ("concepts", "getting-started", "pip")
HALF_B = ("guides", "reference")


def _include(folders: tuple[str, ...], extra: tuple[str, ...] = ()) -> str:
    globs = [g for f in folders for g in (f"{f}/*.md", f"{f}/**/*.md")] + list(extra)
    return "[" + ", ".join(f'"{g}"' for g in globs) + "]"


SPLITS = (2, 4, 8)


def _split_config(paths: list[str]) -> str:
    """Corpora splitK-J: page i (in path order, `uv/`-relative) in corpus i mod K."""
    out = []
    for k in SPLITS:
        for j in range(k):
            mine = "[" + ", ".join(f'"{p}"' for p in paths[j::k]) + "]"
            out.append(f'[[corpus]]\nname = "split{k}-{j}"\npath = "uv"\ninclude = {mine}\n')
    return "\n".join(out)


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


SEPARATE = '[[corpus]]\nname = "uv"\npath = "uv"\n'


def _separate(work, pages: list[tuple[str, str]]) -> str:
    """Repositories sepK-J, each a git repo holding page i (in path order) when i mod K = J, as [[repository]]
    entries for the checkout's config."""
    pages = sorted(pages)
    out = []
    for k in SPLITS:
        for j in range(k):
            repo = write_repo(work / f"sep{k}-{j}", pages[j::k], SEPARATE)
            out.append(f'[[repository]]\nname = "sep{k}-{j}"\npath = "{repo}"\nwiki = "uv"\n')
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=10, help="pages asked of each corpus and kept (default 10)")
    ap.add_argument("--pool", type=int, default=50, help="pages asked of each corpus for the deep variants")
    ap.add_argument("--separate", action="store_true", help="also split into separate synced repositories")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    work = WORK / "cross-corpus"
    pages = wiki_set(EVAL / "wiki-dev").pages
    relative = sorted(p.removeprefix("uv/") for p, _ in pages)
    config = CONFIG + "\n" + _split_config(relative)
    if args.separate:
        # The repositories' indexes and the consent to them live in the work dir, not the user's own dirs.
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        os.environ["XDG_CONFIG_HOME"] = str(work / "config")
        config += "\n" + _separate(work / "separate", pages)
    repo = write_repo(work / "repo", pages, config)
    wiki = open_wiki(repo, work / "index")
    reports, seconds = timed_index(wiki)
    if args.separate:
        wiki.repositories.allow([])
        for synced in wiki.repositories.sync(None, wiki.config.embeddings):
            reports += synced.reports
    sizes = {r.corpus: r.pages for r in reports if not r.corpus.startswith("repo:")}
    assert sizes["half-a"] + sizes["half-b"] == sizes["uv"], sizes  # the halves split the pages, no overlap
    for k in SPLITS:
        assert sum(sizes[f"split{k}-{j}"] for j in range(k)) == sizes["uv"], sizes
    questions = resolve_pages(load_questions(EVAL / "wiki-dev" / "questions-uv.jsonl"), [p for p, _ in pages], "uv/")

    def search(corpus: str, text: str, mode: str, fusion: str | None, depth: int = args.depth):
        return wiki.search(
            text, corpus, mode=mode, fusion=fusion, top_files=depth, chunks_per_file=1, limit=depth, snippet_chars=1
        )

    def ranker(corpus: str):
        return lambda text, mode, fusion: [d.path for d in search(corpus, text, mode, fusion).docs]

    def merged(normalize, depth: int, corpora: tuple[str, ...] = ("half-a", "half-b")):
        """The corpora asked `depth` pages each, each list normalized by `normalize`, merged, cut to --depth."""

        def rank(text: str, mode: str, fusion: str | None) -> list[str]:
            scored = []
            for half in corpora:
                docs = search(half, text, mode, fusion, depth).docs
                scored += [(s, docs[i].path) for i, s in normalize([(i, d.score) for i, d in enumerate(docs)])]
            return [path for _, path in sorted(scored, key=lambda s: -s[0])][: args.depth]

        return rank

    modes = (("lexical", None), ("hybrid", "score"))
    deep = args.pool
    methods: tuple[tuple[str, Callable[[str, str, str | None], list[str]]], ...] = (
        ("one", ranker("uv")),
        ("fused", ranker("half-a,half-b")),
        ("raw", merged(lambda ranked: [(i, s) for i, s in ranked], args.depth)),
        (f"dbsf@{deep}", merged(dbsf, deep)),
        (f"minmax@{args.depth}", merged(min_max, args.depth)),
        (f"minmax@{deep}", merged(min_max, deep)),
    )
    for k in SPLITS:
        names = tuple(f"split{k}-{j}" for j in range(k))
        methods += ((f"split{k} fused", ranker(",".join(names))), (f"split{k} dbsf@{deep}", merged(dbsf, deep, names)))
    if args.separate:
        for k in SPLITS:
            names = tuple(f"repo:sep{k}-{j}:wiki" for j in range(k))
            methods += ((f"sep{k}", ranker(",".join(names))), (f"sep{k} dbsf@{deep}", merged(dbsf, deep, names)))
    scores = []
    for label, rank in methods:
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
