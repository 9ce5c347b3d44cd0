"""Argument helpers several commands share (commands never import each other, so they import this)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress

STAGES = {
    "fetch": "fetching objects",
    "parse": "parsing pages",
    "embed": "embedding chunks",
    "eval": "searching questions",
    "tune": "searching questions at each depth",
    "import": "writing imported topic pages",
}


def max_bytes_arg(args: argparse.Namespace) -> int:
    """`--max-bytes`, defaulting to the archive cap; a non-positive value is a usage error."""
    from gitwiki.errors import UsageError
    from gitwiki.index.artifact import MAX_BYTES

    if args.max_bytes is None:
        return MAX_BYTES
    if args.max_bytes < 1:
        raise UsageError("--max-bytes must be a positive number of bytes")
    return args.max_bytes


def path_arg(args: argparse.Namespace, path: str | Path) -> Path:
    """A path argument, relative to -C DIR like every path argument."""
    return Path(args.chdir, path).resolve()


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    """`gitwiki init` and `gitwiki config init` are one command under two names: the same options, the same run."""
    parser.add_argument(
        "--path",
        help="the corpus folder, relative to the repo root (default: found: a docs site's own config (mkdocs.yml, "
        "book.toml, docusaurus.config.js), else wiki/, else docs/, else the folder with the most markdown)",
    )
    parser.add_argument("--name", default="wiki", help="the corpus name (default: wiki)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="set the corpus in an existing .gitwiki.toml (every other setting kept; the old file is copied to "
        ".gitwiki.toml.bak)",
    )
    parser.add_argument(
        "--agents",
        action="store_true",
        help="also write how to keep the wiki into AGENTS.md (replacing an earlier gitwiki section)",
    )
    parser.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    from gitwiki.config import REPO_CONFIG_NAME, normalize_corpus_path
    from gitwiki.config_edit import write_init
    from gitwiki.git import gitcli
    from gitwiki.git.gitrepo import GitRepo
    from gitwiki.pages import sites

    root = GitRepo.discover(args.chdir).root
    files = [*gitcli.staged_files(root), *gitcli.index_listing(root, "").others]
    found = sites.detect(root, files)
    if args.path is not None:  # the user's folder; the generator still found when its config points there
        path = normalize_corpus_path(args.path, "--path")
        found = found if found.path == path else sites.Choice(path, "github", "the folder given with --path")
    if args.agents and (root / REPO_CONFIG_NAME).exists() and not args.force:
        from gitwiki.config import load

        print(f"kept {root / REPO_CONFIG_NAME} (pass --force to set the corpus in it)")
        found = found._replace(path=load(root).corpus().path)  # AGENTS.md describes the corpus that is configured
    else:
        print(f"corpus folder: {found.path or '.'}/ ({found.site}): {found.why}")
        report = write_init(root, found.path, args.name, args.force, found.site, found.include)
        print(report.describe())
        if report.backup is not None:  # a merge sets the path and a found site: say what else the site wants
            from gitwiki.config import load

            corpus = load(root).corpus(args.name)
            missing = [f"site = {found.site!r}"] if corpus.site != found.site else []
            missing += [f"{p!r} in include" for p in found.include if p not in corpus.include]
            if missing:
                print(f"note: set {' and '.join(missing)} in [[corpus]] {args.name!r} of {report.file} by hand")
    if args.agents:
        from gitwiki.pages.conventions import write_agents

        print(write_agents(root, found.path).describe())
    return 0


def repo_relative(root: Path, cwd: str, files: list[str]) -> list[str]:
    """FILE arguments (relative to `cwd`) as repo-relative POSIX paths; files outside the repo are an error."""
    from gitwiki.errors import UsageError

    out = []
    for name in files:
        full = Path(cwd, name).resolve()
        try:
            out.append(full.relative_to(root).as_posix())
        except ValueError:
            raise UsageError(f"{name} is outside the repository {root}; pass pages inside it") from None
    return out


# Without a terminal (CI logs, hooks' output files) a line this often shows a long run is alive.
LINE_EVERY = 5.0


@contextmanager
def progress_bar(enabled: bool, terminal: bool = True) -> Iterator[Progress | None]:
    """A rich progress bar on a terminal; elsewhere a line on stderr every LINE_EVERY seconds of a long run."""
    if not enabled:
        yield None
        return
    if not terminal:
        last = time.monotonic()

        def line(stage: str, done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= LINE_EVERY:
                last = now
                print(f"gitwiki: {STAGES[stage]} {done}/{total}", file=sys.stderr, flush=True)

        yield line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    tasks: dict[str, TaskID] = {}
    with Bar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
    ) as bar:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(STAGES[stage], total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update
