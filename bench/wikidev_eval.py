"""wiki-dev: 87 natural questions over the 80 pages of the uv docs, hit@1 / hit@5 / MRR@10 at file level.

The `uv/` folder is committed as it is to a git repo (corpus `uv`), indexed and searched through
`Wiki.search` and scored by `gitwiki.evaluation`, as `gitwiki eval` does; `--kinds` adds a row per
question kind (lexical, paraphrase, conceptual) for the gated hybrid mode.

    python bench/wikidev_eval.py [--json] [--kinds]
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

from gitwiki.evaluation import evaluate as run_questions
from gitwiki.evaluation import load_questions, resolve_pages, score, wiki_ranker


def uv_pages(folder: Path) -> list[tuple[str, str]]:
    return [("uv/" + str(p.relative_to(folder)), p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.md"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=EVAL / "wiki-dev")
    ap.add_argument("--work", type=Path, default=WORK / "wiki-dev")
    ap.add_argument("--kinds", action="store_true", help="also score each question kind")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    pages = uv_pages(args.set / "uv")
    repo = write_repo(args.work / "repo", pages, corpus_config("uv", "uv"))
    wiki = open_wiki(repo, args.work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    questions = resolve_pages(load_questions(args.set / "questions-uv.jsonl"), [p for p, _ in pages], "uv/")
    scores = run_questions(wiki_ranker(wiki), questions, MODES)
    if args.kinds:
        gated = next(s for s in scores if s.label == "hybrid-score")
        for kind in sorted({q.kind for q in questions}):
            outcomes = [o for o in gated.outcomes if o.question.kind == kind]
            scores.append(score(f"{kind} ({len(outcomes)})", outcomes, 0.0))
    result = {
        "pages": reports[0].pages,
        **index_figures(wiki, reports, seconds),
        "scores": {s.label: s.figures() for s in scores},
        "ranks": {s.label: {o.question.id: o.rank for o in s.outcomes} for s in scores},
    }
    emit(result, f"wiki-dev: {result['pages']} pages ({result['chunks']} chunks)", scores, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
