"""One query's embedding, the way a warm hybrid `ground` pays it: onnxruntime session options for a batch of one.

Each variant is the lean embedder (gitwiki.onnx_embed) with its session rebuilt with other options; the variants
embed the tldr questions in turn (interleaved, so the host's load falls on all of them alike), beside two
floors measured in the same rounds: the tokenizer alone, and fastembed's own `query_embed` (the path before
onnx_embed). Also: each variant's session build time (min of --loads), and its largest difference from
fastembed's vectors (the default options must give 0; others may move the floats).

    python bench/bench_embed.py [--rounds 3] [--loads 3]
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

# name: (intra_op_num_threads or None for onnxruntime's default, graph optimization level)
VARIANTS = {
    "default (fastembed's: all optimizations, default threads)": (None, "ORT_ENABLE_ALL"),
    "1 thread": (1, "ORT_ENABLE_ALL"),
    "2 threads": (2, "ORT_ENABLE_ALL"),
    "1 thread, extended": (1, "ORT_ENABLE_EXTENDED"),
    "1 thread, basic": (1, "ORT_ENABLE_BASIC"),
    "default threads, basic": (None, "ORT_ENABLE_BASIC"),
}


def session(model: str, threads: int | None, level: str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    if threads is not None:
        options.intra_op_num_threads = options.inter_op_num_threads = threads
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    parser.add_argument("--loads", type=int, default=3, help="session builds per variant")
    args = parser.parse_args()
    use_offline_model()
    import numpy as np

    from gitwiki.config import EmbeddingsConfig
    from gitwiki.embed import FastembedEmbedder
    from gitwiki.onnx_embed import MODELS, OnnxEmbedder

    config = EmbeddingsConfig(model=os.environ["GITWIKI_MODEL"], model_path=os.environ["GITWIKI_MODEL_PATH"])
    model = str(Path(config.model_path or "", MODELS[config.model].model_file))
    slow = FastembedEmbedder(config)
    lean = OnnxEmbedder(config, Path(config.model_path or ""), "model_path")
    embedders: dict[str, OnnxEmbedder] = {}
    loads: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.loads):
        for name, (threads, level) in VARIANTS.items():
            started = time.perf_counter()
            built = session(model, threads, level)
            loads[name].append((time.perf_counter() - started) * 1000)
            embedders[name] = copy.copy(lean)  # the same tokenizer and pooling, this variant's session
            embedders[name]._session = built
    qs = questions()
    timings: dict[str, list[float]] = {"tokenizer only": [], "fastembed query_embed": [], **{n: [] for n in VARIANTS}}
    tokenizer = lean._tokenizer
    for _ in range(args.rounds):
        for q in qs:
            started = time.perf_counter()
            tokenizer.encode_batch([q])
            timings["tokenizer only"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            slow.embed_query(q)
            timings["fastembed query_embed"].append((time.perf_counter() - started) * 1000)
            for name, embedder in embedders.items():
                started = time.perf_counter()
                embedder.embed_query(q)
                timings[name].append((time.perf_counter() - started) * 1000)
    sample = qs[:50]
    reference = np.stack([slow.embed_query(q) for q in sample])
    summary = {
        "questions": len(qs),
        "rounds": args.rounds,
        "embed_query_ms": {
            name: {"min": round(min(v), 2), "median": round(statistics.median(v), 2), "n": len(v)}
            for name, v in timings.items()
        },
        "session_build_ms_min": {name: round(min(v)) for name, v in loads.items()},
        "max_abs_difference_from_fastembed": {
            name: float(np.abs(np.stack([e.embed_query(q) for q in sample]) - reference).max())
            for name, e in embedders.items()
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
