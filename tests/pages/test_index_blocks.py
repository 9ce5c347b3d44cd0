from pathlib import Path

import pytest

from gitwiki import config as config_mod
from gitwiki.markdown.index_block import BlockError, find_blocks
from gitwiki.pages.index_blocks import refresh, template_dirs

LEXICAL = "[embeddings]\nenabled = false\n"
START, END = "<!-- GITWIKI:INDEX-START -->", "<!-- GITWIKI:INDEX-END -->"
INDEX = f"# Home\n\nHand-written intro.\n\n{START}\nstale\n{END}\n\nFooter prose.\n"


def _wiki(repo, index=INDEX):
    repo.write(".gitwiki.toml", LEXICAL)
    repo.write("wiki/index.md", index)
    repo.write(
        "wiki/zeta.md", "---\ntitle: Alpha by front matter\ndescription: Set in the front matter.\n---\n# Ignored\n"
    )
    repo.write(
        "wiki/beta.md",
        "# Beta [link](x.md)\n\nFirst paragraph with a [relative link](zeta.md)\nover two lines.\n\nSecond.\n",
    )
    repo.write("wiki/guides/index.md", f"# Guides\n\n{START}\n{END}\n")
    repo.write("wiki/guides/deploy.md", "Deploy\n======\n\n```\ncode first\n```\n\nHow we ship.\n")
    repo.write("wiki/guides/deep/x.md", "no heading here\n")


EXPECTED = (
    "# Home\n\nHand-written intro.\n\n"
    f"{START}\n"
    "- [Beta link](beta.md) — First paragraph with a relative link over two lines.\n"
    "- [Alpha by front matter](zeta.md) — Set in the front matter.\n"
    "\n## [guides](guides/index.md)\n\n"
    "- [Deploy](guides/deploy.md) — How we ship.\n"
    "\n## guides/deep\n\n"
    "- [x](guides/deep/x.md) — no heading here\n"
    f"{END}\n\nFooter prose.\n"
)


def test_cli_regenerates_every_block_then_is_idempotent(repo, cli):
    _wiki(repo)
    code, out, _ = cli("index-blocks", cwd=repo.path)
    assert code == 1
    assert out.splitlines() == ["updated wiki/guides/index.md", "updated wiki/index.md"]
    assert (repo.path / "wiki/index.md").read_text() == EXPECTED
    guides = (repo.path / "wiki/guides/index.md").read_text()
    assert (
        guides
        == f"# Guides\n\n{START}\n- [Deploy](deploy.md) — How we ship.\n\n## deep\n\n- [x](deep/x.md) — no heading here\n{END}\n"
    )
    assert cli("index-blocks", cwd=repo.path)[:2] == (0, "")
    assert cli("index-blocks", "--check", cwd=repo.path)[0] == 0


def test_options_on_the_start_marker(repo, cli):
    _wiki(repo, f"# Home\n<!-- GITWIKI:INDEX-START depth=1 sort=title summary=false -->\n{END}\n")
    assert cli("index-blocks", "wiki/beta.md", cwd=repo.path)[0] == 1
    assert (repo.path / "wiki/index.md").read_text() == (
        f"# Home\n<!-- GITWIKI:INDEX-START depth=1 sort=title summary=false -->\n"
        f"- [Alpha by front matter](zeta.md)\n- [Beta link](beta.md)\n{END}\n"
    )


def test_check_reports_without_writing_and_files_select_ancestors(repo, cli):
    _wiki(repo)
    code, out, _ = cli("index-blocks", "--check", "wiki/guides/deploy.md", cwd=repo.path)
    assert (code, out) == (1, "would update wiki/guides/index.md\nwould update wiki/index.md\n")
    assert (repo.path / "wiki/index.md").read_text() == INDEX
    code, out, _ = cli("index-blocks", "wiki/beta.md", cwd=repo.path)
    assert (code, out) == (1, "updated wiki/index.md\n")  # guides/index.md is not above beta.md


@pytest.mark.parametrize(
    "text, message",
    [
        (f"# H\n{START}\n- x\n", "wiki/index.md:2: INDEX-START has no INDEX-END"),
        (f"# H\n{START}\n{START}\n{END}\n", "wiki/index.md:3: INDEX-START inside the block opened on line 2"),
        (f"# H\n{END}\n", "wiki/index.md:2: INDEX-END without an INDEX-START"),
        (f"<!-- GITWIKI:INDEX-START depth=0 -->\n{END}\n", "wiki/index.md:1: bad marker option 'depth=0'"),
    ],
)
def test_malformed_markers_name_file_and_line_and_leave_it_alone(repo, cli, text, message):
    _wiki(repo, text)
    code, _, err = cli("index-blocks", cwd=repo.path)
    assert code == 1 and message in err
    assert (repo.path / "wiki/index.md").read_text() == text
    with pytest.raises(BlockError, match=message.split(": ", 1)[1]):
        find_blocks(text, "wiki/index.md")


def test_markers_in_code_fences_and_crlf_outside_are_kept(repo, cli):
    text = f"# Home\r\n\r\n```\r\n{START}\r\n```\r\n{START}\n{END}\nend\r\n"
    _wiki(repo, text)
    cli("index-blocks", cwd=repo.path)
    new = (repo.path / "wiki/index.md").read_bytes().decode()
    assert new.startswith(f"# Home\r\n\r\n```\r\n{START}\r\n```\r\n{START}\n- [Beta link](beta.md)")
    assert new.endswith(f"{END}\nend\r\n")


def test_repo_template_override_and_config_template(repo, cli):
    _wiki(repo)
    repo.write(
        ".gitwiki/templates/index_block.md.j2",
        "{% for g in groups %}{% for p in g.pages %}* {{ p.path }}\n{% endfor %}{% endfor %}",
    )
    cli("index-blocks", cwd=repo.path)
    assert (
        f"{START}\n* wiki/beta.md\n* wiki/zeta.md\n* wiki/guides/deploy.md\n"
        in (repo.path / "wiki/index.md").read_text()
    )
    repo.write("custom.j2", "{{ groups | length }} groups\n")
    repo.write(".gitwiki.toml", LEXICAL + '[index_blocks]\ntemplate = "custom.j2"\n')
    cli("index-blocks", cwd=repo.path)
    assert f"{START}\n3 groups\n{END}" in (repo.path / "wiki/index.md").read_text()
    repo.write(".gitwiki.toml", LEXICAL + '[index_blocks]\ntemplate = "nope.j2"\n')
    code, _, err = cli("index-blocks", cwd=repo.path)
    assert code == 2 and "'nope.j2' not found" in err


def test_refresh_ancestors_scaffolds_the_front_index_and_skips_markerless(repo):
    repo.write(".gitwiki.toml", LEXICAL + '[index_blocks]\nfilename = "README.md"\n')
    repo.write("wiki/team/README.md", "# Team (hand-written, no markers)\n")
    repo.write("wiki/team/people.md", "# People\n")
    config = config_mod.load(repo.path)
    corpus = config.corpus()

    def refresh_ancestors(scaffold=True):  # what a page write runs
        return refresh(repo.path, config, ["wiki/team/people.md"], corpora=[corpus], scaffold=scaffold).changed

    changed = refresh_ancestors()
    assert changed == ["wiki/README.md"]
    assert (repo.path / "wiki/README.md").read_text() == (
        f"# Wiki\n\n{START}\n## [team](team/README.md)\n\n- [People](team/people.md)\n{END}\n"
    )
    assert (repo.path / "wiki/team/README.md").read_text() == "# Team (hand-written, no markers)\n"
    assert refresh_ancestors() == []
    (repo.path / "wiki/team/people.md").unlink()  # a deleted page drops out of the listing
    assert refresh_ancestors(scaffold=False) == ["wiki/README.md"]


def test_ignored_files_are_not_listed(repo, cli):
    _wiki(repo)
    repo.write(".gitignore", "drafts/\n")
    repo.write("wiki/drafts/secret.md", "# Secret\n")
    cli("index-blocks", cwd=repo.path)
    assert "Secret" not in (repo.path / "wiki/index.md").read_text()


def test_shipped_template_is_found():
    assert any(Path(d, "index_block.md.j2").is_file() for d in template_dirs(Path("/nonexistent")))


def test_scaffold_exits_0_when_it_did_what_it_was_asked(repo, cli):
    repo.commit("pages", {"wiki/a.md": "# A\n\nAbout A.\n"})
    code, out, err = cli("index-blocks", "--scaffold", cwd=repo.path)
    assert code == 0 and "wiki/" in out, err  # created the front index: success, not a pre-commit "changed"
    assert cli("index-blocks", "--scaffold", "--check", cwd=repo.path)[0] == 0
    repo.write("wiki/b.md", "# B\n\nAbout B.\n")
    assert cli("index-blocks", "--scaffold", "--check", cwd=repo.path)[0] == 1  # --check still says "stale"


def test_scaffold_says_how_to_list_pages_in_a_front_index_without_markers(repo, cli):
    """A wiki's own index.md is left as it is, and the set-up step says what it did not do, and why."""
    repo.commit("pages", {"wiki/index.md": "# Home\n\nWelcome.\n", "wiki/a.md": "# A\n"})
    code, out, _ = cli("index-blocks", "--scaffold", cwd=repo.path)
    assert code == 0 and out.startswith("wiki/index.md has no index block: put <!-- GITWIKI:INDEX-START -->")
    assert (repo.path / "wiki/index.md").read_text() == "# Home\n\nWelcome.\n"
    assert cli("index-blocks", cwd=repo.path)[1] == ""  # the hook's run: nothing to say


@pytest.mark.parametrize("configured", ["/etc/passwd", "../outside.j2", "link.j2", "fifo.j2"])
def test_a_configured_template_outside_the_repository_or_no_file_is_refused(repo, cli, configured):
    """The checkout's `[index_blocks] template` names a file whose text lands in a page: /etc/passwd was
    copied into the wiki's index page; a FIFO blocked the hook."""
    import os

    _wiki(repo)
    (repo.path.parent / "outside.j2").write_text("root:x:0:0 secret\n")
    (repo.path / "link.j2").symlink_to(repo.path.parent / "outside.j2")
    os.mkfifo(repo.path / "fifo.j2")
    repo.write(".gitwiki.toml", LEXICAL + f'[index_blocks]\ntemplate = "{configured}"\n')
    code, _, err = cli("index-blocks", cwd=repo.path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    # The trust table refuses a path leading outside when the config loads; the bounded reader, a FIFO inside.
    assert "outside the repository" in err or "not a regular file" in err or "not found" in err, err
    assert "root:x" not in (repo.path / "wiki/index.md").read_text()
