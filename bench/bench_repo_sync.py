"""`gitwiki repo sync` timings (docs/research/storage.md, "Repositories").

The remote is a bare repo reached by a file:// URL holding the first --pages English tldr pages under
wiki/; a checkout declares it as a [[repository]]. Measured, through `Repositories.sync` (the library
path the CLI calls) with the offline MiniLM model:
- first sync: fetch every object, parse and embed every page (once; --lexical skips the model);
- unchanged remote: median of --runs syncs when the ref has not moved (one ref listing, tree-id checks);
- changed remote: median of --runs syncs after one upstream commit changing one page (fetch the new
  objects, parse and embed that page);
- the CLI for an unchanged remote (`python -m gitwiki repo sync`, process start and imports included);
- artifact-first: the synced index is packed and published to the remote's refs/gitwiki/index, the cache
  is emptied, and the first sync installs the archive and catches up (parsed and embedded counts shown).

Usage: python bench/bench_repo_sync.py [--pages 1000] [--runs 5] [--lexical] [--json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from bench_index import tldr_pages
from benchlib import ROOT, WORK, git, median_ms, print_result, use_offline_model, write_repo


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lexical", action="store_true", help="sync without embeddings")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    use_offline_model()
    work = WORK / "repo-sync"
    pages = [(f"wiki/{path}", text) for path, text in tldr_pages(args.pages, english_only=True)]
    upstream = write_repo(work / "upstream", pages, "")
    git(
        upstream, "reset", "-q", "--hard", git(upstream, "rev-list", "--max-parents=0", "HEAD").strip()
    )  # earlier edits
    bare = work / "remote.git"
    for path in (bare, work / "cache", work / "config", work / "checkout"):
        shutil.rmtree(path, ignore_errors=True)
    git(work, "clone", "-q", "--bare", str(upstream), str(bare))
    checkout = work / "checkout"
    checkout.mkdir()
    git(checkout, "init", "-q", "-b", "main")
    config = f'[[repository]]\nname = "tldr"\nurl = "{bare.as_uri()}"\n'
    if args.lexical:
        config += "\n[embeddings]\nenabled = false\n"
    (checkout / ".gitwiki.toml").write_text(config)
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")  # the consent below, not the user's own

    from gitwiki.wiki import Wiki

    wiki = Wiki.open(checkout)
    wiki.repositories.allow(["tldr"])  # declared by the checkout: `gitwiki repo allow tldr`

    def sync():
        started = time.perf_counter()
        (report,) = wiki.repositories.sync("tldr", wiki.config.embeddings)
        return report, time.perf_counter() - started

    first, first_seconds = sync()
    unchanged = []
    for _ in range(args.runs):
        report, seconds = sync()
        assert not report.downloaded and all(r.up_to_date for r in report.reports)
        unchanged.append(seconds)
    changed, embedded = [], []
    for run in range(args.runs):
        page = upstream / pages[run][0]
        page.write_text(page.read_text() + f"\nEdited in run {run}.\n")
        git(upstream, "commit", "-qam", f"edit {run}")
        git(upstream, "push", "-q", str(bare), "main")
        report, seconds = sync()
        assert report.downloaded and report.reports[0].changed == 1, report
        changed.append(seconds)
        embedded.append(report.reports[0].embedded)
    cli = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gitwiki", "-C", str(checkout), "repo", "sync", "-q"], check=True, env=env
        )
        cli.append(time.perf_counter() - started)
    from gitwiki.index import artifact, publish

    archive = work / artifact.ARCHIVE_NAME
    wiki.repositories.get("tldr").close()
    artifact.pack(wiki.repositories.get("tldr").cache_dir / "index", archive)
    publish.commit_archive(upstream, archive, "refs/gitwiki/index")
    git(upstream, "push", "-q", str(bare), "+refs/gitwiki/index:refs/gitwiki/index")
    wiki.close()
    shutil.rmtree(work / "cache")
    wiki = Wiki.open(checkout)  # a fresh cache: nothing held, nothing indexed
    seeded, seeded_seconds = sync()
    assert seeded.artifact, seeded.notes
    wiki.close()
    result = {
        "pages": first.reports[0].pages,
        "model": first.reports[0].model,
        "first_sync_s": round(first_seconds, 2),
        "first_sync_embedded": sum(r.embedded for r in first.reports),
        "unchanged_ms": median_ms(unchanged),
        "changed_one_page_ms": median_ms(changed),
        "changed_embedded_chunks": statistics.median(embedded),
        "cli_unchanged_ms": median_ms(cli),
        "archive_mb": round(archive.stat().st_size / 1e6, 1),
        "artifact_first_sync_s": round(seeded_seconds, 2),
        "artifact_first_parsed": sum(r.parsed for r in seeded.reports),
        "artifact_first_embedded": sum(r.embedded for r in seeded.reports),
        "runs": args.runs,
    }
    print_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
