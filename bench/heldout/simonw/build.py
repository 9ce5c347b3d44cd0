"""Build the simonw recall set's memories: simonw/til notes (Apache-2.0, Simon Willison) at a pinned
commit, one memory entry per note in a topic named after its folder, stored through gitwiki's own import
(`gitwiki.memory.store.import_topics`, what `memory topics action=import` runs).

    build(work)                      one project memory holding all 28 topics
    build(work, personal=TOPICS[1::2])   those topics in a personal memory (`~personal/<topic>`) instead

Both return the project's Memory and `note_of`: (topic as search shows it, entry index) → note id
(`folder/file.md`, as questions.jsonl labels it). Every entry is created at one moment, so recency weighs
them all alike. Needs the mirror: git --git-dir=/work/.mirror/simonw+til/repo.
"""

from __future__ import annotations

import os
from pathlib import Path

import memory_sets  # bench/, on the path of the bench scripts that load this

MIRROR = Path(os.environ.get("SIMONW_TIL_MIRROR", "/work/.mirror/simonw+til/repo"))
COMMIT = "8d908b6d36cdd27bc6464392435ac6223a00caac"
# Every folder of 5 notes or more, largest first (432 notes in 28 topics).
TOPICS = (
    "python sqlite github-actions macos llms pytest github django datasette javascript gpt3 bash fly cloudflare"
    " docker aws jq git cloudrun readthedocs postgresql homebrew npm googlecloud electron sql shot-scraper html"
).split()
# Questions per topic (1 for the others): 60 target notes, drawn by `targets()`.
QUOTA = {"python": 8, "sqlite": 7, "github-actions": 4, "macos": 4, "llms": 4}
QUOTA |= {"pytest": 3, "github": 3, "django": 3, "datasette": 3, "javascript": 3}
KINDS = ("lexical", "paraphrase", "conceptual")


def notes(commit: str = COMMIT) -> dict[str, list[tuple[str, str]]]:
    """topic → [(note id, entry text)] in file-name order (`memory_sets.notes`)."""
    return memory_sets.notes(MIRROR, commit, TOPICS)


def targets() -> list[tuple[str, str, str]]:
    """The 60 (question id, kind, note id) the questions were written for: random.Random(30) draws each topic's
    quota in TOPICS order; the kinds rotate."""
    import random

    rng = random.Random(30)
    by_topic = notes()
    picked = [nid for t in TOPICS for nid, _ in rng.sample(by_topic[t], QUOTA.get(t, 1))]
    return [(f"s{i:03d}", KINDS[(i - 1) % 3], nid) for i, nid in enumerate(picked, 1)]


def build(work: Path, personal: tuple[str, ...] | list[str] = ()):  # -> (Memory, dict)
    """`memory_sets.build` of these notes."""
    return memory_sets.build(work, notes(), personal)


def open_built(work: Path, personal: tuple[str, ...] | list[str] = (), rebuild: bool = False):
    """`build`'s result, reusing a build already under `work`."""
    return memory_sets.open_built(work, lambda: build(work, personal), rebuild)
