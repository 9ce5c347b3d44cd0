"""Memory recall on a held-out set (bench/heldout/til: 1,018 jbranchaud/til notes; bench/heldout/simonw: 432
simonw/til notes): gitwiki's `memory search` against a plain BM25 + MiniLM RRF script
(bench/heldout/til/rrf_script.py) and BM25 alone, over the same entries.

Per question the rank of the labelled note in each system's top 10; hit@1, hit@5, MRR@10 overall and per
kind (lexical, paraphrase, conceptual); the paired difference gitwiki − script with a 95% bootstrap
interval (10,000 resamples of the questions). `--personal` puts every second topic (by size) into a
personal memory, so search fuses the project's and the personal memory's hits.

    python bench/memory_recall_eval.py [--set til|simonw] [--personal] [--rebuild] [--misses] [--resident]
        [--words N] [--questions full|short] [--json]

`--words N` cuts each question to its first N words that are not stop words: the short keyword query an agent
often sends, from the same questions, so the set stays held out. `--questions short` asks each set's 30 short queries
written as an agent types them (queries-short.jsonl, their own target notes; the set's README).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
import time
from pathlib import Path

from benchlib import WORK, use_offline_model

HELDOUT = Path(__file__).resolve().parent / "heldout"
SETS = ("til", "simonw")
sys.path.insert(0, str(HELDOUT / "til"))  # rrf_script, the same for every set
KINDS = ("lexical", "paraphrase", "conceptual")
DEPTH = 10


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
        "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
        "mrr@10": round(sum(1 / r for r in ranks if r is not None and r <= DEPTH) / n, 3),
    }


def rr(rank: int | None) -> float:
    return 1 / rank if rank is not None and rank <= DEPTH else 0.0


def paired(a: list[int | None], b: list[int | None], seed: int = 7) -> dict[str, list[float] | float]:
    """MRR@10 and hit@5 of a − b, with the 2.5 and 97.5 percentiles of 10,000 bootstrap resamples."""
    rng = random.Random(seed)
    out: dict[str, list[float] | float] = {}
    for name, value in (("mrr@10", rr), ("hit@5", lambda r: float(r is not None and r <= 5))):
        diffs = [value(x) - value(y) for x, y in zip(a, b, strict=True)]
        n = len(diffs)
        means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(10_000))
        out[name] = round(sum(diffs) / n, 4)
        out[name + " 95%"] = [round(means[250], 4), round(means[9750], 4)]
    return out


def short_query(question: str, words: int) -> str:
    """The question as an agent's keyword query: its first `words` words that are not stop words, cut
    mechanically (no word chosen by hand, so the set stays held out)."""
    from gitwiki.index.tokens import STOP_WORDS

    kept = [w for w in re.findall(r"[A-Za-z0-9_.-]+", question) if w.lower() not in STOP_WORDS]
    return " ".join(kept[:words])


def gitwiki_ranks(mem, note_of, questions) -> list[int | None]:
    from gitwiki.memory import stores
    from gitwiki.memory.search import MemoryQuery

    ranks: list[int | None] = []
    for q in questions:
        hits = stores.search(mem, MemoryQuery(q["question"], limit=DEPTH)).hits
        got = [note_of.get((h.entry.topic, h.entry.index)) for h in hits]
        ranks.append(got.index(q["relevant"][0]) + 1 if q["relevant"][0] in got else None)
    return ranks


def script_ranks(texts: dict[str, str], questions) -> tuple[list[int | None], list[int | None]]:
    import rrf_script

    ids = list(texts)
    fused = rrf_script.rank(list(texts.values()), [q["question"] for q in questions])
    tokenized = [rrf_script.tokens(t) for t in texts.values()]
    out_rrf, out_bm25 = [], []
    for q, ranking in zip(questions, fused, strict=True):
        target = ids.index(q["relevant"][0])
        out_rrf.append(ranking.index(target) + 1 if target in ranking[:DEPTH] else None)
        lexical = rrf_script.bm25(tokenized, rrf_script.tokens(q["question"]))
        order = sorted(range(len(ids)), key=lambda i: -lexical[i])[:DEPTH]
        out_bm25.append(order.index(target) + 1 if target in order and lexical[target] > 0 else None)
    return out_rrf, out_bm25


def table(ranks: list[int | None], questions) -> dict[str, dict[str, float]]:
    rows = {"all": metrics(ranks)}
    for kind in KINDS:
        rows[kind] = metrics([r for r, q in zip(ranks, questions, strict=True) if q["kind"] == kind])
    return rows


def load_build(name: str):  # -> the set's build module
    """bench/heldout/<name>/build.py (each set has its own, same interface)."""
    spec = importlib.util.spec_from_file_location(f"heldout_{name}_build", HELDOUT / name / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=SETS, default="til", help="which held-out set (default til)")
    parser.add_argument("--personal", action="store_true", help="every second topic in a personal memory")
    parser.add_argument("--rebuild", action="store_true", help="build the memory again (else reused)")
    parser.add_argument("--misses", action="store_true", help="list the questions gitwiki misses at 5")
    parser.add_argument("--no-script", action="store_true", help="gitwiki only (the script's figures are fixed)")
    parser.add_argument("--resident", action="store_true", help="search as the MCP server does (BM25 kept warm)")
    parser.add_argument(
        "--words", type=int, default=0, help="each question cut to its first N words, stop words out (a short query)"
    )
    parser.add_argument(
        "--questions", choices=("full", "short"), default="full", help="short: the set's queries-short.jsonl"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_offline_model()
    build = load_build(args.set)
    here = HELDOUT / args.set
    asked = here / ("queries-short.jsonl" if args.questions == "short" else "questions.jsonl")
    questions = [json.loads(line) for line in asked.read_text().splitlines() if line]
    if args.words:
        questions = [q | {"question": short_query(q["question"], args.words)} for q in questions]
    work = WORK / (f"{args.set}-personal" if args.personal else args.set)
    personal = build.TOPICS[1::2] if args.personal else ()
    mem, note_of = build.open_built(work, personal, rebuild=args.rebuild)
    if args.resident:
        mem.resident = True  # the personal memory, made on first use, takes it from the project's
    started = time.perf_counter()
    ours = gitwiki_ranks(mem, note_of, questions)  # the first search embeds what the import did not
    seconds = time.perf_counter() - started
    result: dict = {"set": args.set, "questions": len(questions), "personal": list(personal)}
    result["gitwiki"] = table(ours, questions)
    result["gitwiki_seconds"] = round(seconds, 1)
    if not args.no_script:
        texts = {nid: text for items in build.notes().values() for nid, text in items}
        script, plain = script_ranks(texts, questions)
        result["rrf_script"] = table(script, questions)
        result["bm25"] = table(plain, questions)
        result["gitwiki_minus_script"] = paired(ours, script)
    if args.misses:
        result["misses"] = [
            {"id": q["id"], "kind": q["kind"], "rank": r, "question": q["question"], "note": q["relevant"][0]}
            for r, q in zip(ours, questions, strict=True)
            if r is None or r > 1
        ]
    if args.json:
        result["gitwiki_ranks"] = ours  # per question, for paired comparisons between runs
        if not args.no_script:
            result["script_ranks"] = script
        print(json.dumps(result, indent=2))
        return
    for system in ("gitwiki", "rrf_script", "bm25"):
        for row, m in result.get(system, {}).items():
            print(f"{system:10} {row:10} " + "  ".join(f"{k} {v:.3f}" for k, v in m.items()))
    if "gitwiki_minus_script" in result:
        print("gitwiki - script:", result["gitwiki_minus_script"])
    for miss in result.get("misses", []):
        print(f"  {miss['id']} {miss['kind']:10} rank {miss['rank']}  {miss['question']}  [{miss['note']}]")


if __name__ == "__main__":
    main()
