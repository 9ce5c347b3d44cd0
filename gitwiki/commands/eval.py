from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitwiki.operations.evaluation import ModeScore, Question
    from gitwiki.operations.tuning import Fit, Setting
    from gitwiki.wiki import Wiki

SHOWN_MISSES = 20


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "eval",
        help="measure retrieval on labelled questions (hit@1, hit@5, MRR@10 per mode)",
        description="Search each labelled question and score where its answer pages land: hit@1, hit@5, "
        "MRR@10, nDCG@10 and Recall@100 per mode, and the misses with the rank they got. Questions come from "
        ".gitwiki/eval.jsonl ([eval] path in the config, or --questions), one JSON object a line: "
        '{"question": "...", "relevant": ["page.md"]}; or from a BEIR folder (--beir), whose documents are '
        "written as pages into a git repo under --work and indexed there. --tune fits the [search] fusion settings "
        "to the questions instead, and writes them only when they win on questions held out from the fit.",
    )
    p.add_argument("--questions", type=Path, metavar="FILE", help="the question file (default: [eval] path)")
    p.add_argument("--beir", type=Path, metavar="DIR", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/")
    p.add_argument("--split", default="test", help="the BEIR qrels split (default test)")
    p.add_argument(
        "--work",
        type=Path,
        metavar="DIR",
        help="where --beir builds its repo and index (default ~/.cache/gitwiki/eval)",
    )
    p.add_argument("--max-questions", type=int, metavar="N", help="only the first N questions")
    p.add_argument("--corpus", help="the corpus to search (default: the first)")
    p.add_argument(
        "--mode", choices=("hybrid", "lexical", "dense"), help="score one mode (default: every mode available)"
    )
    p.add_argument("--fusion", choices=("rrf", "score"), help="hybrid fusion (default from [search] fusion)")
    p.add_argument(
        "--min-mrr",
        type=float,
        metavar="X",
        help="exit 1 when MRR@10 of the gated mode (--mode, else [search] mode) is below X",
    )
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--tune",
        action="store_true",
        help="fit [search] fusion_weight, normalization, page_share and depth to the questions by cross-validation "
        "and write them to .gitwiki.toml when they win on held-out folds",
    )
    p.add_argument("--dry-run", action="store_true", help="with --tune: show the fit, write nothing")
    p.set_defaults(func=eval_command)


def eval_command(args: argparse.Namespace) -> int:
    from gitwiki.commands.options import path_arg, progress_bar
    from gitwiki.errors import UsageError
    from gitwiki.operations import evaluation
    from gitwiki.wiki import Wiki

    if args.max_questions is not None and args.max_questions < 1:
        raise UsageError("--max-questions must be a whole number ≥ 1")
    if args.dry_run and not args.tune:
        raise UsageError("--dry-run goes with --tune")
    if args.tune:
        given = [
            flag
            for flag, value in (
                ("--beir", args.beir),
                ("--mode", args.mode),
                ("--fusion", args.fusion),
                ("--min-mrr", args.min_mrr),
            )
            if value is not None
        ]
        if given:
            raise UsageError(f"--tune fits hybrid score fusion on this wiki's questions; drop {', '.join(given)}")
    if args.beir is not None:
        if args.questions is not None:
            raise UsageError("give --questions or --beir, not both")
        folder = path_arg(args, args.beir)
        beir = evaluation.load_beir(folder, args.split)
        work = path_arg(args, args.work) if args.work else _cache_dir() / folder.name
        # The index lives beside the repo, so rebuilding the repo for another set keeps the vector cache; set
        # here, as a repo's own file may not choose its index dir (gitwiki.trust).
        config = '[[corpus]]\nname = "beir"\npath = "wiki"\n'
        if not args.json:
            print(f"indexing {len(beir.pages)} pages in {work} ...", file=sys.stderr)
        wiki = Wiki.open(evaluation.write_corpus_repo(work / "repo", beir.pages, config))
        wiki.config = wiki.config._replace(storage=wiki.config.storage._replace(index_dir=str(work / "index")))
        wiki.index()
        questions, source = beir.questions, str(folder)
    else:
        wiki = Wiki.open(args.chdir)
        path = args.questions or Path(wiki.config.eval.path or evaluation.DEFAULT_PATH)
        path = path_arg(args, path) if args.questions else wiki.root / path
        # A path the user typed is read where it is; one from the checkout's config only inside it.
        loaded = evaluation.load_questions(path, roots=None if args.questions else [wiki.root])
        corpus = wiki.corpus(args.corpus)
        pages = wiki.view(corpus.name).pages
        questions = evaluation.resolve_pages(loaded, pages, corpus.prefix)
        source = os.path.relpath(path, wiki.root) if path.is_relative_to(wiki.root) else str(path)
    questions = questions[: args.max_questions] if args.max_questions else questions
    if args.tune:
        return _tune(wiki, args, questions, source)
    gated = args.mode or wiki.config.search.mode
    if args.mode:
        modes = [args.mode]
    elif wiki.embedder() is not None:
        modes = ["lexical", "dense", "hybrid"]
    else:
        modes = ["lexical"]
        gated = "lexical"
    fusion = args.fusion
    with progress_bar(enabled=not args.json, terminal=sys.stderr.isatty()) as progress:
        scores = evaluation.evaluate(
            evaluation.wiki_ranker(wiki, None if args.beir else args.corpus),
            questions,
            [(m, fusion if m == "hybrid" else None) for m in modes],
            progress,
        )
    gate = next(s for s, m in zip(scores, modes, strict=True) if m == gated)
    passed = args.min_mrr is None or gate.mrr10 >= args.min_mrr
    report = evaluation.report_json(source, scores, gate.label, args.min_mrr, passed)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(_text(source, scores, gate))
    if not passed:
        print(
            f"gitwiki: MRR@10 {gate.mrr10:.3f} ({gate.label}) is below --min-mrr {args.min_mrr}; "
            "see the misses above and improve those pages (titles, descriptions, the words readers use)",
            file=sys.stderr,
        )
        return 1
    return 0


def _tune(wiki: Wiki, args: argparse.Namespace, questions: list[Question], source: str) -> int:
    from gitwiki.commands.options import progress_bar
    from gitwiki.config import write_search
    from gitwiki.operations import tuning

    with progress_bar(enabled=not args.json, terminal=sys.stderr.isatty()) as progress:
        fit = tuning.tune(wiki, args.corpus, questions, progress)
    written = None
    if fit.wins and not args.dry_run:
        written = write_search(wiki.root, fit.chosen._asdict())
    if args.json:
        print(json.dumps(_tune_json(source, fit, written), indent=2))
    else:
        sys.stdout.write(_tune_text(source, fit, written))
    return 0


def _tune_json(source: str, fit: Fit, written: Path | None) -> dict[str, Any]:
    return {
        "source": source,
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
        "written": str(written) if written else None,
    }


def _tune_text(source: str, fit: Fit, written: Path | None) -> str:
    def row(label: str, setting: Setting, mrr: float) -> str:
        weight, normalization, share, depth = setting
        return f"{label:<9} {weight:>13} {normalization:>13} {share:>10} {depth:>5} {mrr:>7.3f}"

    lines = [
        f"tuning hybrid score fusion on {fit.questions} questions from {source}: {fit.settings} settings, "
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
            "not written: the gain does not hold on held-out questions (the interval's lower bound is not above 0); "
            "more questions, or questions where search misses today, narrow it"
        )
    elif written is None:
        lines.append("would write the chosen settings to [search] in .gitwiki.toml (--dry-run: nothing written)")
    else:
        lines.append(f"wrote the chosen settings to [search] in {written}")
    return "\n".join(lines) + "\n"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gitwiki" / "eval"


def _text(source: str, scores: list[ModeScore], gate: ModeScore) -> str:
    n = len(gate.outcomes)
    lines = [
        f"{n} questions from {source}",
        f"{'mode':<12} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>7} {'nDCG@10':>8} {'R@100':>6} {'ms/q':>7}",
    ]
    for s in scores:
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
            lines.append(f"  {rank:<14} {o.question.text}")
            lines.append(f"  {'':<14} wants {', '.join(o.question.relevant)}; first was {got}")
        if len(misses) > SHOWN_MISSES:
            lines.append(f"  ... and {len(misses) - SHOWN_MISSES} more (--json lists every question)")
    return "\n".join(lines) + "\n"
