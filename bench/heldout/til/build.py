"""Build the til recall set's memories: jbranchaud/til notes (MIT, © 2015 Josh Branchaud) at a pinned
commit, one memory entry per note in a topic named after its folder, stored through gitwiki's own import
(`gitwiki.memory.store.import_topics`, what `memory topics action=import` runs).

    build(work)                      one project memory holding all 14 topics
    build(work, personal=TOPICS[1::2])   those topics in a personal memory (`~personal/<topic>`) instead

Both return the project's Memory and `note_of`: (topic as search shows it, entry index) → note id
(`folder/file.md`, as questions.jsonl labels it). Every entry is created at one moment, so recency weighs
them all alike. Needs the mirror: git --git-dir=/work/.mirror/jbranchaud+til/repo.
"""

from __future__ import annotations

import os
from pathlib import Path

import memory_sets  # bench/, on the path of the bench scripts that load this

MIRROR = Path(os.environ.get("TIL_MIRROR", "/work/.mirror/jbranchaud+til/repo"))
COMMIT = "453e9edbdf2be4165b65cbcce7342ac7bb9c4859"
# Largest first: the four of 150+ notes are where a per-topic hit cap bites.
TOPICS = ("rails postgres ruby vim python react elixir tmux go css typescript mysql jq sed").split()


def notes(commit: str = COMMIT) -> dict[str, list[tuple[str, str]]]:
    """topic → [(note id, entry text)] in file-name order (`memory_sets.notes`)."""
    return memory_sets.notes(MIRROR, commit, TOPICS)


def build(work: Path, personal: tuple[str, ...] | list[str] = ()):  # -> (Memory, dict)
    """`memory_sets.build` of these notes."""
    return memory_sets.build(work, notes(), personal)


def open_built(work: Path, personal: tuple[str, ...] | list[str] = (), rebuild: bool = False):
    """`build`'s result, reusing a build already under `work`."""
    return memory_sets.open_built(work, lambda: build(work, personal), rebuild)
