import pytest

from gitwiki.markdown.index_block import (
    END_MARKER,
    START_MARKER,
    Block,
    BlockError,
    BlockOptions,
    find_blocks,
    parse_options,
)


def test_parse_options():
    assert parse_options(' sort=title depth=2 summary=no heading="3"', "x")._asdict() == {
        "depth": 2,
        "sort": "title",
        "summary": False,
        "heading": 3,
    }
    assert parse_options("", "x") == BlockOptions()


@pytest.mark.parametrize(
    "raw, message",
    [
        ("depth", "x:1: marker option 'depth' needs a value"),
        ("depth=0", "bad marker option 'depth=0'"),
        ("heading=7", "bad marker option 'heading=7'"),
        ("sort=size", "bad marker option 'sort=size'"),
        ("colour=red", "bad marker option 'colour=red'"),
        ('sort="title', "cannot read the START marker options"),
    ],
)
def test_bad_options_say_which_and_what_is_allowed(raw, message):
    with pytest.raises(BlockError, match=message):
        parse_options(raw, "x:1")


def test_find_blocks_gives_marker_lines_and_options():
    text = f"# Home\n{START_MARKER}\nold\n{END_MARKER}\n\n<!-- GITWIKI:INDEX-START depth=1 -->\n{END_MARKER}\n"
    assert find_blocks(text, "index.md") == [Block(1, 3, BlockOptions()), Block(5, 6, BlockOptions(depth=1))]


def test_markers_inside_code_fences_are_text():
    text = f"```python\n{START_MARKER}\n```\n{START_MARKER}\n{END_MARKER}\n~~~\n{END_MARKER}\n~~~\n"
    assert find_blocks(text, "index.md") == [Block(3, 4, BlockOptions())]
    assert find_blocks("no markers\n", "index.md") == []


@pytest.mark.parametrize(
    "text, message",
    [
        (f"{START_MARKER}\n", "index.md:1: INDEX-START has no INDEX-END"),
        (
            f"{START_MARKER}\n{START_MARKER}\n{END_MARKER}\n",
            "index.md:2: INDEX-START inside the block opened on line 1",
        ),
        (f"{END_MARKER}\n", "index.md:1: INDEX-END without an INDEX-START"),
    ],
)
def test_malformed_blocks_name_the_file_and_line(text, message):
    with pytest.raises(BlockError, match=message):
        find_blocks(text, "index.md")
