"""Memory sources outside the repository (issue 28): a checkout's memory page, or an import, may pin an entry
to `/etc/passwd`, `../../home/.ssh/id_rsa`, a symlink out of the repository or `/dev/zero`. Such a source is
refused at store, dropped with a note at import, and never read after: stale, refresh (CLI and MCP) and
search name it as ignored and show nothing of the file."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.memory.sources import parse_source
from tests.mcp.client import call, connect, refused, run
from tests.memory.helpers import Log

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
SECRET = "s3cret-line-of-the-victim"
BLOB = "0000000000ab"


@pytest.fixture
def outside(tmp_path):
    """A file outside the repository, and the repository with a symlink to it."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"{SECRET}\nsecond line\n")
    return secret


def _page(sources: list[str]) -> str:
    entries = [
        f"## 2026-01-0{n}T00:00:00Z — note {n}\n\nhostile note {n} about keys\n[source: {source}]\n"
        for n, source in enumerate(sources, 1)
    ]
    return "# leak\n\n" + "\n".join(entries)


def _hostile_repo(repo, outside, extra: list[str] = ()) -> list[str]:
    """A checkout whose committed memory pins entries to files outside it: absolute, `..`, a symlink out of
    the repository, a symlink into .git, and `extra`."""
    depth = len(repo.path.parts)
    up = "../" * depth
    (repo.path / "src").mkdir()
    (repo.path / "src" / "link.py").symlink_to(outside)
    (repo.path / "src" / "git.cfg").symlink_to(repo.path / ".git" / "config")
    sources = [
        f"{outside}:1-2@{BLOB}",
        f"{up}{str(outside).lstrip('/')}:1-3@{BLOB}",
        f"src/link.py:1@{BLOB}",
        f"src/git.cfg:1@{BLOB}",
        f".git/config:1@{BLOB}",
        *extra,
    ]
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "wiki/memory/leak.md": _page(sources)})
    return sources


def test_refresh_and_stale_name_outside_sources_and_show_nothing_of_them(repo, cli, outside):
    """Before: `topics refresh` printed the file outside the repository as a diff."""
    sources = _hostile_repo(repo, outside, [f"/dev/zero:1@{BLOB}"])
    for action in ("refresh", "stale"):
        code, out, err = cli("memory", "topics", action, cwd=repo.path)
        assert code == 0 and err == "", err
        assert SECRET not in out and "[remote" not in out
        assert out.count("ignored leak:") == len(sources), out
        assert "is an absolute path, outside the repository" in out and "leading outside the repository" in out
        assert "leads outside the repository through a symlink" in out and "points into .git" in out
        code, out, _ = cli("memory", "topics", action, "--json", cwd=repo.path)
        data = json.loads(out)
        assert [i["entry"] for i in data["ignored"]] == [f"leak:{n}" for n in range(1, len(sources) + 1)]
        assert data.get("refresh", data.get("stale")) == []


def test_search_of_entries_with_outside_sources_reads_none_of_them(repo, cli, outside):
    """Before: a source of /dev/zero made search read until memory ran out."""
    _hostile_repo(repo, outside, [f"/dev/zero:1@{BLOB}"])
    code, out, err = cli("memory", "search", "hostile", "--detail", "brief", cwd=repo.path)
    assert code == 0 and err == ""
    assert out.count("(source not read: it ") == 4 and "4 of 6 entries" in out and SECRET not in out  # 4 a topic
    data = json.loads(cli("memory", "search", "hostile", "--json", cwd=repo.path)[1])
    assert all(h["source_ignored"] and not h["stale"] for h in data["hits"]) and len(data["hits"]) == 4  # per topic
    code, out, _ = cli("memory", "topics", "stats", "--json", cwd=repo.path)
    assert code == 0 and json.loads(out)["stale"] == 0


def test_a_source_inside_the_repository_is_still_diffed(repo, cli):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "src/app.py": "one\ntwo\n"})
    assert cli("memory", "store", "t", "the app prints two", "--source", "src/app.py:2", cwd=repo.path)[0] == 0
    (repo.path / "src/app.py").write_text("one\nTWO\n")
    code, out, _ = cli("memory", "topics", "refresh", cwd=repo.path)
    assert code == 0 and "+TWO" in out and "ignored" not in out


def test_store_refuses_outside_sources_with_or_without_a_blob(repo, cli, outside):
    _hostile_repo(repo, outside)
    for source in (f"src/link.py:1@{BLOB}", "src/link.py:1", f".git/config@{BLOB}", "src/git.cfg", "/etc/passwd"):
        code, out, err = cli("memory", "store", "t", "a note", "--source", source, cwd=repo.path)
        assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (source, err)
    code, _, err = cli("memory", "store", "t", "a note", "--source", "a" * 100_000, cwd=repo.path)
    assert code == 2 and "at most 1,024" in err and len(err) < 500  # OSError before


def test_mcp_refresh_store_and_batch(repo, outside):
    """The same doors through `gitwiki serve` and the SDK's stdio client."""
    _hostile_repo(repo, outside)

    async def main():
        async with connect(repo.path) as s:
            refreshed = (await call(s, "memory_topics", action="refresh")).structured_content
            stale = (await call(s, "memory_topics", action="stale", refresh=True)).structured_content
            stored = await refused(s, "memory_store", topic="t", text="a note", source=f"src/link.py:1@{BLOB}")
            batch = await refused(
                s, "memory_batch", entries=[{"topic": "t", "text": "a note", "source": f"{outside}:1"}]
            )
            long = await refused(s, "memory_store", topic="t", text="a note", source="a" * 100_000)
            entry = {"created": "2026-01-01T00:00:00Z", "text": "imported note", "source": f"src/link.py:1@{BLOB}"}
            imported = await call(
                s, "memory_topics", action="import", data={"topics": [{"name": "imp", "entries": [entry]}]}
            )
            return refreshed, stale, stored, batch, long, imported.structured_content

    refreshed, stale, stored, batch, long, imported = run(main)
    assert imported["added"] == {"imp": 1} and "leads outside the repository through a symlink" in imported["notes"][0]
    assert "src/link.py" not in (repo.path / "wiki/memory/imp.md").read_text()
    for answer in (refreshed, stale):
        assert SECRET not in json.dumps(answer) and len(answer["ignored"]) == 5 and not answer["refresh"]
    assert "leads outside the repository through a symlink" in str(stored)
    assert "is an absolute path" in str(batch) or "must be a repo-relative path" in str(batch)
    assert "at most 1,024" in str(long)
    assert not (repo.path / "wiki/memory/t.md").exists()


def test_imports_drop_outside_sources_with_a_note(repo, cli, outside, tmp_path):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "src/app.py": "x\n"})
    export = {
        "format": "gitwiki-memory",
        "version": 1,
        "topics": [
            {
                "name": "keys",
                "entries": [
                    {"created": "2026-01-01T00:00:00Z", "text": "where the key is", "source": f"{outside}:1@{BLOB}"},
                    {"created": "2026-01-02T00:00:00Z", "text": "the app", "source": f"src/app.py:1@{BLOB}"},
                ],
            }
        ],
    }
    file = tmp_path / "export.json"
    file.write_text(json.dumps(export))
    code, out, err = cli("memory", "topics", "import", "--file", str(file), cwd=repo.path)
    assert code == 0 and err == ""
    assert out.startswith("imported 2 entries") and "note: entry 1 of topic 'keys'" in out and "without it" in out
    page = (repo.path / "wiki/memory/keys.md").read_text()
    assert str(outside) not in page and f"[source: src/app.py:1@{BLOB}]" in page
    log = Log()
    log.entry("keys", f"helix knows the key\n[source: ../../{outside.name}:1]", 60)
    (tmp_path / "data.log").write_bytes(log.bytes())
    code, out, _ = cli("memory", "import", "--helix", str(tmp_path / "data.log"), cwd=repo.path)
    assert code == 0 and "imported 1 entries" in out and "entry 1 of topic 'keys'" in out
    assert "leading outside the repository; imported without it" in out
    assert "../../" not in (repo.path / "wiki/memory/keys.md").read_text()


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_an_import_file_that_is_no_regular_file_is_refused_at_once(repo, cli, tmp_path, kind):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    path = tmp_path / "fifo"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path = "/dev/zero"
    for args in (("import", "--helix", str(path)), ("topics", "import", "--file", str(path))):
        code, out, err = cli("memory", *args, cwd=repo.path)
        assert code == 2 and out == "" and "not a regular file" in err and len(err.strip().splitlines()) == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parse_source_takes_any_text_and_never_a_line_break(raw):
    ref = parse_source(raw)
    if ref is not None:
        assert "\n" not in ref.path and "\r" not in ref.path and "@" not in ref.path and ref.path
        assert ref.start is None or ref.end is None or isinstance(ref.end, int)
        assert ref.blob == "" or all(c in "0123456789abcdef" for c in ref.blob)


def test_a_memory_page_or_checkpoint_linked_out_of_the_repository_is_not_read(repo, cli, outside):
    """A committed `wiki/memory/keys.md -> /home/…/id_rsa` printed that file through `memory read` before;
    a checkpoint that is a FIFO blocked `resume` (and the session-start hook) for ever."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    (repo.path / "wiki/memory/checkpoints").mkdir(parents=True)
    (repo.path / "wiki/memory/keys.md").symlink_to(outside)
    os.mkfifo(repo.path / "wiki/memory/checkpoints/default.md")
    code, out, err = cli("memory", "read", "keys", cwd=repo.path)
    assert code == 3 and SECRET not in out + err and "no memory topic 'keys'" in err
    code, out, err = cli("memory", "topics", "resume", cwd=repo.path)
    assert code == 3 and "checkpoint" in err and SECRET not in out
    code, out, _ = cli("memory", "search", "s3cret", cwd=repo.path)
    assert code == 0 and SECRET not in out


def test_batch_from_standard_input_is_read_up_to_the_cap(repo, cli, monkeypatch):
    import io
    import sys

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    entries = json.dumps([{"topic": "t", "text": "from stdin", "source": f"{'../' * 5}etc/passwd"}])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(entries.encode())))
    code, out, err = cli("memory", "batch", "-", cwd=repo.path)
    assert code == 2 and ("leading outside the repository" in err or "repo-relative" in err)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps([{"topic": "t", "text": "from stdin"}])))
    code, out, err = cli("memory", "batch", "-", cwd=repo.path)
    assert code == 0 and out.startswith("stored 1 of 1"), err
