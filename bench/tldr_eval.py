"""The 30 how-do-I questions over the English tldr pages: hit@1, hit@5 and MRR@10 at file level.

The English `pages/` tree (7,425 pages, folder layout kept) is committed to a git repo and searched
through `Wiki.search`, so result paths are the question file's `relevant` paths as they are; scoring is
`gitwiki.operations.evaluation`'s, as in `gitwiki eval`.

    python bench/tldr_eval.py [--json]
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

from gitwiki.operations.evaluation import evaluate, load_questions, wiki_ranker


def english_pages(tldr: Path) -> list[tuple[str, str]]:
    return [(str(p.relative_to(tldr)), p.read_text(encoding="utf-8")) for p in sorted((tldr / "pages").rglob("*.md"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tldr", type=Path, default=EVAL / "tldr")
    ap.add_argument("--work", type=Path, default=WORK / "tldr-en")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    questions = load_questions(args.tldr / "questions.jsonl")
    repo = write_repo(args.work / "repo", english_pages(args.tldr), corpus_config("tldr", "pages"))
    wiki = open_wiki(repo, args.work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    scores = evaluate(wiki_ranker(wiki, depth=10), questions, MODES)
    result = {
        "pages": reports[0].pages,
        **index_figures(wiki, reports, seconds),
        "scores": {s.label: s.figures() for s in scores},
    }
    emit(result, f"tldr English: {result['pages']} pages ({result['chunks']} chunks)", scores, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
