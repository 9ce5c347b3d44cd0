"""Corpus states: per corpus, the indexed commit, corpus tree id, model and path → blob listing."""

from __future__ import annotations

import time
from typing import NamedTuple

from gitwiki.index.store.database import Database


class State(NamedTuple):
    corpus: str
    commit: str
    tree: str  # the corpus subtree id ("" for an empty corpus)
    model: str | None  # None: indexed without vectors (lexical mode)
    indexed_at: float


class States(Database):
    def state(self, corpus: str) -> State | None:
        row = self.conn.execute(
            "SELECT corpus, commit_id, tree, model, indexed_at FROM states WHERE corpus = ?", (corpus,)
        ).fetchone()
        return State(*row) if row else None

    def states(self) -> list[State]:
        return [State(*r) for r in self.conn.execute("SELECT corpus, commit_id, tree, model, indexed_at FROM states")]

    def pages(self, corpus: str) -> dict[str, str]:
        return dict(self.conn.execute("SELECT path, blob FROM pages WHERE corpus = ?", (corpus,)).fetchall())

    def set_state(self, corpus: str, commit: str, tree: str, model: str | None, pages: dict[str, str]) -> None:
        """Switch a corpus to a new state (call inside `write()`)."""
        self.conn.execute("DELETE FROM pages WHERE corpus = ?", (corpus,))
        self.conn.executemany("INSERT INTO pages VALUES (?,?,?)", [(corpus, p, b) for p, b in pages.items()])
        self.conn.execute(
            "INSERT OR REPLACE INTO states VALUES (?,?,?,?,?)", (corpus, commit, tree, model, time.time())
        )

    def set_commit(self, corpus: str, commit: str) -> None:
        self.conn.execute(
            "UPDATE states SET commit_id = ?, indexed_at = ? WHERE corpus = ?", (commit, time.time(), corpus)
        )

    def drop_states(self, keep: set[str]) -> None:
        """Forget every corpus state not named in `keep` (their pages then count as unreferenced for gc)."""
        gone = [(s.corpus,) for s in self.states() if s.corpus not in keep]
        self.conn.executemany("DELETE FROM pages WHERE corpus = ?", gone)
        self.conn.executemany("DELETE FROM states WHERE corpus = ?", gone)

    def page_count(self, corpus: str) -> int:
        return self.conn.execute("SELECT count(*) FROM pages WHERE corpus = ?", (corpus,)).fetchone()[0]

    def page_paths(self) -> list[tuple[str, str]]:
        """(corpus, path) of every page of every corpus state."""
        return [(r[0], r[1]) for r in self.conn.execute("SELECT corpus, path FROM pages")]

    def corpus_counts(self, corpus: str) -> tuple[int, int]:
        """(pages, chunks) in the corpus's indexed state."""
        pages = self.page_count(corpus)
        chunks = self.conn.execute(
            "SELECT count(*) FROM pages p JOIN chunks c ON c.blob = p.blob WHERE p.corpus = ?", (corpus,)
        ).fetchone()[0]
        return pages, chunks
