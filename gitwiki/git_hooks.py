"""Plain git hooks that refresh the search index in the background, for repos that do not use pre-commit.

`install` writes post-commit, post-merge, post-checkout and post-rewrite into the hooks folder git
uses (`core.hooksPath` when set). A hook that is already there is kept: it moves to `<name>.gitwiki-chained`
and our hook runs it first, with the same arguments and stdin, and exits with its status.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import NamedTuple

from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write
from gitwiki.gitrepo import GitRepo

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
SIGNATURE = "# installed by `gitwiki git-hooks install`"
CHAINED_SUFFIX = ".gitwiki-chained"


class HookState(NamedTuple):
    name: str
    path: Path
    state: str  # "installed", "not installed", or "foreign" (another tool's hook, not chained)
    chained: bool  # our hook runs a previous hook first


def hooks_dir(repo: GitRepo) -> Path:
    """`core.hooksPath` (relative paths are relative to the worktree root, as git reads them), else
    <common dir>/hooks."""
    configured = repo.config_value("core.hooksPath")
    if configured is None:
        return repo.common_dir / "hooks"
    return (repo.root / os.path.expanduser(configured)).resolve()


def script(name: str, python: str = sys.executable) -> str:
    chained = shlex.quote(name + CHAINED_SUFFIX)
    py = shlex.quote(python)
    return f"""#!/bin/sh
{SIGNATURE}; `gitwiki git-hooks uninstall` removes it.
# Refreshes the gitwiki search index in the background after git changes HEAD.
status=0
chained="$(dirname "$0")/{chained}"
if [ -x "$chained" ]; then
    "$chained" "$@" || status=$?
fi
if [ -x {py} ]; then
    ( {py} -m gitwiki index -q </dev/null >/dev/null 2>&1 & )
elif command -v gitwiki >/dev/null 2>&1; then
    ( gitwiki index -q </dev/null >/dev/null 2>&1 & )
fi
exit $status
"""


def _ours(path: Path) -> bool:
    try:
        return SIGNATURE in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def status(repo: GitRepo) -> list[HookState]:
    folder = hooks_dir(repo)
    out = []
    for name in HOOKS:
        path = folder / name
        chained = (folder / (name + CHAINED_SUFFIX)).exists()
        if _ours(path):
            out.append(HookState(name, path, "installed", chained))
        else:
            out.append(HookState(name, path, "foreign" if path.exists() else "not installed", False))
    return out


def install(repo: GitRepo) -> list[HookState]:
    folder = hooks_dir(repo)
    states = status(repo)
    for hook in states:  # refuse before touching anything
        chained = folder / (hook.name + CHAINED_SUFFIX)
        if hook.state == "foreign" and chained.exists():
            raise UsageError(f"{hook.path} and {chained} both exist; merge them by hand, then run this again")
    for hook in states:
        if hook.state == "foreign":
            os.replace(hook.path, folder / (hook.name + CHAINED_SUFFIX))
        atomic_write(hook.path, script(hook.name))
        hook.path.chmod(0o755)
    return status(repo)


def uninstall(repo: GitRepo) -> list[HookState]:
    folder = hooks_dir(repo)
    for hook in status(repo):
        if hook.state != "installed":
            continue
        chained = folder / (hook.name + CHAINED_SUFFIX)
        if chained.exists():
            os.replace(chained, hook.path)
        else:
            hook.path.unlink()
    return status(repo)
