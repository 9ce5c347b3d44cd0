"""An honest "weak match" signal: fused scores are normalized per query, so something always scores
near the top; these checks look at absolute evidence instead.

A page is a weak match when the query has no content words at all ("the", "?!"), or when its best chunk
holds under half of the query's content terms (stemmed, stop words dropped) *and* the chunk's embedding
does not stand out from the whole corpus for this query: its cosine lies fewer than WEAK_Z standard
deviations above the mean cosine of every chunk searched. The z-score, not the raw cosine, because raw
cosines sit in different ranges per model (bge-small rarely scores below 0.5, MiniLM often does). The
standout is not trusted when under half of the query's content terms occur anywhere in the index: the best
of a thousand chunks stands 3.5-5 deviations out for gibberish too ("zxqv blorf wibble": z 3.95 on
wiki-dev), while every labelled question of the sets has at least 0.8 of its terms in the index.

Measured on the public sets with all-MiniLM-L6-v2 (docs/research/weak-matches.md, bench/weak_eval.py):
on wiki-dev, Cranfield and SciFact the flag is on for 16–41 % of questions whose answer pages were removed and
6–8 % with them present, and for every stop-word-only or punctuation query; short generic how-to questions
(tldr) slip through.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, NamedTuple

WEAK_COVERAGE = 0.5
WEAK_Z = 3.5
WEAK_KNOWN = 0.5


class Background(NamedTuple):
    """The query's cosine against every chunk searched: what a typical, unrelated chunk scores."""

    mean: float
    std: float


def coverage(terms: set[str], tokens: Collection[str]) -> float:
    """The share of the query's content terms among a text's `tokens` (`gitwiki.index.tokens.tokenize`)."""
    return len(terms.intersection(tokens)) / len(terms) if terms else 0.0


class Judgement(NamedTuple):
    """What the weak flag saw for one page."""

    weak: bool
    coverage: float  # the share of the query's content terms in the best chunk (title and breadcrumb included)
    cosine: float | None  # the page's best cosine among the dense candidates
    background: Background | None  # the query's cosine over every chunk searched (None: lexical, or unknown)
    z: float | None  # (cosine − background mean) / its std: the standout WEAK_Z asks for
    # the share of the query's content terms that occur anywhere in the index; None when the verdict did not need it
    # and it was not looked up (`judge` with a callable `known`)
    known: float | None = 1.0

    def to_json(self) -> dict[str, Any]:
        def rounded(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        bg = self.background
        return {
            "weak": self.weak,
            "coverage": round(self.coverage, 6),
            "needs_coverage": WEAK_COVERAGE,
            "cosine": rounded(self.cosine),
            "background": None if bg is None else {"mean": round(bg.mean, 6), "std": round(bg.std, 6)},
            "z": rounded(self.z),
            "needs_z": WEAK_Z,
            "known": rounded(self.known),
            "needs_known": WEAK_KNOWN,
        }


def judge(
    terms: set[str],
    tokens: Collection[str],
    cosine: float | None,
    background: Background | None,
    known: float | Callable[[], float] = 1.0,
) -> Judgement:
    """Whether a page whose best chunk has the terms `tokens` (title and breadcrumb included) is a weak answer,
    and the evidence.

    `cosine` is the chunk's similarity to the query (None when it was not among the dense candidates),
    `background` None in lexical mode, where only the term coverage can speak; `known` the share of `terms`
    the index holds at all (`known_share`): a callable is called only when the verdict depends on it (a page with
    few of the terms whose cosine stands out), which few pages are.
    """
    share = coverage(terms, tokens)
    z = None
    if cosine is not None and background is not None and background.std > 0:
        z = (cosine - background.mean) / background.std
    if not terms:
        weak = True
    elif share >= WEAK_COVERAGE:
        weak = False
    else:
        weak = background is None or z is None or z < WEAK_Z
        if not weak:
            known = known() if callable(known) else known
            weak = known < WEAK_KNOWN
    return Judgement(weak, share, cosine, background, z, None if callable(known) else known)


def known_share(terms: set[str], chunks_holding: Mapping[str, int]) -> float:
    """The share of `terms` that some chunk holds, from each term's chunk count (`FullText.term_chunks`)."""
    return sum(1 for t in terms if chunks_holding.get(t)) / len(terms) if terms else 1.0


def is_weak(terms: set[str], tokens: Collection[str], cosine: float | None, background: Background | None) -> bool:
    """`judge`'s verdict alone."""
    return judge(terms, tokens, cosine, background).weak
