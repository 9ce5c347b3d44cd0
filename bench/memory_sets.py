"""What the memory recall sets' build.py files share (bench/heldout/til, bench/heldout/simonw): a TIL repository's
notes at a pinned commit from its mirror, one memory entry per note in a topic named after its folder, stored through
gitwiki's own import (`gitwiki.memory.store.import_topics`, what `memory topics action=import` runs). A set's
build.py names its mirror, commit and topics and calls these."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CREATED = "2026-01-15T12:00:00Z"  # every entry created at one moment, so recency weighs them all alike
PROJECT_CONFIG = '[[corpus]]\nname = "wiki"\npath = "wiki"\n'


def notes(mirror: Path, commit: str, topics: list[str]) -> dict[str, list[tuple[str, str]]]:
    """topic → [(note id, entry text)] in file-name order; the text is the note with its `# Title` line
    made the entry's first line."""
    tar = subprocess.run(
        ["git", f"--git-dir={mirror}", "archive", commit, *topics], check=True, capture_output=True
    ).stdout
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in topics}
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            folder, _, name = member.name.partition("/")
            if member.isfile() and name.endswith(".md") and "/" not in name:
                text = archive.extractfile(member).read().decode()  # type: ignore[union-attr]
                first, _, rest = text.strip().partition("\n")
                out[folder].append((member.name, f"{first.lstrip('# ').strip()}\n{rest}".strip()))
    return out


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _use(work: Path) -> None:
    os.environ["HOME"] = str(work / "home")
    os.environ["XDG_CONFIG_HOME"] = str(work / "xdg")
    os.environ["GITWIKI_INDEX_DIR"] = str(work / "index")


def build(work: Path, by_topic: dict[str, list[tuple[str, str]]], personal: tuple[str, ...] | list[str] = ()) -> Any:
    """A fresh project repo under `work` with the notes `by_topic` imported (and `personal`'s topics in a personal
    memory at work/kb, named by a user config at work/xdg); HOME and XDG_CONFIG_HOME point there. Returns the
    project's Memory and `note_of`: (topic as search shows it, entry index) → note id."""
    from gitwiki.memory.base import Memory
    from gitwiki.memory.store import import_topics

    if work.exists():
        shutil.rmtree(work)
    repo = work / "project"
    (repo / "wiki").mkdir(parents=True)
    (repo / ".gitwiki.toml").write_text(PROJECT_CONFIG)
    (repo / "wiki" / "index.md").write_text("# Home\n\nThe project wiki.\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "wiki")
    _use(work)
    (work / "home").mkdir()
    if personal:
        (work / "xdg" / "gitwiki").mkdir(parents=True)
        (work / "xdg" / "gitwiki" / "config.toml").write_text(f'[memory]\nrepository = "{work / "kb"}"\n')
    mem = Memory.open(repo)
    note_of: dict[tuple[str, int], str] = {}
    for topic, items in by_topic.items():
        owner = mem.personal if topic in personal else mem
        assert owner is not None
        entries = [{"created": CREATED, "text": text} for _, text in items]
        added = import_topics(owner, [{"name": topic, "entries": entries}])
        assert added == {topic: len(items)}, (topic, added)
        shown = f"{owner.label or ''}{topic}"
        for i, (nid, _) in enumerate(items, 1):
            note_of[(shown, i)] = nid
    (work / "note_of.json").write_text(json.dumps([[t, i, nid] for (t, i), nid in note_of.items()]))
    return mem, note_of


def open_built(work: Path, build_anew: Callable[[], Any], rebuild: bool = False) -> Any:
    """`build`'s result, reusing a build already under `work` (its env set as build sets it)."""
    from gitwiki.memory.base import Memory

    if rebuild or not (work / "note_of.json").is_file():
        return build_anew()
    _use(work)
    note_of = {(t, i): nid for t, i, nid in json.loads((work / "note_of.json").read_text())}
    return Memory.open(work / "project"), note_of
