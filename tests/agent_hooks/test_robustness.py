"""Never break the agent: bad input, broken indexes and big answers end in exit 0 and a bounded answer or none;
and the hook path stays free of the heavy libraries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.agent_hooks.helpers import context_of, load
from tests.helpers import ROOT

HEAVY = ("lancedb", "fastembed", "onnxruntime", "numpy", "pygit2", "mcp", "pydantic", "rich")
# What the lean entry point leaves out (docs/agent-hooks-types.md, "Speed"): the CLI's parser.
LEAN_SKIPS = ("argparse", "gitwiki.cli")
CACHED_SKIPS = (
    *LEAN_SKIPS,
    "tomllib",
    "hashlib",
    "subprocess",
    "difflib",
    "gitwiki.memory.entry",
    "gitwiki.memory.base",
)


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b"\xff\xfe", b'"text"'])
def test_malformed_stdin_exits_0_without_output(wiki, hook, raw):
    for hook_type in ("prompt", "ambient", "approve-mcp"):
        assert hook(hook_type, raw, wiki.path) == (0, None)


def test_odd_fields_are_ignored(wiki, hook):
    assert hook("prompt", load("user_prompt_submit", wiki.path, prompt=["a list"]), wiki.path) == (0, None)
    assert hook("ambient", load("pre_tool_use_read", wiki.path, tool_input="x"), wiki.path) == (0, None)
    assert hook("post-build", load("post_tool_use_bash", wiki.path, tool_response=None), wiki.path) == (0, None)


def test_outside_a_git_repository_the_hooks_are_silent(hook, tmp_path):
    assert hook("session", load("session_start", tmp_path), tmp_path) == (0, None)


def test_an_internal_error_is_logged_and_answered_with_nothing(wiki, hook):
    db = wiki.path / ".git" / "gitwiki" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        (db.parent / (db.name + suffix)).unlink(missing_ok=True)
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84 + b"garbage" * 200)
    assert hook("prompt", load("user_prompt_submit", wiki.path), wiki.path) == (0, None)
    (wiki.path / ".gitwiki.toml").write_text("[search]\nmode = 'telepathy'\n")
    assert hook("prompt", load("user_prompt_submit", wiki.path), wiki.path) == (0, None)
    log = (wiki.path / ".git" / "gitwiki" / "agent-hooks.log").read_text()
    assert "gitwiki hook prompt: Traceback" in log
    assert "UsageError: [search] mode must be one of" in log


def test_answers_are_capped(wiki, hook):
    config = wiki.path / ".gitwiki.toml"
    config.write_text(config.read_text() + "[agent_hooks]\nmax_chars = 150\n")
    text = context_of(hook("session", load("session_start", wiki.path), wiki.path)[1])
    assert len(text) <= 150
    assert text.endswith("… (cut to 150 characters: [agent_hooks] max_chars)")


def _loaded(wiki, entry: list[str], hook_type: str, fixture: str, session: str = "abc123") -> set[str]:
    """The modules a fresh interpreter, as Claude Code starts one per hook, loaded beyond `python -c pass`."""
    event = load(fixture, wiki.path, session_id=session)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *entry, hook_type],
        input=json.dumps(event).encode(),
        capture_output=True,
        cwd=wiki.path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and done.stdout.startswith(b'{"hookSpecificOutput"'), done.stderr[-500:]
    return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()[1:]}


HOOKS = (("prompt", "user_prompt_submit"), ("ambient", "pre_tool_use_edit"), ("session", "session_start"))


@pytest.mark.parametrize("entry", [["-m", "gitwiki.agent_hooks"], ["-m", "gitwiki", "hook"]])
def test_the_hook_path_imports_no_heavy_library(wiki, entry):
    """`gitwiki-hook` (the entry point `hooks install` writes, run here as `python -m gitwiki.agent_hooks`)
    and `gitwiki hook`: no heavy library, and the lean entry point without the CLI's parser."""
    for hook_type, fixture in HOOKS:
        loaded = _loaded(wiki, entry, hook_type, fixture)
        packages = {name.split(".")[0] for name in loaded}
        assert "gitwiki" in packages
        assert not packages & set(HEAVY), (hook_type, packages & set(HEAVY))
        if entry[1] == "gitwiki.agent_hooks":
            assert not loaded & set(LEAN_SKIPS), (hook_type, loaded & set(LEAN_SKIPS))


def test_a_hook_on_unchanged_files_loads_no_parser_hash_or_git_process_module(wiki):
    """Once the caches in the index dir hold the config, the memory pages' blob ids and parsed entries and
    the coupling history, a search hook loads neither tomllib, OpenSSL's hashes, subprocess nor the memory
    library's parser (docs/agent-hooks-types.md, "Speed")."""
    entry = ["-m", "gitwiki.agent_hooks"]
    for hook_type, fixture in HOOKS[:2]:
        _loaded(wiki, entry, hook_type, fixture, "first")  # fills the caches
        loaded = _loaded(wiki, entry, hook_type, fixture, "second")
        assert not loaded & set(CACHED_SKIPS), (hook_type, loaded & set(CACHED_SKIPS))


def test_a_stop_hook_with_nothing_to_say_answers_before_the_index_code_loads(wiki, hook):
    """Every `claude -p` ends with a Stop hook, and most sessions edit nothing: that hook reads the session's state
    and ends, without SQLite, the index or the ranking; one whose session edited a file still reminds."""

    def stop_loads(session: str) -> tuple[bytes, set[str]]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "gitwiki.agent_hooks", "stop"],
            input=json.dumps(load("stop", wiki.path, session_id=session)).encode(),
            capture_output=True,
            cwd=wiki.path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr[-500:]
        return done.stdout, {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()[1:]}

    hook("prompt", load("user_prompt_submit", wiki.path, session_id="quiet"), wiki.path)  # a session, no edits
    out, loaded = stop_loads("quiet")
    assert out == b""
    assert not loaded & {"sqlite3", "gitwiki.index.store", "gitwiki.agent_hooks.lookup", "gitwiki.search.ranking"}
    hook("ambient", load("pre_tool_use_edit", wiki.path, session_id="edits"), wiki.path)
    out, loaded = stop_loads("edits")
    assert json.loads(out)["decision"] == "block" and "gitwiki.agent_hooks.lookup" in loaded


def test_the_cli_form_answers_as_gitwiki_hook_does(wiki, hook):
    for hook_type, fixture in (("prompt", "user_prompt_submit"), ("ambient", "pre_tool_use_read")):
        event = load(fixture, wiki.path)
        lean = hook(hook_type, {**event, "session_id": "lean"}, wiki.path)
        assert lean[1] is not None
        assert hook(hook_type, {**event, "session_id": "cli"}, wiki.path, cli=True) == lean


def test_gitwiki_hook_with_an_unknown_type_says_how_to_call_it_and_does_not_block(capsys):
    from gitwiki.agent_hooks.__main__ import answer

    assert answer(["deploy"]) == 1  # Claude Code reads exit 2 as "block the tool call"
    assert capsys.readouterr().err.startswith("usage: gitwiki-hook TYPE\n  TYPE: one of session, prompt, ambient")
    assert answer(["-h"]) == 0 and "usage: gitwiki-hook TYPE" in capsys.readouterr().out


def test_a_config_change_reaches_the_next_hook(wiki, hook):
    """The hooks keep the parsed config layers in agent-config.json; a changed file is read again."""
    event = load("session_start", wiki.path)
    assert len(context_of(hook("session", event, wiki.path)[1])) > 150
    event["session_id"] = "another"  # the same event again would be taken for the plugin's copy of it
    cached = json.loads((wiki.path / ".git" / "gitwiki" / "agent-config.json").read_text())
    assert cached[str(wiki.path / ".gitwiki.toml")][1]["corpus"] == [{"name": "wiki", "path": "wiki"}]
    config = wiki.path / ".gitwiki.toml"
    config.write_text(config.read_text() + "[agent_hooks]\nmax_chars = 150\n")
    assert len(context_of(hook("session", event, wiki.path)[1])) <= 150
    config.write_text(config.read_text() + "[search]\nmode = 'telepathy'\n")
    assert hook("session", {**event, "session_id": "a third"}, wiki.path) == (0, None)
    assert (
        "UsageError: [search] mode must be one of" in (wiki.path / ".git" / "gitwiki" / "agent-hooks.log").read_text()
    )


def test_a_cwd_that_is_no_path_is_not_in_a_repository(wiki, hook):
    """A NUL in the event's `cwd` (found by tests/agent_hooks/test_fuzz.py) once raised ValueError past the handler."""
    assert hook("ambient", load("pre_tool_use_read", wiki.path, cwd="src\x00"), wiki.path) == (0, None)


@pytest.mark.parametrize("transcript", ["/tmp/a\x00b", "/tmp/\ud800"])
def test_a_transcript_path_that_is_no_path_still_gets_the_answer(wiki, hook, transcript):
    """A NUL or a lone surrogate in `transcript_path` was a ValueError: logged, and the prompt answered nothing."""
    event = load("user_prompt_submit", wiki.path, transcript_path=transcript)
    code, answer = hook("prompt", event, wiki.path)
    assert code == 0 and answer is not None and "Rollback" in answer["hookSpecificOutput"]["additionalContext"]
    log = wiki.path / ".git" / "gitwiki" / "agent-hooks.log"
    assert not log.exists() or "Traceback" not in log.read_text()
