from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


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
    from gitwiki.operations import eval_run

    _check(args)
    if args.beir is not None:
        folder = path_arg(args, args.beir)
        work = path_arg(args, args.work) if args.work else eval_run.default_work_dir(folder)
        announce = None if args.json else lambda line: print(line, file=sys.stderr)
        evalset = eval_run.beir_set(folder, args.split, work, announce)
    else:
        # A path the user typed is read where it is; one from the checkout's config only inside it.
        given = path_arg(args, args.questions) if args.questions else None
        evalset = eval_run.wiki_set(args.chdir, given, args.corpus)
    evalset = evalset.first(args.max_questions)
    with progress_bar(enabled=not args.json, terminal=sys.stderr.isatty()) as progress:
        if args.tune:
            report: eval_run.Tuned | eval_run.EvalRun = eval_run.tune(evalset, not args.dry_run, progress)
        else:
            report = eval_run.run(evalset, args.mode, args.fusion, args.min_mrr, progress)
    if args.json:
        print(json.dumps(report.json(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.text())
    if isinstance(report, eval_run.EvalRun) and not report.passed:
        print(f"gitwiki: {report.refusal()}", file=sys.stderr)
        return 1
    return 0


def _check(args: argparse.Namespace) -> None:
    """The flags that do not go together, refused before anything is read."""
    from gitwiki.errors import UsageError

    if args.max_questions is not None and args.max_questions < 1:
        raise UsageError("--max-questions must be a whole number ≥ 1")
    if args.dry_run and not args.tune:
        raise UsageError("--dry-run goes with --tune")
    if args.tune:
        flags = (("--beir", args.beir), ("--mode", args.mode), ("--fusion", args.fusion), ("--min-mrr", args.min_mrr))
        given = [flag for flag, value in flags if value is not None]
        if given:
            raise UsageError(f"--tune fits hybrid score fusion on this wiki's questions; drop {', '.join(given)}")
    if args.beir is not None and args.questions is not None:
        raise UsageError("give --questions or --beir, not both")
