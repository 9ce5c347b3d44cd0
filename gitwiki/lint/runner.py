"""Run the rules: one page (`lint_text`, what the MCP server calls) or files of a repo against its staged tree."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Callable, Iterable, NamedTuple
from urllib.parse import quote

import pygit2

from gitwiki.config import Config, CorpusConfig
from gitwiki.gitrepo import GitRepo, matches
from gitwiki.lint.document import parse
from gitwiki.lint.registry import RULES, Context, Finding
from gitwiki.markdown.links import extract_links, resolve

ORPHAN = "GW007"


class LintRun(NamedTuple):
    findings: list[Finding]
    files: int  # pages linted


def corpus_of(config: Config, path: str) -> CorpusConfig | None:
    return next((c for c in config.corpora if matches(c, path)), None)


def disabled_codes(config: Config, corpus: CorpusConfig | None) -> set[str]:
    """Codes turned off in [lint] and the corpus's lint_disable; rule names (`orphan-page`) work too."""
    names = {rule.name: code for code, rule in RULES.items()}
    raw = (*config.lint.disable, *(corpus.lint_disable if corpus else ()))
    return {names.get(v.strip().lower(), v.strip().upper()) for v in raw}


def lint_text(
    path: str,
    text: str,
    pages: set[str],
    config: Config,
    *,
    read: Callable[[str], str | None] | None = None,
    linked: set[str] | None = None,
) -> list[Finding]:
    """Findings for one page at repo-relative `path`, its links resolved against `pages`.

    `read` gives other pages' text so `other.md#anchor` links can be checked; `linked` (the pages some
    other page links to) enables the orphan check, which needs the whole corpus.
    """
    corpus = corpus_of(config, path)
    doc = parse(path, text)
    skip = disabled_codes(config, corpus) | doc.disabled
    ctx = Context(pages, config, corpus, read, linked)
    out = [
        Finding(path, p.line, p.col, code, rule.severity, p.message, p.hint or rule.hint)
        for code, rule in RULES.items()
        if code not in skip
        for p in rule.check(doc, ctx)
    ]
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


def staged_index(repo: GitRepo) -> pygit2.Index:
    """The index git is committing: `git commit -a` and `git commit FILE` hand hooks a temporary one."""
    alt = os.environ.get("GIT_INDEX_FILE")
    return pygit2.Index(os.path.abspath(alt)) if alt else repo.raw.index


def staged_pages(repo: GitRepo, config: Config) -> dict[str, str]:
    """Repo-relative path → staged blob id for every page of every corpus (symlinks and submodules left out)."""
    out = {}
    for entry in staged_index(repo):
        if entry.mode in (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE) and corpus_of(config, entry.path):
            out[entry.path] = str(entry.id)
    return out


def linked_pages(pages: Iterable[str], read: Callable[[str], str | None], config: Config, wanted: set[str]) -> set[str]:
    """The pages in `wanted` that another page links to (a folder link counts for the folder's index and README).

    A link to X must spell X's file name (or, for an index or README, its folder's name), so only pages
    whose text contains one of those are parsed: a commit's orphan check then costs a substring scan.
    """
    fronts = (config.index_blocks.filename, "README.md")
    needles = set()
    for path in wanted:
        name = posixpath.basename(path)
        needles.update((name, quote(name)))
        if name in fronts:
            needles.add(posixpath.basename(posixpath.dirname(path)) or "/")
    linked: set[str] = set()
    for source in pages:
        text = read(source) or ""
        if not any(n in text for n in needles):
            continue
        for link in extract_links(text):
            target = resolve(source, link.target)
            if target is None or not target.path or target.path == source:
                continue
            linked.update({target.path, *(f"{target.path}/{name}" for name in fronts)} & wanted)
    return linked


def lint_repo(repo: GitRepo, config: Config, files: list[str] | None = None) -> LintRun:
    """Lint `files` (repo-relative; default: every staged page) from the worktree, resolving links against
    the staged pages plus `files`. Files outside every corpus are skipped."""
    root = repo.root  # a property that resolves the path on each call
    blobs = staged_pages(repo, config)
    if files is None:
        targets = sorted(blobs)
    else:
        targets = sorted({f for f in files if corpus_of(config, f) and (root / f).is_file()})
    pages = set(blobs) | set(targets)
    on_disk = set(targets)
    texts: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in texts:
            if path in on_disk or path not in blobs:
                disk = root / path
                texts[path] = _read_file(disk) if disk.is_file() else None
            else:
                texts[path] = repo.read_blob(blobs[path]).decode("utf-8", errors="replace")
        return texts[path]

    orphans_wanted = any(ORPHAN not in disabled_codes(config, c) for c in config.corpora)
    linked = linked_pages(sorted(pages), read, config, set(targets)) if orphans_wanted else None
    findings = [f for path in targets for f in lint_text(path, read(path) or "", pages, config, read=read, linked=linked)]
    return LintRun(findings, len(targets))


def _read_file(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")
