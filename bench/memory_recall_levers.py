"""Ranking levers for memory search, tried on the held-out recall sets (bench/heldout/til, bench/heldout/simonw)
without rebuilding or re-embedding: each question's lexical and dense chunk rankings are taken once from
gitwiki's own rankers (`gitwiki.memory.search._rankings`), and a lever is a function from them to the entries'
relevance, put in place of `_relevance` so the rest of `memory search` (AND/OR levels, confidence × recency, the
per-topic cap, the limit) runs as it is. `main` reproduces memory search's own ranks (checked).

    python bench/memory_recall_levers.py [--set til|simonw] [--levers main,prf,...] [--json]

Prints hit@1, hit@5, MRR@10 per kind and each lever − main paired (95% bootstrap interval, as
bench/memory_recall_eval.py computes it). Figures: docs/research/memory-recall-2.md.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from benchlib import WORK, use_offline_model
from memory_recall_eval import DEPTH, HELDOUT, KINDS, load_build, metrics, paired


@dataclass
class Question:
    """One question's rankings as gitwiki's rankers gave them."""

    words: str
    lexical: list[tuple[int, float]]  # chunk id, BM25 (FTS5, best first)
    dense: list[tuple[int, float]]  # chunk id, cosine (the top `depth`)
    query: np.ndarray  # the query vector
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Lab:
    mem: Any
    note_of: dict[tuple[str, int], str]
    entry_of: dict[int, tuple[str, int]]  # chunk id → (topic, entry's first line)
    vectors: dict[int, np.ndarray]  # chunk id → vector (every chunk of a topic page)
    questions: list[dict]
    ranked: dict[str, Question]
    depth: int
    weighting: Any

    def entry_vectors(self) -> dict[tuple[str, int], np.ndarray]:
        """Each entry's first chunk's vector (its title and lead)."""
        first: dict[tuple[str, int], int] = {}
        for cid in sorted(self.entry_of):
            first.setdefault(self.entry_of[cid], cid)
        return {key: self.vectors[cid] for key, cid in first.items()}


def open_lab(name: str) -> Lab:
    from gitwiki.memory import search as ms

    build = load_build(name)
    questions = [json.loads(line) for line in (HELDOUT / name / "questions.jsonl").read_text().splitlines() if line]
    mem, note_of = build.open_built(WORK / name)
    files = mem.versions(None)
    embedder = mem.wiki.embedder()
    view = ms.memory_view(mem, files, embedder)
    store = mem.search_index
    ranked: dict[str, Question] = {}
    entry_of: dict[int, tuple[str, int]] = {}
    with mem.read():
        for q in questions:
            words = ms.split_query(q["question"])[0]
            rankings, blob_of, _ = ms._rankings(mem, view, words, "hybrid", embedder, None)
            entry_of |= ms._entry_of_chunk(mem, files, blob_of)
            ranked[q["id"]] = Question(
                words, rankings.get("lexical", []), rankings.get("dense", []), embedder.embed_query(words)
            )
        blobs = {v.blob for v in files.values()}
        conn = store.conn if hasattr(store, "conn") else store._conn
        rows = conn.execute(
            "select c.id, v.vec from chunks c join vectors v on v.hash = c.hash and v.model = ?"
            f" where c.blob in ({','.join('?' * len(blobs))})",
            (embedder.model_id, *blobs),
        ).fetchall()
    vectors = {cid: np.frombuffer(vec, dtype=np.float32) for cid, vec in rows}
    # every chunk of every topic page, not only those some question ranked
    all_blobs = {cid: blob for cid, blob in conn.execute("select id, blob from chunks").fetchall() if blob in blobs}
    entry_of |= ms._entry_of_chunk(mem, files, all_blobs)
    return Lab(mem, note_of, entry_of, vectors, questions, ranked, mem.wiki.searcher.depth, mem.wiki.searcher.weighting)


# ---- levers: (lab, question) → relevance of entries, (topic, first line) → score --------------------------


def fused_entries(lab: Lab, lists: list[list[tuple[int, float]]], weights: list[float] | None = None) -> dict:
    from gitwiki.search import ranking

    w = weights or lab.weighting.weights(lists)
    fused = ranking.score_fusion(lists, w, lab.weighting.normalizer) if len(lists) > 1 else lists[0]
    return ranking.relative(ranking.best_of(fused, lab.entry_of))


def lever_main(lab: Lab, q: Question) -> dict:
    return fused_entries(lab, [q.lexical, q.dense])


def lever_minmax(lab: Lab, q: Question) -> dict:
    """Score fusion with min-max normalization in place of DBSF, the weights as they are."""
    from gitwiki.search import ranking

    lists = [q.lexical, q.dense]
    fused = ranking.score_fusion(lists, lab.weighting.weights(lists), ranking.min_max)
    return ranking.relative(ranking.best_of(fused, lab.entry_of))


def dense_list(lab: Lab, vector: np.ndarray) -> list[tuple[int, float]]:
    ids = lab.extra_ids
    scores = lab.extra_matrix @ vector
    top = np.argsort(-scores)[: lab.depth]
    return [(int(ids[i]), float(scores[i])) for i in top]


def make_prf(k: int, alpha: float) -> Callable[[Lab, Question], dict]:
    """Pseudo-relevance feedback on the dense side: the query vector moved toward the mean of the vectors of
    the top-k chunks of the first fused ranking (entries' best chunks), renormalized, and ranked again."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.search import ranking

        fused = ranking.score_fusion([q.lexical, q.dense], lab.weighting.weights([q.lexical, q.dense]), ranking.dbsf)
        seen: set = set()
        top: list[int] = []
        for cid, _ in fused:
            key = lab.entry_of.get(cid)
            if key is None or key in seen:
                continue
            seen.add(key)
            top.append(cid)
            if len(top) == k:
                break
        centroid = np.mean([lab.vectors[c] for c in top if c in lab.vectors], axis=0)
        moved = q.query + alpha * centroid
        moved /= np.linalg.norm(moved)
        return fused_entries(lab, [q.lexical, dense_list(lab, moved)])

    return lever


def make_topic_prior(beta: float, by: str = "centroid") -> Callable[[Lab, Question], dict]:
    """A topic-level ranker as a prior: each entry's relevance × (1 + beta × s), s the query's cosine with its
    topic (the centroid of the topic's entry vectors), min-max scaled over the topics."""

    def lever(lab: Lab, q: Question) -> dict:
        base = lever_main(lab, q)
        cos = {t: float(v @ q.query) for t, v in lab.topic_centroids.items()}
        lo, hi = min(cos.values()), max(cos.values())
        s = {t: (c - lo) / (hi - lo) if hi > lo else 0.0 for t, c in cos.items()}
        return {k: v * (1 + beta * s[k[0]]) for k, v in base.items()}

    return lever


def make_first_chunk(weight: float) -> Callable[[Lab, Question], dict]:
    """Dense at the entry level: the entry's first chunk (title and lead) weighs `weight`, its best chunk the
    rest, instead of the best chunk alone (long notes: a max over many chunks favours length)."""

    def lever(lab: Lab, q: Question) -> dict:
        firsts = lab.first_chunk
        scores = lab.extra_matrix @ q.query
        by_entry: dict = {}
        for i, cid in enumerate(lab.extra_ids):
            key = lab.entry_of.get(int(cid))
            if key is None:
                continue
            s = float(scores[i])
            best, first = by_entry.get(key, (-1.0, None))
            by_entry[key] = (max(best, s), s if firsts.get(key) == int(cid) else first)
        dense = []
        for key, (best, first) in by_entry.items():
            dense.append((lab.first_chunk[key], weight * (first if first is not None else best) + (1 - weight) * best))
        dense.sort(key=lambda kv: -kv[1])
        return fused_entries(lab, [q.lexical, dense[: lab.depth]])

    return lever


STAMP = re.compile(r"(?m)^(## )?\d{4}-\d{2}-\d{2}T[0-9:.]+Z — ")


def alt_matrix(lab: Lab, name: str) -> np.ndarray:
    """Every topic-page chunk embedded again as `embed_text` builds it but without the entry's timestamp
    (`## 2026-01-15T12:00:00Z — title` in the breadcrumb and the heading line): rows in `lab.extra_ids` order,
    cached under WORK."""
    from gitwiki.index.store.pages import embed_text

    cache = WORK / f"{name}-nostamp.npy"
    if cache.is_file():
        return np.load(cache)
    store = lab.mem.search_index
    conn = store.conn
    rows = {
        cid: (json.loads(crumb), text, title)
        for cid, crumb, text, title in conn.execute(
            "select c.id, c.breadcrumb, c.text, b.title from chunks c join blobs b on b.blob = c.blob"
        ).fetchall()
    }
    texts = []
    for cid in lab.extra_ids:
        crumb, text, title = rows[int(cid)]
        texts.append(embed_text(tuple(STAMP.sub("", c) for c in crumb), STAMP.sub(r"\1", text), title))
    matrix = lab.mem.wiki.embedder().embed_documents(texts)
    np.save(cache, matrix)
    return matrix


def make_nostamp() -> Callable[[Lab, Question], dict]:
    """The dense side over chunks embedded without the entry's timestamp."""

    def lever(lab: Lab, q: Question) -> dict:
        scores = lab.nostamp @ q.query
        top = np.argsort(-scores)[: lab.depth]
        dense = [(int(lab.extra_ids[i]), float(scores[i])) for i in top]
        return fused_entries(lab, [q.lexical, dense])

    return lever


def make_second(weight: float, root: bool) -> Callable[[Lab, Question], dict]:
    """An entry's relevance from its fused chunks: the best plus `weight` × the second best (/ sqrt of its
    ranked chunks when `root`), as the wiki's pages add their second chunk (`ranking.SECOND_CHUNK`)."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.search import ranking

        fused = ranking.score_fusion([q.lexical, q.dense], lab.weighting.weights([q.lexical, q.dense]), ranking.dbsf)
        per: dict = {}
        for cid, score in fused:
            key = lab.entry_of.get(cid)
            if key is not None and score > 0:
                per.setdefault(key, []).append(score)
        out = {}
        for key, scores in per.items():
            extra = scores[1] if len(scores) > 1 else 0.0
            out[key] = scores[0] + weight * extra / (len(scores) ** 0.5 if root else 1.0)
        return ranking.relative(out)

    return lever


def make_lexical_sum(rest: float) -> Callable[[Lab, Question], dict]:
    """Entry-level lexical score: its best chunk's BM25 + `rest` × the sum of its other chunks' (1: the sum,
    near BM25 over the whole note as the script scores it); dense: the best chunk; the entry lists fused."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.search import ranking

        per: dict = {}
        for cid, score in q.lexical:
            key = lab.entry_of.get(cid)
            if key is not None:
                per.setdefault(key, []).append(score)
        lexical = {k: v[0] + rest * sum(v[1:]) for k, v in per.items()}
        dense = ranking.best_of(q.dense, lab.entry_of)
        lists = [
            sorted(((lab.first_chunk[k], s) for k, s in scores.items()), key=lambda kv: -kv[1])
            for scores in (lexical, dense)
        ]
        return fused_entries(lab, lists)

    return lever


def make_entry_fusion() -> Callable[[Lab, Question], dict]:
    """Best chunk per entry in each ranker first, then fusion of the entry lists."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.search import ranking

        lists = []
        for ranked in (q.lexical, q.dense):
            best = ranking.best_of(ranked, lab.entry_of)
            lists.append(sorted(((lab.first_chunk[k], s) for k, s in best.items()), key=lambda kv: -kv[1]))
        return fused_entries(lab, lists)

    return lever


def make_admit(rule: str, arg: float) -> Callable:
    """A `_matched` that keeps the AND level but also lists entries missing a word that the hybrid ranking
    places high: rule "top" — the `arg` best entries by relevance; "above" — relevance ≥ arg × the best AND
    match's; "or" — no AND level at all (every entry holding any word)."""
    from gitwiki.memory import search as ms

    original = ms._matched

    def matched(candidates, words, mode, relevance):
        if rule == "or":
            return original(candidates, words, "or", relevance)
        chosen, how = original(candidates, words, mode, relevance)
        if how != "and":
            return chosen, how
        have = {ms._key(e) for e, _ in chosen}
        if rule == "top":
            admit = {k for k, _ in sorted(relevance.items(), key=lambda kv: -kv[1])[: int(arg)]}
        else:
            bar = arg * max((r for _, r in chosen), default=1.0)
            admit = {k for k, r in relevance.items() if r >= bar}
        extra = [(e, relevance[ms._key(e)]) for e, _ in candidates if ms._key(e) in admit - have]
        return chosen + extra, how

    return matched


# ---- adaptive weight, lexical PRF, sentence windows (docs/research/memory-recall-2.md) ---------------


def top_lexical_entry(lab: Lab, q: Question) -> tuple[str, int] | None:
    """The entry of the lexical ranking's first chunk that belongs to an entry."""
    return next((lab.entry_of[c] for c, _ in q.lexical if c in lab.entry_of), None)


def coverage(lab: Lab, q: Question) -> float:
    """The share of the query's content terms (memory's AND terms: stemmed, stop words out) that the top lexical
    entry holds (topic, tags and text, as the AND pass reads an entry); 0 without a lexical match."""
    from gitwiki.memory import search as ms
    from gitwiki.memory.entry import entry_terms

    if "coverage" not in q.extra:
        needed = ms.query_terms(q.words)
        key = top_lexical_entry(lab, q)
        held = entry_terms(lab.entries[key]) if key in lab.entries else frozenset()
        q.extra["coverage"] = len(needed & held) / len(needed) if needed else 0.0
    return float(q.extra["coverage"])


def lexical_z(q: Question) -> float:
    """How far the top BM25 score stands above the lexical list: (top − mean) / standard deviation."""
    scores = np.array([s for _, s in q.lexical])
    if len(scores) < 2 or scores.std() == 0:
        return 0.0
    return float((scores[0] - scores.mean()) / scores.std())


def make_adaptive(rule: str) -> Callable[[Lab, Question], dict]:
    """Score fusion as now, with the lexical weight set per query from the lexical evidence: weak evidence → the
    dense side weighs more. "cov-step": 0.5 when the top lexical entry holds every content term of the query,
    else 0.3; "cov-linear": 0.25 + 0.25 × coverage (0.25–0.5); "z": 0.5 when the top BM25 score stands 4
    standard deviations above the list (past DBSF's mean + 3σ = 1), else 0.35."""

    def lever(lab: Lab, q: Question) -> dict:
        if rule == "cov-step":
            w = 0.5 if coverage(lab, q) >= 1.0 else 0.3
        elif rule == "cov-linear":
            w = 0.25 + 0.25 * coverage(lab, q)
        else:
            w = 0.5 if lexical_z(q) >= 4.0 else 0.35
        if not q.lexical or not q.dense:
            return lever_main(lab, q)
        return fused_entries(lab, [q.lexical, q.dense], [w, 1.0 - w])

    return lever


def feedback_terms(lab: Lab, q: Question, k: int, n: int) -> list[tuple[str, float]]:
    """The `n` most distinctive index terms of the first `k` entries of the fused ranking (RM3's feedback model,
    roughly): Σ over those entries of relevance × tf in the entry / its length × idf, query terms left out."""
    from gitwiki.index.tokens import query_terms as fts_terms

    store = lab.mem.search_index
    base = lever_main(lab, q)
    top = sorted(base.items(), key=lambda kv: -kv[1])[:k]
    chunks_of = lab.chunks_of
    weight: dict[str, float] = {}
    asked = set(fts_terms(q.words))
    texts = store.indexed_text([c for key, _ in top for c in chunks_of.get(key, [])])
    for key, rel in top:
        tokens = " ".join(" ".join(texts.get(c, ())) for c in chunks_of.get(key, [])).split()
        if not tokens:
            continue
        counts: dict[str, int] = {}
        for t in tokens:
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            if t not in asked and t.isalpha() and len(t) > 2:
                weight[t] = weight.get(t, 0.0) + rel * c / len(tokens)
    if not weight:
        return []
    df = store.term_chunks(list(weight))
    rows = lab.rows
    scored = {t: w * np.log(rows / (1 + df.get(t, 0))) for t, w in weight.items() if df.get(t, 0) > 1}
    return sorted(scored.items(), key=lambda kv: -kv[1])[:n]


def make_lexical_prf(k: int, beta: float, n: int = 10) -> Callable[[Lab, Question], dict]:
    """Lexical pseudo-relevance feedback (RM3-like): BM25 run again for the `n` most distinctive terms of the top
    `k` fused entries (`feedback_terms`); each chunk's lexical score = its BM25 for the query / the list's best +
    beta × its BM25 for the feedback terms / that list's best; then fused with the dense ranking as now."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.index.tokens import fts_any

        if not q.lexical or not q.dense:
            return lever_main(lab, q)
        expansion = feedback_terms(lab, q, k, n)
        match = fts_any(t for t, _ in expansion)
        if match is None:
            return lever_main(lab, q)
        extra = lab.mem.search_index.lexical_ranked(match, lab.depth)
        top_q, top_e = q.lexical[0][1], (extra[0][1] if extra else 1.0)
        lexical: dict[int, float] = {c: s / top_q for c, s in q.lexical}
        for c, s in extra:
            lexical[c] = lexical.get(c, 0.0) + beta * s / top_e
        merged = sorted(lexical.items(), key=lambda kv: -kv[1])[: lab.depth]
        return fused_entries(lab, [merged, q.dense])

    return lever


SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def windows(text: str, size: int = 40) -> list[str]:
    """An entry's text as sentences (and lines), merged into windows of up to `size` words; a longer sentence is
    cut into `size`-word pieces."""
    out: list[str] = []
    current: list[str] = []
    for sentence in SENTENCE.split(text):
        words = sentence.split()
        if not words:
            continue
        for i in range(0, len(words), size):
            piece = words[i : i + size]
            if current and len(current) + len(piece) > size:
                out.append(" ".join(current))
                current = []
            current.extend(piece)
    if current:
        out.append(" ".join(current))
    return out


def window_vectors(lab: Lab, key: tuple[str, int], titled: bool) -> np.ndarray:
    """The vectors of an entry's windows (MiniLM, as the index embeds), embedded once per run; `titled` puts the
    entry's title before each window."""
    cache = lab.window_cache.setdefault(titled, {})
    if key not in cache:
        entry = lab.entries[key]
        parts = windows(entry.text)
        if titled:
            parts = [f"{entry.title} — {w}" for w in parts]
        cache[key] = lab.embedder.embed_documents(parts or [entry.title])
    return cache[key]


def make_sentences(gamma: float, top: int = 20, titled: bool = False) -> Callable[[Lab, Question], dict]:
    """Sentence-level dense rescoring: each of the fused ranking's first `top` entries gets its windows' best
    cosine with the query (`window_vectors`), normalized over those entries (DBSF) and added × gamma to its
    relevance; the others keep theirs (all below, the addition is ≥ 0)."""

    def lever(lab: Lab, q: Question) -> dict:
        from gitwiki.search import ranking

        base = lever_main(lab, q)
        first = [k for k, _ in sorted(base.items(), key=lambda kv: -kv[1])[:top] if k in lab.entries]
        best = [(i, float((window_vectors(lab, k, titled) @ q.query).max())) for i, k in enumerate(first)]
        best.sort(key=lambda kv: -kv[1])
        out = dict(base)
        for i, norm in ranking.dbsf(best):
            out[first[i]] = base[first[i]] + gamma * norm
        return ranking.relative(out)

    return lever


def make_slot(k: int, sides: str) -> Callable[[Lab, Question], dict]:
    """Each named ranker's first entry (`d` dense, `l` lexical) kept among the fused top `k`: raised just above the
    k-th entry's relevance when fusion put it lower (the issue's misses: dense rank 1, fused out of the top 10)."""

    def lever(lab: Lab, q: Question) -> dict:
        fused = fused_entries(lab, [q.lexical, q.dense])
        for side, ranked in (("d", q.dense), ("l", q.lexical)):
            if side not in sides or not ranked:
                continue
            first = lab.entry_of[ranked[0][0]]
            order = sorted(fused.values(), reverse=True)
            if first in fused and len(order) > k and fused[first] < order[k - 1]:
                fused[first] = order[k - 1] + 1e-9
        return fused

    return lever


def make_centered(components: int, redo: bool = False) -> Callable[[Lab, Question], dict]:
    """The dense side over centered vectors: the memory's mean chunk vector taken off both sides (and its first
    `components` principal directions, all-but-the-top), cosines again. `redo`: no centering (the check that a
    dense list rebuilt from the vectors gives main's ranks)."""

    def lever(lab: Lab, q: Question) -> dict:
        key = (components, redo)
        if key not in lab.centered:
            m = lab.extra_matrix.astype(np.float64)
            mu = np.zeros(m.shape[1]) if redo else m.mean(axis=0)
            x = m - mu
            top = np.linalg.svd(x, full_matrices=False)[2][:components] if components else np.zeros((0, m.shape[1]))
            x = x - (x @ top.T) @ top
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            lab.centered[key] = (mu, top, x)
        mu, top, x = lab.centered[key]
        v = q.query.astype(np.float64) - mu
        v = v - (v @ top.T) @ top
        scores = x @ (v / np.linalg.norm(v))
        best = np.argsort(-scores)[: lab.depth]
        dense = [(int(lab.extra_ids[i]), float(scores[i])) for i in best]
        return fused_entries(lab, [q.lexical, dense])

    return lever


LEVERS: dict[str, Callable[[Lab, Question], dict]] = {
    "redense": make_centered(0, redo=True),
    "center": make_centered(0),
    "abtt1": make_centered(1),
    "abtt3": make_centered(3),
    "main": lever_main,
    "minmax": lever_minmax,
    "prf3-0.5": make_prf(3, 0.5),
    "prf5-0.5": make_prf(5, 0.5),
    "prf3-1": make_prf(3, 1.0),
    "prf1-0.5": make_prf(1, 0.5),
    "topic-0.2": make_topic_prior(0.2),
    "topic-0.5": make_topic_prior(0.5),
    "topic-1": make_topic_prior(1.0),
    "first-0.5": make_first_chunk(0.5),
    "first-1": make_first_chunk(1.0),
    "entry-fusion": make_entry_fusion(),
    "nostamp": make_nostamp(),
    "lexsum-1": make_lexical_sum(1.0),
    "lexsum-0.5": make_lexical_sum(0.5),
    "second-0.3": make_second(0.3, False),
    "second-0.5r": make_second(0.5, True),
    "second-0.15": make_second(0.15, False),
    "adapt-cov-step": make_adaptive("cov-step"),
    "adapt-cov-linear": make_adaptive("cov-linear"),
    "adapt-z": make_adaptive("z"),
    "lexprf1-0.3": make_lexical_prf(1, 0.3),
    "lexprf3-0.3": make_lexical_prf(3, 0.3),
    "lexprf3-0.5": make_lexical_prf(3, 0.5),
    "sent-0.3": make_sentences(0.3),
    "sent-0.5": make_sentences(0.5),
    "sent-0.5t": make_sentences(0.5, titled=True),
    "slot-d3": make_slot(3, "d"),
    "slot-d5": make_slot(5, "d"),
    "slot-dl3": make_slot(3, "dl"),
}


def prepare(lab: Lab) -> None:
    ids = np.array(sorted(lab.vectors))
    lab.extra_ids = ids  # type: ignore[attr-defined]
    lab.extra_matrix = np.stack([lab.vectors[int(i)] for i in ids])  # type: ignore[attr-defined]
    first: dict = {}
    for cid in sorted(lab.entry_of):
        first.setdefault(lab.entry_of[cid], cid)
    lab.first_chunk = first  # type: ignore[attr-defined]
    by_topic: dict[str, list[np.ndarray]] = {}
    for key, cid in first.items():
        if cid in lab.vectors:
            by_topic.setdefault(key[0], []).append(lab.vectors[cid])
    cents = {t: np.mean(v, axis=0) for t, v in by_topic.items()}
    lab.topic_centroids = {t: c / np.linalg.norm(c) for t, c in cents.items()}  # type: ignore[attr-defined]
    lab.entries = {(e.topic, e.start_line): e for e in lab.mem.entries()}  # type: ignore[attr-defined]
    chunks_of: dict = {}
    for cid, key in sorted(lab.entry_of.items()):
        chunks_of.setdefault(key, []).append(cid)
    lab.chunks_of = chunks_of  # type: ignore[attr-defined]
    lab.rows = lab.mem.search_index.term_stats([]).rows  # type: ignore[attr-defined]
    lab.embedder = lab.mem.wiki.embedder()  # type: ignore[attr-defined]
    lab.window_cache = {}  # type: ignore[attr-defined]
    lab.centered = {}  # type: ignore[attr-defined]


def ranks_with(
    lab: Lab, lever: Callable[[Lab, Question], dict], matcher: Callable | None = None, cap: int = 0, free: int = 0
) -> list[int | None]:
    from gitwiki.memory import search as ms
    from gitwiki.memory import stores

    cap = cap or ms.PER_TOPIC  # 0: memory search's own cap

    by_words = {q.words: q for q in lab.ranked.values()}
    original, original_matched, original_cap = ms._relevance, ms._matched, ms.PER_TOPIC

    def relevance(mem, files, words, embedder):
        return lever(lab, by_words[words]), "hybrid"

    original_capped = ms._capped
    if free:  # the cap counts only hits after the first `free`

        def capped(hits):
            return hits[:free] + [h for h in original_capped(hits) if h not in hits[:free]]

        ms._capped = capped  # type: ignore[assignment]
    ms._relevance = relevance  # type: ignore[assignment]
    ms._matched = matcher or original_matched  # type: ignore[assignment]
    ms.PER_TOPIC = cap
    try:
        out: list[int | None] = []
        for q in lab.questions:
            hits = stores.search(lab.mem, ms.MemoryQuery(q["question"], limit=DEPTH)).hits
            got = [lab.note_of.get((h.entry.topic, h.entry.index)) for h in hits]
            out.append(got.index(q["relevant"][0]) + 1 if q["relevant"][0] in got else None)
        return out
    finally:
        ms._relevance, ms._matched, ms.PER_TOPIC = original, original_matched, original_cap  # type: ignore[assignment]
        ms._capped = original_capped  # type: ignore[assignment]


def matcher_of(name: str) -> Callable:
    """Names: `or`, `topN` (the N best by relevance admitted), `aboveX` (relevance ≥ X × the best AND match)."""
    if name == "or":
        return make_admit("or", 0)
    if name.startswith("top"):
        return make_admit("top", float(name[3:]))
    return make_admit("above", float(name[5:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("til", "simonw"), default="til")
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_offline_model()
    lab = open_lab(args.set)
    prepare(lab)
    if "nostamp" in args.levers:
        lab.nostamp = alt_matrix(lab, args.set)  # type: ignore[attr-defined]
    from memory_recall_eval import gitwiki_ranks

    real = gitwiki_ranks(lab.mem, lab.note_of, lab.questions)
    out: dict[str, Any] = {"set": args.set}
    base = None
    for spec in args.levers.split(","):
        # lever[+matcher][@cap[/free]]: e.g. main+top5@99, main@3/5 (the cap counts after the top 5)
        name, _, capping = spec.partition("@")
        cap, _, free = capping.partition("/")
        lever, _, matcher = name.partition("+")
        ranks = ranks_with(lab, LEVERS[lever], matcher_of(matcher) if matcher else None, int(cap or 0), int(free or 0))
        name = spec
        if name == "main":
            base = ranks
            assert ranks == real, "the lab's main must reproduce memory search"
        row = {"all": metrics(ranks)}
        for kind in KINDS:
            row[kind] = metrics([r for r, q in zip(ranks, lab.questions, strict=True) if q["kind"] == kind])
        if base is not None and name != "main":
            row["vs main"] = paired(ranks, base)
        row["ranks"] = ranks
        out[name] = row
        if not args.json:
            m = row["all"]
            vs = row.get("vs main", {})
            print(
                f"{name:14} {m['hit@1']:.3f} {m['hit@5']:.3f} {m['mrr@10']:.3f}  "
                + " ".join(f"{k[:4]} {row[k]['mrr@10']:.3f}" for k in KINDS)
                + (f"  dMRR {vs['mrr@10']:+.3f} {vs['mrr@10 95%']}  dhit5 {vs['hit@5']:+.3f}" if vs else ""),
                flush=True,
            )
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
