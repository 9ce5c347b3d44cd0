"""`gitwiki pull`: fetch an index artifact, install it, and catch up to HEAD and the worktree.

Sources (see docs/ci.md):
  (default) / refs/…        a git ref on the remote, fetched with the git CLI (the user's own git auth)
  https://…                 a plain download
  github-artifact[:NAME]    the newest GitHub Actions artifact NAME, through the REST API
  github-release[:TAG]      the release asset of TAG, through the REST API
  anything else             a local archive file

Catching up needs no history: the artifact's page table (path → blob per corpus) is diffed against the
local tree, so only pages whose blob differs are parsed and embedded.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from gitwiki.errors import FetchError, GitwikiError, NotFoundError, StoreError, UsageError
from gitwiki.git.gitcli import run_git
from gitwiki.index import artifact
from gitwiki.index.indexer import IndexReport
from gitwiki.wiki import Wiki

DEFAULT_REF = "refs/gitwiki/index"
# Where a fetched ref lands locally: `--from refs/heads/main` fetched into `refs/heads/main` itself would
# force-overwrite the user's branch (local commits then survive only in the reflog).
FETCHED_NAMESPACE = "refs/gitwiki/fetched/"
DEFAULT_REMOTE = "origin"
DEFAULT_ARTIFACT = "gitwiki-index"  # the upload-artifact name the Action uses
DEFAULT_RELEASE_TAG = "gitwiki-index"
GITHUB_API = "https://api.github.com"
TIMEOUT = 60


class Source(NamedTuple):
    kind: str  # "git", "https", "github-artifact", "github-release" or "file"
    target: str  # the ref, URL, artifact name, tag or path

    def __str__(self) -> str:
        return self.target if self.kind in ("https", "file") else f"{self.kind} {self.target}"


class PullReport(NamedTuple):
    source: str
    fetched_commit: str | None  # the commit of the fetched ref (git sources), which holds the archive
    manifest: artifact.Manifest
    reports: list[IndexReport]  # catching up from the artifact's commit to HEAD
    worktree_embedded: int  # chunks of uncommitted pages embedded after that
    seconds: float

    def installed(self) -> str:
        """One line: where the archive came from, and what it held."""
        fetched = f" (commit {self.fetched_commit[:12]})" if self.fetched_commit else ""
        m = self.manifest
        corpora = "; ".join(f"{c.name} {c.pages} pages, {c.chunks} chunks at commit {c.commit[:12]}" for c in m.corpora)
        model = f"{m.model}, {m.dim} dims" if m.model else "no vectors, lexical only"
        return f"installed the index from {self.source}{fetched}: {corpora} ({model})"


def parse_source(text: str | None) -> Source:
    if not text:
        return Source("git", DEFAULT_REF)
    if text.startswith("refs/"):
        return Source("git", text)
    if text.startswith("http://"):
        raise UsageError(f"refusing plain http ({text}): use https, so the archive cannot be altered in transit")
    if text.startswith("https://"):
        return Source("https", text)
    for kind, default in (("github-artifact", DEFAULT_ARTIFACT), ("github-release", DEFAULT_RELEASE_TAG)):
        if text == kind or text.startswith(kind + ":"):
            return Source(kind, text[len(kind) + 1 :] or default)
    return Source("file", text)


def pull(
    wiki: Wiki,
    source: str | None = None,
    *,
    remote: str = DEFAULT_REMOTE,
    github_repo: str | None = None,
    accept_model: bool = False,
    max_bytes: int = artifact.MAX_BYTES,
    lexical: bool = False,
) -> PullReport:
    """Install the artifact from `source` as the index of `wiki` and bring it up to date."""
    started = time.perf_counter()
    src = parse_source(source)
    wiki.reopen()  # the database file is about to be replaced
    index_dir = wiki.index_dir
    index_dir.mkdir(parents=True, exist_ok=True)
    artifact.remove_orphans(index_dir)
    corpus_paths = {c.name: c.path for c in wiki.config.corpora}  # a page the archive lists must lie in its corpus
    with tempfile.TemporaryDirectory(prefix=artifact.temp_prefix("pull"), dir=index_dir) as tmp:
        archive, fetched = fetch(wiki, src, Path(tmp), remote=remote, github_repo=github_repo, max_bytes=max_bytes)
        manifest = artifact.unpack(archive, index_dir, wiki.wanted_model(), accept_model, max_bytes, corpus_paths)
    reports = wiki.index(lexical=lexical)
    embedded = 0 if lexical else wiki.local.embed_worktree()
    return PullReport(str(src), fetched, manifest, reports, embedded, time.perf_counter() - started)


def install_published(wiki: Wiki, lexical: bool = False) -> PullReport | None:
    """A clone without a local index starts from the one CI published at the remote's refs/gitwiki/index, when
    there is one: fetching an archive takes seconds where embedding every page takes minutes. None (and the
    caller indexes from scratch) when there is no such ref, or it cannot be installed (said on stderr)."""
    if not _git_ok(wiki.root, "remote", "get-url", DEFAULT_REMOTE):
        return None
    if not _git_ok(wiki.root, "ls-remote", "--exit-code", DEFAULT_REMOTE, DEFAULT_REF):
        return None  # nothing published (exit 2), or the remote is unreachable: the normal build follows
    print(
        f"gitwiki: no local index; installing the one published at {DEFAULT_REMOTE} {DEFAULT_REF} "
        "([artifact] auto_pull = false turns this off)",
        file=sys.stderr,
    )
    try:
        report = pull(wiki, DEFAULT_REF, remote=DEFAULT_REMOTE, lexical=lexical)
    except GitwikiError as e:
        print(f"gitwiki: could not install the published index ({e}); indexing from scratch", file=sys.stderr)
        return None
    print(f"gitwiki: {report.installed()}", file=sys.stderr)
    return report


def _git_ok(root: Path, *args: str) -> bool:
    return run_git(root, *args, env={"GIT_TERMINAL_PROMPT": "0"}).ok


# ---- fetching ----------------------------------------------------------------------------------------


def fetch(
    wiki: Wiki, src: Source, tmp: Path, *, remote: str, github_repo: str | None, max_bytes: int
) -> tuple[Path, str | None]:
    """The archive named by `src` as a local file (downloaded into `tmp` unless it is a local file), and the
    commit it was read from for a git ref (None for the other sources)."""
    if src.kind == "file":
        path = Path(src.target).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file():
            raise NotFoundError(f"no archive at {path}; give a file, an https URL, a git ref or github-artifact")
        return path, None
    out = tmp / artifact.ARCHIVE_NAME
    if src.kind == "git":
        return out, fetch_git_ref(wiki.root, remote, src.target, out, max_bytes)
    if src.kind == "https":
        _download(_request(src.target), out, max_bytes)
    else:
        api = GitHubApi(github_repo or github_repo_of(wiki.root, remote), token=github_token())
        if src.kind == "github-artifact":
            api.download_artifact(src.target, out, max_bytes, tmp)
        else:
            api.download_release_asset(src.target, artifact.ARCHIVE_NAME, out, max_bytes)
    return out, None


def fetch_git_ref(root: Path, remote: str, ref: str, out: Path, max_bytes: int = artifact.MAX_BYTES) -> str:
    """Fetch `ref` from `remote` into gitwiki's private namespace and write its archive blob to `out` (refused over
    `max_bytes` or the free space: git stores a blob of zeros in a few MB, and it was written out whole, 3 GB from a
    clone, before anything was checked); returns the commit fetched."""
    local = f"{FETCHED_NAMESPACE}{remote}/{ref.removeprefix('refs/')}"
    _git(
        root,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"+{ref}:{local}",
        failure=f"cannot fetch {ref} from {remote}",
    )
    blob = f"{local}:{artifact.ARCHIVE_NAME}"
    missing = f"{ref} holds no {artifact.ARCHIVE_NAME}; was it published by `gitwiki publish`?"
    size = int(_git(root, "cat-file", "-s", blob, failure=missing).strip() or 0)
    free = shutil.disk_usage(out.parent).free
    if size > min(max_bytes, free):
        raise FetchError(
            f"{ref}'s {artifact.ARCHIVE_NAME} is {size:,} bytes, over --max-bytes {max_bytes:,} or the {free:,} free; "
            "raise --max-bytes if you trust it"
        )
    with out.open("wb") as f:
        _git(root, "cat-file", "blob", blob, stdout=f, failure=missing)
    return _git(root, "rev-parse", "--verify", f"{local}^{{commit}}", failure=f"{ref} is not a commit").strip()


def _git(root: Path, *args: str, failure: str, stdout: int | IO[bytes] = subprocess.PIPE) -> str:
    run = run_git(root, *args, stdout=stdout)
    return run.checked(failure, "check the remote and that CI published the index, or pass --from", NotFoundError).out


def github_repo_of(root: Path, remote: str) -> str:
    """OWNER/NAME from $GITHUB_REPOSITORY or a github.com remote URL."""
    if os.environ.get("GITHUB_REPOSITORY"):
        return os.environ["GITHUB_REPOSITORY"]
    url = _git(root, "remote", "get-url", remote, failure=f"no remote {remote!r}").strip()
    match = re.search(r"github\.com[:/]+([^/]+)/([^/]+?)(?:\.git)?/?$", url)
    if not match:
        raise UsageError(f"remote {remote} ({url}) is not on github.com; pass --github-repo OWNER/NAME")
    return f"{match[1]}/{match[2]}"


def github_token() -> str | None:
    """$GITHUB_TOKEN, $GH_TOKEN, or what `gh auth token` prints; None if there is none."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        if os.environ.get(name):
            return os.environ[name]
    if shutil.which("gh") is None:
        return None
    done = subprocess.run(["gh", "auth", "token"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None  # surfaces the 302 as an HTTPError so the token is not sent to the storage host


class GitHubApi:
    """The three REST calls pull needs; the base URL follows $GITHUB_API_URL as GitHub's own tools do."""

    def __init__(self, repo: str, token: str | None) -> None:
        self.repo = repo
        self.token = token
        self.base = os.environ.get("GITHUB_API_URL", GITHUB_API).rstrip("/")

    def _headers(self, accept: str = "application/vnd.github+json") -> dict[str, str]:
        headers = {"Accept": accept, "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "gitwiki"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def get_json(self, path: str) -> Any:
        url = f"{self.base}{path}"
        with _open(urllib.request.Request(url, headers=self._headers())) as response:
            body = b"".join(_blocks(response, url))
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise FetchError(
                f"{url} did not answer JSON (a proxy or captive portal?); check the network and GITHUB_API_URL"
            ) from None

    def _redirected(self, url: str, accept: str) -> urllib.request.Request:
        """Follow the API's redirect to the storage host ourselves, without the Authorization header."""
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(urllib.request.Request(url, headers=self._headers(accept)), timeout=TIMEOUT) as response:
                return urllib.request.Request(response.geturl(), headers={"User-Agent": "gitwiki"})
        except urllib.error.HTTPError as e:
            if e.code in (301, 302, 303, 307, 308) and e.headers.get("Location"):
                return urllib.request.Request(
                    urllib.parse.urljoin(url, e.headers["Location"]), headers={"User-Agent": "gitwiki"}
                )
            raise _http_error(url, e) from None
        except urllib.error.URLError as e:
            raise FetchError(f"cannot reach {url} ({e.reason}); check the network or GITHUB_API_URL") from None

    def download_artifact(self, name: str, out: Path, max_bytes: int, tmp: Path) -> None:
        if not self.token:
            raise UsageError("downloading an Actions artifact needs a token: set GITHUB_TOKEN or run `gh auth login`")
        listing = self.get_json(f"/repos/{self.repo}/actions/artifacts?name={urllib.parse.quote(name)}&per_page=100")
        live = [a for a in listing.get("artifacts", []) if a.get("name") == name and not a.get("expired")]
        if not live:
            raise NotFoundError(
                f"no unexpired artifact {name!r} in {self.repo}; run the workflow with publish: artifact"
            )
        newest = max(live, key=lambda a: a.get("created_at") or "")
        zipped = tmp / f"{name}.zip"
        _download(self._redirected(newest["archive_download_url"], "application/vnd.github+json"), zipped, max_bytes)
        _unzip_member(zipped, artifact.ARCHIVE_NAME, out, max_bytes)

    def download_release_asset(self, tag: str, asset_name: str, out: Path, max_bytes: int) -> None:
        release = self.get_json(f"/repos/{self.repo}/releases/tags/{urllib.parse.quote(tag)}")
        assets = [a for a in release.get("assets", []) if a.get("name") == asset_name]
        if not assets:
            raise NotFoundError(
                f"release {tag} of {self.repo} has no asset {asset_name}; run the workflow with publish: release"
            )
        _download(self._redirected(assets[0]["url"], "application/octet-stream"), out, max_bytes)


def _open(request: urllib.request.Request) -> http.client.HTTPResponse:
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        raise _http_error(request.full_url, e) from None
    except urllib.error.URLError as e:
        raise FetchError(f"cannot reach {request.full_url} ({e.reason}); check the URL and the network") from None


def _http_error(url: str, e: urllib.error.HTTPError) -> Exception:
    if e.code in (401, 403):
        return UsageError(
            f"{url} answered {e.code}: the token lacks access; set GITHUB_TOKEN (actions:read, contents:read) "
            "or `gh auth login`"
        )
    if e.code == 404:
        return NotFoundError(f"{url} answered 404; check the repository, the artifact name or the tag")
    return FetchError(f"{url} answered HTTP {e.code} {e.reason}; try again later")


def _request(url: str) -> urllib.request.Request:
    return urllib.request.Request(url, headers={"User-Agent": "gitwiki"})


def _download(request: urllib.request.Request, out: Path, max_bytes: int) -> None:
    """Stream a response to `out`, refusing to store more than `max_bytes`."""
    with _open(request) as response, out.open("wb") as f:
        total = 0
        for block in _blocks(response, request.full_url):
            total += len(block)
            if total > max_bytes:
                raise StoreError(
                    f"{request.full_url} is larger than {max_bytes} bytes; raise --max-bytes if you trust it"
                )
            f.write(block)


def _blocks(response: http.client.HTTPResponse, url: str) -> Iterator[bytes]:
    """The body in blocks; a connection lost or timed out midway is a FetchError, not a traceback or a
    truncated archive (http.client's sized reads return b"" at an early close without raising)."""
    while True:
        try:
            block = response.read(artifact.COPY_CHUNK)
        except (OSError, http.client.HTTPException) as e:
            raise FetchError(f"the download of {url} broke off ({e!r}); try again") from None
        if not block:
            break
        yield block
    if response.length:  # bytes the Content-Length promised that never came
        raise FetchError(f"the download of {url} broke off {response.length} bytes short; try again")


def _unzip_member(zipped: Path, member: str, out: Path, max_bytes: int) -> None:
    """GitHub serves an Actions artifact as a zip of the uploaded files; take our archive out of it."""
    try:
        with zipfile.ZipFile(zipped) as z:
            info = z.getinfo(member)
            if info.file_size > max_bytes:
                raise StoreError(
                    f"{member} in the artifact unpacks to {info.file_size} bytes, over --max-bytes {max_bytes}"
                )
            with z.open(info) as source, out.open("wb") as f:
                shutil.copyfileobj(source, f, artifact.COPY_CHUNK)
    except KeyError:
        raise NotFoundError(
            f"the downloaded artifact holds no {member}; was it uploaded by the gitwiki Action?"
        ) from None
    except zipfile.BadZipFile as e:
        raise StoreError(f"the downloaded artifact is not a zip ({e}); download it again") from None
