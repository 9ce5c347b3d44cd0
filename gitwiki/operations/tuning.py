"""`gitwiki eval --tune`: score fusion's settings fitted to a wiki's own labelled questions, kept only when they
win on questions they were not fitted on.

The settings are `[search]` fusion_weight, normalization, page_share and depth (docs/configuration.md). Each
question's candidates are fetched once per depth of the grid; every setting is then replayed over them in pure
Python, as `Searcher.search` ranks hybrid score fusion without a reranker. (Once per depth, not cut from the
deepest list: a shallower dense list holds no extra pages when the corpus has fewer pages than asked for, so a cut
list would differ from what that depth fetches.) The replay must stay the search's own ranking:
tests/operations/test_tuning.py compares them setting by setting.

Cross-validation: the questions are shuffled into `folds` folds, `repeats` times with seeds 0, 1, …; on each fold
the setting with the best MRR@10 on the other folds is chosen (the current setting wins ties) and scored on the
fold. Each question's gain is its held-out reciprocal rank (mean over the repeats) minus the current setting's; the
95% interval of the mean gain comes from a paired bootstrap over questions. The setting chosen on all questions is
written only when the interval's lower bound is above 0. Everything here but `gather` is pure.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from gitwiki.config import NORMALIZATIONS, SearchConfig
from gitwiki.errors import UsageError
from gitwiki.operations.evaluation import DEPTH, Question, first_rank
from gitwiki.search.ranking import SECOND_CHUNK, Ranked, Weighting, fuse, page_fusion, rollup

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress
    from gitwiki.wiki import Wiki

FOLDS = 5
REPEATS = 10
RESAMPLES = 2000
MIN_QUESTIONS = 2 * FOLDS  # fewer leave folds of one question, and an interval as wide as the scale


class Setting(NamedTuple):
    """One point of the grid; the field names are the `[search]` keys."""

    fusion_weight: float
    normalization: str
    page_share: float
    depth: int

    @classmethod
    def of(cls, search: SearchConfig) -> Setting:
        return cls(search.fusion_weight, search.normalization, search.page_share, search.depth)

    @property
    def weighting(self) -> Weighting:
        return Weighting(self.fusion_weight, self.normalization, self.page_share)


# 7 weights × 2 normalizations × 3 page shares × 2 depths = 84 settings around the defaults (0.5, dbsf, 0.5, 200).
# Weights reach 0.2 and 0.8: a wiki whose words the model does not know (codes, names) wants the lexical side.
GRID: tuple[Setting, ...] = tuple(
    Setting(*values)
    for values in itertools.product((0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8), NORMALIZATIONS, (0.25, 0.5, 0.75), (100, 200))
)


class Candidates(NamedTuple):
    """One question's candidates: each ranker's (chunk id, score) list, best first, and each chunk's page."""

    rankings: list[Ranked]
    page_of: dict[int, str]


class Fit(NamedTuple):
    current: Setting
    chosen: Setting  # the best on all questions
    current_mrr: float  # MRR@10 of the current setting on all questions (its held-out score: it is not fitted)
    chosen_mrr: float  # MRR@10 of `chosen` on all questions, the questions it was chosen on
    tuned_mrr: float  # held-out MRR@10 of choosing on the train folds, mean over the repeats
    low: float  # 95% interval of the held-out gain, tuned_mrr − current_mrr
    high: float
    questions: int
    settings: int
    folds: int
    repeats: int
    fold_choices: int  # distinct settings the folds chose: many means the questions do not agree on one

    @property
    def gain(self) -> float:
        return self.tuned_mrr - self.current_mrr

    @property
    def wins(self) -> bool:
        """Write `chosen`: it differs from the current setting and tuning gains on held-out folds."""
        return self.chosen != self.current and self.low > 0


def tune(wiki: Wiki, corpus: str | None, questions: Sequence[Question], progress: Progress | None = None) -> Fit:
    """The grid's best setting for `questions` against the wiki's current one, cross-validated; ranked as
    `gitwiki eval` ranks (DEPTH pages a question), so the current MRR@10 is the one `gitwiki eval` reports."""
    if len(questions) < MIN_QUESTIONS:  # before searching any: a 6 MB question was searched, then refused
        raise UsageError(
            f"--tune needs at least {MIN_QUESTIONS} questions to hold some out ({len(questions)} given); "
            "add questions to the file"
        )
    current = Setting.of(wiki.config.search)
    settings = [current, *(s for s in GRID if s != current)]
    found = gather(wiki, corpus, questions, (s.depth for s in settings), DEPTH, progress)
    return fit(reciprocal_ranks(found, questions, settings, DEPTH), current)


def gather(
    wiki: Wiki,
    corpus: str | None,
    questions: Sequence[Question],
    depths: Iterable[int],
    pages: int,
    progress: Progress | None = None,
) -> dict[int, list[Candidates]]:
    """Per depth, each question's hybrid candidates in `corpus`, covering at least `pages` pages."""
    from gitwiki.search.searcher import Searcher

    search = wiki.config.search
    if search.mode != "hybrid" or search.fusion != "score" or search.reranker:
        raise UsageError(
            "--tune fits hybrid score fusion without a reranker, and [search] has "
            f'mode = "{search.mode}", fusion = "{search.fusion}", reranker = {search.reranker!r}; '
            'set mode = "hybrid" and fusion = "score" and drop reranker to tune'
        )
    try:
        wiki.source(corpus).check_writable()  # a synced repository's source refuses: its pages are not ours to tune
    except UsageError:
        raise UsageError("--tune fits this checkout's own corpora; choose one with --corpus") from None
    view = wiki.view(corpus, vectors=True)
    embedder = wiki.embedder()
    if embedder is None:
        raise UsageError(
            "--tune weighs lexical against dense search and the embedding model does not load; see the "
            "warning above, or gitwiki status, for how to fix it"
        )
    out: dict[int, list[Candidates]] = {}
    levels = sorted(set(depths))
    total = len(levels) * len(questions)
    for level, depth in enumerate(levels):
        searcher = Searcher(wiki.store, depth=depth)
        out[depth] = []
        for n, q in enumerate(questions, 1):
            out[depth].append(Candidates(*searcher.candidates(view, q.text, embedder, pages)))
            if progress:
                progress("tune", level * len(questions) + n, total)
    return out


def replay(candidates: Candidates, setting: Setting, pages: int) -> list[str]:
    """The `pages` best pages under `setting` (`candidates` fetched at its depth): `Searcher.search` in hybrid score
    fusion, one chunk a page."""
    rankings, page_of = candidates
    weighting = setting.weighting
    fused = fuse(rankings, "score", weighting)
    by_page = page_fusion(rankings, page_of, weighting.weights(rankings), weighting.normalizer)
    hits = rollup(fused, page_of, pages, 1, pages, SECOND_CHUNK, by_page, weighting.page_share)
    return [hit.path for hit in hits]


def reciprocal_ranks(
    found: dict[int, list[Candidates]], questions: Sequence[Question], settings: Sequence[Setting], pages: int
) -> dict[Setting, list[float]]:
    """Per setting, each question's 1 / rank of its first relevant page (0 outside the top 10)."""
    out = {}
    for setting in settings:
        pairs = zip(found[setting.depth], questions, strict=True)
        ranks = (first_rank(replay(c, setting, pages), q.relevant) for c, q in pairs)
        out[setting] = [1 / r if r is not None and r <= 10 else 0.0 for r in ranks]
    return out


def choose(rr: dict[Setting, list[float]], among: Sequence[int]) -> Setting:
    """The setting with the best MRR on the questions `among`; the first of `rr` (the current one) wins ties."""
    best, best_sum = None, -1.0
    for setting, ranks in rr.items():
        total = sum(ranks[i] for i in among)
        if total > best_sum:
            best, best_sum = setting, total
    assert best is not None  # rr holds the current setting at least
    return best


def fit(
    rr: dict[Setting, list[float]],
    current: Setting,
    folds: int = FOLDS,
    repeats: int = REPEATS,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Fit:
    """Cross-validate choosing a setting from `rr` (which holds `current`) and bootstrap the held-out gain."""
    rr = {current: rr[current], **rr}  # the current setting first: it wins ties
    n = len(rr[current])
    if n < MIN_QUESTIONS:
        raise UsageError(
            f"--tune needs at least {MIN_QUESTIONS} questions to hold some out ({n} given); add questions to the file"
        )
    held_out = [0.0] * n
    chosen_in_folds = set()
    for repeat in range(repeats):
        order = list(range(n))
        random.Random(seed + repeat).shuffle(order)
        for k in range(folds):
            test = order[k::folds]
            held = set(test)
            chosen = choose(rr, [i for i in order if i not in held])
            chosen_in_folds.add(chosen)
            for i in test:
                held_out[i] += rr[chosen][i]
    held_out = [total / repeats for total in held_out]  # divided once: ten tenths of 1 are not 1
    gains = [t - c for t, c in zip(held_out, rr[current], strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(gains[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    chosen = choose(rr, range(n))
    return Fit(
        current=current,
        chosen=chosen,
        current_mrr=sum(rr[current]) / n,
        chosen_mrr=sum(rr[chosen]) / n,
        tuned_mrr=sum(held_out) / n,
        low=means[int(0.025 * resamples)],
        high=means[min(resamples - 1, int(0.975 * resamples))],
        questions=n,
        settings=len(rr),
        folds=folds,
        repeats=repeats,
        fold_choices=len(chosen_in_folds),
    )
