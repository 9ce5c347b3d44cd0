"""The ambient hook's five layers, and dedup across calls."""

from __future__ import annotations

import json

import pytest

from tests.agent_hooks.helpers import context_of, load


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
    from gitwiki.git import gitcli

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


def _bash(root, command: str, **changes) -> dict:
    event = load("pre_tool_use_bash", root, **changes)
    event["tool_input"] = {"command": command, "description": "x"}
    return event


def test_a_file_read_through_bash_gets_the_notes_a_read_gets(wiki, hook):
    """Claude Code 2.1 reads files with `cat`, `head`, `sed -n` through its Bash tool."""
    read = context_of(hook("ambient", load("pre_tool_use_read", wiki.path, session_id="read"), wiki.path)[1])
    for n, command in enumerate(
        ["cat src/keys.py | head -50", "cd src && sed -n '1,20p' keys.py", "head -n 5 src/keys.py 2>/dev/null"]
    ):
        answer = hook("ambient", _bash(wiki.path, command, session_id=f"bash{n}"), wiki.path)[1]
        assert context_of(answer) == read, command
        assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"


def test_a_search_through_bash_gets_the_notes_a_grep_gets(wiki, hook):
    grep = context_of(hook("ambient", load("pre_tool_use_grep", wiki.path, session_id="grep"), wiki.path)[1])
    for n, command in enumerate(
        [
            "grep -rn 'rollback_release' wiki/",
            "rg -e rollback_release -g '*.md'",
            "git grep -n rollback_release -- wiki",
        ]
    ):
        assert context_of(hook("ambient", _bash(wiki.path, command, session_id=f"bash{n}"), wiki.path)[1]) == grep, (
            command
        )


def test_other_bash_commands_and_files_outside_get_nothing(wiki, hook):
    for command in [
        "ls -la",
        "python -m pytest -q",
        "cat /etc/hostname",
        "cat ../outside.py",
        'grep "unclosed',
        "cat <<'EOF' > src/new.py\nrollback_release\nEOF",
    ]:
        assert hook("ambient", _bash(wiki.path, command), wiki.path) == (0, None), command


def test_a_bash_event_after_the_call_is_answered_as_such(wiki, hook):
    answer = hook("ambient", _bash(wiki.path, "cat src/keys.py", hook_event_name="PostToolUse"), wiki.path)[1]
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"


def _hook_process(root, hook_type: str, event, timeout: float = 60):
    """The hook as Claude Code runs it: a process with the event on stdin, killed past `timeout`."""
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT

    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    return subprocess.run(
        [sys.executable, "-m", "gitwiki.agent_hooks", hook_type],
        input=raw,
        capture_output=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=timeout,
    )


@pytest.mark.parametrize("tool", ["Read", "Bash"])
def test_a_fifo_in_the_repo_does_not_block_the_hook(wiki, tool):
    import os

    os.mkfifo(wiki.path / "src" / "fifo.py")
    if tool == "Read":
        event = load("pre_tool_use_read", wiki.path)
        event["tool_input"] = {"file_path": str(wiki.path / "src" / "fifo.py")}
    else:
        event = _bash(wiki.path, "cat src/fifo.py")
    done = _hook_process(wiki.path, "ambient", event)  # blocked in open() for ever before
    assert done.returncode == 0 and done.stderr == b""


@pytest.mark.parametrize("tool", ["Read", "Bash"])
def test_a_symlink_out_of_the_repo_is_not_read(wiki, hook, cli, tmp_path, tool):
    outside = tmp_path / "outside.py"
    outside.write_text("def exfiltrated_secret_name():\n    pass\n")
    wiki.commit("more", {"wiki/secret.md": "# Secret\n\n## Names\n\n`exfiltrated_secret_name` is private.\n"})
    assert cli("index", cwd=wiki.path)[0] == 0
    (wiki.path / "src" / "link.py").symlink_to(outside)
    if tool == "Read":
        event = load("pre_tool_use_read", wiki.path)
        event["tool_input"] = {"file_path": str(wiki.path / "src" / "link.py")}
    else:
        event = _bash(wiki.path, "cat src/link.py")
    answer = hook("ambient", event, wiki.path)[1]
    assert answer is None or "exfiltrated_secret_name" not in context_of(answer)
    (wiki.path / ".git" / "hooks" / "names.py").write_text(outside.read_text())
    (wiki.path / "src" / "git.py").symlink_to(wiki.path / ".git" / "hooks" / "names.py")  # nor into .git
    event = load("pre_tool_use_read", wiki.path, session_id="git")
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "git.py")}
    answer = hook("ambient", event, wiki.path)[1]
    assert answer is None or "exfiltrated_secret_name" not in context_of(answer)
    # the same file inside the repository is read
    (wiki.path / "src" / "inside.py").write_text(outside.read_text())
    event = load("pre_tool_use_read", wiki.path, session_id="inside")
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "inside.py")}
    assert "sections naming symbols of src/inside.py (exfiltrated_secret_name)" in context_of(
        hook("ambient", event, wiki.path)[1]
    )


def test_a_path_longer_than_the_system_opens_is_not_resolved(wiki, hook):
    """A 2 MB file_path of 700,000 components once took symlink resolution past the hook's time (the fuzz)."""
    event = load("pre_tool_use_read", wiki.path)
    event["tool_input"] = {"file_path": "src/" + "x/" * 700_000 + "keys.py"}
    assert hook("ambient", event, wiki.path) == (0, None)


def test_deeply_nested_json_is_ignored_without_a_traceback(wiki):
    nested = b'{"tool_name": "Read", "tool_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    done = _hook_process(wiki.path, "ambient", nested)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_an_entry_whose_source_leads_out_of_the_repo_is_no_sourced_note(wiki, hook, cli, tmp_path):
    """A checkout's memory entry pinned to a symlink out of the repository: the library never reads that
    source, and the hook does not present the entry as the notes on it (issue 28)."""
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    (wiki.path / "src" / "away.py").symlink_to(outside)
    entry = "## 2026-01-06T10:00:00Z — ring order\n\nring order matters\n[source: src/away.py:1@0123456789ab]\n"
    wiki.commit("memory", {"wiki/memory/ops.md": f"# ops\n\n{entry}"})
    assert cli("index", cwd=wiki.path)[0] == 0
    event = load("pre_tool_use_read", wiki.path)
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "away.py")}
    answer = hook("ambient", event, wiki.path)[1]
    assert answer is None or "memory entries with [source: src/away.py]" not in context_of(answer)
    # the same entry on a file inside the repository is a sourced note
    (wiki.path / "src" / "away.py").unlink()
    (wiki.path / "src" / "away.py").write_text("secret = 1\n")
    event = load("pre_tool_use_read", wiki.path, session_id="inside")
    event["tool_input"] = {"file_path": str(wiki.path / "src" / "away.py")}
    assert "memory entries with [source: src/away.py]" in context_of(hook("ambient", event, wiki.path)[1])
