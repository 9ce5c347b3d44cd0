"""How honest is the `weak` flag? Per set, the share of questions flagged weak with their answer pages
present, with those pages removed from the searched view (as if deleted), and for questions from another
set (off topic), plus stop-word-only and punctuation queries, and for queries no set answers (`JUNK`:
15 of gibberish, 15 everyday off-topic needs, written before they were measured). Also: how often a section
index page (`index.md`) ranks above every answer page. A set is a public one by name or a set folder
(`bench/heldout/click`, `bench/identifiers/hatch`).

Runs over the work dirs the other quality benchmarks build (wikidev_eval.py, beir_eval.py, tldr_eval.py);
it indexes a set first if needed.

    python bench/weak_eval.py [--sets wiki-dev,cranfield,scifact,tldr] [--mode hybrid] [--json]
    python bench/weak_eval.py --sets wiki-dev,bench/heldout/click,bench/heldout/starlette
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchlib import EVAL, WORK, corpus_config, open_wiki, use_offline_model, write_repo
from tldr_eval import english_pages
from wikidev_eval import wiki_set

from gitwiki.operations.evaluation import Question, load_beir, load_questions, resolve_pages
from gitwiki.search.searcher import SearchOptions

NONSENSE = ("the", "?!", "and of the", "what is it", "...", "how do I")
GIBBERISH = (
    "zxqv blorf wibble",
    "qwpeo ruty zmxn",
    "flibber jabberwock snorp",
    "asdf ghjk lqwe",
    "blarg frobnicate quuxle",
    "wobble gronk plimsy",
    "xyzzy plugh frotz",
    "vorpal snicker snack",
    "trzl mbwq ffkj",
    "glorp snazzle wumpus",
    "kvetch zorb fliggle",
    "oompa loompa doompadee",
    "grizzlebrat plonk",
    "shmoo blivet zounds",
    "pfft mrrp hnng",
)
OFF_TOPIC = (
    "recipe for banana bread",
    "how to knit a scarf",
    "best hiking trails in Colorado",
    "when do tulips bloom",
    "how long to boil an egg",
    "who won the world cup in 1998",
    "symptoms of the common cold",
    "how to train a puppy to sit",
    "cheap flights to Lisbon",
    "chocolate chip cookie ingredients",
    "how to tie a tie",
    "what is the capital of Australia",
    "lyrics of a famous love song",
    "how to remove red wine stains from a carpet",
    "best time to plant tomatoes",
)
JUNK = GIBBERISH + OFF_TOPIC


def load_set(name: str):
    """(repo pages, corpus config, work dir, questions) of a public set or a set folder, paths as in the repo."""
    if "/" in name:
        found = wiki_set(Path(name))
        qs = resolve_pages(load_questions(found.questions), [p for p, _ in found.pages], f"{found.corpus}/")
        return found.pages, corpus_config(found.corpus, found.corpus), WORK / Path(name).resolve().name, qs
    if name == "wiki-dev":
        pages = wiki_set(EVAL / "wiki-dev").pages
        qs = resolve_pages(load_questions(EVAL / "wiki-dev" / "questions-uv.jsonl"), [p for p, _ in pages], "uv/")
        return pages, corpus_config("uv", "uv"), WORK / "wiki-dev", qs
    if name == "tldr":
        pages = english_pages(EVAL / "tldr")
        return (
            pages,
            corpus_config("tldr", "pages"),
            WORK / "tldr-en",
            load_questions(EVAL / "tldr" / "questions.jsonl"),
        )
    beir = load_beir(EVAL / name)
    return beir.pages, corpus_config("beir", "wiki"), WORK / name, beir.questions


def rates(wiki, questions: list[Question], mode: str, others: list[str]) -> dict:
    view = wiki.view(vectors=mode != "lexical")
    embedder = wiki.embedder() if mode != "lexical" else None
    options = SearchOptions.build(wiki.config.search, mode=mode, top_files=10, chunks_per_file=1, limit=10)
    searcher = wiki.searcher

    def search(text: str, pages: dict[str, str], key: str):
        return searcher.search(view._replace(pages=pages, key=key), text, options, embedder)

    present = absent = index_first = 0
    for q in questions:
        found = search(q.text, view.pages, view.key)
        present += found.weak
        paths = [d.path for d in found.docs]
        first = next((i for i, p in enumerate(paths) if p in q.relevant), len(paths))
        index_first += any(p.endswith("index.md") and p not in q.relevant for p in paths[:first])
        kept = {p: b for p, b in view.pages.items() if p not in q.relevant}
        absent += search(q.text, kept, f"{view.key}-{q.id}").weak
    off = sum(search(text, view.pages, view.key).weak for text in others)
    nonsense = sum(search(text, view.pages, view.key).weak for text in NONSENSE)
    gibberish = sum(search(text, view.pages, view.key).weak for text in GIBBERISH)
    unrelated = sum(search(text, view.pages, view.key).weak for text in OFF_TOPIC)
    n = len(questions)
    return {
        "questions": n,
        "weak_answer_present": round(present / n, 3),
        "weak_answer_removed": round(absent / n, 3),
        "weak_off_topic": round(off / len(others), 3),
        "weak_nonsense": round(nonsense / len(NONSENSE), 3),
        "weak_answer_present_count": present,
        "weak_gibberish_count": gibberish,
        "weak_everyday_off_topic_count": unrelated,
        "index_page_above_answer": round(index_first / n, 3),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="wiki-dev,cranfield,scifact,tldr")
    ap.add_argument("--mode", default="hybrid", choices=("hybrid", "lexical", "dense"))
    ap.add_argument("--off-topic", type=int, default=30, help="questions taken from the next set as off-topic ones")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    use_offline_model()
    names = args.sets.split(",")
    loaded = {name: load_set(name) for name in names}
    out = {}
    for i, name in enumerate(names):
        pages, config, work, questions = loaded[name]
        other = loaded[names[(i + 1) % len(names)]][3] if len(names) > 1 else []
        wiki = open_wiki(write_repo(work / "repo", pages, config), work / "index")
        wiki.index(lexical=args.mode == "lexical")
        out[name] = rates(wiki, questions, args.mode, [q.text for q in other[: args.off_topic]])
        wiki.close()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{'set':<10} {'n':>4} {'present':>8} {'removed':>8} {'off-topic':>9} {'nonsense':>8} {'index>ans':>9} "
            f"{'gibberish':>9} {'everyday':>8}"
        )
        for name, r in out.items():
            print(
                f"{name:<10} {r['questions']:>4} {r['weak_answer_present']:>8.3f} {r['weak_answer_removed']:>8.3f} "
                f"{r['weak_off_topic']:>9.3f} {r['weak_nonsense']:>8.3f} {r['index_page_above_answer']:>9.3f} "
                f"{r['weak_gibberish_count']:>6}/{len(GIBBERISH)} "
                f"{r['weak_everyday_off_topic_count']:>5}/{len(OFF_TOPIC)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
