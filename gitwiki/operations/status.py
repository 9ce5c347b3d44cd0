"""`gitwiki status` as a record: each corpus, each synced repository, the index and, asked for, its check.

The library gathers it (the model load, the checks of every index); the CLI prints `text()` or `to_json()` and
exits with `exit_code`, so the rules of what is damaged and what that exits with live here, once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gitwiki.errors import StoreError
from gitwiki.index.embed import lexical_notice, unavailable
from gitwiki.index.indexer import truncated_pages
from gitwiki.sources.repositories import RepositoryStatus
from gitwiki.wiki import CorpusStatus, Wiki, age


class Status(NamedTuple):
    index_dir: str
    index_bytes: int
    corpora: list[CorpusStatus]
    repositories: list[RepositoryStatus]
    lexical_notice: str | None
    why_lexical: str | None
    truncated: dict[str, list[str]]  # corpus → pages searched only up to [search] max_page_bytes
    max_page_bytes: int
    check: str | None  # None: not checked; "ok", or what is damaged
    repository_checks: dict[str, str]  # synced repository → "ok" or its damage
    wanted_model: str | None  # the model id the configuration's vectors are keyed by (None: embeddings off)

    @property
    def damaged(self) -> bool:
        return self.check not in (None, "ok") or any(v != "ok" for v in self.repository_checks.values())

    @property
    def exit_code(self) -> int:
        return StoreError.exit_code if self.damaged else 0  # a damaged index is unusable until rebuilt

    def to_json(self) -> dict[str, Any]:
        return {
            "index_dir": self.index_dir,
            "index_bytes": self.index_bytes,
            "corpora": [r._asdict() for r in self.corpora],
            "repositories": [
                {
                    **r._asdict(),
                    "state": r.state,
                    **({"check": self.repository_checks[r.name]} if r.name in self.repository_checks else {}),
                }
                for r in self.repositories
            ],
            "lexical_notice": self.lexical_notice,
            "wanted_model": self.wanted_model,
            **({"check": self.check} if self.check is not None else {}),
        }

    def text(self) -> str:
        lines = [line for r in self.corpora for line in self._corpus_lines(r)]
        for repo in self.repositories:
            synced = f"commit {(repo.commit or '-')[:12]}, synced {age(repo.synced_at)}"
            lines.append(f"repository {repo.name}  {repo.location}: {repo.state}, {synced}")
            if found := self.repository_checks.get(repo.name):
                lines.append(
                    f"repository {repo.name} index check: "
                    + (
                        "ok"
                        if found == "ok"
                        else f"damaged ({found}); run `gitwiki repo sync {repo.name}` to rebuild it"
                    )
                )
        lines.append(f"index {self.index_dir} ({self.index_bytes / 1e6:.1f} MB)")
        if self.lexical_notice:
            lines.append(f"{self.lexical_notice}\n  why: {self.why_lexical}")
        if self.check is not None:
            lines.append(
                "index check: ok"
                if self.check == "ok"
                else f"index check: damaged ({self.check}); run `gitwiki index --rebuild`"
            )
        return "\n".join(lines)

    def _corpus_lines(self, r: CorpusStatus) -> list[str]:
        state = "fresh" if r.fresh else ("not indexed" if r.indexed_commit is None else "stale (run gitwiki index)")
        lines = [
            f"corpus {r.name}  path {r.path or '.'}/",
            f"  pages {r.pages}, chunks {r.chunks}, model {r.model or 'none (lexical)'}",
        ]
        if r.indexed_commit and self.wanted_model and r.model != self.wanted_model:
            lines.append(
                f"  configured model {self.wanted_model}: the next `gitwiki index` (or a search) embeds the pages again"
            )
        if r.head_commit is None:  # `git init` without a commit: only the worktree has pages
            lines.append("  HEAD: no commit yet; uncommitted pages are searched as they are, commit them to index them")
        else:
            lines.append(
                f"  indexed {(r.indexed_commit or '-')[:12]} {age(r.indexed_at)}; HEAD {r.head_commit[:12]}: {state}"
            )
        if r.dirty:
            shown = ", ".join(r.dirty[:5]) + (f" and {len(r.dirty) - 5} more" if len(r.dirty) > 5 else "")
            lines.append(f"  uncommitted pages ({len(r.dirty)}, searched too): {shown}")
        if cut := self.truncated.get(r.name):
            lines.append(f"  searched only up to [search] max_page_bytes ({self.max_page_bytes:,}): {', '.join(cut)}")
        if r.submodules:
            lines.append(f"  submodules skipped (their pages are not indexed): {', '.join(r.submodules)}")
        return lines


def status(wiki: Wiki, check: bool = False) -> Status:
    """Everything `gitwiki status` shows; `check` reads every row of the index and of each synced repository's."""
    from gitwiki.git.gitcli import drop_orphaned_index_lock

    drop_orphaned_index_lock(wiki.root)  # a gitwiki killed mid-commit left git's index.lock: the user's git is free
    rows = wiki.status()
    repositories = [r.status() for r in wiki.repositories]
    damage = (wiki.store.check(full=True) or "ok") if check else None
    if any(r.model != wiki.wanted_model() for r in rows if r.indexed_commit):
        wiki.embedder()  # vectors missing: does the model load now? (a failure is recorded for lexical_notice)
    # each synced repository's own index too: a published index installed by `repo sync` lives there
    checked = {
        r.name: r.store.check(full=True) or "ok"
        for r, row in zip(wiki.repositories, repositories, strict=True)
        if check and row.commit is not None
    }
    notice = lexical_notice(wiki.config.embeddings, wiki.index_dir)
    return Status(
        index_dir=str(wiki.index_dir),
        index_bytes=wiki.store.size_bytes(),
        corpora=rows,
        repositories=repositories,
        lexical_notice=notice,
        why_lexical=unavailable(wiki.config.embeddings, wiki.index_dir) if notice else None,  # read only when said
        truncated={
            r.name: [p for p, _ in cut]
            for r in rows
            if (cut := truncated_pages(wiki.index_dir, wiki.store.pages(r.name)))
        },
        max_page_bytes=wiki.config.search.max_page_bytes,
        check=damage,
        repository_checks=checked,
        wanted_model=wiki.wanted_model(),
    )
