"""[[repository]] corpora against real repositories: a bare repo reached by a file:// URL is the remote."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.config import RepositoryConfig
from gitwiki.errors import UsageError
from gitwiki.index.artifact import ARCHIVE_NAME
from gitwiki.sources.consents import Consents
from gitwiki.wiki import Wiki
from tests.helpers import LEXICAL, MODEL_NAME, GitRepoFixture, hostile_commit, needs_model
from tests.mcp.client import call, connect, refused, run
from tests.sources.helpers import allow, declare, sync


def top(cli, cwd: Path, query: str, *args: str) -> dict:
    code, out, err = cli("ground", "--json", "--mode", "lexical", *args, query, cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def test_two_repositories_searchable_side_by_side_with_the_local_corpus(checkout, cli):
    reports = sync(cli, checkout.path)
    assert [r["repository"] for r in reports] == ["platform", "handbook"]
    wiki, everything = reports[0]["reports"]
    assert (wiki["corpus"], wiki["pages"], everything["corpus"], everything["pages"]) == (
        "repo:platform:wiki",
        2,
        "repo:platform:corpus",
        3,
    )
    # handbook declares its own [[corpus]] path docs/: that is its wiki folder
    assert reports[1]["reports"][0]["pages"] == 1
    hit = top(cli, checkout.path, "kubernetes", "--corpus", "repo:platform:wiki")
    assert (hit["corpus"], [d["path"] for d in hit["docs"]]) == ("repo:platform:wiki", ["wiki/deploy.md"])
    hit = top(cli, checkout.path, "kubernetes", "--corpus", "repo:platform:corpus")
    assert sorted(d["path"] for d in hit["docs"]) == ["README.md", "wiki/deploy.md"]
    assert top(cli, checkout.path, "annual leave", "--corpus", "repo:handbook:wiki")["docs"][0]["path"] == (
        "docs/holidays.md"
    )
    assert top(cli, checkout.path, "local")["corpus"] == "wiki"  # the default stays the checkout's own
    code, out, _ = cli("config", "show", cwd=checkout.path)
    assert "corpora repo:platform:wiki, :corpus" in out and f'url = "{checkout.path.parent}' not in out
    code, _, err = cli("ground", "x", "--corpus", "repo:nope:wiki", cwd=checkout.path)
    assert code == 3 and "repo:platform:wiki" in err  # not found (README); the choices name the repository corpora


def test_unchanged_remote_costs_no_download_and_no_parse(checkout, cli):
    sync(cli, checkout.path, "platform")
    (again,) = sync(cli, checkout.path, "platform")
    assert again["downloaded"] is False and again["previous"] == again["commit"]
    assert all(r["parsed"] == r["added"] == r["changed"] == 0 for r in again["reports"])
    code, out, _ = cli("repo", "sync", "platform", cwd=checkout.path)
    assert code == 0 and "no download" in out and "unchanged" in out


def test_moving_ref_indexes_only_what_changed_and_list_shows_staleness(checkout, platform, cli):
    sync(cli, checkout.path)
    platform.work.commit("edit", {"wiki/deploy.md": "# Deploy\n\nWe roll out with nomad now.\n"})
    platform.push()
    code, out, _ = cli("repo", "list", "--check", cwd=checkout.path)
    assert code == 0 and "behind" in out and "refs/heads/main" not in out  # ref followed: the remote HEAD
    (moved,) = sync(cli, checkout.path, "platform")
    wiki = moved["reports"][0]
    assert (moved["downloaded"], wiki["added"], wiki["changed"], wiki["deleted"], wiki["parsed"]) == (True, 0, 1, 0, 1)
    assert top(cli, checkout.path, "nomad", "--corpus", "repo:platform:wiki")["docs"][0]["path"] == "wiki/deploy.md"
    assert top(cli, checkout.path, "canaries", "--corpus", "repo:platform:wiki")["docs"] == []
    code, out, _ = cli("repo", "list", "--json", "--check", cwd=checkout.path)
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["platform"]["state"] == "synced" and rows["platform"]["commit"] == moved["commit"]
    assert rows["platform"]["corpora"] == {"repo:platform:wiki": 2, "repo:platform:corpus": 3}
    code, out, _ = cli("status", cwd=checkout.path)
    assert f"repository platform  {platform.url}: synced, commit {moved['commit'][:12]}" in out
    assert "repository handbook" in out


def test_sync_after_force_push_follows_the_rewritten_history(checkout, platform, cli):
    (first,) = sync(cli, checkout.path, "platform")
    platform.work.git("reset", "-q", "--hard", "HEAD")
    platform.work.git("commit", "-q", "--amend", "-m", "rewritten")
    platform.work.commit("gone", {"wiki/oncall.md": "# On call\n\nEscalate to the SRE pager.\n"})
    platform.push("--force")
    (after,) = sync(cli, checkout.path, "platform")
    assert after["rewritten"] is True and after["previous"] == first["commit"] != after["commit"]
    assert top(cli, checkout.path, "pager", "--corpus", "repo:platform:wiki")["docs"][0]["path"] == "wiki/oncall.md"
    code, out, _ = cli("repo", "sync", "platform", cwd=checkout.path)
    assert code == 0 and "history rewritten" not in out  # said once, when it happened


def test_offline_fetch_failure_keeps_the_last_index(checkout, platform, cli):
    sync(cli, checkout.path)
    shutil.move(platform.bare, platform.bare.with_name("moved.git"))
    code, out, err = cli("repo", "sync", "platform", cwd=checkout.path)
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("platform: cannot reach") and "searching the last sync" in line
    assert top(cli, checkout.path, "kubernetes", "--corpus", "repo:platform:wiki")["docs"]  # still searchable
    code, out, _ = cli("repo", "list", cwd=checkout.path)
    assert "fetch failed" in out and "last fetch failed" in out
    shutil.move(platform.bare.with_name("moved.git"), platform.bare)
    assert sync(cli, checkout.path, "platform")[0]["error"] is None
    code, out, _ = cli("repo", "list", cwd=checkout.path)
    assert "fetch failed" not in out


def test_first_sync_failure_is_an_error_naming_the_next_step(repo, tmp_path, cli):
    repo.commit(
        "init", {".gitwiki.toml": f'[[repository]]\nname = "gone"\nurl = "{(tmp_path / "nope.git").as_uri()}"\n'}
    )
    allow(cli, repo.path)
    code, _, err = cli("repo", "sync", cwd=repo.path)
    assert code == 6 and "cannot reach" in err
    code, _, err = cli("repo", "sync", "other", cwd=repo.path)
    assert code == 3 and "gone" in err


def test_artifact_first_sync_installs_the_published_index(platform, repo, tmp_path, cli):
    platform.work.commit("config", {".gitwiki.toml": LEXICAL})
    platform.push()
    archive = tmp_path / ARCHIVE_NAME
    code, _, err = cli("artifact", "pack", "--out", str(archive), cwd=platform.work.path)
    assert code == 0, err
    code, _, err = cli("publish", str(archive), cwd=platform.work.path)
    assert code == 0, err
    repo.commit("init", {".gitwiki.toml": declare(("platform", platform))})
    allow(cli, repo.path)
    (first,) = sync(cli, repo.path)
    assert first["artifact"] is True and any("installed the published index" in n for n in first["notes"])
    # the wiki's page versions all came with the artifact; README.md lies outside the corpus it published
    assert [r["parsed"] for r in first["reports"]] == [0, 1]
    assert top(cli, repo.path, "canaries", "--corpus", "repo:platform:wiki")["docs"][0]["path"] == "wiki/deploy.md"
    platform.work.commit("new", {"wiki/new.md": "# New\n\nA dugong arrives.\n"})
    platform.push()
    (caught_up,) = sync(cli, repo.path)
    assert caught_up["artifact"] is False and caught_up["reports"][0]["parsed"] == 1


def test_local_path_repository_and_the_default_corpus_of_the_deepest_one(tmp_path, repo, cli, monkeypatch):
    (tmp_path / "outer").mkdir()
    outer = GitRepoFixture(tmp_path / "outer")
    outer.commit("init", {"wiki/zebra.md": "# Zebra\n\nStripes in the outer repo.\n"})
    repo.commit("init", {"wiki/local.md": "# Local\n\nStripes in this checkout.\n"})
    repo.write("wiki/draft.md", "# Draft\n\nUncommitted stripes.\n")
    baseline = tmp_path / "xdg" / "gitwiki" / "config.toml"
    baseline.parent.mkdir(parents=True)
    baseline.write_text(
        LEXICAL + f'\n[[repository]]\nname = "outer"\npath = "{outer.path}"\n\n'
        f'[[repository]]\nname = "self"\npath = "{repo.path}"\n'
    )
    # this checkout declared as a repository: its corpora are local (worktree included) and the default
    hit = top(cli, repo.path / "wiki", "stripes")
    assert hit["corpus"] == "repo:self:wiki"
    assert sorted(d["path"] for d in hit["docs"]) == ["wiki/draft.md", "wiki/local.md"]
    # a path repository elsewhere is read from its objects at HEAD (no fetch, nothing checked out)
    outer.write("wiki/zebra.md", "# Zebra\n\nuncommitted edit\n")
    hit = top(cli, repo.path, "stripes", "--corpus", "repo:outer:wiki")
    assert [d["path"] for d in hit["docs"]] == ["wiki/zebra.md"]
    (report,) = sync(cli, repo.path, "outer")
    assert report["downloaded"] is False and report["reports"][0]["up_to_date"]


def test_duplicate_repository_names_name_both_files(repo, tmp_path, cli):
    baseline = tmp_path / "xdg" / "gitwiki" / "config.toml"
    baseline.parent.mkdir(parents=True)
    baseline.write_text('[[repository]]\nname = "platform"\nurl = "https://example.com/p.git"\n')
    repo.commit("init", {".gitwiki.toml": '[[repository]]\nname = "platform"\npath = "."\n'})
    code, _, err = cli("config", "validate", cwd=repo.path)
    assert code == 2 and str(baseline) in err and str(repo.path / ".gitwiki.toml") in err
    for body, says in (
        ('name = "a:b"\nurl = "x"', "without ':'"),
        ('name = "a"', "exactly one of url or path"),
        ('name = "a"\nurl = "x"\npath = "."', "exactly one of url or path"),
        ('name = "a"\nurl = "x"\nbranch = "main"', "unknown key 'branch'"),
    ):
        repo.write(".gitwiki.toml", f"[[repository]]\n{body}\n")
        code, _, err = cli("config", "validate", cwd=repo.path)
        assert code == 2 and says in err, err


def test_mcp_lists_searches_and_reads_repository_corpora_until_removed(checkout, platform, cli, tmp_path):
    sync(cli, checkout.path)
    errlog = (tmp_path / "server.log").open("w")  # capsys's stderr has no file descriptor for the subprocess

    async def session():
        async with connect(checkout.path, errlog) as s:
            listed = (await call(s, "list_corpora")).structured_content["corpora"]
            names = [c["name"] for c in listed]
            assert names == ["wiki", *(f"repo:{r}:{k}" for r in ("platform", "handbook") for k in ("wiki", "corpus"))]
            row = listed[1]
            assert (row["state"], row["pages"], row["chunks"], row["path"]) == ("fresh", 2, 2, "wiki")
            assert (row["location"], row["ref"], row["model"], row["absolute_path"]) == (platform.url, "HEAD", None, "")
            found = await call(s, "ground", query="kubernetes", corpus="repo:platform:wiki", mode="lexical")
            assert found.structured_content["docs"][0]["path"] == "wiki/deploy.md"
            page = await call(s, "read_markdown", path="deploy.md", corpus="repo:platform:wiki", start_line=3)
            assert page.structured_content["text"] == "We roll out with kubernetes canaries.\n"
            note = await call(s, "get_footnote", page="wiki/oncall.md", footnote_number=1, corpus="repo:platform:wiki")
            assert note.structured_content["text"] == "Rota in the HR tool."
            files = (await call(s, "list_files", corpus="repo:platform:corpus")).structured_content["files"]
            assert files == [
                {"path": p, "absolute_path": ""} for p in ("README.md", "wiki/deploy.md", "wiki/oncall.md")
            ]
            history = await call(s, "page_history", path="deploy.md", corpus="repo:platform:wiki")
            (entry,) = history.structured_content["commits"]  # read from the cache, up to the synced commit
            assert (entry["subject"], entry["author"]) == ("pages", "Test Author")
            error = await refused(s, "add_markdown", path="x.md", content="# X\n", corpus="repo:platform:wiki")
            assert "read-only" in str(error)

    run(session)
    checkout.write(".gitwiki.toml", declare(("platform", platform)))  # handbook removed from the config

    async def after():
        async with connect(checkout.path, errlog) as s:
            listed = (await call(s, "list_corpora")).structured_content["corpora"]
            assert [c["name"] for c in listed] == ["wiki", "repo:platform:wiki", "repo:platform:corpus"]

    run(after)
    errlog.close()


def test_a_tag_or_a_commit_id_pins_the_repository(checkout, platform, cli):
    pinned = platform.work.git("rev-parse", "HEAD").strip()
    platform.work.git("tag", "-a", "v1", "-m", "release 1")
    platform.work.git("push", "-q", "origin", "v1")
    platform.work.commit("later", {"wiki/deploy.md": "# Deploy\n\nNow with nomad.\n"})
    platform.push()
    for ref in ("v1", pinned):
        checkout.write(
            ".gitwiki.toml", f'[[repository]]\nname = "platform"\nurl = "{platform.url}"\nref = "{ref}"\n' + LEXICAL
        )
        (report,) = sync(cli, checkout.path)
        assert report["commit"] == pinned and report["error"] is None
        assert top(cli, checkout.path, "canaries", "--corpus", "repo:platform:wiki")["docs"]
        code, out, _ = cli("repo", "list", "--check", cwd=checkout.path)
        assert code == 0 and "synced:" in out  # a pin is never behind
    checkout.write(".gitwiki.toml", f'[[repository]]\nname = "platform"\nurl = "{platform.url}"\nref = "nope"\n')
    code, _, err = cli("repo", "sync", cwd=checkout.path)
    assert code == 1 and "has no branch or tag 'nope'" in err and "searching the last sync" in err


def test_https_credentials_come_from_the_git_credential_helper(monkeypatch):
    from gitwiki.git.remote import credential_fill

    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "credential.helper")
    monkeypatch.setenv(
        "GIT_CONFIG_VALUE_0", '!f() { test "$1" = get && echo username=alice && echo password=s3cret; }; f'
    )
    assert credential_fill("https://git.example.com/acme/platform.git", None) == ("alice", "s3cret")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "!f() { :; }; f")  # a helper that knows nothing: no prompt, None
    assert credential_fill("https://git.example.com/acme/platform.git", "bob") is None


@needs_model
def test_hybrid_search_of_a_repository_embeds_at_sync_and_not_again(platform, repo, cli):
    repo.commit("init", {".gitwiki.toml": declare(("platform", platform), extra="")})
    allow(cli, repo.path)
    (report,) = sync(cli, repo.path)
    assert [r["model"] for r in report["reports"]] == [MODEL_NAME + "@int8"] * 2
    assert sum(r["embedded"] for r in report["reports"]) == 3  # README.md's chunk once, the wiki's two once
    code, out, err = cli(
        "ground", "--json", "how do we release software", "--corpus", "repo:platform:wiki", cwd=repo.path
    )
    found = json.loads(out)
    assert code == 0 and found["mode"] == "hybrid" and found["docs"][0]["path"] == "wiki/deploy.md", err


def test_a_repository_without_its_wiki_folder_says_how_to_point_at_one(platform, repo, cli):
    repo.commit(
        "init", {".gitwiki.toml": declare(("platform", platform)).replace("\n\n", '\nwiki = "handbook"\n\n', 1)}
    )
    allow(cli, repo.path)
    (report,) = sync(cli, repo.path)
    assert [r["pages"] for r in report["reports"]] == [0, 3]
    code, _, err = cli("ground", "kubernetes", "--corpus", "repo:platform:wiki", cwd=repo.path)
    assert code == 3 and "under handbook/" in err and "set wiki in its [[repository]]" in err


def test_paths_from_another_repository_follow_the_rules_of_local_pages(checkout, platform, cli):
    hostile_commit(platform.work.path)  # wiki/.., wiki/.git, wiki/.GIT, wiki/GIT~1 beside wiki/page.md, wiki/ok/
    platform.push("-f")
    report = sync(cli, checkout.path, "platform")[0]
    assert report["notes"] == [
        "left out 4 path(s) that leave the repository or point into .git: wiki/.., wiki/.GIT, wiki/.git and 1 more"
    ]
    for corpus in ("repo:platform:wiki", "repo:platform:corpus"):
        found = top(cli, checkout.path, "secret", "--corpus", corpus)
        assert sorted(d["path"] for d in found["docs"]) == ["wiki/ok/x.md", "wiki/page.md"]
    wiki = Wiki.open(checkout.path)
    platform_repo = wiki.repositories.get("platform")
    assert platform_repo.read("repo:platform:wiki", "ok/x.md")[0] == "ok/x.md"
    for path, says in (("../x.md", "contains '..'"), (".git/x.md", "points into .git"), ("wiki/.GIT/x.md", ".git")):
        with pytest.raises(UsageError, match=says):
            platform_repo.read("repo:platform:wiki", path)
    wiki.close()


def test_ref_head_is_the_default_said_aloud(checkout, platform, cli):
    checkout.write(
        ".gitwiki.toml", f'[[repository]]\nname = "platform"\nurl = "{platform.url}"\nref = "HEAD"\n' + LEXICAL
    )
    (report,) = sync(cli, checkout.path)
    assert report["error"] is None and report["commit"] == platform.work.git("rev-parse", "HEAD").strip()
    code, out, err = cli("repo", "list", "--check", cwd=checkout.path)
    assert code == 0 and "synced:" in out, err


class Listener:
    """A TCP port on 127.0.0.1 that counts who connects to it: the address a hostile .gitwiki.toml names."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()  # not a git server: the fetch fails, after connecting

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_a_url_from_the_checkouts_config_is_not_reached_until_allowed(repo, cli):
    listener = Listener()
    try:
        url = f"git://127.0.0.1:{listener.port}/x.git"
        repo.commit("clone", {".gitwiki.toml": f'[[repository]]\nname = "x"\nurl = "{url}"\n' + LEXICAL})
        for args in (
            ("repo", "sync"),
            ("repo", "sync", "x"),
            ("ground", "anything", "--corpus", "repo:x:wiki"),  # auto_index would sync first
        ):
            code, _, err = cli(*args, cwd=repo.path)
            assert code == 2 and "`gitwiki repo allow x`" in err and url in err, (args, err)
        code, out, err = cli("repo", "list", "--check", cwd=repo.path)
        assert code == 0 and "not allowed" in out and "gitwiki repo allow x" in out, err
        assert listener.connections == 0
        allow(cli, repo.path, "x")
        code, _, err = cli("repo", "sync", "x", cwd=repo.path)
        assert code == 6 and listener.connections == 1, err  # allowed: it connects (and finds no git there)
    finally:
        listener.close()


def test_a_path_from_the_checkouts_config_is_not_read_until_allowed_and_again_after_it_changes(tmp_path, repo, cli):
    others = []
    for name in ("secrets", "elsewhere"):
        (tmp_path / name).mkdir()
        other = GitRepoFixture(tmp_path / name)
        other.commit("init", {"wiki/key.md": f"# Key\n\nThe {name} zebra.\n"})
        others.append(other)
    secrets, elsewhere = others
    repo.commit("clone", {".gitwiki.toml": f'[[repository]]\nname = "o"\npath = "{secrets.path}"\n' + LEXICAL})
    code, _, err = cli("ground", "zebra", "--corpus", "repo:o:wiki", cwd=repo.path)
    assert code == 2 and "`gitwiki repo allow o`" in err and str(secrets.path) in err, err
    errlog = (tmp_path / "server.log").open("w")

    async def agent():
        async with connect(repo.path, errlog) as s:
            for tool, args in (("ground", {"query": "zebra"}), ("read_markdown", {"path": "key.md"})):
                error = await refused(s, tool, corpus="repo:o:wiki", **args)
                assert error.error.code == -32602 and "gitwiki repo allow o" in str(error), error

    run(agent)
    allow(cli, repo.path)
    assert [d["path"] for d in top(cli, repo.path, "zebra", "--corpus", "repo:o:wiki")["docs"]] == ["wiki/key.md"]
    repo.write(".gitwiki.toml", f'[[repository]]\nname = "o"\npath = "{elsewhere.path}"\n' + LEXICAL)
    code, _, err = cli("ground", "zebra", "--corpus", "repo:o:wiki", cwd=repo.path)
    assert code == 2 and str(elsewhere.path) in err, err  # the entry changed: consent again
    allow(cli, repo.path, "o")
    assert top(cli, repo.path, "zebra", "--corpus", "repo:o:wiki")["docs"]
    code, out, _ = cli("repo", "allow", "--revoke", cwd=repo.path)
    assert code == 0 and "withdrew the consent to o" in out
    assert cli("ground", "zebra", "--corpus", "repo:o:wiki", cwd=repo.path)[0] == 2
    errlog.close()


def test_entries_of_the_users_own_config_and_the_checkout_itself_need_no_consent(tmp_path, repo, cli):
    baseline = tmp_path / "xdg" / "gitwiki" / "config.toml"
    baseline.parent.mkdir(parents=True)
    (tmp_path / "mine").mkdir()
    mine = GitRepoFixture(tmp_path / "mine")
    mine.commit("init", {"wiki/b.md": "# B\n\nAnother quagga.\n"})
    baseline.write_text(f'[[repository]]\nname = "mine"\npath = "{mine.path}"\n')
    repo.commit("init", {".gitwiki.toml": '[[repository]]\nname = "self"\npath = "."\n' + LEXICAL})
    repo.write("wiki/a.md", "# A\n\nA quagga.\n")
    assert top(cli, repo.path, "quagga", "--corpus", "repo:self:wiki")["docs"]  # this checkout: local corpora
    assert top(cli, repo.path, "quagga", "--corpus", "repo:mine:wiki")["docs"]
    code, _, err = cli("repo", "allow", "mine", cwd=repo.path)
    assert code == 2 and "needs no consent" in err
    repo.write(".gitwiki.toml", '[[repository]]\nname = "o"\npath = "."\nfrom_checkout = false\n')
    code, _, err = cli("repo", "list", cwd=repo.path)
    assert code == 2 and "unknown key 'from_checkout'" in err  # a config cannot declare itself trusted


def test_urls_that_would_run_commands_are_refused_even_when_allowed(tmp_path, repo, cli):
    marker = tmp_path / "ran"
    for i, url in enumerate(
        (
            f"ext::sh -c touch% {marker}",
            "fd::17",
            f"--upload-pack=touch {marker}",
            f"-oProxyCommand=touch {marker}",
            f"ssh://-oProxyCommand=touch%20{marker}/x.git",
        )
    ):
        repo.write(".gitwiki.toml", f'[[repository]]\nname = "r{i}"\nurl = "{url}"\n' + LEXICAL)
        allow(cli, repo.path)
        code, _, err = cli("repo", "sync", cwd=repo.path)
        assert code in (2, 3, 6) and err.startswith("gitwiki: error:") and "Traceback" not in err, (url, err)
        assert not marker.exists(), url


ENTRY = RepositoryConfig("o", path="/srv/other", source="/src/app/.gitwiki.toml", from_checkout=True)


def test_a_consent_is_keyed_to_the_config_file_and_the_address(tmp_path):
    consents = Consents(tmp_path / "allowed.json")
    assert not consents.allowed(ENTRY) and consents.allowed(ENTRY._replace(from_checkout=False))
    consents.set([ENTRY], allow=True)
    assert consents.allowed(ENTRY) and consents.allowed(ENTRY._replace(name="renamed", ref="v2"))
    for changed in (ENTRY._replace(path="/srv/else"), ENTRY._replace(source="/src/fork/.gitwiki.toml")):
        assert not consents.allowed(changed)
    consents.set([ENTRY], allow=True)  # allowing twice keeps one record
    assert len(json.loads(consents.path.read_text())["allowed"]) == 1
    consents.set([ENTRY], allow=False)
    assert not consents.allowed(ENTRY)
    (tmp_path / "file").write_text("")  # a config "dir" that is a file (root may write anywhere else)
    with pytest.raises(UsageError, match="cannot write"):
        Consents(tmp_path / "file" / "allowed.json").set([ENTRY], allow=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.text(max_size=8) | st.integers(),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
        st.just(b'{"allowed": [{"config": 1}]}'),
        st.just(b'{"allowed": [{"config": [1], "url": {}}]}'),
    )
)
def test_a_damaged_consent_file_allows_nothing_and_says_how_to_recover(tmp_path, data):
    path = tmp_path / "allowed.json"
    path.write_bytes(data)
    consents = Consents(path)
    allowed = consents.allowed(ENTRY)  # never raises
    try:
        consents.set([ENTRY], allow=True)
    except UsageError as e:
        assert not allowed and "remove it" in str(e)
    else:
        assert consents.allowed(ENTRY)


def lose_objects(tmp_path: Path, name: str) -> None:
    """What an interrupted gc or a disk clean-up leaves: the cache's refs, none of its objects."""
    (cache,) = [p for p in (tmp_path / "cache" / "gitwiki" / "repositories").iterdir() if p.name.startswith(name)]
    for found in [p for p in (cache / "git" / "objects").rglob("*") if p.is_file()]:
        found.unlink()


@pytest.mark.parametrize("first", ["ground", "sync"])
def test_a_cache_that_lost_its_git_objects_is_cloned_again_by_itself(checkout, platform, cli, tmp_path, first):
    """Every `ground --corpus all` ended in a KeyError traceback (the folder summary read a blob that was gone)
    and `repo sync` failed on the dangling ref ("unknown revision 'refs/gitwiki/tip'"). Now the damage is
    found, the cache cloned again with one note, and searches, reads and syncs answer as before."""
    platform.work.commit("summary", {"wiki/index.md": "# Platform wiki\n\nHow the platform team runs things.\n"})
    platform.push()
    sync(cli, checkout.path)
    lose_objects(tmp_path, "platform")
    if first == "sync":
        code, out, err = cli("repo", "sync", "platform", cwd=checkout.path)
        assert code == 0, err
        assert "cloned again" in out and "history rewritten" not in out
    code, out, err = cli("ground", "--json", "--mode", "lexical", "--corpus", "all", "kubernetes", cwd=checkout.path)
    assert code == 0, err
    found = json.loads(out)
    assert "wiki/deploy.md" in {d["path"] for d in found["docs"]}
    assert dict(found["folders"])["repo:platform:wiki:wiki"] == "How the platform team runs things."
    assert ("cloned again" in err) is (first == "ground") and "Traceback" not in err
    (again,) = sync(cli, checkout.path, "platform")  # and the cache serves the next sync as before
    assert again["downloaded"] is False and again["notes"] == []
