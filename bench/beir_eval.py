"""Retrieval quality on any BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/test.tsv).

Each document becomes a markdown page `wiki/<id>.md` (`# title`, blank line, text) in a git repo,
indexed and searched through `Wiki.index` / `Wiki.search`; nDCG@10 and Recall@100 come from ranx.

    python bench/beir_eval.py                       # ../shared/eval/cranfield
    python bench/beir_eval.py path/to/scifact --json
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path

from benchlib import (
    EVAL,
    MODES,
    WORK,
    corpus_config,
    open_wiki,
    ranked_paths,
    reset_text_index,
    run_dict,
    timed_index,
    use_offline_model,
    write_repo,
)

METRICS = ("ndcg@10", "recall@100")
TOP = 100  # pages retrieved per query


def load_beir(folder: Path, split: str = "test"):
    """(corpus {id: (title, text)}, queries {id: text}, qrels {qid: {doc id: grade}}) of judged queries."""
    corpus = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t")
        next(rows)  # header
        for qid, did, score in rows:
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    return corpus, queries, qrels


def page_name(doc_id: str) -> str:
    return "wiki/" + re.sub(r"[^A-Za-z0-9_.-]", "_", doc_id) + ".md"


def page_text(title: str, text: str) -> str:
    return f"# {title.strip()}\n\n{text.strip()}\n" if title.strip() else f"{text.strip()}\n"


def evaluate(ranked, methods, queries: dict[str, str], qrels: dict, doc_of: dict[str, str]) -> dict:
    """nDCG@10 / Recall@100 per (mode, fusion) in `methods`; `ranked(query, mode, fusion)` gives page paths."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    out = {}
    for mode, fusion in methods:
        started = time.perf_counter()
        run = {qid: run_dict(ranked(q, mode, fusion), doc_of.get) for qid, q in queries.items()}
        seconds = time.perf_counter() - started
        scores = ranx_evaluate(Qrels(qrels), Run(run), list(METRICS), make_comparable=True)
        label = mode if fusion is None else f"{mode}-{fusion}"
        out[label] = {
            **{m: round(float(scores[m]), 4) for m in METRICS},
            "ms_per_query": round(1000 * seconds / len(queries), 1),
        }
    return out


def lance_ranked(wiki, uri: str, top: int = TOP):
    """The same index exported to LanceDB (`gitwiki lance export`), searched with LanceDB's own BM25,
    vector search and hybrid (its default RRF reranker): the comparison behind keeping SQLite FTS5."""
    from gitwiki.lance_index import LanceReader, export
    from gitwiki.search import SearchOptions

    export(wiki.store, uri)
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
    corpus, queries, qrels = load_beir(args.folder)
    if args.max_queries:
        queries = dict(list(queries.items())[: args.max_queries])
        qrels = {q: qrels[q] for q in queries}
    pages = [(page_name(did), page_text(*corpus[did])) for did in corpus]
    doc_of = {page_name(did): did for did in corpus}
    repo = write_repo(work / "repo", pages, corpus_config("beir", "wiki"))
    wiki = open_wiki(repo, work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    result = {
        "set": str(args.folder),
        "docs": len(corpus),
        "queries": len(queries),
        "chunks": wiki.store.counts()["chunks"],
        "index_seconds": round(seconds, 1),
        "embedded": sum(r.embedded for r in reports),
        "scores": evaluate(
            lambda q, mode, fusion: ranked_paths(wiki, q, mode, fusion, TOP), MODES, queries, qrels, doc_of
        ),
    }
    if args.lance:
        lance = lance_ranked(wiki, str(work / "lance"))
        lance_modes = (("lexical", None), ("dense", None), ("hybrid", None))
        result["scores"].update(
            {f"lancedb-{k}": v for k, v in evaluate(lance, lance_modes, queries, qrels, doc_of).items()}
        )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['set']}: {result['docs']} docs ({result['chunks']} chunks), {result['queries']} queries; "
            f"index {result['index_seconds']} s, embedded {result['embedded']}"
        )
        print(f"{'method':<16} {'nDCG@10':>8} {'R@100':>8} {'ms/q':>7}")
        for label, s in result["scores"].items():
            print(f"{label:<16} {s['ndcg@10']:>8.4f} {s['recall@100']:>8.4f} {s['ms_per_query']:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
