import pytest

from gitwiki.markdown.frontmatter import FrontMatter, meta_str, meta_tags, read_yaml, split_front_matter


def test_no_front_matter_leaves_the_text_as_the_body():
    assert split_front_matter("# Title\n") == FrontMatter({}, "# Title\n", 1, None)
    assert split_front_matter("") == FrontMatter({}, "", 1, None)


def test_an_opening_rule_without_a_closing_one_is_just_a_rule():
    text = "---\nnot: closed\n# Title\n"
    assert split_front_matter(text) == FrontMatter({}, text, 1, None)


def test_meta_body_and_the_line_the_body_starts_on():
    fm = split_front_matter("---\ntitle: T\ntags: [a, b]\n---\n# Body\n")
    assert fm == FrontMatter({"title": "T", "tags": ["a", "b"]}, "# Body\n", 5, None)
    assert split_front_matter("---  \ntitle: T\n...\nbody").meta == {"title": "T"}  # `...` also closes it


def test_invalid_yaml_gives_the_error_with_its_file_line():
    fm = split_front_matter("---\ntitle: ok\nbad: [x\n---\n# B\n")
    assert fm.meta == {} and fm.body == "# B\n" and fm.body_line == 5
    assert fm.error == "line 3: expected ',' or ']', but got '<stream end>'"  # file line 3: `bad: [x`


@pytest.mark.parametrize("raw", ["- a\n- b", "just a string", "42"])
def test_front_matter_that_is_not_a_mapping_is_an_error(raw):
    assert read_yaml(raw) == ({}, "line 2: front matter must be a mapping of keys to values")


def test_empty_front_matter_is_fine_and_a_custom_reader_is_used():
    assert read_yaml("  \n") == ({}, None)
    seen = []
    fm = split_front_matter("---\nx: 1\n---\nbody", lambda raw: (seen.append(raw), ({"x": 2}, None))[1])
    assert seen == ["x: 1"] and fm.meta == {"x": 2}


def test_meta_str_and_meta_tags():
    meta = {"title": "  T  ", "blank": "  ", "number": 3, "tags": "a, b c"}
    assert meta_str(meta, "title") == "T"
    assert meta_str(meta, "blank") is None and meta_str(meta, "number") is None and meta_str(meta, "x") is None
    assert meta_tags(meta) == ("a", "b", "c")
    assert meta_tags({"tags": ["x", 2, " "]}) == ("x", "2")
    assert meta_tags({"tags": {"not": "a list"}}) == ()
