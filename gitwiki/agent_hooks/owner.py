"""The hooks' search asked of the checkout's running owner (`gitwiki serve`), as `gitwiki ground` asks it.

The owner has the index, the model and the worktree view warm, so it answers with the configured search (hybrid
where the model is enabled) in milliseconds, where a hook alone can only read BM25 from the committed index. A hook
never starts an owner, and gives one OWNER_BUDGET seconds in all: no owner, a hung or busy one, one that declines
(another environment or configuration) or any error, and the hook searches by itself as before (`Lookup`).
"""

from __future__ import annotations

from typing import Any

from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.serve import client

# Connect, ask and read back: a warm owner answers a search in 10-20 ms; past this it is busy (a write, an index
# catch-up) or hung, and the in-process search (~10 ms) is the better answer than a hook that holds the tool call.
OWNER_BUDGET = 0.5
# Pages asked for beyond the ones shown: the session's notes already injected are left out afterwards (`pick`).
SPARE = 3


def search_all(lookup: Lookup, start: str, query: str) -> list[Note] | None:
    """`search`, with the personal memory repository's sections (searched here: the owner serves one checkout)
    merged in by rank, as the two rankings' scores are of different scales; None when no owner answers."""
    found = search(lookup, start, query)
    if found is None or lookup.personal is None:
        return found
    personal = [n._replace(chunk=-1 - i, score=1.0 / (1 + i)) for i, n in enumerate(lookup.personal.search(query))]
    return sorted(found + personal, key=lambda n: -n.score)


def search(lookup: Lookup, start: str, query: str) -> list[Note] | None:
    """Sections for `query` from the owner, best first, scored so that `Lookup.pick` keeps the owner's order; None
    when no owner answers (the caller then searches by itself). Pages the owner calls weak matches are left out, as
    `Lookup.search` leaves out sections that cover too little of the query; when all are weak (on a small wiki
    every page can be), None too: the hook's own coverage rule decides, as it did before there was an owner."""
    if not lookup.indexed:  # no index yet: the owner would build one first, far past a hook's budget
        return None
    fields = {
        "query": query,
        "corpus": "all",
        "top_files": lookup.settings.results + SPARE,
        "chunks_per_file": 2,
        "full": True,  # the hook makes its own snippet around the query's words
    }
    found = client.ask_search(lookup.root, lookup.index_dir, start, fields, OWNER_BUDGET)
    if found is None:
        return None
    try:
        return _notes(found, lookup.label) or None
    except (KeyError, TypeError, ValueError):  # a reply of another shape: an owner of another version
        return None


def _notes(found: dict[str, Any], label: str) -> list[Note]:
    notes: list[Note] = []
    for doc in found["docs"]:
        if doc.get("weak"):
            continue
        path = label + str(doc["path"])
        for chunk in doc["chunks"]:
            breadcrumb = tuple(str(b) for b in chunk["breadcrumb"])
            rank = len(notes)
            # The owner's ranking (fused scores of its own scale) carried as a falling score; the chunk id is the
            # rank, as the index's ids are not in the reply and `pick` only needs them distinct.
            notes.append(
                Note(
                    rank,
                    f"{path}#{' > '.join(breadcrumb)}",
                    path,
                    breadcrumb,
                    int(chunk["start_line"]),
                    int(chunk["end_line"]),
                    str(chunk["text"]),
                    1.0 / (1 + rank),
                )
            )
    return notes
