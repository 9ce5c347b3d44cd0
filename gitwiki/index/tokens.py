"""Lexical tokenization shared by indexing and queries: one function, so both sides always agree.

Words are lower-cased, identifiers are split (`rotateSigningKey`, `rotate_signing_key` and
`rotate-signing-key` all yield rotate, signing, key, plus the whole identifier; each part of a dotted path
`attrs.resolve_types` is kept whole too), English stop words are dropped and the rest is Snowball-stemmed.
A dunder name also yields its whole form marked (`__all__` → dunderall, all): FTS5 drops the underscores,
and unmarked `__all__` would be the stop word "all" alone. Long flags are not marked (`--force` is force):
a mark ranks pages that use the flag above the page that explains it (docs/research/tokenization.md).
The output feeds SQLite FTS5 with its plain unicode61 tokenizer, which then only has to split on spaces.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import Stemmer

from gitwiki.pagetext import text_memo

# Bump when tokenize's output or what the full-text rows hold changes: an index written with another version gets
# its full-text rows rebuilt from its chunks on open (store/fulltext.py; the vectors stay, they are keyed by chunk
# text). 2: mnemonic brackets. 3: dunder names marked, dotted paths' parts kept whole. 4: a page's front-matter
# description in its first chunk's head (store/fulltext.py, lead_description).
TOKENS_VERSION = "4"

_WORD = re.compile(r"[^\W_]+(?:[_\-.'][^\W_]+)*", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Letters in brackets inside a word mark its mnemonic (tldr pages: "E[x]tract a g[z]ipped [f]ile"); read as
# brackets they cut the word into "e", "x", "tract". Only letters followed by a letter: `args[i]`, `[x] done`
# and `[link](url)` are left alone.
_SEPARATORS = re.compile(r"[_\-.']")
# The mark of a dunder name's whole form: letters, as FTS5's unicode61 splits on anything else.
DUNDER_MARK = "dunder"
_MNEMONIC = re.compile(r"\[([^\W\d_]{1,3})\](?=[^\W\d_])")

# The classic English stop list (Lucene/SMART core), kept short: rare words carry the meaning.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves""".split()
)


@functools.cache
def _cjk() -> re.Pattern[str]:
    # Compiling this class takes ~2 ms (sre builds a bitmap over the ranges), every agent hook process's
    # tokenize paid it at import; ASCII words, which cannot hold CJK, never compile it now.
    return re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


@functools.cache
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def _split_camel(chunk: str) -> list[str]:
    # Camel case is an ASCII identifier convention; other scripts keep their words whole.
    return _CAMEL.findall(chunk) if chunk.isascii() else [chunk]


def _dunder(text: str, start: int, end: int) -> bool:
    """Whether the identifier at text[start:end] is a dunder name (`__init__`, `__about__.py`)."""
    if start < 2 or text[start - 1] != "_" or text[start - 2 : start] != "__" or text[end : end + 2] != "__":
        return False
    return start == 2 or not text[start - 3].isalnum()  # not the `b` of `a__b__`


def _parts(word: str) -> list[str]:
    return [p for chunk in _SEPARATORS.split(word) for p in _split_camel(chunk)]


def _joined(word: str) -> str:
    return _SEPARATORS.sub("", word).lower()


def words(text: str) -> list[str]:
    """Surface tokens: whole identifiers (dunder names marked), their parts, and CJK characters as single tokens."""
    out: list[str] = []
    if "[" in text:
        text = _MNEMONIC.sub(r"\1", text)
    for match in _WORD.finditer(text):
        word = match.group()
        dunder = _dunder(text, match.start(), match.end())
        if not dunder and word.isascii() and word.isalpha() and word[1:].islower():
            # A plain word ("list", "List") has no parts and no CJK: what the general path gives, 3.3x faster
            # over 1,000 tldr pages (0.40 → 0.12 s; a warm query tokenizes its best chunks for the weak flag).
            out.append(word.lower())
            continue
        parts = _parts(word)
        if dunder:
            out.append(DUNDER_MARK + _joined(word))
        if len(parts) > 1:
            out.append(_joined(word))
            if "." in word:  # `attrs.resolve_types` is found by `resolve_types` too
                out.extend(_joined(c) for c in word.split(".") if len(_parts(c)) > 1)
        for part in parts or [word]:
            if not part.isascii() and _cjk().search(part):
                out.extend(ch for ch in part)
            else:
                out.append(part.lower())
    return out


def code_like(name: str) -> bool:
    """Whether an identifier reads as code rather than a word: snake_case, camelCase, CamelCase (two humps)."""
    return "_" in name.strip("_") or (any(c.isupper() for c in name[1:]) and any(c.islower() for c in name))


def tokenize(text: str) -> list[str]:
    """Index/query terms: surface words without stop words, stemmed."""
    kept = [w for w in words(text) if w not in STOP_WORDS]
    return _stemmer().stemWords(kept)


# Remembered: a page write re-indexes the front index.md above it, whose unchanged sections (a 1,000-page
# listing is one ~100 KB chunk) would be tokenized again on every write (~100 ms under load).
@text_memo(16_000_000)
def fts_text(text: str) -> str:
    return " ".join(tokenize(text))


def fts_phrase(text: str) -> str | None:
    """An FTS5 MATCH expression for `text`'s terms in a row (a path, a symbol), or None if it has none."""
    terms = tokenize(text)  # as the index saw it: stop words are gone from both sides
    return '"' + " ".join(terms).replace('"', '""') + '"' if terms else None


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression: any of the query terms (BM25 does the weighting), or None if empty."""
    return fts_any(query_terms(text))


def query_terms(text: str) -> list[str]:
    """The terms `fts_query` matches, once each: the query's tokens, or its stemmed words when all are stop words."""
    return list(dict.fromkeys(tokenize(text) or _stemmer().stemWords(words(text))))


def fts_any(terms: Iterable[str]) -> str | None:
    """An FTS5 MATCH expression for any of `terms` (already tokenized), or None if there are none."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or None
