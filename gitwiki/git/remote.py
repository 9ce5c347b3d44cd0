"""Another repository's objects, without a checkout: a bare cache fetched with pygit2, or a local repo read in place.

Credentials come from the user's git set-up, never from gitwiki's config: an SSH agent for ssh URLs, `git
credential fill` (the configured credential helper, no prompt) for https. One connection lists the remote's
refs; when the wanted ref still points at the commit we hold, nothing is downloaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pygit2

from gitwiki.errors import FetchError, NotFoundError, UsageError
from gitwiki.git.gitcli import run_git
from gitwiki.git.gitrepo import Commit, GitRepo

TIP = "refs/gitwiki/tip"  # where the cache keeps the fetched ref
ARTIFACT_REF = "refs/gitwiki/index"  # what `gitwiki publish` pushes (see gitwiki.operations.pull)
_COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")

# progress(done, total) while objects arrive
FetchProgress = Callable[[int, int], None]


class Fetched(NamedTuple):
    commit: Commit
    ref: str  # the remote ref that was followed ("refs/heads/main"), or the commit id asked for
    downloaded: bool  # False: the remote still pointed at the commit we held
    artifact: str | None  # the commit of refs/gitwiki/index when fetched in this call


class Objects:
    """Another repository's object database: a bare cache fetched with pygit2, or a local repo read in place.

    `git` reads it as the indexer reads the checkout (trees, blobs, revisions); the rest is what syncing
    needs on top: fetching a ref, ancestry, a file at a commit, a ref's commit.
    """

    def __init__(self, repo: pygit2.Repository):
        self._repo = repo
        self.git = GitRepo(repo)

    @classmethod
    def cache(cls, path: Path) -> Objects:
        """The bare cache at `path`, created empty on first use."""
        if not (path / "HEAD").is_file():
            path.mkdir(parents=True, exist_ok=True)
            return cls(pygit2.init_repository(str(path), bare=True))
        return cls(pygit2.Repository(str(path)))

    @classmethod
    def local(cls, path: str) -> Objects:
        """A local repository (bare or not), read in place."""
        found = pygit2.discover_repository(path)
        if found is None:
            raise NotFoundError(f"[[repository]] path {path} is not a git repository; fix path or clone it there")
        return cls(pygit2.Repository(found))

    def fetch(
        self, url: str, ref: str | None, *, want_artifact: bool = False, progress: FetchProgress | None = None
    ) -> Fetched:
        """Bring `ref` (default: the remote's HEAD) of `url` into TIP, downloading only if it moved."""
        repo = self._repo
        callbacks = _Callbacks(progress)
        remote = repo.remotes.create_anonymous(url)
        heads = _list_heads(remote, callbacks, url)
        commit_id = ref if ref and _COMMIT_ID.match(ref) else None
        name = _remote_ref(heads, ref, url) if commit_id is None else commit_id
        try:
            held = repo.references.get(TIP)
            refspecs = []
            if commit_id is None and (held is None or str(held.target) != heads[name]):
                refspecs.append(f"+{name}:{TIP}")
            elif commit_id is not None and commit_id not in repo:  # not held yet: fetch every branch, look again
                refspecs.append("+refs/heads/*:refs/gitwiki/heads/*")
            artifact = heads.get(ARTIFACT_REF) if want_artifact else None
            if artifact is not None:
                refspecs.append(f"+{ARTIFACT_REF}:{ARTIFACT_REF}")
            if refspecs:
                remote.fetch(refspecs, callbacks=callbacks)
        except pygit2.GitError as e:
            raise FetchError(f"cannot fetch {url}: {_first_line(e)}") from None
        if commit_id is not None:
            if commit_id not in repo:
                raise NotFoundError(f"{url} has no commit {commit_id} on any branch; check [[repository]] ref")
            repo.references.create(TIP, commit_id, force=True)
        return Fetched(self.git.rev_parse(TIP), name, bool(refspecs), artifact)

    def advertised(self, url: str, ref: str | None) -> str | None:
        """The commit `ref` points at on the remote now, asking for its refs only (None for a commit id)."""
        if ref and _COMMIT_ID.match(ref):
            return None
        heads = _list_heads(self._repo.remotes.create_anonymous(url), _Callbacks(None), url)
        name = _remote_ref(heads, ref, url)
        return heads.get(name + "^{}", heads[name])  # an annotated tag's commit

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether `old` is `new` or in its history: False after a force-push rewrote it away."""
        if old == new:
            return True
        return old in self._repo and self._repo.descendant_of(new, old)

    def file_at(self, commit: Commit, path: str) -> bytes | None:
        """The bytes of the file at `path` in `commit`, or None if there is none."""
        try:
            entry = self._repo[commit.tree].peel(pygit2.Tree)[path]
        except KeyError:
            return None
        return self.git.read_blob(str(entry.id)) if entry.type_str == "blob" else None

    def ref_commit(self, ref: str) -> Commit | None:
        """The commit `ref` points at, or None if it does not exist."""
        return self.git.rev_parse(ref) if ref in self._repo.references else None


def _list_heads(remote: pygit2.Remote, callbacks: _Callbacks, url: str) -> dict[str, str]:
    try:
        return {str(h.name): str(h.oid) for h in remote.list_heads(callbacks=callbacks)}
    except pygit2.GitError as e:
        raise FetchError(f"cannot reach {url}: {_first_line(e)}") from None


def _remote_ref(heads: dict[str, str], ref: str | None, url: str) -> str:
    """The advertised ref that `ref` (a branch or tag, not a commit id) names."""
    if ref is None or ref == "HEAD":  # the default, also when said
        if "HEAD" not in heads:
            raise NotFoundError(f"{url} has no HEAD (an empty repository?); set ref in its [[repository]]")
        return "HEAD"
    for candidate in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}"):
        if candidate.startswith("refs/") and candidate in heads:
            return candidate
    raise NotFoundError(f"{url} has no branch or tag {ref!r}; fix ref in its [[repository]] (or drop it for HEAD)")


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class _Callbacks(pygit2.RemoteCallbacks):
    """Credentials from the SSH agent or git's credential helper, each tried once; progress as objects arrive."""

    def __init__(self, progress: FetchProgress | None):
        super().__init__()
        self._progress = progress
        self._tried: set[str] = set()

    def credentials(
        self, url: str, username_from_url: str | None, allowed_types: pygit2.enums.CredentialType
    ) -> pygit2.KeypairFromAgent | pygit2.UserPass:
        kinds = pygit2.enums.CredentialType
        if allowed_types & kinds.SSH_KEY and "agent" not in self._tried:
            self._tried.add("agent")
            return pygit2.KeypairFromAgent(username_from_url or "git")
        if allowed_types & kinds.USERPASS_PLAINTEXT and "helper" not in self._tried:
            self._tried.add("helper")
            found = credential_fill(url, username_from_url)
            if found is not None:
                return pygit2.UserPass(*found)
        raise UsageError(
            f"{url} wants credentials that git does not have: add the key to your ssh-agent or set up a git "
            "credential helper (`git credential fill` must answer without a prompt)"
        )

    def transfer_progress(self, stats: pygit2.remotes.TransferProgress) -> None:
        if self._progress is not None:
            self._progress(stats.received_objects, stats.total_objects)


def credential_fill(url: str, username: str | None) -> tuple[str, str] | None:
    """What the user's credential helper holds for `url` (user, password), asking no questions."""
    query = f"url={url}\n" + (f"username={username}\n" if username else "") + "\n"
    run = run_git(".", "credential", "fill", stdin=query, env={"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"})
    if not run.ok:
        return None
    fields = dict(line.split("=", 1) for line in run.out.splitlines() if "=" in line)
    if not fields.get("username") or not fields.get("password"):
        return None
    return fields["username"], fields["password"]
