from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from gitwiki.commands.options import max_bytes_arg, path_arg

if TYPE_CHECKING:
    from gitwiki.wiki import Wiki


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "artifact",
        help="pack, verify or unpack an index archive (what CI publishes and `gitwiki pull` installs)",
        description="An index archive is a tar.gz of the SQLite index with a manifest.json "
        "(versions, model, per-corpus commit/tree/counts, sha256 of every file). See docs/ci.md.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    pack = actions.add_parser("pack", help="index HEAD (only what changed), then write the archive")
    pack.add_argument("--out", type=Path, help="archive path (default: <index dir>/gitwiki-index.tar.gz)")
    pack.add_argument("--corpus", help="catch up only this corpus before packing (default: all)")
    pack.add_argument(
        "--lexical",
        action="store_true",
        help="skip embeddings when catching up before packing, and pack a lexical-only index on purpose "
        "(without it, a configured model that does not load is an error: exit 5)",
    )
    pack.add_argument("--json", action="store_true", help="print the manifest and the archive path as JSON")
    pack.set_defaults(func=pack_command)

    for name, func, text in (
        ("verify", verify_command, "check an archive: layout, hashes, versions, counts (keeps nothing)"),
        ("unpack", unpack_command, "verify an archive and install it as the local index, atomically"),
    ):
        a = actions.add_parser(name, help=text)
        a.add_argument("file", type=Path, help="the archive")
        a.add_argument(
            "--max-bytes", type=int, default=None, help="refuse archives that unpack to more (default 4 GiB)"
        )
        a.add_argument("--json", action="store_true", help="print the manifest as JSON")
        if name == "unpack":
            a.add_argument("--accept-model", action="store_true", help="install even if built with another model")
        a.set_defaults(func=func)

    key = actions.add_parser(
        "cache-key", help="print the CI cache key, restore prefix and index dir (name=value lines)"
    )
    key.set_defaults(func=cache_key_command)

    summary = actions.add_parser("summary", help="render the CI job summary (markdown) from an archive's manifest")
    summary.add_argument("file", type=Path, help="the archive")
    summary.add_argument("--index-json", type=Path, help="the output of `gitwiki index --json`")
    summary.add_argument("--lint-output", type=Path, help="the output of `gitwiki lint`")
    summary.add_argument("--lint-status", type=int, help="the exit code of `gitwiki lint`")
    summary.add_argument("--publish", default="none", help="where the archive went (ref, artifact, release, s3, none)")
    summary.add_argument("--ref", default="refs/gitwiki/index", help="the git ref it was published to")
    summary.add_argument("--seconds", type=float, help="wall time of the build")
    summary.add_argument("--eval-json", type=Path, help="the output of `gitwiki eval --json`")
    summary.set_defaults(func=summary_command)


def pack_command(args: argparse.Namespace) -> int:
    from gitwiki.index.artifact import ARCHIVE_NAME, pack
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    wiki.index(args.corpus, lexical=args.lexical)
    if not args.lexical:
        _refuse_missing_vectors(wiki, args.corpus)
    out = path_arg(args, args.out) if args.out else wiki.index_dir / ARCHIVE_NAME
    manifest = pack(wiki.index_dir, out)
    if args.json:
        print(json.dumps({"path": str(out), "bytes": out.stat().st_size, "manifest": manifest.to_json()}, indent=2))
    else:
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {manifest.describe()}")
    return 0


def _refuse_missing_vectors(wiki: Wiki, corpus: str | None = None) -> None:
    """Every consumer of a published index searches what it holds: a lexical-only one where the config names a
    model would make every clone lexical without a word (the model failed on the packing machine, not theirs).
    With `corpus`, that one is what was indexed and packed (the action's `corpus:` input): the others were not."""
    from gitwiki.errors import EmbeddingUnavailable
    from gitwiki.index.embed import model_fix, unavailable

    model = wiki.wanted_model()
    packed = [wiki.corpus(corpus)] if corpus else wiki.config.corpora
    missing = [c.name for c in packed if model and not wiki.is_fresh(c, vectors=True)]
    if missing:
        why = unavailable(wiki.config.embeddings, wiki.index_dir) or "the model did not load"
        raise EmbeddingUnavailable(
            f"not packing: corpus {', '.join(missing)} has no {model} vectors ({why}); "
            f"{model_fix(wiki.config.embeddings)}, or pass --lexical to pack a lexical-only index on purpose"
        )


def verify_command(args: argparse.Namespace) -> int:
    from gitwiki.index.artifact import verify

    manifest = verify(path_arg(args, args.file), max_bytes_arg(args))
    print(json.dumps(manifest.to_json(), indent=2) if args.json else f"{args.file}: OK, {manifest.describe()}")
    return 0


def unpack_command(args: argparse.Namespace) -> int:
    from gitwiki.index.artifact import unpack
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    manifest = unpack(
        path_arg(args, args.file), wiki.index_dir, wiki.wanted_model(), args.accept_model, max_bytes_arg(args)
    )
    if args.json:
        print(json.dumps(manifest.to_json(), indent=2))
    else:
        print(f"installed {args.file} as the index in {wiki.index_dir}: {manifest.describe()}")
        print("next: `gitwiki index` catches up to HEAD (or use `gitwiki pull`, which does both)")
    return 0


def cache_key_command(args: argparse.Namespace) -> int:
    from gitwiki.index.artifact import cache_keys
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(args.chdir)
    key, prefix = cache_keys(wiki.corpus_trees(), wiki.wanted_model())
    print(f"key={key}\nrestore-prefix={prefix}\nindex-dir={wiki.index_dir}")
    return 0


def summary_command(args: argparse.Namespace) -> int:
    from gitwiki.index.artifact import verify
    from gitwiki.index.job_summary import SummaryInput, render

    archive = path_arg(args, args.file)
    manifest = verify(archive)
    reports = json.loads(path_arg(args, args.index_json).read_text()) if args.index_json else []
    lint = path_arg(args, args.lint_output).read_text() if args.lint_output else None
    evaluated = json.loads(path_arg(args, args.eval_json).read_text()) if args.eval_json else None
    print(
        render(
            SummaryInput(
                manifest,
                archive.stat().st_size,
                reports,
                lint,
                args.lint_status,
                args.publish,
                args.ref,
                args.seconds,
                evaluated,
            )
        )
    )
    return 0
