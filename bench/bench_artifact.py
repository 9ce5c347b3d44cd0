"""Index artifact timings on a 1,000-page wiki (docs/research/storage.md, "Index artifact").

The wiki is the first 1,000 English tldr pages committed to a git repo and indexed with the offline
MiniLM model. Then, median of --runs each:
- `artifact.pack` (VACUUM INTO snapshot, prune, tar.gz), `artifact.verify`, `artifact.unpack` into a
  fresh index dir, and the archive size;
- catch-up: a fresh clone 5 commits ahead of the artifact (one changed page each), then `pull` from the
  archive file: verify + install + index the 5 changed pages; the embedded chunk count is reported.
  The model loads once per process, so run 1 includes the load and later runs do not.

Usage: python bench/bench_artifact.py [--pages 1000] [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from bench_index import tldr_pages
from benchlib import (
    WORK,
    corpus_config,
    git,
    median_ms,
    open_wiki,
    print_result,
    timed_index,
    use_offline_model,
    write_repo,
)


def timed(fn, *args):
    started = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    use_offline_model()

    from gitwiki.index import artifact
    from gitwiki.operations.pull import pull
    from gitwiki.wiki import Wiki

    work = WORK / "artifact"
    pages = tldr_pages(args.pages, english_only=True)
    repo = write_repo(work / "repo", pages, corpus_config("wiki", "pages"))
    wiki = open_wiki(repo, work / "index")
    reports, index_seconds = timed_index(wiki)
    index_dir = wiki.index_dir
    status = wiki.status()[0]
    wiki.close()
    del os.environ["GITWIKI_INDEX_DIR"]  # the clones below keep their index in their own .git

    archive = work / artifact.ARCHIVE_NAME
    packs, verifies, unpacks = [], [], []
    for run in range(args.runs):
        manifest, seconds = timed(artifact.pack, index_dir, archive)
        packs.append(seconds)
        verifies.append(timed(artifact.verify, archive)[1])
        target = work / f"unpacked-{run}"
        shutil.rmtree(target, ignore_errors=True)
        unpacks.append(timed(artifact.unpack, archive, target, manifest.model)[1])
        shutil.rmtree(target)

    catch_ups, embedded = [], []
    for run in range(args.runs):
        clone = work / f"clone-{run}"
        shutil.rmtree(clone, ignore_errors=True)
        git(work, "clone", "-q", str(repo), str(clone))
        for i, (rel, text) in enumerate(pages[:: max(1, len(pages) // 5)][:5]):
            (clone / rel).write_text(text + f"\n## Note {run}-{i}\n\nA local change number {i} in run {run}.\n")
            git(clone, "commit", "-q", "-am", f"change {i}")
        report, seconds = timed(lambda clone=clone: pull(Wiki.open(clone), str(archive)))
        catch_ups.append(seconds)
        embedded.append(sum(r.embedded for r in report.reports))
        assert sum(r.changed for r in report.reports) == 5, report.reports
        shutil.rmtree(clone)

    results = {
        "pages": status.pages,
        "chunks": status.chunks,
        "model": manifest.model,
        "index_seconds": round(index_seconds, 1),
        "index_embedded": sum(r.embedded for r in reports),
        "db_bytes": manifest.size,
        "archive_bytes": archive.stat().st_size,
        "pack_ms": median_ms(packs),
        "verify_ms": median_ms(verifies),
        "unpack_ms": median_ms(unpacks),
        "catch_up_ms_runs": [round(s * 1000, 1) for s in catch_ups],
        "catch_up_ms_median": median_ms(catch_ups),
        "catch_up_embedded": embedded,
    }
    print_result(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
