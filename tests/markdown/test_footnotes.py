import pytest

from gitwiki.errors import NotFoundError
from gitwiki.markdown.footnotes import footnote, footnotes
from tests.helpers import FOOTNOTED_DEPLOY


def test_footnotes_join_continuations_and_skip_code_fences():
    text = FOOTNOTED_DEPLOY + "\n```\n[^2]: not a definition\n```\n[^1]: a duplicate, ignored\n"
    notes = footnotes(text)
    assert notes == {"1": (9, "The runbook, section 3.\nContinued here."), "src": (12, "Ops handbook.")}
    assert footnote(text, "src", "deploy.md") == (12, "Ops handbook.")
    with pytest.raises(NotFoundError, match=r"its footnotes: \[\^1\], \[\^src\]"):
        footnote(text, "2", "deploy.md")


def test_an_info_string_line_inside_a_fence_does_not_close_it():
    # The fence opened by ``` stays open over ```python (an info string cannot close a fence), so [^1] is
    # code, and the real [^2] after the closing ``` is found.
    text = "Text.[^2]\n\n```\n```python\n[^1]: inside the code block\n```\n\n[^2]: The real one.\n"
    assert footnotes(text) == {"2": (8, "The real one.")}
    with pytest.raises(NotFoundError, match=r"its footnotes: \[\^2\]"):
        footnote(text, "1", "page.md")


def test_tilde_fences_backtick_info_strings_and_longer_closing_fences():
    text = "~~~\n[^a]: code\n~~~~\n[^b]: after\n````\n```\n[^c]: still code\n````\n[^d]: last\n"
    assert footnotes(text) == {"b": (4, "after"), "d": (9, "last")}
    # ``` followed by text with a backtick is not a fence opening (CommonMark), so it hides nothing
    assert footnotes("``` a`b\n[^e]: seen\n") == {"e": (2, "seen")}


def test_continuations_end_at_an_unindented_line_and_a_page_without_notes():
    text = "[^n]: first\n  \n\tsecond\nplain text\n    not a continuation\n"
    assert footnotes(text) == {"n": (1, "first\n\nsecond")}
    with pytest.raises(NotFoundError, match="its footnotes: none"):
        footnote("no notes\n", "1", "page.md")
