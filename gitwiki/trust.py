"""Trust: what a cloned checkout's own `.gitwiki.toml` may set, key by key, in one table.

A checkout comes from whoever pushed it, so its config file is a stranger's input. Every key the schema
accepts (gitwiki.config's records) has one class here, and `gitwiki.config.load` applies it to the
checkout's layer, nowhere else:

- *either file*: a value that only shapes how this checkout is searched or checked (its type and range
  are checked as for any layer);
- *user only*: a key that points gitwiki at something outside the checkout (the index dir, a model
  directory, the personal memory repository and writes to it). From a checkout it is ignored, with one warning
  line on stderr naming every such key;
- *inside the repository*: a path a checkout may name in itself. Resolved (symlinks followed) from the
  repo root, it must stay inside the repository and out of `.git`, or loading fails with a UsageError;
- *needs consent*: a `[[repository]]` entry, used once the user allows it (`gitwiki repo allow`, kept in
  the user's config dir by gitwiki.sources.consents.Consents).

docs/security.md argues each choice; tests/test_trust.py holds that the table covers every key.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gitwiki.errors import UsageError
from gitwiki.fs import path_problem


class Trust(enum.Enum):
    ANY = "either file"
    USER = "user only"
    INSIDE = "inside the repository"
    CONSENT = "needs consent"


ANY, USER, INSIDE, CONSENT = Trust.ANY, Trust.USER, Trust.INSIDE, Trust.CONSENT

# "table.key" → its class; "corpus" and "repository" are the arrays of tables [[corpus]] and [[repository]].
TABLE: dict[str, Trust] = {
    "corpus.name": ANY,
    "corpus.path": INSIDE,
    "corpus.include": ANY,
    "corpus.exclude": ANY,
    "corpus.lint_disable": ANY,
    "corpus.site": ANY,  # one of config.SITES: how links resolve, never a path
    # Every field of a checkout's [[repository]]: the entry is used only once allowed, as a whole.
    "repository.name": CONSENT,
    "repository.url": CONSENT,
    "repository.path": CONSENT,
    "repository.ref": CONSENT,
    "repository.wiki": CONSENT,
    "repository.include": CONSENT,
    "repository.exclude": CONSENT,
    "repository.memory": CONSENT,  # and the user's own memory repository wins over it (`memory_conflict`)
    "search.mode": ANY,
    "search.fusion": ANY,
    "search.top_files": ANY,
    "search.chunks_per_file": ANY,
    "search.limit": ANY,
    "search.snippet_chars": ANY,
    "search.auto_index": ANY,
    "search.reranker": ANY,  # a fastembed model id: fastembed downloads only the models it lists
    "search.rerank_depth": ANY,
    "search.max_page_bytes": ANY,
    "search.embed_budget": ANY,
    "search.fusion_weight": ANY,
    "search.normalization": ANY,
    "search.page_share": ANY,
    "search.depth": ANY,
    "embeddings.enabled": ANY,
    "embeddings.provider": ANY,  # a key of gitwiki.index.embed.EMBEDDERS, never a module path
    "embeddings.model": ANY,  # a team pins the model its published index was built with
    "embeddings.model_path": USER,  # an ONNX file and its config read from wherever it says
    "embeddings.threads": ANY,
    "embeddings.batch_size": ANY,
    "embeddings.weights": ANY,  # int8 or fp32 of the same model: what the published index's vectors were made with
    "storage.index_dir": USER,  # where gitwiki writes and trusts its own state (docs/security.md)
    # The repo's own shared index (docs/ci.md): read only by `gitwiki lance` and by readers outside a checkout.
    "storage.uri": ANY,
    "storage.ann_min_rows": ANY,
    "lint.disable": ANY,
    "lint.max_page_bytes": ANY,
    "index_blocks.filename": INSIDE,  # a file name in each listed folder
    "index_blocks.template": INSIDE,
    "mcp.commit_writes": ANY,
    "mcp.max_page_bytes": ANY,
    "mcp.idle_timeout": ANY,  # at worst the user's own process stays warm longer (`gitwiki serve --stop` ends it)
    "agent_hooks.max_chars": ANY,
    "agent_hooks.results": ANY,
    "agent_hooks.snippet_chars": ANY,
    "agent_hooks.min_coverage": ANY,
    "memory.corpus": ANY,  # a corpus name, checked against the corpora
    "memory.dir": INSIDE,
    "memory.commit": ANY,
    "memory.repository": USER,  # every project's memory writes go there
    # A checkout may keep writes in itself ("project"), never send them to the personal memory, which every
    # project's hooks read: what a hostile page talked an agent into storing would travel to them
    "memory.write": USER,
    "eval.path": INSIDE,
    "artifact.auto_pull": ANY,
}

# User-only keys a checkout may still switch off: "" turns the personal memory off in this checkout, "project"
# keeps its memory writes in it.
SWITCH_OFF = {"memory.repository": "", "memory.write": "project"}

# A file name, not a path: `index_blocks.filename` is joined to every listed folder.
_NAME_ONLY = {"index_blocks.filename"}

_said: set[str] = set()


def checkout_layer(data: dict[str, Any], path: Path, root: Path, user_file: Path) -> tuple[dict[str, Any], str | None]:
    """The checkout's parsed `.gitwiki.toml` (`data`, from `path`) as gitwiki may use it: user-only keys left
    out (named in the returned warning line, None when there were none), paths that must stay inside the
    repository at `root` checked (UsageError otherwise). Unknown keys and wrong types pass through for the
    schema check to name."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for table, value in data.items():
        if table in ("corpus", "repository") and isinstance(value, list):
            out[table] = [_entries(table, t, path, root, ignored) if isinstance(t, dict) else t for t in value]
        elif isinstance(value, dict):
            out[table] = _entries(table, value, path, root, ignored)
        else:
            out[table] = value
    if not ignored:
        return out, None
    return out, (
        f"{path}: ignored {', '.join(ignored)}: a checkout's file may not set "
        f"{'it' if len(ignored) == 1 else 'them'}, only your own config ({user_file})"
    )


def _entries(table: str, values: dict[str, Any], path: Path, root: Path, ignored: list[str]) -> dict[str, Any]:
    kept = {}
    for key, value in values.items():
        name = f"{table}.{key}"
        trust = TABLE.get(name)
        if trust is USER and not (name in SWITCH_OFF and value == SWITCH_OFF[name]):
            ignored.append(f"[{table}] {key}")
            continue
        if trust is INSIDE and isinstance(value, str):
            confine(value, root, f"{path}: [{table}] {key}", name_only=name in _NAME_ONLY)
        kept[key] = value
    return kept


def confine(value: str, root: Path, where: str, name_only: bool = False) -> Path:
    """`value` (a path from a checkout, relative to the repo `root`) resolved with its symlinks followed;
    a UsageError when it leads outside the repository or into `.git`."""
    if name_only and (value in ("", ".", "..") or "/" in value or "\\" in value or path_problem(value)):
        raise UsageError(
            f"{where} must be a file name without '/' (not {value[:200]!r}); fix it in the checkout's file"
        )
    top = root.resolve()
    try:
        target = (top / value).resolve()  # no expanduser: "~/x" is a folder named "~" here
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, a NUL
        raise UsageError(
            f"{where} = {value[:200]!r} cannot be resolved ({e}); use a path inside the repository"
        ) from None
    rel = os.path.relpath(target, top) if target.is_relative_to(top) else None
    if rel is None or (rel != "." and path_problem(rel.replace(os.sep, "/"))):
        raise UsageError(
            f"{where} = {value[:200]!r} leads outside the repository (to {str(target)[:200]}); a checkout may only "
            "name paths inside it: use a path relative to the repo root, without '..' or .git"
        )
    return target


def memory_conflict(user_has_memory: bool, entries: Iterable[Any], where: Path) -> tuple[list[Any], str | None]:
    """The [[repository]] `entries` with a checkout's `memory = true` dropped when the user's own config
    names a personal memory repository (the user's wins), and the warning line saying so."""
    out, dropped = [], []
    for entry in entries:
        if user_has_memory and entry.from_checkout and entry.memory:
            entry = entry._replace(memory=False)
            dropped.append(entry.name)
        out.append(entry)
    if not dropped:
        return out, None
    return out, (
        f"{where}: ignored memory = true of [[repository]] {', '.join(map(repr, dropped))}: your own config names "
        "the personal memory repository"
    )


def warn(line: str) -> None:
    """One warning line on stderr, once per process (config is loaded again and again in a server)."""
    if line not in _said:
        _said.add(line)
        print(f"gitwiki: warning: {line}", file=sys.stderr)
