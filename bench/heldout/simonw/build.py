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

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

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
CREATED = "2026-01-15T12:00:00Z"
PROJECT_CONFIG = '[[corpus]]\nname = "wiki"\npath = "wiki"\n'


def notes(commit: str = COMMIT) -> dict[str, list[tuple[str, str]]]:
    """topic → [(note id, entry text)] in file-name order; the text is the note with its `# Title` line
    made the entry's first line."""
    tar = subprocess.run(
        ["git", f"--git-dir={MIRROR}", "archive", commit, *TOPICS], check=True, capture_output=True
    ).stdout
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in TOPICS}
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            folder, _, name = member.name.partition("/")
            if member.isfile() and name.endswith(".md") and "/" not in name:
                text = archive.extractfile(member).read().decode()  # type: ignore[union-attr]
                first, _, rest = text.strip().partition("\n")
                out[folder].append((member.name, f"{first.lstrip('# ').strip()}\n{rest}".strip()))
    return out


def targets() -> list[tuple[str, str, str]]:
    """The 60 (question id, kind, note id) the questions were written for: random.Random(30) draws each topic's
    quota in TOPICS order; the kinds rotate."""
    import random

    rng = random.Random(30)
    by_topic = notes()
    picked = [nid for t in TOPICS for nid, _ in rng.sample(by_topic[t], QUOTA.get(t, 1))]
    return [(f"s{i:03d}", KINDS[(i - 1) % 3], nid) for i, nid in enumerate(picked, 1)]


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(work: Path, personal: tuple[str, ...] | list[str] = ()):  # -> (Memory, dict)
    """A fresh project repo under `work` with the notes imported (and `personal`'s topics in a personal
    memory at work/kb, named by a user config at work/xdg); HOME and XDG_CONFIG_HOME point there."""
    import shutil

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
    os.environ["HOME"] = str(work / "home")
    os.environ["XDG_CONFIG_HOME"] = str(work / "xdg")
    os.environ["GITWIKI_INDEX_DIR"] = str(work / "index")
    (work / "home").mkdir()
    if personal:
        (work / "xdg" / "gitwiki").mkdir(parents=True)
        (work / "xdg" / "gitwiki" / "config.toml").write_text(f'[memory]\nrepository = "{work / "kb"}"\n')
    mem = Memory.open(repo)
    by_topic = notes()
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


def open_built(work: Path, personal: tuple[str, ...] | list[str] = (), rebuild: bool = False):
    """`build`'s result, reusing a build already under `work` (its env set as build sets it)."""
    from gitwiki.memory.base import Memory

    if rebuild or not (work / "note_of.json").is_file():
        return build(work, personal)
    os.environ["HOME"] = str(work / "home")
    os.environ["XDG_CONFIG_HOME"] = str(work / "xdg")
    os.environ["GITWIKI_INDEX_DIR"] = str(work / "index")
    note_of = {(t, i): nid for t, i, nid in json.loads((work / "note_of.json").read_text())}
    return Memory.open(work / "project"), note_of
