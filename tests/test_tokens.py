from hypothesis import given
from hypothesis import strategies as st

from gitwiki.index.tokens import fts_query, tokenize, words

LETTERS = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), min_size=1, max_size=8)


def test_identifiers_split_and_kept_whole():
    assert words("rotateSigningKey") == ["rotatesigningkey", "rotate", "signing", "key"]
    assert words("rotate_signing_key") == ["rotatesigningkey", "rotate", "signing", "key"]
    assert words("kubectl-get") == ["kubectlget", "kubectl", "get"]
    assert words("HTTPServer") == ["httpserver", "http", "server"]


def test_stop_words_dropped_and_stemmed():
    assert tokenize("How do we rotate the keys?") == ["rotat", "key"]


def test_non_ascii_words_stay_whole_and_cjk_splits_per_character():
    assert words("naïve Ärger") == ["naïve", "ärger"]
    assert words("日本語") == ["日", "本", "語"]


def test_query_is_an_or_of_quoted_terms():
    assert fts_query('rotate "keys"') == '"rotat" OR "key"'
    assert fts_query("the of") == '"the" OR "of"'  # all stop words: keep them rather than match nothing
    assert fts_query("?!") is None


def test_plain_words_take_the_short_path_with_the_same_result():
    # The short path (ASCII letters, at most a leading capital) must agree with the identifier splitting it skips.
    assert words("List files Quickly a I x86 XMLHttp fooBar é") == [
        "list",
        "files",
        "quickly",
        "a",
        "i",
        "x86",
        "x",
        "86",
        "xmlhttp",
        "xml",
        "http",
        "foobar",
        "foo",
        "bar",
        "é",
    ]


def test_mnemonic_brackets_read_as_the_word():
    # tldr marks a command's option letters inside words; as brackets they cut "extract" into e, x, tract.
    assert words("E[x]tract a g[z]ipped [f]ile") == ["extract", "a", "gzipped", "file"]
    assert tokenize("[c]reate [dh]og") == tokenize("create dhog")
    # Not mnemonics: a checkbox, a link, an index, a number in brackets.
    assert words("[x] done [link](url) args[i] ref[1]word") == [
        "x",
        "done",
        "link",
        "url",
        "args",
        "i",
        "ref",
        "1",
        "word",
    ]


@given(LETTERS, LETTERS.filter(lambda mark: len(mark) <= 3), LETTERS)
def test_a_bracketed_mnemonic_inside_or_before_a_word_tokenizes_as_the_word(prefix, mark, rest):
    assert tokenize(f"{prefix}[{mark}]{rest}") == tokenize(prefix + mark + rest)
    assert tokenize(f"[{mark}]{rest}") == tokenize(mark + rest)
