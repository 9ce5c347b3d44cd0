"""The personal memory repository: one git repo of topic pages that every project's memory reads beside its own.

helix keeps one knowledge base for all projects (`~/.helix-kb`); this is that, in git. The user names it
(`[memory] repository = "~/notes"` in their config, or a `[[repository]]` with `memory = true`), it is
created on first use (`git init`, a `.gitwiki.toml` that commits every write: it has no reviewer), and it
is a plain `Memory` on that repo, its index in its own git dir. Its topics read as `~personal/<topic>`
(`PREFIX`), so a name both memories use stays two topics, and a topic or ref with the prefix addresses it.

Where a write goes: the call's scope (`project` or `personal`), a topic with the prefix, else `[memory]
write`: `auto` (the default) writes to the project when it has topic pages, else to the personal
repository when there is one; `project` and `personal` always there.

Loaded by the agent hooks (`location`, `is_repo`): nothing heavy at import.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import REPO_CONFIG_NAME, Config
from gitwiki.errors import UsageError

if TYPE_CHECKING:
    from gitwiki.memory.base import Memory
    from gitwiki.memory.search import Found

PERSONAL = "~personal"
PREFIX = PERSONAL + "/"
SCOPES = ("project", "personal")
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


def location(config: Config, project: Path) -> Location | None:
    """The personal memory repository the config names, checked but not created; None when there is none."""
    chosen = [r for r in config.repositories if r.memory]
    if chosen:
        entry = chosen[0]
        named_by = f"[[repository]] {entry.name!r} in {entry.source}"
        if entry.from_checkout:
            from gitwiki.repositories import Consents

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


def open_memory(config: Config, project: Path) -> Memory | None:
    """The personal memory (created on first use), or None when none is configured."""
    found = location(config, project)
    if found is None:
        return None
    if not is_repo(found.path):
        create(found.path)
    from gitwiki import config as config_mod
    from gitwiki.memory.base import Memory

    return Memory(root=found.path, settings=config_mod.load(found.path), label=PREFIX)


def create(path: Path) -> None:
    """`git init` a personal memory repository with its `.gitwiki.toml`, committed."""
    from gitwiki.gitcli import run_git
    from gitwiki.gitrepo import GitRepo

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the personal memory repository {path} ({e.strerror})") from None
    # A hook or a git alias may have set GIT_DIR for the project: git init must not reuse it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = run_git(path, "init", "-q", env=env)
    if not done.ok:
        raise UsageError(f"git init {path} failed ({done.error}); create the repository by hand")
    (path / REPO_CONFIG_NAME).write_text(REPO_CONFIG, encoding="utf-8")
    GitRepo.discover(path).commit_paths([REPO_CONFIG_NAME], "gitwiki: personal memory repository")


# ---- routing ---------------------------------------------------------------------------------------


def check_scope(scope: str | None) -> None:
    if scope is not None and scope not in SCOPES:
        raise UsageError(f"scope must be project or personal, not {scope!r}")


def no_personal(mem: Memory) -> UsageError:
    return UsageError(
        'no personal memory repository is configured: set [memory] repository = "~/.gitwiki-memory" in '
        f"{_user_config()} (created on first use), or use the project's memory (scope project)"
    )


def _user_config() -> Path:
    from gitwiki.config import user_config_path

    return user_config_path()


def writer(mem: Memory, scope: str | None = None, topics: Sequence[str] = ()) -> tuple[Memory, list[str]]:
    """The memory a write goes to and the topic names as that memory reads them (the prefix dropped)."""
    check_scope(scope)
    labels = {split(t)[0] for t in topics if isinstance(t, str)}
    if len(labels) > 1:
        raise UsageError(
            f"one call writes to one memory, and these topics name both ({PREFIX}… and not): split the call; "
            "to move entries across, export the topic from one (topics action=export) and import it into the other"
        )
    bare = [split(t)[1] for t in topics]
    if mem.label:  # the personal memory itself
        return mem, bare
    if labels == {PREFIX}:
        if scope == "project":
            raise UsageError(f"scope project, but the topic names the personal memory ({PREFIX}…); drop one")
        scope = "personal"
    if scope is None:
        chosen = mem.config.write
        if chosen == "auto":
            # A project that keeps topic pages writes there (reviewed with the code); one that has none, into
            # the personal repository, as helix writes everything into its one knowledge base.
            chosen = "personal" if mem.personal is not None and not mem.topic_files() else "project"
        scope = chosen
    if scope == "project":
        return mem, bare
    if mem.personal is None:
        raise no_personal(mem)
    return mem.personal, bare


def writer_batch(mem: Memory, scope: str | None, items: list) -> tuple[Memory, list]:
    """`writer` for a batch: the memory its entries go to, and the entries with their topics as it reads them."""
    named = (
        [i for i in items if isinstance(i, dict) and isinstance(i.get("topic"), str)] if isinstance(items, list) else []
    )
    target, topics = writer(mem, scope, [i["topic"] for i in named])
    renamed = dict(zip(map(id, named), topics, strict=True))
    return target, [{**i, "topic": renamed[id(i)]} if id(i) in renamed else i for i in items] if named else items


def writer_edit(
    mem: Memory, scope: str | None, topic: str, to: str | None, into: str | None
) -> tuple[Memory, str, str | None, str | None]:
    """`writer` for an edit: its topic and rename's `to` or merge's `into` must be in one memory."""
    others = [t for t in (to, into) if t is not None]
    target, (name, *bare) = writer(mem, scope, [topic, *others])
    renamed = dict(zip(others, bare, strict=True))
    return target, name, renamed.get(to) if to is not None else None, renamed.get(into) if into is not None else None


def topics_memory(mem: Memory, scope: str | None, action: str) -> Memory:
    """The memory a topics action works on: the scope's; import writes as a store does; without a scope
    the others start from the project's (list, recent, entries and session read the personal one too)."""
    return writer(mem, scope)[0] if scope or action == "import" else mem


def search(mem: Memory, query: str | None = None, *, topic: str | None = None, limit: int = 10, **options) -> Found:
    """memory search over the project's memory and the personal one, fused into one list.

    Each memory ranks its own entries (its own index, relevance relative to its best hit), then the lists
    merge by score. The match level is the best either reached: when one memory has entries holding every
    query word, the other's any-word or dense-only matches are left out, as one memory leaves them out."""
    from gitwiki.memory import search as search_mod

    _, inline = search_mod.split_query(query)
    wanted = topic or inline.get("topic")
    if wanted:
        owner, name = mem.reader(wanted)
        return search_mod.search(owner, query, topic=name, limit=limit, **options)
    stores = mem.stores()
    found = [search_mod.search(m, query, limit=limit, **options) for m in stores]
    if len(found) == 1:
        return found[0]
    levels = ("recent", "and", "or", "semantic")
    hit = [f for f in found if f.hits]
    if not hit:
        return found[0]
    best = min(levels.index(f.matched) for f in hit)
    kept = [f for f in hit if levels.index(f.matched) == best]
    hits = sorted((h for f in kept for h in f.hits), key=lambda h: (-h.score, h.entry.topic, h.entry.index))
    per_topic: dict[str, int] = {}
    for f in kept:
        per_topic.update(f.per_topic)
    rankings = sorted({f.ranking for f in kept})
    return found[0]._replace(
        matched=kept[0].matched,
        ranking="/".join(rankings),
        total=sum(f.total for f in kept),
        hits=hits[:limit],
        per_topic=dict(sorted(per_topic.items(), key=lambda kv: -kv[1])),
    )
