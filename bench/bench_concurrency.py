"""Readers under a mixed write load: failed reads and stale answers (docs/research/lancedb.md).

For a fixed time, N reader processes query the local SQLite index (a long-lived `Wiki`, as `gitwiki serve`
holds it) and N more query the LanceDB export (a long-lived `LanceReader` in a folder with no checkout),
while one writer commits page edits and runs `gitwiki index` and one exporter runs `gitwiki lance export`,
each a fresh CLI process per run. Every reader asks a question whose answer never changes: an error, or an
answer without that page, is a failed read. When the time is up the writer and the exporter finish their
last run, then every reader asks for the token the writer wrote last: an answer without it is stale.

    python bench/bench_concurrency.py [--seconds 60] [--readers 3] [--pages 300] [--json]

Lexical only: the point is the locking and the table versions, not the model's CPU.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchlib import git

CONFIG = '[[corpus]]\nname = "wiki"\npath = "wiki"\n\n[embeddings]\nenabled = false\n'
STABLE_QUERY, STABLE_PAGE = "release train tuesdays", "wiki/deploy.md"
LIVE_PAGE = "wiki/live.md"
WAIT = 600.0  # seconds a reader waits for the final check (a loaded CI host is slow, never this slow)


def token(n: int) -> str:
    return f"marker{n:06d}"


def live_page(n: int) -> str:
    return f"# Live\n\nThe current marker is {token(n)}.\n"


def gitwiki(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gitwiki", *args], capture_output=True, text=True)


def setup(work: Path, pages: int) -> tuple[Path, Path, str]:
    """A repo of `pages` filler pages plus the stable and the live page, indexed and exported."""
    repo, reader_dir, uri = work / "repo", work / "reader", str(work / "lance")
    (repo / "wiki").mkdir(parents=True)
    reader_dir.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitwiki.toml").write_text(CONFIG + f'\n[storage]\nuri = "{uri}"\n')
    (repo / STABLE_PAGE).write_text("# Deploy\n\nThe release train leaves on Tuesdays.\n")
    (repo / LIVE_PAGE).write_text(live_page(0))
    for i in range(pages):
        (repo / f"wiki/topic{i:04d}.md").write_text(f"# Topic {i}\n\nNotes on subject {i}, revision 0.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pages")
    for step in (("index",), ("lance", "export")):
        run = gitwiki("-C", str(repo), *step)
        if run.returncode:
            raise SystemExit(f"setup: gitwiki {' '.join(step)} failed: {run.stderr}")
    return repo, reader_dir, uri


def reader(kind: str, target: str, stop, check, final: str, results) -> None:
    """One reader process: query until `stop`, then, once `check` is set, ask for the token in `final`."""
    sys.stderr = open(f"{final}.{kind}.{os.getpid()}.err", "w")  # warnings: counted, not printed
    if kind == "sqlite":
        from gitwiki.wiki import Wiki

        wiki = Wiki.open(target)

        def ask(query: str):
            return wiki.search(query, mode="lexical", full=True)

    else:
        from gitwiki.config import SearchConfig
        from gitwiki.search.lance_index import LanceReader
        from gitwiki.search.searcher import SearchOptions

        shared = LanceReader(target)
        options = SearchOptions.build(SearchConfig(), mode="lexical", full=True)

        def ask(query: str):
            return shared.search(query, "wiki", options, None)

    queries = failed = 0
    errors: list[str] = []
    while not stop.is_set():
        queries += 1
        try:
            docs = ask(STABLE_QUERY).docs
            if not docs or docs[0].path != STABLE_PAGE:
                failed += 1
                errors.append(f"wrong answer: {[d.path for d in docs]}")
        except Exception as e:  # every failure counts; the message says which
            failed += 1
            errors.append(f"{type(e).__name__}: {e}")
    stale = None
    if check.wait(WAIT):
        want = Path(final).read_text()
        try:
            docs = ask(want).docs
            stale = not docs or docs[0].path != LIVE_PAGE or want not in docs[0].chunks[0].text
        except Exception as e:
            stale = True
            errors.append(f"final check: {type(e).__name__}: {e}")
    sys.stderr.close()
    # A SQLite reader that finds the index busy answers from the last complete one and warns (not a failure).
    older = Path(sys.stderr.name).read_text().count("answering from the index as of")
    results.put(
        {"kind": kind, "queries": queries, "failed": failed, "stale": stale, "older": older, "errors": errors[:5]}
    )


def writer(repo: Path, deadline: float, pages: int, log: dict) -> None:
    n = 0
    while time.monotonic() < deadline:
        n += 1
        (repo / LIVE_PAGE).write_text(live_page(n))
        (repo / f"wiki/topic{n % pages:04d}.md").write_text(f"# Topic {n % pages}\n\nNotes, revision {n}.\n")
        git(repo, "commit", "-q", "-am", f"edit {n}")
        started = time.perf_counter()
        run = gitwiki("-C", str(repo), "index")
        log["index_seconds"].append(time.perf_counter() - started)
        if run.returncode:
            log["index_errors"].append(run.stderr.strip()[-300:])
    log["commits"] = n


def exporter(repo: Path, deadline: float, log: dict) -> None:
    while time.monotonic() < deadline:
        export(repo, log)


def export(repo: Path, log: dict) -> None:
    started = time.perf_counter()
    run = gitwiki("-C", str(repo), "lance", "export")
    log["export_seconds"].append(time.perf_counter() - started)
    if run.returncode:
        log["export_errors"].append(run.stderr.strip()[-300:])


def measure(work: Path, seconds: float, readers: int, pages: int) -> dict:
    repo, reader_dir, uri = setup(work, pages)
    final = work / "final-token"
    ctx = mp.get_context("spawn")  # lancedb's runtime threads do not survive a fork
    stop, check, results = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=reader, args=(kind, target, stop, check, str(final), results))
        for kind, target in (("sqlite", str(repo)), ("lance", uri))
        for _ in range(readers)
    ]
    for p in procs:
        p.start()
    log: dict = {"index_seconds": [], "index_errors": [], "export_seconds": [], "export_errors": []}
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=writer, args=(repo, deadline, pages, log)),
        threading.Thread(target=exporter, args=(repo, deadline, log)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    export(repo, log)  # one last export, after the writer's last index
    if log["export_errors"] or log["index_errors"]:
        print("writer/exporter errors:", log["index_errors"][:3], log["export_errors"][:3], file=sys.stderr)
    final.write_text(token(log["commits"]))
    check.set()
    found = [results.get(timeout=WAIT) for _ in procs]
    for p in procs:
        p.join(timeout=WAIT)
    by_kind = {
        kind: {
            "readers": len(rows),
            "queries": sum(r["queries"] for r in rows),
            "failed": sum(r["failed"] for r in rows),
            "stale": sum(bool(r["stale"]) for r in rows),
            "older_index_answers": sum(r["older"] for r in rows),
            "errors": [e for r in rows for e in r["errors"]][:5],
        }
        for kind in ("sqlite", "lance")
        for rows in [[r for r in found if r["kind"] == kind]]
    }
    return {
        "seconds": seconds,
        "pages": pages + 2,
        "commits": log["commits"],
        "index_runs": len(log["index_seconds"]),
        "index_failed": len(log["index_errors"]),
        "index_median_s": round(statistics.median(log["index_seconds"]), 2) if log["index_seconds"] else None,
        "exports": len(log["export_seconds"]),
        "export_failed": len(log["export_errors"]),
        "export_median_s": round(statistics.median(log["export_seconds"]), 2),
        "readers": by_kind,
        "load": os.getloadavg(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--readers", type=int, default=3, help="reader processes of each kind (SQLite, LanceDB)")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitwiki-concurrency-") as tmp:
        result = measure(Path(tmp), args.seconds, args.readers, args.pages)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['seconds']:.0f} s, {result['pages']} pages, load {result['load'][0]:.1f}: writer "
            f"{result['commits']} commits, {result['index_runs']} index runs ({result['index_failed']} failed, "
            f"median {result['index_median_s']} s); {result['exports']} exports ({result['export_failed']} failed, "
            f"median {result['export_median_s']} s)"
        )
        for kind, r in result["readers"].items():
            print(
                f"  {kind}: {r['readers']} readers, {r['queries']} queries, {r['failed']} failed, {r['stale']} stale, "
                f"{r['older_index_answers']} answered from the previous index while it was busy"
                + (f"; e.g. {r['errors'][0]}" if r["errors"] else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
