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


def test_dunder_names_keep_a_marked_whole_form():
    # FTS5 drops underscores: unmarked, `__all__` would be the stop word "all" and nothing else.
    assert words("__all__") == ["dunderall", "all"]
    assert tokenize("__all__ and __about__.py") == ["dunderal", "dunderabout", "py"]
    assert words("x.__init__()") == ["x", "dunderinit", "init"]
    # Not dunders: underscores on one side only, markdown-like runs inside a word.
    assert words("_private __half half__ a__b__") == ["private", "half", "half", "a", "b"]


def test_long_flags_are_their_words_whole_and_split():
    # Unmarked on purpose: a flag mark ranked pages that use `--locked` above the one that explains it.
    assert words("--dry-run") == ["dryrun", "dry", "run"]
    assert words("git push --force") == ["git", "push", "force"]


def test_each_part_of_a_dotted_path_is_kept_whole_too():
    assert words("os.path.join") == ["ospathjoin", "os", "path", "join"]
    assert words("attrs.resolve_types") == ["attrsresolvetypes", "resolvetypes", "attrs", "resolve", "types"]
    assert set(tokenize("FrozenInstanceError")) < set(tokenize("attrs.exceptions.FrozenInstanceError"))
    assert set(tokenize("snake_case_name")) == set(tokenize("snakeCaseName"))


def test_a_query_for_an_identifier_asks_for_its_whole_form_and_its_parts():
    assert fts_query("__all__") == '"dunderal"'  # was None: "all" is a stop word
    assert fts_query("attrs.resolve_types") == '"attrsresolvetyp" OR "resolvetyp" OR "attr" OR "resolv" OR "type"'


IDENTIFIER = st.lists(LETTERS, min_size=1, max_size=4)


@given(IDENTIFIER, st.sampled_from(["_", ".", "-"]), st.sampled_from(["__{}__", "--{}", "{}", "`{}`"]))
def test_an_identifier_in_text_yields_its_tokens_as_a_query_for_it_would(parts, sep, form):
    # Indexing and queries tokenize with one function: an identifier written in a sentence holds every
    # term a query of that identifier alone asks for.
    name = form.format(sep.join(parts))
    assert set(tokenize(name)) <= set(tokenize(f"See {name}, then run it."))
