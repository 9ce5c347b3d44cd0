"""The personal memory repository: one git repo of topic pages that every project's memory reads beside its own.

helix keeps one knowledge base for all projects (`~/.helix-kb`); this is that, in git. The user names it
(`[memory] repository = "~/notes"` in their config, or a `[[repository]]` with `memory = true`), it is
created on first use (`git init`, a `.gitwiki.toml` that commits every write: it has no reviewer), and it
is a plain `Memory` on that repo, its index in its own git dir. Its topics read as `~personal/<topic>`
(`PREFIX`), so a name both memories use stays two topics, and a topic or ref with the prefix addresses it.

Which memory a call reads and writes is gitwiki.memory.stores'. Loaded by the agent hooks (`location`):
nothing heavy at import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from gitwiki.config import REPO_CONFIG_NAME, Config
from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write

PERSONAL = "~personal"
PREFIX = PERSONAL + "/"
# What `git init` gets beside it: the pages in memory/ at its top; every write committed, because nothing
# reviews a personal repository before it is used (the project's memory is left in the worktree for review).
REPO_CONFIG = (
    "# gitwiki personal memory: topic pages in memory/, read by every project's memory (docs/memory.md)\n"
    "[[corpus]]\n"
    'name = "personal-memory"\n'
    'path = ""\n'
    "\n[memory]\n"
    'corpus = "personal-memory"\n'
    'dir = "memory"\n'
    "commit = true\n"
)


class Location(NamedTuple):
    path: Path
    named_by: str  # the setting that names it, for error messages


def split(topic: str) -> tuple[str, str]:
    """`~personal/deploy` → (PREFIX, "deploy"); any other topic → ("", topic)."""
    if isinstance(topic, str) and topic.startswith(PREFIX):
        return PREFIX, topic[len(PREFIX) :]
    return "", topic


def own_index(config: Config, common_dir: Path) -> Config:
    """The personal memory repository's `config` with its index in its own git dir (`common_dir`): an index_dir of
    the user's config or $GITWIKI_INDEX_DIR names the project's too, and two repositories in one index dir undo each
    other's rows (a search of both, right after an import, lost the project's first topic)."""
    return config._replace(storage=config.storage._replace(index_dir=str(common_dir / "gitwiki")))


def location(config: Config, project: Path) -> Location | None:
    """The personal memory repository the config names, checked but not created; None when there is none."""
    chosen = [r for r in config.repositories if r.memory]
    if config.memory.repository == "":  # a checkout's way to say: no personal memory here
        return None
    if chosen:
        entry = chosen[0]
        named_by = f"[[repository]] {entry.name!r} in {entry.source}"
        if entry.from_checkout:
            from gitwiki.sources.consents import Consents

            if not Consents().allowed(entry):
                raise UsageError(
                    f"{named_by} is this checkout's choice of memory repository; allow it with "
                    f"`gitwiki repo allow {entry.name}` once you have read it"
                )
        raw = entry.path or ""
    else:
        raw, named_by = config.memory.repository or "", "[memory] repository"
    if not raw:
        return None
    path = Path(raw)
    root = project.resolve()
    if path == root or root in path.parents or path in root.parents:
        raise UsageError(
            f"{named_by} {path} and this project {root} lie one inside the other; the personal memory must be "
            "a repository of its own: choose a path outside the project, e.g. ~/.gitwiki-memory"
        )
    if path.exists() and not (path.is_dir() and (is_repo(path) or not any(path.iterdir()))):
        raise UsageError(
            f"{named_by} {path} is not a git repository; point it at one, or at a path that does not exist yet "
            "(it is created with git init on first use)"
        )
    return Location(path, named_by)


def is_repo(path: Path) -> bool:
    """Whether `path` is the top of a git checkout (a `.git` folder, or a worktree's `.git` file)."""
    return (path / ".git").exists()


def create(path: Path) -> None:
    """`git init` a personal memory repository with its `.gitwiki.toml`, committed."""
    from gitwiki.git.gitcli import run_git
    from gitwiki.git.gitrepo import GitRepo

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the personal memory repository {path} ({e.strerror})") from None
    # A hook or a git alias may have set GIT_DIR for the project: git init must not reuse it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = run_git(path, "init", "-q", env=env)
    if not done.ok:
        raise UsageError(f"git init {path} failed ({done.error}); create the repository by hand")
    atomic_write(path / REPO_CONFIG_NAME, REPO_CONFIG)
    GitRepo.discover(path).commit_paths([REPO_CONFIG_NAME], "gitwiki: personal memory repository")


def no_personal() -> UsageError:
    from gitwiki.config import user_config_path

    return UsageError(
        'no personal memory repository is configured: set [memory] repository = "~/.gitwiki-memory" in '
        f"{user_config_path()} (created on first use), or use the project's memory (scope project)"
    )
