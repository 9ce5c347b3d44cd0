"""One bad page costs that page, never the wiki: index, lint, index-blocks, ground and list_files keep
answering, and the bad page is reported once with its reason (issue 11, items 8–10)."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.markdown.frontmatter import MAX_VALUES, read_yaml
from gitwiki.pagetext import printable, problem

LEXICAL = "[embeddings]\nenabled = false\n"
GOOD = {f"wiki/good{i}.md": f"# Good {i}\n\nThe deploy runbook, part {i}.\n" for i in range(3)}
BOMB = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "tags: &g [*f,*f,*f,*f,*f,*f]\n"
    "---\n# Laughs\n\nA deploy page with a bomb in its front matter.\n"
)
TEXT_CASES = {
    "wiki/date.md": "---\ndate: 2024-13-45\n---\n# Date\n\nA deploy date that does not exist.\n",
    "wiki/surrogate.md": '---\ntitle: "\\uD800 deploy"\n---\n\nA lone surrogate in the title.\n',
    "wiki/brackets.md": "# Brackets\n\n" + "[" * 3000 + "deploy" + "]" * 3000 + "\n",
    "wiki/bomb.md": BOMB,
}
BINARY = {"wiki/binary.md": b"\x00\x01deploy\x00" * 50, "wiki/latin1.md": "# Caf\xe9 deploy\n".encode("latin-1")}


@pytest.fixture
def hostile(repo):
    repo.write(".gitwiki.toml", LEXICAL)
    for path, text in {**GOOD, **TEXT_CASES}.items():
        repo.write(path, text)
    for path, data in BINARY.items():
        (repo.path / path).write_bytes(data)
    repo.write("wiki/index.md", "# Index\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    repo.commit("pages")
    return repo


def test_index_skips_only_what_is_not_text_and_says_so_once(hostile, cli):
    code, out, err = cli("index", "--json", cwd=hostile.path)
    assert code == 0, err
    (report,) = json.loads(out)
    assert report["pages"] == len(GOOD) + len(TEXT_CASES) + len(BINARY) + 1
    assert set(report["skipped"]) == set(BINARY)
    assert "control byte 0x00 at offset 0" in report["skipped"]["wiki/binary.md"]
    assert "not UTF-8 (byte 0xe9 at offset 5)" in report["skipped"]["wiki/latin1.md"]
    assert err.count("wiki/binary.md is not indexed") == 1
    assert "Traceback" not in err
    code, out, err = cli("index", cwd=hostile.path)  # reported once: the page version is known now
    assert code == 0 and "up to date" in out and "not indexed" not in err


def test_ground_finds_good_and_odd_pages_and_never_binary_ones(hostile, cli):
    code, out, err = cli("ground", "deploy", "--json", "--top-files", "20", cwd=hostile.path)
    assert code == 0, err
    found = {d["path"] for d in json.loads(out)["docs"]}
    assert set(GOOD) | set(TEXT_CASES) <= found
    assert not found & set(BINARY)
    titles = {d["path"]: d["title"] for d in json.loads(out)["docs"]}
    assert titles["wiki/surrogate.md"] == "? deploy"  # the lone surrogate replaced, not an encoding crash


def test_an_uncommitted_bad_page_does_not_take_ground_down(hostile, cli):
    hostile.write("wiki/new.md", "---\ndate: 2024-13-45\n---\n# New\n\nFresh deploy notes.\n")
    (hostile.path / "wiki/new-binary.md").write_bytes(b"\x00deploy")
    code, out, err = cli("ground", "deploy", "--json", "--top-files", "20", cwd=hostile.path)
    assert code == 0, err
    found = {d["path"] for d in json.loads(out)["docs"]}
    assert "wiki/new.md" in found and "wiki/new-binary.md" not in found


def test_lint_reports_each_unreadable_page_once_and_lints_the_rest(hostile, cli):
    code, out, err = cli("lint", "--format", "json", cwd=hostile.path)
    assert code == 1 and "Traceback" not in err
    findings = json.loads(out)["findings"]
    gw012 = {f["path"]: f["message"] for f in findings if f["code"] == "GW012"}
    assert set(gw012) == set(BINARY)
    assert "binary content" in gw012["wiki/binary.md"] and "not UTF-8" in gw012["wiki/latin1.md"]
    by_path = {(f["path"], f["code"]) for f in findings}
    assert ("wiki/date.md", "GW008") in by_path and ("wiki/bomb.md", "GW008") in by_path
    assert not any(f["path"] == "wiki/good0.md" and f["severity"] == "error" for f in findings)


def test_index_blocks_list_text_pages_only_and_survive_every_page(hostile, cli):
    code, out, err = cli("index-blocks", cwd=hostile.path)
    assert code == 1 and "updated wiki/index.md" in out, err
    block = (hostile.path / "wiki/index.md").read_text(encoding="utf-8")
    for path in (*GOOD, *TEXT_CASES):
        assert f"]({path.removeprefix('wiki/')})" in block
    for path in BINARY:
        assert path.removeprefix("wiki/") not in block
    assert "\x00" not in block
    assert cli("index-blocks", "--check", cwd=hostile.path)[0] == 0  # deterministic: nothing left to do


def test_a_binary_index_file_is_an_error_not_a_crash(hostile, cli):
    (hostile.path / "wiki/sub").mkdir()
    (hostile.path / "wiki/sub/index.md").write_bytes(b"<!-- GITWIKI:INDEX-START -->\x00\n")
    code, out, err = cli("index-blocks", cwd=hostile.path)
    assert code == 1 and "wiki/sub/index.md: binary content" in err and "Traceback" not in err


def test_front_matter_aliases_are_bounded():
    started = time.perf_counter()
    meta, error = read_yaml(BOMB.split("---\n")[1])
    assert meta == {} and f"more than {MAX_VALUES:,} values" in error
    assert time.perf_counter() - started < 1  # 87 s and 4.1 GB before the bound
    many = "tags: [" + ", ".join(f"t{i}" for i in range(500)) + "]\nx: &x [1, 2]\ny: *x\n"
    meta, error = read_yaml(many)
    assert error is None and len(meta["tags"]) == 500 and meta["y"] == [1, 2]  # ordinary aliases still work


def test_yaml_values_python_cannot_build_are_errors_with_a_line():
    assert read_yaml("date: 2024-13-45") == ({}, "line 2: month must be in 1..12")
    assert read_yaml("a: " + "[" * 3000 + "]" * 3000) == ({}, "line 2: front matter is nested too deeply")
    assert read_yaml('title: "\\uD800x"') == ({"title": "?x"}, None)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"# ok\n\ttab\r\n\x0c\x1b[0m\n", None),
        ("# caf\u00e9 \U0001f600\n".encode(), None),
        (b"a\x00b", "binary content (control byte 0x00 at offset 1)"),
        (b"a\x07b", "binary content (control byte 0x07 at offset 1)"),
        (b"caf\xe9", "not UTF-8 (byte 0xe9 at offset 3)"),
        (b"\xed\xa0\x80", "not UTF-8 (byte 0xed at offset 0)"),  # an encoded lone surrogate
    ],
)
def test_what_counts_as_a_text_page(data, why):
    assert problem(data) == why


def test_mcp_list_files_and_ground_survive_uncommitted_bad_pages(hostile):
    import anyio

    from tests.mcp.client import call, connect

    hostile.write("wiki/fresh.md", "---\ndate: 2024-13-45\n---\n# Fresh\n\nAn uncommitted deploy page.\n")
    (hostile.path / "wiki/fresh-binary.md").write_bytes(b"\x00\x01 deploy")

    async def main():
        async with connect(hostile.path) as s:
            files = (await call(s, "list_files")).structured_content
            found = (await call(s, "ground", query="deploy", top_files=30)).structured_content
            return files, found

    files, found = anyio.run(main)
    assert "wiki/fresh.md" in files["dirty"]
    assert "wiki/fresh.md" in {d["path"] for d in found["docs"]}
    assert not {d["path"] for d in found["docs"]} & {"wiki/fresh-binary.md", *BINARY}


ESCAPES = (
    "# Rollback \x1b[31mRED\x1b[0m guide\n\n## Fix \x1b]0;pwned\x1b\\ KeyError\n\n"
    "A KeyError in rollback_release means the \x1b[1mkey ring\x1b[0m\x1b[2K\r is stale.\n"
)


def test_terminal_escapes_in_a_page_are_never_printed_or_given_to_the_agent(repo, cli):
    """A heading's ANSI colour codes and an OSC window title reached the terminal through `ground` and
    `outline`, and the agent's context through the error-context and prompt hooks, as escapes."""
    from gitwiki.agent_hooks.run import run
    from gitwiki.pages.page_outline import find_section, outline

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/rollback.md": ESCAPES})
    assert cli("index", cwd=repo.path)[0] == 0
    shown = [
        cli("ground", "rollback key ring", "--no-server", cwd=repo.path)[1],
        cli("outline", "wiki/rollback.md", cwd=repo.path)[1],
        cli("outline", "wiki/\x1b[31mnope.md", cwd=repo.path)[2],  # an error quoting what it was given
    ]
    for hook, field, value in [
        ("error-context", "error", "KeyError: rollback_release key ring"),
        ("prompt", "prompt", "rollback_release key ring KeyError"),
    ]:
        event = {"cwd": str(repo.path), "session_id": hook, field: value, "tool_name": "Bash"}
        answer = json.loads(run(hook, json.dumps(event).encode(), str(repo.path)))
        shown.append(answer["hookSpecificOutput"]["additionalContext"])
    with pytest.raises(UsageError) as refused:
        find_section("wiki/rollback.md", outline(ESCAPES), "nowhere")
    shown.append(str(refused.value))
    assert "Rollback RED guide" in shown[0] and "key ring" in shown[0]
    assert "Rollback RED guide" in shown[1] and "nope.md" in shown[2]
    assert all("Rollback RED guide" in text for text in shown[3:5])
    for text in shown:
        assert not any(ch in text for ch in "\x1b\r\x9b"), text


@given(st.lists(st.text(st.characters(codec="utf-8")) | st.sampled_from(["\x1b[", "\x1b]", "\x07", "\x1b\\", "\x9b"])))
def test_printable_text_has_no_control_character_but_newline_and_tab(parts):
    text = "".join(parts)
    shown = printable(text)
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F) for ch in shown)
    assert printable(shown) == shown
    if not any(ord(ch) < 32 and ch not in "\n\t" or 0x7F <= ord(ch) <= 0x9F for ch in text):
        assert shown == text  # text without controls is left as it is
