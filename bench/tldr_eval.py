"""The 30 how-do-I questions over the English tldr pages: hit@1, hit@5 and MRR@10 at file level.

The English `pages/` tree (7,425 pages, folder layout kept) is committed to a git repo and searched
through `Wiki.search`, so result paths are the question file's `relevant` paths as they are.

    python bench/tldr_eval.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
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

METRICS = ("hit_rate@1", "hit_rate@5", "mrr@10")
LABELS = {"hit_rate@1": "hit@1", "hit_rate@5": "hit@5", "mrr@10": "MRR@10"}


def english_pages(tldr: Path) -> list[tuple[str, str]]:
    return [(str(p.relative_to(tldr)), p.read_text(encoding="utf-8")) for p in sorted((tldr / "pages").rglob("*.md"))]


def load_questions(tldr: Path) -> list[dict]:
    lines = (tldr / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def evaluate(wiki, questions: list[dict]) -> dict:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels = {q["id"]: dict.fromkeys(q["relevant"], 1) for q in questions}
    scores = {}
    for mode, fusion in MODES:
        run = {q["id"]: run_dict(ranked_paths(wiki, q["question"], mode, fusion, 10)) for q in questions}
        values = ranx_evaluate(Qrels(qrels), Run(run), list(METRICS), make_comparable=True)
        scores[mode if fusion is None else f"{mode}-{fusion}"] = {
            LABELS[m]: round(float(values[m]), 4) for m in METRICS
        }
    return scores


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tldr", type=Path, default=EVAL / "tldr")
    ap.add_argument("--work", type=Path, default=WORK / "tldr-en")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    questions = load_questions(args.tldr)
    repo = write_repo(args.work / "repo", english_pages(args.tldr), corpus_config("tldr", "pages"))
    wiki = open_wiki(repo, args.work / "index")
    reset_text_index(wiki)
    reports, seconds = timed_index(wiki)
    scores = evaluate(wiki, questions)
    result = {
        "pages": reports[0].pages,
        "chunks": wiki.store.counts()["chunks"],
        "index_seconds": round(seconds, 1),
        "embedded": sum(r.embedded for r in reports),
        "scores": scores,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"tldr English: {result['pages']} pages ({result['chunks']} chunks); index "
            f"{result['index_seconds']} s, embedded {result['embedded']}"
        )
        print(f"{'method':<14} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7}")
        for label, s in scores.items():
            print(f"{label:<14} {s['hit@1']:>6.3f} {s['hit@5']:>6.3f} {s['MRR@10']:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
