"""The ambient hook's five layers, and dedup across calls."""

from __future__ import annotations

import json

import pytest

from tests.agent_hooks.conftest import context_of, load


def _layers(text: str) -> dict[str, list[str]]:
    """Layer title → the paths listed under it."""
    out: dict[str, list[str]] = {}
    title = ""
    for line in text.splitlines():
        if line.startswith("- ["):
            out[title].append(line.split("] ", 1)[1].split(":", 1)[0])
        elif not line.startswith("  "):
            title = line
            out[title] = []
    return out


def test_edit_shows_all_five_layers(wiki, hook):
    code, answer = hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)
    assert code == 0
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in answer["hookSpecificOutput"]  # context only: permissions stay the user's
    assert _layers(context_of(answer)) == {
        "memory entries with [source: src/keys.py]:": ["wiki/memory/keys.md"],
        "sections naming symbols of src/keys.py (rotate_signing_key, KeyRing):": ["wiki/crypto.md"],
        "sections about 'keys':": ["wiki/keys.md"],
        "notes that name src/keys.py:": ["wiki/architecture.md"],
        "this edit removes legacy_unwrap; sections that name them:": ["wiki/legacy.md"],
    }


def test_read_never_repeats_a_note_in_a_session(wiki, hook):
    first = _layers(context_of(hook("ambient", load("pre_tool_use_read", wiki.path), wiki.path)[1]))
    assert "memory entries with [source: src/keys.py]:" in first
    assert "this edit removes" not in " ".join(first)
    assert hook("ambient", load("pre_tool_use_read", wiki.path), wiki.path) == (0, None)
    edit = _layers(context_of(hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)[1]))
    assert edit == {"this edit removes legacy_unwrap; sections that name them:": ["wiki/legacy.md"]}


def test_grep_searches_its_pattern(wiki, hook):
    text = context_of(hook("ambient", load("pre_tool_use_grep", wiki.path), wiki.path)[1])
    assert _layers(text) == {"gitwiki sections on 'rollback_release':": ["wiki/deploy.md"]}


def test_files_outside_the_repo_get_nothing(wiki, hook, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def rotate_signing_key():\n    pass\n")
    event = load("pre_tool_use_read", wiki.path)
    event["tool_input"] = {"file_path": str(outside)}
    assert hook("ambient", event, wiki.path) == (0, None)


def test_write_reads_symbols_from_the_new_content(wiki, hook):
    event = load("pre_tool_use_read", wiki.path, tool_name="Write")
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "ring.py"), "content": "class KeyRing:\n    pass\n"}
    layers = _layers(context_of(hook("ambient", event, wiki.path)[1]))
    assert layers == {"sections naming symbols of src/ring.py (KeyRing):": ["wiki/crypto.md"]}


def test_reading_a_wiki_page_does_not_inject_the_page_itself(wiki, hook):
    event = load("pre_tool_use_read", wiki.path)
    event["tool_input"] = {"file_path": str(wiki.path / "wiki" / "keys.md")}
    layers = _layers(context_of(hook("ambient", event, wiki.path)[1]))
    assert layers == {"sections about 'keys':": ["wiki/memory/keys.md"]}


def test_a_plain_word_symbol_counts_only_in_a_code_span(wiki, hook, cli):
    wiki.commit(
        "more",
        {
            "wiki/prose.md": "# Prose\n\n## Evenings\n\nWe close the shop at night.\n",
            "wiki/api.md": "# API\n\n## Shutdown\n\nCall `ring.close()` when done.\n",
        },
    )
    cli("index", cwd=wiki.path)
    event = load("pre_tool_use_read", wiki.path, tool_name="Write")
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "shop.py"), "content": "def close(self):\n    pass\n"}
    layers = _layers(context_of(hook("ambient", event, wiki.path)[1]))
    assert layers == {"sections naming symbols of src/shop.py (close):": ["wiki/api.md"]}


def test_layer_one_is_decided_by_the_entry_source_field(wiki, hook, cli):
    """An entry that only mentions the path in its text is a structural note, not a sourced one; an entry
    whose `[source:]` has no line or blob still counts."""
    wiki.commit(
        "memory",
        {
            "wiki/memory/ops.md": (
                "# ops\n\n## 2026-01-05T10:00:00Z — deploy runbook\n\ndeploy runbook\n\nIt calls src/keys.py first.\n"
                "[source: deploy/run.sh:4@89abcdef]\n\n"
                "## 2026-01-06T10:00:00Z — invariant: ring order\n\ninvariant: ring order\n[source: src/keys.py]\n"
            )
        },
    )
    assert cli("index", cwd=wiki.path)[0] == 0
    text = context_of(hook("ambient", load("pre_tool_use_read", wiki.path), wiki.path)[1])
    sourced, _, rest = text.partition("\nsections naming symbols")
    assert "wiki/memory/ops.md:10-13 ops › 2026-01-06T10:00:00Z — invariant: ring order" in sourced
    assert "wiki/memory/keys.md:3-7" in sourced
    assert "deploy runbook" not in sourced
    structural = rest.partition("notes that name src/keys.py:\n")[2]
    assert "wiki/memory/ops.md:3-8 ops › 2026-01-05T10:00:00Z — deploy runbook" in structural

    # the parsed fields are cached per page; a page written since is parsed again
    ops = wiki.path / "wiki" / "memory" / "ops.md"
    wiki.commit("resourced", {"wiki/memory/ops.md": ops.read_text().replace("deploy/run.sh", "src/keys.py")})
    assert cli("index", cwd=wiki.path)[0] == 0
    text = context_of(hook("ambient", load("pre_tool_use_read", wiki.path, session_id="s2"), wiki.path)[1])
    sourced = text.partition("\nsections naming symbols")[0]
    assert "wiki/memory/ops.md:3-8 ops › 2026-01-05T10:00:00Z — deploy runbook" in sourced


def test_coupling_notes_come_from_co_change_history_cached_per_head(wiki, hook):
    for n in range(2):
        wiki.commit(f"keys {n}", {"src/keys.py": f"# {n}\n", "src/ring.py": f"# {n}\n", "README": f"{n}\n"})
    wiki.commit("ring alone", {"src/ring.py": "# 3\n"})
    text = context_of(hook("ambient", load("pre_tool_use_read", wiki.path), wiki.path)[1])
    assert (
        "files that changed together with src/keys.py (commits, of the last 200): README (2), src/ring.py (2)" in text
    )
    cache = next(wiki.path.joinpath(".git").rglob("agent-cochange.json"))
    assert json.loads(cache.read_text())["head"] == wiki.git("rev-parse", "HEAD").strip()
    again = hook("ambient", load("pre_tool_use_read", wiki.path), wiki.path)[1]
    assert again is None or "changed together" not in context_of(again)  # once per session

    wiki.commit("third", {"src/keys.py": "# 3\n", "src/ring.py": "# 4\n"})  # a new HEAD: the history is read again
    text = context_of(hook("ambient", load("pre_tool_use_read", wiki.path, session_id="s2"), wiki.path)[1])
    assert "src/ring.py (3), README (2)" in text


def test_after_head_moves_only_the_new_commits_are_read(wiki, hook, monkeypatch):
    """`git log OLD..HEAD` added to the cached lists gives what a full read of the last 200 commits gives;
    a rewritten history (OLD no longer an ancestor) is read in full again."""
    from gitwiki import gitcli

    def keys_note(session: str) -> str:
        text = context_of(hook("ambient", load("pre_tool_use_read", wiki.path, session_id=session), wiki.path)[1])
        return next(line for line in text.splitlines() if line.startswith("files that changed together"))

    wiki.commit("keys 0", {"src/keys.py": "# 0\n", "src/ring.py": "# 0\n"})
    wiki.commit("sweep", {f"wiki/p{n}.md": f"# P{n}\n" for n in range(40)} | {"src/keys.py": "# s\n"})
    hook("ambient", load("pre_tool_use_read", wiki.path, session_id="s0"), wiki.path)
    cache = wiki.path / ".git" / "gitwiki" / "agent-cochange.json"
    assert [] in json.loads(cache.read_text())["commits"]  # the 41-file sweep, kept as a place only

    full = gitcli.changed_together
    monkeypatch.setattr(gitcli, "changed_together", lambda *a: pytest.fail("read the whole history again"))
    wiki.commit("keys 1", {"src/keys.py": "# 1\n", "src/ring.py": "# 1\n"})
    wiki.git("checkout", "-qb", "side")
    wiki.commit("keys on a side branch", {"src/keys.py": "# side\n", "src/ring.py": "# side\n", "README": "x\n"})
    wiki.git("checkout", "-q", "-")
    wiki.git("merge", "-q", "--no-ff", "--no-edit", "side")
    assert keys_note("s1") == "files that changed together with src/keys.py (commits, of the last 200): src/ring.py (3)"
    assert json.loads(cache.read_text())["commits"] == [f if len(f) <= 30 else [] for f in full(wiki.path, 200)]

    wiki.git("reset", "-q", "--hard", "HEAD~2")  # drops keys 1 and the merge: HEAD is behind the cached one
    wiki.commit("keys 2", {"src/keys.py": "# 2\n", "src/ring.py": "# 2\n"})
    monkeypatch.setattr(gitcli, "changed_together", full)
    assert keys_note("s2") == "files that changed together with src/keys.py (commits, of the last 200): src/ring.py (2)"
