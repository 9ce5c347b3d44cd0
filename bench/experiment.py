"""Issue-15 ranking experiments, run live through one of the eval scripts with the searcher patched:

--windows          dense over windows: a long chunk scores as its best window (its own vector, which the model
                   reads to 256 word pieces, and vectors of --words-word windows every --stride words, each
                   prefixed with the chunk's breadcrumb or title); window vectors cached in the work dir
--phrase W         lexical proximity: W × the BM25 of the query's adjacent term pairs as FTS5 phrases,
                   added to each chunk's BM25 before fusion
--query-stop       drop question boilerplate (QUESTION_WORDS) from the lexical query
--no-prefix        embed each chunk's text alone, without its breadcrumb or title line (re-embeds every chunk)
--query-cache      cache query vectors on disk (ms/q then leaves out the query embedding)

Page-level fusion (gitwiki.ranking.PAGE_SHARE) was measured here before it became the default.

  python bench/experiment.py [options] wikidev_eval.py [its args]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import runpy
import sys
from pathlib import Path

import numpy as np
from benchlib import ROOT, use_offline_model

from gitwiki import embed, search
from gitwiki.store import embed_text
from gitwiki.tokens import fts_any, tokenize

QUESTION_WORDS = (
    "difference differ way ways possible need needs want wants make makes get gets use using used instead just still "
    "also able else somewhere something anything thing things tell know find show work works"
)


class NpzCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, np.ndarray] = {}
        self.dirty = False
        if path.is_file():
            loaded = np.load(path)
            self.data = {k: loaded[k] for k in loaded.files}

    def save(self) -> None:
        if self.dirty:
            np.savez(self.path, **self.data)
            self.dirty = False


def windows(context: str, text: str, size: int, stride: int) -> list[str]:
    """The extra windows of a chunk: none when the first `stride + 50` words hold all of it."""
    words = text.split()
    out = []
    start = stride
    while start + 50 < len(words):
        body = " ".join(words[start : start + size])
        out.append(f"{context}\n{body}" if context else body)
        start += stride
    return out


def phrase_query(query: str) -> str | None:
    terms = list(dict.fromkeys(tokenize(query)))
    pairs = [f'"{a} {b}"' for a, b in zip(terms, terms[1:], strict=False) if a != b]
    return " OR ".join(pairs) or None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", action="store_true")
    ap.add_argument("--words", type=int, default=200)
    ap.add_argument("--stride", type=int, default=150)
    ap.add_argument("--pool", choices=("max", "mean"), default="max", help="how a chunk's window cosines combine")
    ap.add_argument("--phrase", type=float, default=0.0)
    ap.add_argument("--query-cache", action="store_true")
    ap.add_argument("--no-prefix", action="store_true", help="embed chunks without their breadcrumb or title")
    ap.add_argument("--query-stop", action="store_true", help="drop question boilerplate from the lexical query")
    ap.add_argument("--cache-dir", type=Path, required=True, help="where the window and query vectors are kept")
    ap.add_argument("script")
    args, rest = ap.parse_known_args()
    use_offline_model()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    wcache = NpzCache(args.cache_dir / "windows.npz")
    qcache = NpzCache(args.cache_dir / "queries.npz")
    state: dict = {"ids": None, "owner": None, "matrix": None, "embedded": 0}

    if args.query_cache:
        original_query = embed.FastembedEmbedder.embed_query

        def embed_query(self, text):
            key = hashlib.sha1(text.encode()).hexdigest()
            if key not in qcache.data:
                qcache.data[key] = original_query(self, text)
                qcache.dirty = True
            return qcache.data[key]

        embed.FastembedEmbedder.embed_query = embed_query

    def extra_rows(store, embedder, ids):
        rows = store.chunks_by_id(ids)
        titles = {b: i.title for b, i in store.blob_info({r.blob for r in rows.values()}).items()}
        owner, texts = [], []
        for pos, cid in enumerate(ids):
            r = rows[cid]
            context = embed_text(r.breadcrumb, "", titles.get(r.blob, "")).rstrip("\n")
            for w in windows(context, r.text, args.words, args.stride):
                owner.append(pos)
                texts.append(w)
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        need = {k: t for k, t in zip(keys, texts, strict=True) if k not in wcache.data}
        todo = sorted(need.items(), key=lambda kv: len(kv[1]))
        for start in range(0, len(todo), 256):
            batch = todo[start : start + 256]
            matrix = embedder.embed_documents([t for _, t in batch])
            wcache.data.update((k, v) for (k, _), v in zip(batch, matrix, strict=True))
            wcache.dirty = True
            wcache.save()
            print(f"windows: embedded {start + len(batch)}/{len(todo)}", file=sys.stderr)
        state["embedded"] += len(todo)
        matrix = np.stack([wcache.data[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)
        return np.asarray(owner, dtype=np.int64), matrix

    original_dense = search.Searcher._dense

    def dense(self, view, query, embedder, blob_paths, blob_of, pages):
        base = self._matrix(view, embedder.model_id, blob_paths)
        if not base.ids:
            return original_dense(self, view, query, embedder, blob_paths, blob_of, pages)
        if state["ids"] is not base.ids:
            state["owner"], state["matrix"] = extra_rows(self.store, embedder, base.ids)
            state["ids"] = base.ids
        q = embedder.embed_query(query)
        scores = np.einsum("ij,j->i", base.matrix, q)
        background = search.Background(float(scores.mean()), float(scores.std()))
        if len(state["owner"]) and args.pool == "max":
            np.maximum.at(scores, state["owner"], state["matrix"] @ q)
        elif len(state["owner"]):  # mean of the chunk's own cosine and its windows'
            counts = np.ones_like(scores)
            np.add.at(scores, state["owner"], state["matrix"] @ q)
            np.add.at(counts, state["owner"], 1.0)
            scores = scores / counts
        order = np.argsort(-scores, kind="stable")
        pool = search.candidates(((base.ids[i], base.blobs[i], float(scores[i])) for i in order), pages)
        blob_of.update((cid, blob) for cid, blob, _ in pool)
        return [(cid, s) for cid, _, s in pool], background

    if args.windows:
        search.Searcher._dense = dense

    original_lexical = search.Searcher._lexical

    def lexical(self, query, blob_paths, blob_of, pages):
        ranked = original_lexical(self, query, blob_paths, blob_of, pages)
        match = phrase_query(query)
        if not ranked or match is None:
            return ranked
        bonus = {cid: s for cid, _, s in self.store.lexical(match, search.CANDIDATES * 4)}
        boosted = [(cid, s + args.phrase * bonus.get(cid, 0.0)) for cid, s in ranked]
        return sorted(boosted, key=lambda kv: -kv[1])

    if args.phrase:
        search.Searcher._lexical = lexical

    if args.no_prefix:  # chunk text alone, without the breadcrumb (or title) line before it
        from gitwiki import store

        store.embed_text = lambda breadcrumb, text, title: text

    if args.query_stop:
        # Question boilerplate: words that say how a question is asked, not what it is about.
        boiler = set(tokenize(QUESTION_WORDS))
        original_fts = search.fts_query

        def fts_query(text):
            terms = [t for t in dict.fromkeys(tokenize(text)) if t not in boiler]
            return fts_any(terms) if terms else original_fts(text)

        search.fts_query = fts_query

    sys.argv = [args.script, *rest]
    try:
        if args.script == "gitwiki":  # `gitwiki eval` on a repo's own questions
            from gitwiki.cli import main as cli

            cli(rest)
        else:
            runpy.run_path(str(ROOT / "bench" / args.script), run_name="__main__")
    finally:
        qcache.save()
        wcache.save()
        rows = len(state["owner"]) if state["owner"] is not None else 0
        print(json.dumps({"windows_embedded": state["embedded"], "window_rows": rows}), file=sys.stderr)


if __name__ == "__main__":
    main()
