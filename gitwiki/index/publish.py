"""Publish an index archive as a commit on a git ref, so `gitwiki pull` works on any git host.

Each publish is a parentless commit force-pushed to the ref: older archives become unreachable and the
server's gc drops them, so the ref never grows a history of multi-megabyte blobs.
"""

from __future__ import annotations

import json
from pathlib import Path

from gitwiki.errors import UsageError
from gitwiki.git.gitcli import run_git
from gitwiki.index import artifact

COMMITTER = {"GIT_AUTHOR_NAME": "gitwiki", "GIT_AUTHOR_EMAIL": "gitwiki@users.noreply.github.com"}


def commit_archive(root: Path, archive: Path, ref: str) -> str:
    """Record `archive` (verified) and its manifest as a commit on the local `ref`; returns the commit id."""
    if not ref.startswith("refs/"):
        raise UsageError(f"{ref!r} is not a full ref name; use e.g. refs/gitwiki/index")
    manifest = artifact.verify(archive)
    blob = _git(root, "hash-object", "-w", "--", str(archive))
    manifest_blob = _git(root, "hash-object", "-w", "--stdin", stdin=json.dumps(manifest.to_json(), indent=2) + "\n")
    tree = _git(
        root,
        "mktree",
        stdin=f"100644 blob {blob}\t{artifact.ARCHIVE_NAME}\n100644 blob {manifest_blob}\t{artifact.MANIFEST_NAME}\n",
    )
    built = ", ".join(f"{c.name} at {c.commit[:12]}" for c in manifest.corpora)
    env = {
        **COMMITTER,
        "GIT_COMMITTER_NAME": COMMITTER["GIT_AUTHOR_NAME"],
        "GIT_COMMITTER_EMAIL": COMMITTER["GIT_AUTHOR_EMAIL"],
    }
    commit = _git(root, "commit-tree", tree, "-m", f"gitwiki index: {built}", env=env)
    _git(root, "update-ref", ref, commit)
    return commit


def push(root: Path, remote: str, ref: str) -> None:
    _git(root, "push", "--quiet", "--force", remote, f"{ref}:{ref}")


def _git(root: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    run = run_git(root, *args, stdin=stdin, env=env)
    return run.checked(f"git {args[0]} failed", "check the repository and remote", UsageError).out.strip()
