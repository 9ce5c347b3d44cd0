"""Retrieval quality on any BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/test.tsv).

Each document becomes a markdown page `wiki/<id>.md` (`# title`, blank line, text) in a git repo, indexed
and searched through `Wiki.index` / `Wiki.search`, and scored by `gitwiki.operations.evaluation` (as `gitwiki eval
--beir` does) per mode and fusion, after a re-parse of every page so the figures are the code's as it stands.

    python bench/beir_eval.py                       # ../shared/eval/cranfield
    python bench/beir_eval.py path/to/scifact --json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchlib import (
    EVAL,
    MODES,
    WORK,
    corpus_config,
    emit,
    index_figures,
    open_wiki,
    reset_text_index,
    timed_index,
    use_offline_model,
    write_repo,
)

from gitwiki.operations.evaluation import DEPTH, evaluate, load_beir, wiki_ranker


def lance_ranked(wiki, uri: str, top: int = DEPTH):
    """The same index exported to LanceDB (`gitwiki lance export`), searched with LanceDB's own BM25,
    vector search, and hybrid (the two fused with gitwiki's own RRF): the comparison behind keeping SQLite FTS5."""
    from gitwiki.search.lance_index import LanceReader, export
    from gitwiki.search.searcher import SearchOptions

    export(wiki.store, uri, wiki.config.storage.ann_min_rows)
    reader, embedder = LanceReader(uri), wiki.embedder()

    def ranked(query: str, mode: str, _fusion) -> list[str]:
        options = SearchOptions.build(
            wiki.config.search, mode=mode, fusion="rrf", top_files=top, chunks_per_file=1, limit=top, snippet_chars=80
        )
        return [d.path for d in reader.search(query, "beir", options, embedder).docs]

    return ranked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", type=Path, default=EVAL / "cranfield", help="a BEIR-format folder")
    ap.add_argument("--work", type=Path, help="work dir (default /tmp/gitwiki-bench/<folder name>)")
    ap.add_argument("--max-queries", type=int, help="evaluate only the first N judged queries")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--lance",
        action="store_true",
        help="also evaluate LanceDB's FTS / vector / hybrid over an export of the same index",
    )
    args = ap.parse_args(argv)
    use_offline_model()
    work = args.work or WORK / args.folder.resolve().name
    beir = load_beir(args.folder)
    questions = beir.questions[: args.max_queries] if args.max_queries else beir.questions
    repo = write_repo(work / "repo", beir.pages, corpus_config("beir", "wiki"))
    wiki = open_wiki(repo, work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    scores = evaluate(wiki_ranker(wiki), questions, MODES)
    if args.lance:
        lance = evaluate(
            lance_ranked(wiki, str(work / "lance")), questions, [(m, None) for m in ("lexical", "dense", "hybrid")]
        )
        scores += [s._replace(label=f"lancedb-{s.label}") for s in lance]
    result = {
        "set": str(args.folder),
        "docs": len(beir.pages),
        "queries": len(questions),
        **index_figures(wiki, reports, seconds),
        "scores": {s.label: s.figures() for s in scores},
    }
    headline = f"{result['set']}: {result['docs']} docs ({result['chunks']} chunks), {result['queries']} queries"
    emit(result, headline, scores, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
