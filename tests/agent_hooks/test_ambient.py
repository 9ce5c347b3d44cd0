"""The ambient hook's five layers, and dedup across calls."""

from __future__ import annotations

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
