"""gitwiki.pages.page_outline: a page's section map and section addresses, and `gitwiki outline`."""

from __future__ import annotations

import json

import pytest

from gitwiki.errors import UsageError
from gitwiki.pages.page_outline import Address, find_section, outline, parse_address, render

PAGE = """---
title: Install
description: How to install.
---
Read this first.

# Install

Pick a platform.

## Setup

### Linux

apt install it

### Mac — Homebrew

brew install it

## Upgrade

```
# not a heading
```
"""


def test_outline_gives_each_section_its_lines_and_bytes_subsections_included():
    entries = outline(PAGE)
    lines = PAGE.splitlines(keepends=True)
    assert [(e.level, e.title, e.slug_path, e.start_line, e.end_line) for e in entries] == [
        (0, "", "", 5, 6),
        (1, "Install", "install", 7, 25),
        (2, "Setup", "install/setup", 11, 20),
        (3, "Linux", "install/setup/linux", 13, 16),
        (3, "Mac — Homebrew", "install/setup/mac--homebrew", 17, 20),
        (2, "Upgrade", "install/upgrade", 21, 25),
    ]
    for e in entries:
        assert e.bytes == len("".join(lines[e.start_line - 1 : e.end_line]).encode("utf-8"))
    assert lines[entries[3].start_line - 1] == "### Linux\n"
    assert "# not a heading" in "".join(lines[entries[5].start_line - 1 : entries[5].end_line])


def test_a_page_without_headings_is_one_section_and_an_empty_page_none():
    assert [(e.level, e.start_line, e.end_line) for e in outline("just text\nmore\n")] == [(0, 1, 2)]
    assert outline("") == []


def test_sections_are_found_by_slugs_texts_or_their_tail():
    entries = outline(PAGE)
    assert find_section("p.md", entries, "install/setup/linux").start_line == 13
    assert find_section("p.md", entries, "Install/Setup").end_line == 20
    assert find_section("p.md", entries, "upgrade").start_line == 21
    with pytest.raises(UsageError, match=r"no section 'deploy' in 'p.md'; its sections are: #install, #install/setup"):
        find_section("p.md", entries, "deploy")


@pytest.mark.parametrize(
    "given, address",
    [
        ("guides/a.md", Address("guides/a.md", None, None, None)),
        ("guides/a.md#setup/linux", Address("guides/a.md", "setup/linux", None, None)),
        ("guides/a.markdown#/Setup/", Address("guides/a.markdown", "Setup", None, None)),
        ("guides/a.md:10-40", Address("guides/a.md", None, 10, 40)),
        ("odd:name.md", Address("odd:name.md", None, None, None)),
    ],
)
def test_addresses_split_the_section_or_line_range_off_the_path(given, address):
    assert parse_address(given) == address


def test_render_indents_by_level():
    text = render("p.md", outline(PAGE))
    assert text.splitlines()[:3] == [
        "p.md:5-6  (before the first heading)  (18 bytes)",
        "p.md:7-25  Install  (141 bytes)",
        "  p.md:11-20  Setup  (76 bytes)",
    ]


def test_outline_command_prints_the_map_and_json(cli, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/install.md").write_text(PAGE)
    code, out, _ = cli("outline", "docs/install.md", cwd=tmp_path)
    assert code == 0 and out == render("docs/install.md", outline(PAGE))
    code, out, _ = cli("outline", "docs/install.md", "--json", cwd=tmp_path)
    data = json.loads(out)
    assert code == 0 and data["path"] == "docs/install.md"
    assert data["sections"][2] == {
        "level": 2,
        "title": "Setup",
        "breadcrumb": ["Install", "Setup"],
        "slug_path": "install/setup",
        "start_line": 11,
        "end_line": 20,
        "bytes": 76,
    }
    code, _, err = cli("outline", "docs/missing.md", cwd=tmp_path)
    assert code == 3 and "no file 'docs/missing.md'" in err and "Traceback" not in err
