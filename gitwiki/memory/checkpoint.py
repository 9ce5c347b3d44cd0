"""Checkpoints: where a task stopped, as a page `<memory dir>/checkpoints/<name>.md` that the next session
resumes from. One page per name (default `default`); a new checkpoint replaces the old one.

```
# Checkpoint default

Saved 2026-11-23T15:40:00Z.

## Task

Add memory search

## Done

- the page format
```

Sections: Task, Done, Next, Hypotheses, Blocked, Files (empty ones left out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.errors import NotFoundError, RefusedFile, UsageError
from gitwiki.fs import read_bounded
from gitwiki.memory.base import CHECKPOINTS, PAGE_FIX, Memory
from gitwiki.memory.entry import check_unicode, now_iso, parse_iso, topic_name

if TYPE_CHECKING:
    from gitwiki.operations.writes import WriteReport

LISTS = ("done", "next", "hypotheses", "blocked", "files")
# A checkpoint is where a task stopped, read into the model's context at the next session start: 64 KB is
# pages of notes. A larger one (a 900 KB paste made resume answer 1.85 MB) is refused on save, and a page
# grown by hand past it is cut in resume's answer, which names the page to read instead.
MAX_CHECKPOINT_CHARS = 64_000
_SAVED = re.compile(r"^Saved (\S+)\.$")


class Checkpoint(NamedTuple):
    name: str
    saved: str  # ISO-8601 UTC
    task: str
    done: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    hypotheses: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    path: str = ""  # repo-relative page path

    def json(self) -> dict[str, Any]:
        return {**self._asdict(), **{k: list(getattr(self, k)) for k in LISTS}}


class Resumed(NamedTuple):
    checkpoint: Checkpoint
    age_seconds: int
    markdown: str  # the checkpoint with its age, ready to hand to the model


def _items(value: object, key: str = "items") -> tuple[str, ...]:
    """A list field: a list of strings (one string is an item per line); an item is one line of the page.
    helix's `;`- and `,`-separated strings are split by the MCP adapter."""
    if not value:
        return ()
    values = value.splitlines() if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"checkpoint {key} must be a list of strings, not {value!r}")
    return tuple(s for s in (" ".join(v.split()).removeprefix("- ").strip() for v in values) if s)


def _task(value: object) -> str:
    """The task's lines; one that starts with `#` is escaped, or it would start a section of the page."""
    if not isinstance(value, str):
        raise UsageError(f"checkpoint task must be text, not {value!r}")
    lines = value.strip().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join("\\" + line if line.lstrip().startswith("#") else line for line in lines)


def checkpoint_page(data: dict[str, Any]) -> str:
    """Render a checkpoint (a dict of Checkpoint's fields) as its page; UsageError for a field of the wrong
    type or a checkpoint over MAX_CHECKPOINT_CHARS."""
    saved = data.get("saved") or now_iso()
    if not isinstance(saved, str) or parse_iso(saved) is None or any(c.isspace() for c in saved):
        raise UsageError(f"checkpoint saved must be a time like 2026-11-23T15:40:00Z, not {saved!r}")
    lines = [f"# Checkpoint {data['name']}", "", f"Saved {saved}.", "", "## Task", ""]
    lines += [_task(data.get("task", "")) or "(none)", ""]
    for key in LISTS:
        items = _items(data.get(key), key)
        if items:
            lines += [f"## {key.capitalize()}", "", *(f"- {item}" for item in items), ""]
    page = "\n".join(lines)
    if len(page) > MAX_CHECKPOINT_CHARS:
        raise UsageError(
            f"checkpoint {data['name']} is {len(page):,} characters; at most {MAX_CHECKPOINT_CHARS:,}: keep the "
            "task and next steps, store findings as memory entries"
        )
    return page


def parse_checkpoint(text: str, name: str, path: str = "") -> Checkpoint:
    saved, task = "", []
    lists: dict[str, list[str]] = {k: [] for k in LISTS}
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip().lower()
        elif section == "" and (m := _SAVED.match(line.strip())):
            saved = m.group(1)
        elif section == "task" and line.strip():
            task.append(line.strip().removeprefix("\\"))
        elif section in lists and line.startswith("- "):
            lists[section].append(line[2:].strip())
    return Checkpoint(name, saved, "\n".join(task), **{k: tuple(v) for k, v in lists.items()}, path=path)


def checkpoint(
    mem: Memory,
    task: str,
    done: Sequence[str] = (),
    next: Sequence[str] = (),
    hypotheses: Sequence[str] = (),
    blocked: Sequence[str] = (),
    files: Sequence[str] = (),
    name: str = "default",
) -> tuple[Checkpoint, list[WriteReport]]:
    from gitwiki.memory.store import write_pages

    if not isinstance(task, str) or not task.strip():
        raise UsageError("checkpoint needs task: what you are working on")
    name = topic_name(name)
    data = {"name": name, "saved": now_iso(), "task": task, "done": done, "next": next}
    data |= {"hypotheses": hypotheses, "blocked": blocked, "files": files}
    page = checkpoint_page(data)
    with mem.lock():
        writes = write_pages(mem, {name: page}, folder=CHECKPOINTS)
    return parse_checkpoint(page, name, mem.repo_path(mem.rel_path(name, CHECKPOINTS))), writes


def load_checkpoint(mem: Memory, name: str = "default") -> Checkpoint | None:
    """The saved checkpoint, or None: the cheap read an agent hook makes at session start."""
    name = topic_name(name)
    try:  # a FIFO in a checkout blocked the session-start hook here; a symlink read a file outside
        raw = read_bounded(mem.folder / CHECKPOINTS / f"{name}.md", roots=[mem.root], what="checkpoint", fix=PAGE_FIX)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, RefusedFile):
        return None
    return parse_checkpoint(text, name, mem.repo_path(mem.rel_path(name, CHECKPOINTS)))


def checkpoints(mem: Memory) -> list[Checkpoint]:
    folder = mem.folder / CHECKPOINTS
    names = sorted(f.stem for f in folder.glob("*.md")) if folder.is_dir() else []
    return [c for c in (load_checkpoint(mem, n) for n in names) if c is not None]


def resume(mem: Memory, name: str = "default", now: datetime | None = None) -> Resumed:
    found = load_checkpoint(mem, name)
    if found is None:
        raise _missing(topic_name(name))
    saved = parse_iso(found.saved)
    age = int(((now or datetime.now(UTC)) - saved).total_seconds()) if saved else 0
    lines = [f"# Resuming: {found.task.splitlines()[0] if found.task else found.name}", ""]
    lines += [f"Checkpoint `{found.name}` saved {found.saved} ({_age(age)} ago).", "", "## Task", "", found.task, ""]
    for key in LISTS:
        items = getattr(found, key)
        if items:
            lines += [f"## {key.capitalize()}", "", *(f"- {item}" for item in items), ""]
    markdown = "\n".join(lines).rstrip() + "\n"
    if len(markdown) > MAX_CHECKPOINT_CHARS:
        cut = markdown[:MAX_CHECKPOINT_CHARS].rsplit("\n", 1)[0]
        markdown = f"{cut}\n\n… cut at {MAX_CHECKPOINT_CHARS:,} of {len(markdown):,} characters; read {found.path}\n"
        found = found._replace(task=found.task[:MAX_CHECKPOINT_CHARS], done=(), next=(), hypotheses=(), blocked=())
        found = found._replace(files=())
    return Resumed(found, age, markdown)


def checkpoint_pages(exported: object) -> dict[str, str | None]:
    """Exported checkpoints as their pages, each checked (UsageError names the bad one)."""
    if not isinstance(exported, list):
        raise UsageError("checkpoints of the import must be a list of checkpoint objects")
    pages: dict[str, str | None] = {}
    for n, c in enumerate(exported, 1):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise UsageError(f'checkpoint {n} of the import must be an object with a name: {{"name": …, "task": …}}')
        name = topic_name(c["name"])
        try:
            pages[name] = checkpoint_page({**c, "name": name})
            check_unicode(pages[name] or "", "this checkpoint")
        except UsageError as e:
            raise UsageError(f"checkpoint {n} of the import: {e}") from None
    return pages


def import_checkpoints(mem: Memory, pages: dict[str, str | None]) -> list[str]:
    """Write checkpoint pages (from `checkpoint_pages`; a checkpoint is replaced, not merged); their names."""
    from gitwiki.memory.store import write_pages

    if pages:
        with mem.lock():
            write_pages(mem, pages, folder=CHECKPOINTS)
    return list(pages)


def clear_checkpoint(mem: Memory, name: str = "default") -> list[WriteReport]:
    from gitwiki.memory.store import write_pages

    name = topic_name(name)
    with mem.lock():
        if load_checkpoint(mem, name) is None:
            raise _missing(name)
        return write_pages(mem, {name: None}, folder=CHECKPOINTS)


def _missing(name: str) -> NotFoundError:
    return NotFoundError(f"no checkpoint {name!r}; save one with topics action=checkpoint (task, done, next, …)")


def _age(seconds: int) -> str:
    # wiki.age says the same, but importing gitwiki.wiki loads pygit2 (~40 ms), and resume is what an
    # agent hook calls at session start.
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"
