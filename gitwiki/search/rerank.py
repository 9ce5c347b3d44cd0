"""An optional cross-encoder pass over the best fused chunks (`[search] reranker = "<model>"`, off by default).

A cross-encoder reads the query and a chunk together, so it judges paraphrases a bi-encoder and BM25 miss,
at the price of one model run per (query, chunk) pair: only the top `[search] rerank_depth` chunks go
through it. fastembed's `TextCrossEncoder` is the one we ship; like the embedder it loads on first use, and
a model that cannot load leaves the fused order as it is (after one warning).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Protocol

from gitwiki.errors import EmbeddingUnavailable


class Reranker(Protocol):
    model_id: str

    def scores(self, query: str, texts: list[str]) -> list[float]: ...  # higher is more relevant


class FastembedReranker:
    def __init__(self, model: str):
        self.model_id = model
        try:
            from gitwiki.native import numpy

            numpy()  # first, by one thread at a time: onnxruntime imports numpy's core (gitwiki.native.numpy)
            from fastembed.rerank.cross_encoder import TextCrossEncoder
        except ImportError as e:
            raise EmbeddingUnavailable(f"fastembed is not installed ({e}); run `pip install fastembed`") from None
        from gitwiki.index.embed import hub_reachable, quiet_fastembed

        quiet_fastembed()
        try:  # downloaded before: no connection (an unreachable hub was ~40 s of fastembed's retries a search)
            self._model = TextCrossEncoder(model_name=model, local_files_only=True)
            return
        except Exception:
            if not hub_reachable():
                raise EmbeddingUnavailable(
                    f"reranker {model!r} is not downloaded and huggingface.co cannot be reached; connect once to "
                    "download it, or unset [search] reranker"
                ) from None
        try:
            self._model = TextCrossEncoder(model_name=model)
        except Exception as e:  # fastembed raises plain ValueError/OSError/hub errors; all mean "no model"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise EmbeddingUnavailable(
                f"cannot load reranker {model!r} ({first[:200]}); download it once or unset [search] reranker"
            ) from None

    def scores(self, query: str, texts: list[str]) -> list[float]:
        return [float(s) for s in self._model.rerank(query, texts)]


# The loader per model name; tests swap in a fake.
LOADER: Callable[[str], Reranker] = FastembedReranker
_cache: dict[str, Reranker | None] = {}


def load_reranker(model: str | None) -> Reranker | None:
    """The configured cross-encoder, loaded once per process; None when off or (after a warning) unavailable."""
    if not model:
        return None
    if model not in _cache:
        try:
            _cache[model] = LOADER(model)
        except EmbeddingUnavailable as e:
            _cache[model] = None
            print(f"gitwiki: warning: {e}; results keep the fused order", file=sys.stderr)
    return _cache[model]


def judged(logit: float) -> float:
    """A cross-encoder's logit as its judgement in (0, 1): the sigmoid, written 0.5 + tanh(logit / 2) / 2 so no
    logit overflows. The same scale for every text and every index, so memories searched together compare."""
    return 0.5 + 0.5 * math.tanh(logit / 2)


def rerank(
    ranked: list[tuple[int, float]], texts: dict[int, str], query: str, reranker: Reranker, depth: int
) -> list[tuple[int, float]]:
    """The first `depth` chunks re-ordered by the cross-encoder, above the rest in their fused order.

    Reranked chunks score 1 + `judged(logit)`, in (1, 2); the rest keep their fused score (at most 1 for score
    fusion and RRF), so they stay below.
    """
    head = [cid for cid, _ in ranked[:depth] if cid in texts]
    if not head:
        return ranked
    logits = reranker.scores(query, [texts[cid] for cid in head])
    scored = sorted(
        ((cid, 1.0 + judged(logit)) for cid, logit in zip(head, logits, strict=True)),
        key=lambda kv: (-kv[1], kv[0]),
    )
    done = set(head)
    return scored + [(cid, s) for cid, s in ranked if cid not in done]
