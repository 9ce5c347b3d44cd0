"""`gitwiki pull` from every source, and the catch-up that embeds only what changed since the artifact."""

from __future__ import annotations

import http.server
import io
import json
import socket
import ssl
import subprocess
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from gitwiki.index.artifact import ARCHIVE_NAME
from gitwiki.markdown.chunker import parse_page
from tests.helpers import LEXICAL, GitRepoFixture, needs_model, numbered_page
from tests.index.archives import doctored


@pytest.fixture
def origin(repo, cli, tmp_path):
    """A lexical wiki with a packed archive of its HEAD index."""
    repo.write(".gitwiki.toml", LEXICAL)
    for i in range(3):
        repo.write(f"wiki/p{i}.md", numbered_page(i))
    repo.commit("pages")
    code, _, err = cli("artifact", "pack", "--out", str(tmp_path / ARCHIVE_NAME), cwd=repo.path)
    assert code == 0, err
    return repo


def clone(origin: GitRepoFixture, where: Path) -> GitRepoFixture:
    origin.git("clone", "-q", str(origin.path), str(where))
    return GitRepoFixture.existing(where)


def pull_json(cli, cwd, *args):
    code, out, err = cli("pull", "--json", *args, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def top_path(cli, cwd, query):
    code, out, err = cli("ground", "--json", "--committed", query, cwd=cwd)
    assert code == 0, err
    return json.loads(out)["docs"][0]["path"]


def test_pull_from_file_then_catch_up_lexically(origin, cli, tmp_path):
    local = clone(origin, tmp_path / "clone")
    local.commit("ahead", {"wiki/p1.md": numbered_page(1, "narwhal")})
    report = pull_json(cli, local.path, "--from", str(tmp_path / ARCHIVE_NAME))
    (r,) = report["reports"]
    assert (r["added"], r["changed"], r["deleted"], r["parsed"]) == (0, 1, 0, 1)
    assert top_path(cli, local.path, "narwhal") == "wiki/p1.md"


def test_pull_text_report(origin, cli, tmp_path):
    local = clone(origin, tmp_path / "clone")
    local.commit("ahead", {"wiki/p1.md": numbered_page(1, "narwhal")})
    code, out, err = cli("pull", "--from", str(tmp_path / ARCHIVE_NAME), cwd=local.path)
    lines = out.splitlines()
    assert code == 0, err
    head = origin.git("rev-parse", "HEAD").strip()
    assert lines[0] == (
        f"installed the index from {tmp_path / ARCHIVE_NAME}: wiki 3 pages, 3 chunks at commit {head[:12]} "
        "(no vectors, lexical only)"
    )
    assert lines[1].startswith("caught up wiki: 3 pages at commit ") and "0 added, 1 changed, 0 deleted" in lines[1]
    assert lines[-1].startswith("done in ")


def test_a_wiki_that_already_searched_keeps_working_after_pull(origin, tmp_path):
    from gitwiki.operations.pull import pull
    from gitwiki.wiki import Wiki

    local = clone(origin, tmp_path / "clone")
    wiki = Wiki.open(local.path)
    assert wiki.search("walrus number 1").docs[0].path == "wiki/p1.md"  # builds and opens a local index
    local.commit("ahead", {"wiki/p0.md": numbered_page(0, "beluga")})
    report = pull(wiki, str(tmp_path / ARCHIVE_NAME))
    assert report.reports[0].parsed == 1
    assert wiki.search("beluga").docs[0].path == "wiki/p0.md"
    wiki.close()


def test_relative_file_source_follows_dash_c(origin, cli, tmp_path):
    local = clone(origin, tmp_path / "clone")
    (local.path.parent / "copy.tar.gz").write_bytes((tmp_path / ARCHIVE_NAME).read_bytes())
    assert pull_json(cli, local.path, "--from", "../copy.tar.gz")["source"] == str(tmp_path / "copy.tar.gz")


def test_unknown_file_and_plain_http_are_refused(origin, cli, tmp_path):
    code, _, err = cli("pull", "--from", str(tmp_path / "nope.tar.gz"), cwd=origin.path)
    assert code == 3 and "no archive at" in err
    code, _, err = cli("pull", "--from", "http://127.0.0.1:9/x.tar.gz", cwd=origin.path)
    assert code == 2 and "https" in err


# ---- https ---------------------------------------------------------------------------------------------


@contextmanager
def serve(handler_cls, tls: ssl.SSLContext | None = None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class Quiet(http.server.BaseHTTPRequestHandler):
    routes: dict = {}
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.seen.append((self.path, dict(self.headers)))
        status, headers, body = self.routes.get(self.path.split("?")[0], (404, {}, b"not found"))
        if callable(body):
            status, headers, body = body(self)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def trusted_tls(tmp_path, monkeypatch) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate, the only CA the client then trusts."""
    try:
        cert, key = self_signed(tmp_path)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"openssl cannot make a test certificate here ({e})")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    return tls


def test_pull_over_https(origin, cli, tmp_path, monkeypatch):
    tls = trusted_tls(tmp_path, monkeypatch)
    handler = type(
        "H", (Quiet,), {"routes": {"/wiki.tar.gz": (200, {}, (tmp_path / ARCHIVE_NAME).read_bytes())}, "seen": []}
    )
    local = clone(origin, tmp_path / "clone")
    with serve(handler, tls) as server:
        url = f"https://127.0.0.1:{server.server_address[1]}/wiki.tar.gz"
        report = pull_json(cli, local.path, "--from", url)
        assert report["source"] == url and report["reports"][0]["parsed"] == 0
        code, _, err = cli("pull", "--from", url.replace("wiki.tar", "missing.tar"), cwd=local.path)
        assert code == 3 and "404" in err
    assert top_path(cli, local.path, "walrus number 2") == "wiki/p2.md"


class BrokenOff(Quiet):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()
        self.wfile.write(b"x" * 1000)  # then the connection closes (HTTP/1.0)


def test_network_failures_exit_6_and_leave_the_index(origin, cli, tmp_path, monkeypatch):
    tls = trusted_tls(tmp_path, monkeypatch)
    local = clone(origin, tmp_path / "clone")
    pull_json(cli, local.path, "--from", str(tmp_path / ARCHIVE_NAME))
    index = next(local.path.joinpath(".git", "gitwiki").glob("**/index.sqlite")).read_bytes()
    unavailable = type("H", (Quiet,), {"routes": {"/a.tar.gz": (503, {}, b"busy")}, "seen": []})
    with serve(unavailable, tls) as server:
        code, _, err = cli("pull", "--from", f"https://127.0.0.1:{server.server_address[1]}/a.tar.gz", cwd=local.path)
        assert code == 6 and "answered HTTP 503" in err and "try again" in err
    with serve(BrokenOff, tls) as server:
        code, _, err = cli("pull", "--from", f"https://127.0.0.1:{server.server_address[1]}/a.tar.gz", cwd=local.path)
        assert code == 6 and "broke off" in err and "Traceback" not in err
    portal = type("H", (Quiet,), {"routes": {"/repos/o/r/releases/tags/t": (200, {}, b"<html>Log in")}, "seen": []})
    with serve(portal) as server:
        monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_address[1]}")
        code, _, err = cli("pull", "--from", "github-release:t", "--github-repo", "o/r", cwd=local.path)
        assert code == 6 and "did not answer JSON" in err
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = cli("pull", "--from", f"https://127.0.0.1:{port}/a.tar.gz", cwd=local.path)
    assert code == 6 and "cannot reach" in err
    assert next(local.path.joinpath(".git", "gitwiki").glob("**/index.sqlite")).read_bytes() == index


# ---- git ref ---------------------------------------------------------------------------------------------


def test_publish_to_a_ref_then_pull_with_git_auth(origin, cli, tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    origin.git("remote", "add", "origin", str(bare))
    origin.git("push", "-q", "origin", "main")
    code, out, err = cli("publish", str(tmp_path / ARCHIVE_NAME), cwd=origin.path)
    assert code == 0, err
    published = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "refs/gitwiki/index"], capture_output=True, text=True
    ).stdout.strip()
    assert published and published in out
    files = subprocess.run(
        ["git", "-C", str(bare), "ls-tree", "--name-only", "refs/gitwiki/index"], capture_output=True, text=True
    ).stdout.split()
    assert sorted(files) == [ARCHIVE_NAME, "manifest.json"]
    parents = subprocess.run(
        ["git", "-C", str(bare), "rev-list", "--parents", "-n1", "refs/gitwiki/index"], capture_output=True, text=True
    ).stdout.split()
    assert parents == [published]  # parentless: old archives do not pile up in history

    local = GitRepoFixture.existing(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", str(bare), str(local.path)], check=True)
    local.write("wiki/new.md", "# New\n\nA dugong arrives.\n")
    report = pull_json(cli, local.path)  # default source: refs/gitwiki/index on origin
    assert report["source"] == "git refs/gitwiki/index" and report["fetched_commit"] == published
    code, out, err = cli("pull", cwd=local.path)
    head = origin.git("rev-parse", "HEAD").strip()
    assert out.splitlines()[0] == (
        f"installed the index from git refs/gitwiki/index (commit {published[:12]}): wiki 3 pages, 3 chunks at "
        f"commit {head[:12]} (no vectors, lexical only)"
    ), out + err
    assert report["reports"][0]["parsed"] == 0
    code, out, _ = cli("ground", "--json", "dugong", cwd=local.path)
    assert json.loads(out)["docs"][0]["path"] == "wiki/new.md"  # the worktree page is searchable too

    code, _, err = cli("pull", "--from", "refs/gitwiki/absent", cwd=local.path)
    assert code == 3 and "cannot fetch refs/gitwiki/absent" in err

    # A blob of zeros is a few kB in git: written out whole (3 GB from a 14 MB remote) before any check, it is
    # now refused by its size
    blob = (
        subprocess.run(
            ["git", "-C", str(bare), "hash-object", "-w", "--stdin"], input=bytes(20 << 20), capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    tree = subprocess.run(
        ["git", "-C", str(bare), "mktree"],
        input=f"100644 blob {blob}\t{ARCHIVE_NAME}\n",
        capture_output=True,
        text=True,
    ).stdout.strip()
    bomb = subprocess.run(
        ["git", "-C", str(bare), "commit-tree", "-m", "x", tree], capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(bare), "update-ref", "refs/gitwiki/index", bomb], check=True)
    code, _, err = cli("pull", "--max-bytes", str(1 << 20), cwd=local.path)
    assert code == 6 and "20,971,520 bytes, over --max-bytes 1,048,576" in err


def test_pull_from_a_branch_leaves_the_local_branch_alone(origin, cli, tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    origin.git("remote", "add", "origin", str(bare))
    origin.git("push", "-q", "origin", "main")
    local = GitRepoFixture.existing(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", str(bare), str(local.path)], check=True)
    local.git("branch", "idx", "origin/main")
    local.git("checkout", "-q", "idx")
    local.commit("local work", {"wiki/mine.md": "# Mine\n\nOnly here.\n"})
    mine = local.git("rev-parse", "refs/heads/idx").strip()
    local.git("checkout", "-q", "main")
    code, _, err = cli("publish", str(tmp_path / ARCHIVE_NAME), "--ref", "refs/heads/idx", cwd=origin.path)
    assert code == 0, err

    report = pull_json(cli, local.path, "--from", "refs/heads/idx")
    assert report["source"] == "git refs/heads/idx"
    assert local.git("rev-parse", "refs/heads/idx").strip() == mine  # not force-overwritten by the fetch
    assert top_path(cli, local.path, "walrus number 2") == "wiki/p2.md"


# ---- GitHub REST -----------------------------------------------------------------------------------------


def test_pull_from_github_artifact_and_release(origin, cli, tmp_path, monkeypatch):
    archive = (tmp_path / ARCHIVE_NAME).read_bytes()
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr(ARCHIVE_NAME, archive)

    def needs_token(then):
        def handle(request):
            if request.headers.get("Authorization") != "Bearer sekrit":
                return 401, {}, b'{"message": "Bad credentials"}'
            return then(request)

        return handle

    def to_storage(path):
        return lambda request: (302, {"Location": f"http://127.0.0.1:{request.server.server_address[1]}{path}"}, b"")

    def storage(body):
        def handle(request):
            assert "Authorization" not in request.headers  # the token never reaches the storage host
            return 200, {}, body

        return handle

    def listing(request):
        base = f"http://127.0.0.1:{request.server.server_address[1]}"
        artifacts = [
            {
                "name": "gitwiki-index",
                "expired": True,
                "created_at": "2026-11-22T00:00:00Z",
                "archive_download_url": f"{base}/gone",
            },
            {
                "name": "gitwiki-index",
                "expired": False,
                "created_at": "2026-11-21T00:00:00Z",
                "archive_download_url": f"{base}/repos/o/r/actions/artifacts/1/zip",
            },
        ]
        return (
            200,
            {"Content-Type": "application/json"},
            json.dumps({"total_count": 2, "artifacts": artifacts}).encode(),
        )

    def release(request):
        base = f"http://127.0.0.1:{request.server.server_address[1]}"
        assets = [
            {"name": "other.txt", "url": f"{base}/nope"},
            {"name": ARCHIVE_NAME, "url": f"{base}/repos/o/r/releases/assets/7"},
        ]
        return 200, {}, json.dumps({"tag_name": "gitwiki-index", "assets": assets}).encode()

    def asset(request):
        assert request.headers.get("Accept") == "application/octet-stream"
        return to_storage("/storage/asset")(request)

    routes = {
        "/repos/o/r/actions/artifacts": (0, {}, needs_token(listing)),
        "/repos/o/r/actions/artifacts/1/zip": (0, {}, needs_token(to_storage("/storage/artifact.zip"))),
        "/storage/artifact.zip": (0, {}, storage(zipped.getvalue())),
        "/repos/o/r/releases/tags/gitwiki-index": (0, {}, release),
        "/repos/o/r/releases/assets/7": (0, {}, asset),
        "/storage/asset": (0, {}, storage(archive)),
    }
    handler = type("H", (Quiet,), {"routes": routes, "seen": []})
    local = clone(origin, tmp_path / "clone")
    local.commit("ahead", {"wiki/p2.md": numbered_page(2, "manatee")})
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `gh` to ask for a token
    with serve(handler) as server:
        monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        code, _, err = cli("pull", "--from", "github-artifact", "--github-repo", "o/r", cwd=local.path)
        assert code == 2 and "GITHUB_TOKEN" in err
        monkeypatch.setenv("GITHUB_TOKEN", "wrong")
        code, _, err = cli("pull", "--from", "github-artifact", "--github-repo", "o/r", cwd=local.path)
        assert code == 2 and "401" in err

        monkeypatch.setenv("GITHUB_TOKEN", "sekrit")
        report = pull_json(cli, local.path, "--from", "github-artifact", "--github-repo", "o/r")
        assert report["source"] == "github-artifact gitwiki-index"
        assert report["reports"][0]["changed"] == 1 and report["reports"][0]["parsed"] == 1
        assert "/gone" not in [path for path, _ in handler.seen]  # the expired artifact is skipped

        monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")  # as on a runner; no --github-repo needed
        report = pull_json(cli, local.path, "--from", "github-release")
        assert report["source"] == "github-release gitwiki-index" and report["reports"][0]["parsed"] == 1
        code, _, err = cli("pull", "--from", "github-release:v9", cwd=local.path)
        assert code == 3 and "404" in err
    assert top_path(cli, local.path, "manatee") == "wiki/p2.md"


def test_github_repo_from_remote_url(origin, tmp_path, monkeypatch):
    from gitwiki.operations.pull import github_repo_of

    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    origin.git("remote", "add", "origin", "git@github.com:acme/handbook.git")
    origin.git("remote", "add", "mirror", "https://github.com/acme/mirror")
    origin.git("remote", "add", "elsewhere", "https://gitlab.example/acme/x.git")
    assert github_repo_of(origin.path, "origin") == "acme/handbook"
    assert github_repo_of(origin.path, "mirror") == "acme/mirror"
    from gitwiki.errors import UsageError

    with pytest.raises(UsageError, match="--github-repo"):
        github_repo_of(origin.path, "elsewhere")


# ---- the point of it all: catch-up embeds only what changed -------------------------------------------


@needs_model
def test_catch_up_embeds_only_changed_and_dirty_pages(repo, cli, tmp_path):
    from gitwiki.operations.pull import pull
    from gitwiki.wiki import Wiki

    topics = ["glaciers", "volcanoes", "coral reefs", "deserts", "rainforests", "tundra", "savannas", "mangroves"]
    for i, topic in enumerate(topics):
        repo.write(
            f"wiki/{i}.md",
            f"# {topic.title()}\n\nNotes on {topic} and their climate.\n\n## Visiting\n\nHow to visit {topic}.\n",
        )
    repo.commit("wiki")
    archive = tmp_path / ARCHIVE_NAME
    code, _, err = cli("artifact", "pack", "--out", str(archive), cwd=repo.path)
    assert code == 0, err
    full = Wiki.open(repo.path).status()[0].chunks

    # Three commits past the artifact: one page changed, one added, one deleted; then a dirty page.
    changed = (
        "# Glaciers\n\nNotes on glaciers and their climate.\n\n## Calving\n\nIcebergs break off the glacier snout.\n"
    )
    added = "# Comets\n\nA comet's tail always points away from the sun.\n"
    dirty = "# Deserts\n\nNotes on deserts and their climate.\n\n## Visiting\n\nCarry four litres of water per day.\n"
    repo.commit("change", {"wiki/0.md": changed})
    repo.commit("add", {"wiki/comets.md": added})
    (repo.path / "wiki/5.md").unlink()
    repo.commit("delete")
    local = GitRepoFixture.existing(tmp_path / "clone")
    repo.git("clone", "-q", str(repo.path), str(local.path))
    local.write("wiki/3.md", dirty)

    report = pull(Wiki.open(local.path), str(archive))
    (r,) = report.reports
    assert (r.added, r.changed, r.deleted, r.parsed) == (1, 1, 1, 2)
    # Only chunk texts the artifact lacks: the new section of 0.md and the whole of comets.md.
    assert r.embedded == 1 + len(parse_page(added).chunks) == 2
    assert report.worktree_embedded == 1  # the dirty page's changed section only
    assert r.embedded + report.worktree_embedded < full

    for query, path in (
        ("icebergs breaking off", "wiki/0.md"),
        ("comet tail direction", "wiki/comets.md"),
        ("how much water to carry", "wiki/3.md"),
    ):
        code, out, err = cli("ground", "--json", "--mode", "dense", query, cwd=local.path)
        assert code == 0, err
        assert json.loads(out)["docs"][0]["path"] == path, (query, out)
    code, out, _ = cli("index", "--json", cwd=local.path)
    assert json.loads(out)[0]["up_to_date"] is True


def test_token_comes_from_the_environment_or_gh(tmp_path, monkeypatch):
    from gitwiki.operations.pull import github_token
    from tests.helpers import fake_program

    shims = tmp_path / "bin"
    fake_program(shims, "gh", '[ "$1 $2" = "auth token" ] && echo gho_from_gh\n')
    monkeypatch.setenv("PATH", f"{shims}:/usr/bin:/bin")
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_env")
    assert github_token() == "ghp_env"
    monkeypatch.delenv("GITHUB_TOKEN")
    assert github_token() == "gho_from_gh"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert github_token() is None


def _poison(db: Path) -> None:
    """A breadcrumb this gitwiki never writes: well-formed SQLite, so quick_check passes it."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("UPDATE chunks SET breadcrumb = 'not json'")
    conn.commit()
    conn.close()


def _force_onto_ref(work: GitRepoFixture, archive: Path, remote: str) -> None:
    """Put `archive` on refs/gitwiki/index the way `gitwiki publish` lays it out, without its checks: what
    an older gitwiki, or anyone who can push to the ref, could publish."""
    blob = work.git("hash-object", "-w", str(archive)).strip()
    tree = subprocess.run(
        ["git", "-C", str(work.path), "mktree"],
        input=f"100644 blob {blob}\t{ARCHIVE_NAME}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    commit = work.git("commit-tree", tree, "-m", "poisoned").strip()
    work.git("push", "-q", "--force", remote, f"{commit}:refs/gitwiki/index")


def test_a_poisoned_index_is_not_packed_published_or_installed(repo, cli, tmp_path):
    """A source index holding a non-JSON breadcrumb: pack and publish refuse it; forced onto the ref anyway,
    a consumer's `repo sync` refuses to install it and indexes from git, and every search answers."""

    bare = tmp_path / "pub.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    repo.write(".gitwiki.toml", LEXICAL)
    for i in range(3):
        repo.write(f"wiki/p{i}.md", numbered_page(i))
    repo.commit("pages")
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    genuine = tmp_path / "genuine" / ARCHIVE_NAME
    assert cli("artifact", "pack", "--out", str(genuine), cwd=repo.path)[0] == 0
    _poison(repo.path / ".git/gitwiki/index.sqlite")
    code, _, err = cli("artifact", "pack", "--out", str(tmp_path / "refused.tar.gz"), cwd=repo.path)
    assert code == 4 and "not a JSON list of strings" in err and "gitwiki index --rebuild" in err, err
    assert not (tmp_path / "refused.tar.gz").exists()
    poisoned = doctored(genuine, tmp_path / ARCHIVE_NAME, "UPDATE chunks SET breadcrumb = 'not json';")
    code, _, err = cli("publish", str(poisoned), cwd=repo.path)
    assert code == 4 and "holds rows this gitwiki cannot read" in err and "Traceback" not in err
    _force_onto_ref(repo, poisoned, "origin")

    consumer = tmp_path / "consumer"
    consumer.mkdir()
    user_config = tmp_path / "xdg" / "gitwiki" / "config.toml"  # the user layer: trusted without consent
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(LEXICAL + f'\n[[repository]]\nname = "pub"\nurl = "{bare.as_uri()}"\n')
    local = GitRepoFixture(consumer)
    local.commit("init", {"wiki/a.md": "# A\n\nlocal page\n"})
    code, out, err = cli("repo", "sync", "--json", cwd=local.path)
    assert code == 0, err
    (report,) = json.loads(out)
    assert report["artifact"] is False
    assert any("published index not used" in n and "cannot read" in n for n in report["notes"]), report["notes"]
    code, out, err = cli("ground", "--json", "--corpus", "repo:pub:wiki", "walrus number 2", cwd=local.path)
    assert code == 0, err
    assert json.loads(out)["docs"][0]["path"] == "wiki/p2.md"


def test_a_broken_install_is_found_by_the_next_query_and_rebuilt_by_the_next_sync(repo, cli, tmp_path):
    """An install made before installs were checked: the query that meets the row says the index is damaged
    (no traceback) and marks it; the next sync rebuilds it from git instead of saying "unchanged"."""
    bare = tmp_path / "pub.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    repo.commit("pages", {**{f"wiki/p{i}.md": numbered_page(i) for i in range(3)}, ".gitwiki.toml": LEXICAL})
    repo.git("push", "-q", str(bare), "main")
    user_config = tmp_path / "xdg" / "gitwiki" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(LEXICAL + f'\n[[repository]]\nname = "pub"\nurl = "{bare.as_uri()}"\n')
    (tmp_path / "consumer").mkdir()
    local = GitRepoFixture(tmp_path / "consumer")
    local.commit("init", {"wiki/a.md": "# A\n\nlocal page\n"})
    assert cli("repo", "sync", cwd=local.path)[0] == 0
    (cache,) = (tmp_path / "cache").rglob("index.sqlite")
    _poison(cache)
    code, _, err = cli("ground", "--corpus", "repo:pub:wiki", "walrus number 2", cwd=local.path)
    assert code == 4 and "is damaged" in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    code, out, err = cli("repo", "sync", cwd=local.path)
    assert code == 0 and "unchanged" not in out and "moved aside" in err, out + err
    code, out, err = cli("ground", "--json", "--corpus", "repo:pub:wiki", "walrus number 2", cwd=local.path)
    assert code == 0 and json.loads(out)["docs"][0]["path"] == "wiki/p2.md", err
    # found by `status --check` before any query meets it: named, marked, and rebuilt by the next sync
    code, out, err = cli("status", "--check", cwd=local.path)
    assert code == 0 and "repository pub index check: ok" in out, out + err
    _poison(cache)
    code, out, err = cli("status", "--check", cwd=local.path)
    assert code == 4 and "repository pub index check: damaged" in out and "gitwiki repo sync pub" in out, out
    code, out, err = cli("repo", "sync", cwd=local.path)
    assert code == 0 and "unchanged" not in out and "moved aside" in err, out + err
    code, out, err = cli("ground", "--json", "--corpus", "repo:pub:wiki", "walrus number 2", cwd=local.path)
    assert code == 0 and json.loads(out)["docs"][0]["path"] == "wiki/p2.md", err


def test_pull_refuses_an_archive_page_outside_its_local_corpus(origin, cli, tmp_path):
    """The archive's page table is trusted when its tree matches: a page it lists for corpus `wiki` must lie
    in the local `wiki/` folder, as a local page would."""

    local = clone(origin, tmp_path / "clone")
    outside = doctored(
        tmp_path / ARCHIVE_NAME,
        tmp_path / "outside.tar.gz",
        "UPDATE pages SET path = 'src/secrets.md' WHERE path = 'wiki/p0.md';",
    )
    code, _, err = cli("pull", "--from", str(outside), cwd=local.path)
    assert code == 4 and "outside its corpus folder 'wiki'" in err and "Traceback" not in err, err
    assert not (local.path / ".git/gitwiki/index.sqlite").exists()  # nothing installed
