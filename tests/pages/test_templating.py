"""gitwiki.pages.templating: one jinja2 set-up for everything gitwiki renders."""

import jinja2
import pytest

from gitwiki.pages.templating import environment, shipped_dir


def test_the_shipped_templates_are_found():
    assert (shipped_dir() / "index_block.md.j2").is_file()
    assert (shipped_dir() / "job_summary.md.j2").is_file()


def test_markdown_filters_strict_undefined_and_search_order(tmp_path):
    first, second = tmp_path / "repo", tmp_path / "shipped"
    first.mkdir()
    second.mkdir()
    (first / "t.j2").write_text("[{{ title | md_text }}]({{ link | md_link }})\n")
    (second / "t.j2").write_text("shadowed\n")
    (second / "only.j2").write_text("{{ missing }}")
    env = environment((str(first), str(second)))
    assert env is environment((str(first), str(second)))  # built once per search path
    text = env.get_template("t.j2").render(title="a [b] \\c", link="my page#x y")
    assert text == "[a \\[b\\] \\\\c](my%20page#x%20y)\n"  # keep_trailing_newline
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("only.j2").render()


def test_a_checkouts_template_cannot_reach_python(tmp_path, cli):
    """A clone's own `.gitwiki/templates/` ran `os.system` on `gitwiki index-blocks` (26d4724): templates render
    in jinja2's sandbox, and what it refuses is one error line."""
    from tests.helpers import GitRepoFixture

    (tmp_path / "repo").mkdir()
    repo = GitRepoFixture(tmp_path / "repo")
    marker = tmp_path / "pwned"
    repo.commit(
        "hostile",
        {
            "wiki/index.md": "# Wiki\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n",
            "wiki/a/p.md": "# P\n\nx\n",
            ".gitwiki/templates/index_block.md.j2": (
                f"{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}\n"
                f"{{{{ ''.__class__.__mro__[1].__subclasses__() }}}}\n"
            ),
        },
    )
    code, _, err = cli("index-blocks", cwd=repo.path)
    assert not marker.exists()
    assert code == 2 and "unsafe" in err and len(err.strip().splitlines()) == 1
