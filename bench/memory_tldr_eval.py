"""Memory search on questions someone else wrote: the 30 how-do-I questions of shared/eval/tldr asked of the
10,000-entry memory `bench_memory_scale.py` builds (one tldr example an entry, `<page>: <what> with ...`, in its
command family's topic). An answer is an entry of a page the question labels; the questions whose pages are not in
that memory are left out. hit@1, hit@5, MRR@10 and each question's rank; `--code DIR` searches with another gitwiki
tree (a worktree of an older commit) on the same index, for a paired before/after.

    GITWIKI_BENCH_WORK=DIR python bench/memory_tldr_eval.py [--code DIR] [--json]

Run `bench_memory_scale.py` once first (it builds DIR/memory-scale). Figures: docs/research/memory-recall-3.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchlib import EVAL, ROOT, WORK, use_offline_model
from memory_recall_eval import metrics

SEARCH = """
import json, sys
from gitwiki.memory.base import Memory
from gitwiki.memory import stores, search
mem = Memory.open(sys.argv[1])
out = []
for question in json.loads(sys.stdin.read()):
    hits = stores.search(mem, search.MemoryQuery(question, limit=10)).hits
    out.append([h.entry.text.split(":", 1)[0] for h in hits])
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, help="search with this gitwiki tree instead of this checkout's")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_offline_model()
    base = WORK / "memory-scale"
    if not (base / "texts.json").is_file():
        raise SystemExit(f"no memory under {base}: run bench/bench_memory_scale.py first")
    present = {text.split(":", 1)[0] for text in json.loads((base / "texts.json").read_text())}
    questions = [json.loads(line) for line in (EVAL / "tldr" / "questions.jsonl").read_text().splitlines() if line]
    asked = [q for q in questions if {Path(p).stem for p in q["relevant"]} & present]
    # A process of its own, so that --code's tree is the one imported (benchlib puts this checkout first).
    env = {**os.environ, "PYTHONPATH": str(args.code or ROOT), "GITWIKI_INDEX_DIR": str(base / "index")}
    done = subprocess.run(
        [sys.executable, "-c", SEARCH, str(base / "repo")],
        input=json.dumps([q["question"] for q in asked]),
        env=env,
        cwd=base,  # not this checkout: `-c` puts the working directory first on the path
        capture_output=True,
        text=True,
        check=True,
    )
    ranks: list[int | None] = []
    for q, got in zip(asked, json.loads(done.stdout), strict=True):
        pages = {Path(p).stem for p in q["relevant"]}
        ranks.append(next((i + 1 for i, page in enumerate(got) if page in pages), None))
    result = {"questions": len(asked), "left_out": len(questions) - len(asked), **metrics(ranks), "ranks": ranks}
    result["ids"] = [q["id"] for q in asked]
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
