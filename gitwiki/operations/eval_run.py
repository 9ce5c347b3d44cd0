"""One `gitwiki eval` run: its questions opened (a wiki's own file, or a BEIR folder written into a repo and indexed),
the modes scored and one gated, or `--tune`'s fit written; each result a record that reports itself as text and JSON.
The CLI checks its flags, resolves paths against -C, calls these and prints."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.config import user_cache_dir
from gitwiki.operations import evaluation
from gitwiki.pagetext import printable

if TYPE_CHECKING:
    from gitwiki.index.indexer import Progress
    from gitwiki.operations.evaluation import ModeScore, Question
    from gitwiki.operations.tuning import Fit, Setting
    from gitwiki.wiki import Wiki

SHOWN_MISSES = 20  # misses listed in the text report; --json lists every question
BEIR_CONFIG = '[[corpus]]\nname = "beir"\npath = "wiki"\n'


class EvalSet(NamedTuple):
    wiki: Wiki
    questions: list[Question]
    source: str  # where the questions came from, as the report names it
    corpus: str | None  # the corpus searched (None: the wiki's first; a BEIR repo has one)

    def first(self, count: int | None) -> EvalSet:
        return self._replace(questions=self.questions[:count]) if count else self


def default_work_dir(folder: Path) -> Path:
    """Where a BEIR folder's repo and index are built unless told: the user's cache, one dir per set."""
    return user_cache_dir("eval", folder.name)


def beir_set(folder: Path, split: str, work: Path, announce: Callable[[str], None] | None = None) -> EvalSet:
    """A BEIR folder's documents written as pages into a git repo under `work` and indexed there."""
    from gitwiki.wiki import Wiki

    beir = evaluation.load_beir(folder, split)
    if announce:
        announce(f"indexing {len(beir.pages)} pages in {work} ...")
    wiki = Wiki.open(evaluation.write_corpus_repo(work / "repo", beir.pages, BEIR_CONFIG))
    # The index lives beside the repo, so rebuilding the repo for another set keeps the vector cache; set here, as
    # a repo's own file may not choose its index dir (gitwiki.trust).
    wiki.config = wiki.config._replace(storage=wiki.config.storage._replace(index_dir=str(work / "index")))
    wiki.index()
    return EvalSet(wiki, beir.questions, str(folder), None)


def wiki_set(root: Path, questions: Path | None, corpus: str | None) -> EvalSet:
    """The checkout's labelled questions: `questions` (a path the user gave, read where it is), else the
    config's `[eval] path`, read only inside the checkout; labels resolved against `corpus`'s pages."""
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(root)
    path = questions or wiki.root / (wiki.config.eval.path or evaluation.DEFAULT_PATH)
    loaded = evaluation.load_questions(path, roots=None if questions else [wiki.root])
    chosen = wiki.corpus(corpus)
    resolved = evaluation.resolve_pages(loaded, wiki.view(chosen.name).pages, chosen.prefix)
    source = os.path.relpath(path, wiki.root) if path.is_relative_to(wiki.root) else str(path)
    return EvalSet(wiki, resolved, source, corpus)


class EvalRun(NamedTuple):
    source: str
    scores: list[ModeScore]
    gate: ModeScore  # the score --min-mrr is checked on
    min_mrr: float | None
    passed: bool

    def json(self) -> dict[str, Any]:
        return evaluation.report_json(self.source, self.scores, self.gate.label, self.min_mrr, self.passed)

    def refusal(self) -> str:
        return (
            f"MRR@10 {self.gate.mrr10:.3f} ({self.gate.label}) is below --min-mrr {self.min_mrr}; see the misses "
            "above and improve those pages (titles, descriptions, the words readers use)"
        )

    def text(self) -> str:
        gate, n = self.gate, len(self.gate.outcomes)
        lines = [
            f"{n} questions from {self.source}",
            f"{'mode':<12} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7} {'nDCG@10':>8} {'R@100':>6} {'ms/q':>7}",
        ]
        for s in self.scores:
            lines.append(
                f"{s.label:<12} {s.hit1:>6.3f} {s.hit5:>6.3f} {s.mrr10:>7.3f} {s.ndcg10:>8.3f} {s.recall100:>6.3f} "
                f"{s.ms_per_query:>7.1f}"
            )
        misses = sorted((o for o in gate.outcomes if o.rank != 1), key=lambda o: (o.rank is None, o.rank or 0))
        if misses:
            lines.append(f"\nnot first ({gate.label}), {len(misses)} of {n}:")
            for o in misses[:SHOWN_MISSES]:
                rank = f"rank {o.rank}" if o.rank is not None else f"not in top {len(o.ranked)}"
                got = o.ranked[0] if o.ranked else "nothing"
                # the checkout's question file: no terminal escapes on the user's screen, as from a page
                lines.append(f"  {rank:<14} {printable(' '.join(o.question.text.split()))}")
                lines.append(f"  {'':<14} wants {printable(', '.join(o.question.relevant))}; first was {got}")
            if len(misses) > SHOWN_MISSES:
                lines.append(f"  ... and {len(misses) - SHOWN_MISSES} more (--json lists every question)")
        return "\n".join(lines) + "\n"


def modes(wiki: Wiki, mode: str | None) -> tuple[list[str], str]:
    """The modes scored and the one gated: `mode` alone when given, else every mode the wiki can run, gated on
    its configured mode (lexical when there is no model)."""
    if mode:
        return [mode], mode
    if wiki.embedder() is not None:
        return ["lexical", "dense", "hybrid"], wiki.config.search.mode
    return ["lexical"], "lexical"


def run(
    evalset: EvalSet,
    mode: str | None = None,
    fusion: str | None = None,
    min_mrr: float | None = None,
    progress: Progress | None = None,
) -> EvalRun:
    scored, gated = modes(evalset.wiki, mode)
    scores = evaluation.evaluate(
        evaluation.wiki_ranker(evalset.wiki, evalset.corpus),
        evalset.questions,
        [(m, fusion if m == "hybrid" else None) for m in scored],
        progress,
    )
    gate = next(s for s, m in zip(scores, scored, strict=True) if m == gated)
    passed = min_mrr is None or gate.mrr10 >= min_mrr
    return EvalRun(evalset.source, scores, gate, min_mrr, passed)


class Tuned(NamedTuple):
    source: str
    fit: Fit
    written: Path | None  # the config file written, None when the fit did not win or on a dry run

    def json(self) -> dict[str, Any]:
        fit = self.fit
        return {
            "source": self.source,
            "questions": fit.questions,
            "settings": fit.settings,
            "folds": fit.folds,
            "repeats": fit.repeats,
            "current": {**fit.current._asdict(), "mrr@10": round(fit.current_mrr, 4)},
            "chosen": {**fit.chosen._asdict(), "mrr@10": round(fit.chosen_mrr, 4)},
            "held_out": {
                "current": round(fit.current_mrr, 4),
                "tuned": round(fit.tuned_mrr, 4),
                "gain": round(fit.gain, 4),
                "ci95": [round(fit.low, 4), round(fit.high, 4)],
                "fold_choices": fit.fold_choices,
            },
            "wins": fit.wins,
            "written": str(self.written) if self.written else None,
        }

    def text(self) -> str:
        fit = self.fit

        def row(label: str, setting: Setting, mrr: float) -> str:
            weight, normalization, share, depth = setting
            return f"{label:<9} {weight:>13} {normalization:>13} {share:>10} {depth:>5} {mrr:>7.3f}"

        lines = [
            f"tuning hybrid score fusion on {fit.questions} questions from {self.source}: {fit.settings} settings, "
            f"{fit.folds} folds × {fit.repeats} repeats",
            f"{'':<9} {'fusion_weight':>13} {'normalization':>13} {'page_share':>10} {'depth':>5} {'MRR@10':>7}",
            row("current", fit.current, fit.current_mrr),
            row("chosen", fit.chosen, fit.chosen_mrr) + "  (on the questions it was chosen on)",
            f"held out: MRR@10 {fit.current_mrr:.3f} → {fit.tuned_mrr:.3f}, gain {fit.gain:+.3f} "
            f"(95% CI {fit.low:+.3f} to {fit.high:+.3f}); the folds chose {fit.fold_choices} different setting(s)",
        ]
        if fit.chosen == fit.current:
            lines.append("the current settings are the best on these questions; nothing to write")
        elif not fit.wins:
            lines.append(
                "not written: the gain does not hold on held-out questions (the interval's lower bound is not above "
                "0); more questions, or questions where search misses today, narrow it"
            )
        elif self.written is None:
            lines.append("would write the chosen settings to [search] in .gitwiki.toml (--dry-run: nothing written)")
        else:
            lines.append(f"wrote the chosen settings to [search] in {self.written}")
        return "\n".join(lines) + "\n"


def tune(evalset: EvalSet, write: bool = True, progress: Progress | None = None) -> Tuned:
    """Fit `[search]` to the questions; the chosen settings are written to `.gitwiki.toml` only when they win on
    held-out folds (and `write`)."""
    from gitwiki.config_edit import write_search
    from gitwiki.operations import tuning

    fit = tuning.tune(evalset.wiki, evalset.corpus, evalset.questions, progress)
    written = write_search(evalset.wiki.root, fit.chosen._asdict()) if fit.wins and write else None
    return Tuned(evalset.source, fit, written)
