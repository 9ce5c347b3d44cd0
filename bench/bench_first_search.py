"""Spawn → first `ground` answered with no owner up, for one or more checkouts and qmd, interleaved spawn by spawn.

bench_sessions.py's spawn part gives a first search five spawns a run, too few to tell two trees apart by the
10-20 ms a change to an owner's start moves it. Here each round spawns, in rotating order, one session per checkout
and mode (hybrid, `ground`'s default, and lexical, the kind qmd's `lex` query is) and, with --qmd, one qmd session,
all from one fresh venv (bench_claude.make_venv, as bench_sessions.py --venv); after each gitwiki session its owner is
stopped (`Bench.settle`). The 1,000 tldr pages of bench_sessions.py, each tree byte-compiled first. Prints min / p25
/ median per checkout and mode, and the load before and after; --json for every sample.

    python bench/bench_first_search.py [--rounds 30] [--qmd QMD [--qmd-node NODE]] [--json] CODE [CODE ...]

CODE: a checkout whose gitwiki is measured (its PYTHONPATH), e.g. main and `git archive` of a base commit.
Figures: docs/research/sessions-start.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench_claude import make_venv
from bench_index import tldr_pages
from bench_sessions import QUERY, Bench, Session, qmd_lex, qmd_setup
from benchlib import WORK, compiled, corpus_config, open_wiki, timed_index, use_offline_model, write_repo

MODES = ("hybrid", "lexical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("code", nargs="+", help="checkouts whose gitwiki is measured")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--qmd", default=os.environ.get("QMD"), help="qmd's executable (default $QMD; none: no qmd)")
    parser.add_argument("--qmd-node", default=os.environ.get("QMD_NODE"), help="a node >= 22 to run qmd with")
    parser.add_argument("--qmd-home", default=str(WORK / "sessions" / "qmd-home"), help="qmd's HOME (its index)")
    parser.add_argument("--json", action="store_true", help="print every sample as JSON")
    args = parser.parse_args()
    use_offline_model()
    pages = tldr_pages(1000, english_only=True)
    repo = write_repo(WORK / "mcp" / "repo", [(f"wiki/{p}", t) for p, t in pages], corpus_config("wiki", "wiki"))
    wiki = open_wiki(repo, WORK / "mcp" / "index")  # sets GITWIKI_INDEX_DIR for the sessions
    timed_index(wiki)
    wiki.close()
    qmd, qmd_env = qmd_setup(args.qmd, args.qmd_node, Path(args.qmd_home), repo / "wiki") if args.qmd else (None, {})
    bin_dir = make_venv(Path(tempfile.mkdtemp(prefix="gitwiki-bench-venv-")) / "venv")
    codes = [str(Path(c).resolve()) for c in args.code]
    benches = {}
    for code in codes:
        compiled(code)
        benches[code] = Bench(repo, code, uuid.uuid4().hex, qmd, qmd_env, bin_dir=bin_dir)
        benches[code].settle()
    samples: dict[str, list[float]] = {}

    def gitwiki(code: str, mode: str) -> None:
        session = benches[code].serve()
        session.initialize()
        session.call("ground", {"query": QUERY, "mode": mode})
        samples.setdefault(f"{code} {mode}", []).append(session.since_spawn())
        session.close(wait=0)
        benches[code].settle()

    def qmd_first() -> None:
        assert qmd is not None
        session = Session([*qmd, "mcp"], qmd_env)
        session.initialize()
        session.call("query", qmd_lex(QUERY))
        samples.setdefault("qmd lex", []).append(session.since_spawn())
        session.close()

    jobs: list[Callable[[], None]] = [lambda c=c, m=m: gitwiki(c, m) for c in codes for m in MODES]
    if qmd is not None:
        jobs.append(qmd_first)
    load = [os.getloadavg()[0]]
    for i in range(args.rounds):
        k = i % len(jobs)
        for job in jobs[k:] + jobs[:k]:
            job()
    load.append(os.getloadavg()[0])
    if args.json:
        print(json.dumps({"load": load, "samples": samples}))
        return
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{when}, {args.rounds} rounds, load {load[0]:.2f} → {load[1]:.2f}")
    print("spawn → first search answered, no owner: min / p25 / median ms")
    for name, values in samples.items():
        p25 = statistics.quantiles(values, n=4)[0] if len(values) > 1 else values[0]
        print(f"  {name}: {min(values):.1f} / {p25:.1f} / {statistics.median(values):.1f}")


if __name__ == "__main__":
    sys.exit(main())
