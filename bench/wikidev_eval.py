"""Markdown wiki question sets: hit@1 / hit@5 / MRR@10 / nDCG@10 at file level, per mode (and per kind).

A set is a folder in one of two layouts:

- wiki-dev (the default, `../shared/eval/wiki-dev`): `uv/` (87 questions over the 80 pages of the uv
  docs) and `questions-uv.jsonl`;
- held-out (`bench/heldout/<name>`): `pages/` (a project's docs as fetched) and `questions.jsonl`.

The pages are committed as they are to a git repo (one corpus, named after the pages folder, or after
the set for `pages/`), indexed and searched through `Wiki.search` and scored by `gitwiki.operations.evaluation`, as
`gitwiki eval` does; `--kinds` adds a row per question kind (lexical, paraphrase, conceptual) for every
mode, labelled `<mode>/<kind> (<n>)`.

    python bench/wikidev_eval.py [--set DIR] [--json] [--kinds]
    python bench/wikidev_eval.py --set bench/heldout/click --kinds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

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

from gitwiki.operations.evaluation import evaluate as run_questions
from gitwiki.operations.evaluation import load_questions, resolve_pages, score, wiki_ranker


class WikiSet(NamedTuple):
    corpus: str  # the corpus name, also the folder the pages sit in inside the repo
    pages: list[tuple[str, str]]  # (repo path, markdown text)
    questions: Path


def wiki_set(folder: Path) -> WikiSet:
    """The pages and question file of a set folder, in the held-out or the wiki-dev layout."""
    if (folder / "pages").is_dir():
        corpus, pages_dir, questions = folder.resolve().name, folder / "pages", folder / "questions.jsonl"
    else:
        corpus, pages_dir, questions = "uv", folder / "uv", folder / "questions-uv.jsonl"
    if not pages_dir.is_dir():
        raise SystemExit(f"{folder}: no pages/ (held-out layout) or uv/ (wiki-dev layout) folder")
    pages = [
        (f"{corpus}/{p.relative_to(pages_dir)}", p.read_text(encoding="utf-8")) for p in sorted(pages_dir.rglob("*.md"))
    ]
    return WikiSet(corpus, pages, questions)


def kind_scores(scores) -> list:
    """One row per (mode, question kind), from the outcomes the modes already hold."""
    rows = []
    for s in scores:
        for kind in sorted({o.question.kind for o in s.outcomes}):
            outcomes = [o for o in s.outcomes if o.question.kind == kind]
            rows.append(score(f"{s.label}/{kind} ({len(outcomes)})", outcomes, 0.0))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=EVAL / "wiki-dev")
    ap.add_argument("--work", type=Path, help="repo and index dir (default: under the bench work dir, per set)")
    ap.add_argument("--kinds", action="store_true", help="also score each question kind in every mode")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    found = wiki_set(args.set)
    work = args.work or WORK / args.set.resolve().name
    repo = write_repo(work / "repo", found.pages, corpus_config(found.corpus, found.corpus))
    wiki = open_wiki(repo, work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    questions = resolve_pages(load_questions(found.questions), [p for p, _ in found.pages], f"{found.corpus}/")
    scores = run_questions(wiki_ranker(wiki), questions, MODES)
    if args.kinds:
        scores += kind_scores(scores)
    result = {
        "pages": reports[0].pages,
        **index_figures(wiki, reports, seconds),
        "scores": {s.label: s.figures() for s in scores},
        "ranks": {s.label: {o.question.id: o.rank for o in s.outcomes} for s in scores},
    }
    emit(result, f"{args.set.resolve().name}: {result['pages']} pages ({result['chunks']} chunks)", scores, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
