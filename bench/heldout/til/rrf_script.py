"""The plain script memory search must beat: BM25 (Okapi, k1 1.5, b 0.75) and MiniLM cosine over the same
entry texts, fused by reciprocal rank fusion (k 60). No topics, no caps, no filters: every entry is one doc.

    rank(texts, queries) -> [[doc index, best first] per query]
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter

TOKEN = re.compile(r"[a-z0-9]+")
STOP = frozenset("a an and are as at be by can do for from how i in is it my of on or so the to what when with".split())


def tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOP]


def bm25(docs: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    df = Counter(t for d in docs for t in set(d))
    tfs = [Counter(d) for d in docs]
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in set(query)}
    return [
        sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avg)) for t in query if t in tf)
        for d, tf in zip(docs, tfs, strict=True)
    ]


def embedder():
    from fastembed import TextEmbedding

    path = os.environ.get("GITWIKI_MODEL_PATH", "/work/shared/models/all-MiniLM-L6-v2-onnx")
    name = os.environ.get("GITWIKI_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    return TextEmbedding(model_name=name, specific_model_path=path, local_files_only=True)


def rrf(rankings: list[list[int]], k: int = 60) -> list[int]:
    fused: Counter[int] = Counter()
    for ranking in rankings:
        for r, doc in enumerate(ranking, 1):
            fused[doc] += 1 / (k + r)
    return [doc for doc, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))]


def rank(texts: list[str], queries: list[str], depth: int = 100) -> list[list[int]]:
    import numpy as np

    model = embedder()
    docs = np.array(list(model.embed(texts)))
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    tokenized = [tokens(t) for t in texts]
    out = []
    for q, qv in zip(queries, model.query_embed(queries), strict=True):
        lexical = bm25(tokenized, tokens(q))
        by_bm25 = [i for i in sorted(range(len(texts)), key=lambda i: -lexical[i])[:depth] if lexical[i] > 0]
        by_dense = list(np.argsort(-(docs @ (qv / np.linalg.norm(qv))))[:depth])
        out.append(rrf([by_bm25, [int(i) for i in by_dense]]))
    return out
