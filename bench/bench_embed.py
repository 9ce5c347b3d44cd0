"""One query's embedding, the way a warm hybrid `ground` pays it: onnxruntime session options for a batch of one.

Each variant is the lean embedder (gitwiki.index.onnx_embed) with its session built with other options. In each round
every variant in turn builds its session (timed), embeds the tldr questions, and drops it: one session at a time,
as in gitwiki, since an idle session's spinning thread pool would slow the others. Beside them, in the same
rounds: the tokenizer alone (the floor) and fastembed's own `query_embed` (the path before onnx_embed). Last,
each variant's largest difference from fastembed's vectors (the default options must give 0).

    python bench/bench_embed.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from pathlib import Path

from bench_index import questions
from benchlib import use_offline_model

# name: (intra_op_num_threads or None for onnxruntime's default, graph optimization level, allow spinning)
VARIANTS = {
    "default (fastembed's: all optimizations, default threads)": (None, "ORT_ENABLE_ALL", True),
    "1 thread": (1, "ORT_ENABLE_ALL", True),
    "2 threads": (2, "ORT_ENABLE_ALL", True),
    "2 threads, no spinning": (2, "ORT_ENABLE_ALL", False),
    "1 thread, extended": (1, "ORT_ENABLE_EXTENDED", True),
    "1 thread, basic": (1, "ORT_ENABLE_BASIC", True),
    "default threads, basic": (None, "ORT_ENABLE_BASIC", True),
}


def session(model: str, threads: int | None, level: str, spinning: bool):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    if threads is not None:
        options.intra_op_num_threads = options.inter_op_num_threads = threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="passes over the questions")
    args = parser.parse_args()
    use_offline_model()
    import numpy as np

    from gitwiki.config import EmbeddingsConfig
    from gitwiki.index.embed import FastembedEmbedder
    from gitwiki.index.onnx_embed import MODELS, OnnxEmbedder

    config = EmbeddingsConfig(model=os.environ["GITWIKI_MODEL"], model_path=os.environ["GITWIKI_MODEL_PATH"])
    model = str(Path(config.model_path or "", MODELS[config.model].model_file))
    lean = OnnxEmbedder(config, Path(config.model_path or ""), "model_path")
    lean._session = None  # one session at a time: each variant builds its own
    qs = questions()
    sample = qs[:50]
    timings: dict[str, list[float]] = {"tokenizer only": [], "fastembed query_embed": [], **{n: [] for n in VARIANTS}}
    loads: dict[str, list[float]] = {name: [] for name in ("fastembed", *VARIANTS)}
    differences: dict[str, float] = {}

    def run(name: str, embed) -> None:
        for q in qs:
            started = time.perf_counter()
            embed(q)
            timings[name].append((time.perf_counter() - started) * 1000)

    for _ in range(args.rounds):
        run("tokenizer only", lambda q: lean._tokenizer.encode_batch([q]))
        started = time.perf_counter()
        slow = FastembedEmbedder(config)
        loads["fastembed"].append((time.perf_counter() - started) * 1000)
        run("fastembed query_embed", slow.embed_query)
        reference = np.stack([slow.embed_query(q) for q in sample])
        del slow
        for name, options in VARIANTS.items():
            started = time.perf_counter()
            variant = copy.copy(lean)  # the same tokenizer and pooling, this variant's session
            variant._session = session(model, *options)
            loads[name].append((time.perf_counter() - started) * 1000)
            run(name, variant.embed_query)
            differences[name] = float(np.abs(np.stack([variant.embed_query(q) for q in sample]) - reference).max())
            del variant
    summary = {
        "questions": len(qs),
        "rounds": args.rounds,
        "embed_query_ms": {
            name: {"min": round(min(v), 2), "median": round(statistics.median(v), 2), "n": len(v)}
            for name, v in timings.items()
        },
        "load_ms_min_median": {name: [round(min(v)), round(statistics.median(v))] for name, v in loads.items()},
        "max_abs_difference_from_fastembed": differences,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
