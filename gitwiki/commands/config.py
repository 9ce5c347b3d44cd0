from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gitwiki.commands.options import add_init_arguments

if TYPE_CHECKING:
    from gitwiki.config import Config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "config",
        help="show, validate or create the configuration",
        description="Show, validate or create the configuration.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="print the effective configuration (all layers merged)")
    show.set_defaults(func=show_config)
    validate = actions.add_parser("validate", help="check the config files; exit 2 with the first problem")
    validate.set_defaults(func=validate_config)
    download = actions.add_parser(
        "download",
        help="fetch the configured embedding model now (or show the local model in use)",
        description="Download the [embeddings] model into fastembed's cache, with a progress bar, so the first "
        "index pays no download; with model_path (or GITWIKI_MODEL_PATH) set, check that model and print its path.",
    )
    download.set_defaults(func=download_model)
    init = actions.add_parser("init", help="write .gitwiki.toml (same as `gitwiki init`)")
    add_init_arguments(init)


def _load(args: argparse.Namespace) -> Config:
    return _load_at(args)[0]


def _load_at(args: argparse.Namespace) -> tuple[Config, Path]:
    from gitwiki import config
    from gitwiki.git.gitrepo import GitRepo

    root = GitRepo.discover(args.chdir).root
    return config.load(root), root


def show_config(args: argparse.Namespace) -> int:
    from gitwiki.config import to_toml

    cfg = _load(args)
    print("# files read: " + (", ".join(cfg.files) or "none (defaults)"))
    print(to_toml(cfg), end="")
    return 0


def validate_config(args: argparse.Namespace) -> int:
    from gitwiki.config import warnings
    from gitwiki.sources.consents import Consents, consent_message

    cfg, root = _load_at(args)
    consents = Consents()
    said = warnings(cfg, root) + [consent_message(r) for r in cfg.repositories if not consents.allowed(r)]
    for line in said:
        print(f"warning: {line}")
    counted = f" with {len(said)} warning(s)" if said else ""
    print(f"ok{counted}: {len(cfg.corpora)} corpus(es) from {', '.join(cfg.files) or 'defaults'}")
    return 0


def download_model(args: argparse.Namespace) -> int:
    from gitwiki.errors import EmbeddingUnavailable
    from gitwiki.index.embed import EMBEDDERS
    from gitwiki.index.onnx_embed import INT8

    embeddings = _load(args).embeddings
    if not embeddings.enabled:
        print("embeddings are off ([embeddings] enabled = false): lexical search needs no model")
        return 0
    if embeddings.provider not in EMBEDDERS:
        raise EmbeddingUnavailable(
            f"unknown [embeddings] provider {embeddings.provider!r}; known: {', '.join(EMBEDDERS)}"
        )
    model = EMBEDDERS[embeddings.provider](embeddings)  # fastembed draws the download's progress bars on stderr
    where = getattr(model, "model_dir", None) or "(the provider's cache)"
    said = {
        "model_path": "using the local model directory, nothing to download",
        "cache": "already downloaded",
        "download": "downloaded",
    }.get(getattr(model, "source", ""), "ready")
    weights = "; int8 weights (gitwiki's copy)" if model.model_id.endswith(INT8) else ""
    print(f"{embeddings.model}: {said}; {model.dim} dimensions{weights}; files in {where}")
    from gitwiki.index.embed import keep_fast_copy
    from gitwiki.index.onnx_embed import OnnxEmbedder, lean_embedder

    # so that the first session's model loads fast too; a model fastembed just downloaded is loaded the lean way
    lean = model if isinstance(model, OnnxEmbedder) else lean_embedder(embeddings)
    if lean is not None:
        keep_fast_copy(lean)
    return 0
