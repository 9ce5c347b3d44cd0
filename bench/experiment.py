"""Ranking experiments (docs/research/ranking-experiments.md), run live through one of the eval scripts with the
searcher patched:

--windows          dense over windows: a long chunk scores as its best window (its own vector, which the model
                   reads to 256 word pieces, and vectors of --words-word windows every --stride words, each
                   prefixed with the chunk's breadcrumb or title); window vectors cached in the work dir
--phrase W         lexical proximity: W × the BM25 of the query's adjacent term pairs as FTS5 phrases,
                   added to each chunk's BM25 before fusion
--query-stop       drop question boilerplate (QUESTION_WORDS) from the lexical query
--no-prefix        embed each chunk's text alone, without its breadcrumb or title line (re-embeds every chunk)
--norm N           fusion normalization per ranking (default ranking.dbsf, mean ± 3 std as bounds, clipped at 0;
                   before the third round minmax over the list): dbsf1 (dbsf also clipped at 1), dbsfbg (dense
                   bounds from the query's cosines over every chunk searched, not the top 200), zscore ((s − list
                   min) / std, so a chunk absent from a list still counts as its worst), tmm (theoretical min-max:
                   BM25 / max with min 0; cosine from --floor to the list max, clipped at 0)
--floor F          tmm's dense floor: a cosine, or "bg" for the query's mean cosine over every chunk searched
--fill-dense       lexical candidates outside the dense top 200 enter the dense list with their true cosine
                   (normalized by the top 200's statistics) instead of counting 0 there
--confidence C     weight each ranker by its confidence, 1 − its 10th normalized score, blended C : 1 − C with
                   the even split
--split-ids        the dense query reads identifiers split (`rotateSigningKey` → rotate signing key, snake_case too)
--modes M,M        run only these eval modes (labels as printed, e.g. hybrid-score): faster replays
--max-pieces N     chunk cap in estimated word pieces (chunker.MAX_PIECES, default 200)
--balanced         a section over the cap is cut into equal runs of blocks instead of greedy ones (no small tail)
--overlap          each further piece of a long section starts with the previous piece's last block
--merge-small N    a chunk under N estimated word pieces joins the chunk before it on the page (that chunk's
                   breadcrumb kept) while the two stay under the cap
--query-cache      cache query vectors on disk (ms/q then leaves out the query embedding)

Lexical levers (tokenization and BM25; the eval scripts rebuild the FTS rows and reuse the cached vectors,
which are keyed by chunk text, so none of these re-embeds):
--stem S           stemmer: english (default), porter or none
--stop L           stop list: ours (default), none, lucene (the 33-word Lucene/bm25s list) or long (ours + LONG_STOP)
--split H          identifiers and hyphenated words: both (default: whole and parts), whole or parts
--no-numbers       drop tokens made only of digits
--no-mnemonic      tldr's mnemonic brackets as brackets (`E[x]tract` → e, x, tract), as before tokens version 2
--bm25 K1,B        score BM25 in Python (`PyBM25`: FTS5's formula, column weights and all) with another k1 / b;
                   FTS5 still finds the matching rows, the Python scorer re-ranks all of them
--head-weight W    BM25 weight of the head column (title, headings, tags; default store.fulltext.FTS_WEIGHTS[0])
--query-tf         count a repeated query term once per occurrence (FTS5: the term repeated in the OR)
--min-match F      drop matches holding fewer than F of the query's distinct terms (Python scorer)
--idf-power P      raise each term's IDF to P (rare terms count more; Python scorer)

Page-level fusion (gitwiki.config.PAGE_SHARE) was measured here before it became the default.

  python bench/experiment.py [options] wikidev_eval.py [its args]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import runpy
import sys
from collections import Counter, defaultdict
from pathlib import Path

import benchlib
import numpy as np
import Stemmer
from benchlib import ROOT, use_offline_model

from gitwiki.index import embed, indexer, tokens
from gitwiki.index.store import embed_text, fulltext
from gitwiki.index.tokens import fts_any, tokenize
from gitwiki.markdown import chunker
from gitwiki.search import ranking, relevance
from gitwiki.search import searcher as search

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


class DenseList(list):
    """The dense ranker's list, tagged so the fusion normalizer knows which ranker it scales; `head` is how many
    entries the ranker chose (--fill-dense appends more, normalized by the head's statistics)."""

    head = 0
    floor = 0.0  # the query's mean cosine over every chunk searched
    spread = 0.0  # and its standard deviation


def normalizer(norm: str, floor: str):
    """A replacement for ranking.dbsf: (chunk id, normalized score) per entry of one ranking."""

    def scale(ranking):
        if not ranking:
            return []
        dense = isinstance(ranking, DenseList)
        head = [s for _, s in ranking[: ranking.head or len(ranking)]] if dense else [s for _, s in ranking]
        low, high = min(head), max(head)
        mean = sum(head) / len(head)
        std = (sum((s - mean) ** 2 for s in head) / len(head)) ** 0.5
        if norm == "dbsfbg" and dense:  # the corpus's cosine distribution instead of the top 200's
            lo, span = ranking.floor - 3 * ranking.spread, 6 * ranking.spread
        elif norm in ("dbsf", "dbsf1", "dbsfbg"):
            lo, span = mean - 3 * std, 6 * std
        elif norm == "zscore":
            lo, span = low, std
        elif norm == "tmm":
            lo = (ranking.floor if floor == "bg" else float(floor)) if dense else 0.0
            span = high - lo
        else:
            lo, span = low, high - low
        if span <= 0:
            return [(cid, 1.0) for cid, _ in ranking]
        top = 1.0 if norm == "dbsf1" else float("inf")
        return [(cid, min(top, max(0.0, (s - lo) / span))) for cid, s in ranking]

    return scale


def confident_fusion(blend: float, scale):
    """Score fusion whose weights follow each ranker's confidence: 1 − its 10th normalized score."""

    def weights(rankings):
        conf = []
        for r in rankings:
            normed = scale(r)
            conf.append(1.0 - normed[min(9, len(normed) - 1)][1] / (normed[0][1] or 1.0) if normed else 0.0)
        total = sum(conf)
        even = 1.0 / len(rankings)
        return [blend * (c / total if total > 0 else even) + (1 - blend) * even for c in conf]

    def fuse(rankings, w=None):
        return original_score_fusion(rankings, w or weights(rankings))

    def page(rankings, page_of, w=None):
        return original_page_fusion(rankings, page_of, w or weights(rankings))

    return fuse, page


original_score_fusion = ranking.score_fusion
original_page_fusion = ranking.page_fusion


# camelCase (rotateSigningKey) and snake_case (HF_TOKEN); not PascalCase (GitHub, PyPI: names) nor hyphens
IDENTIFIER = r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b"


def split_identifiers(text: str) -> str:
    """camelCase and snake_case identifiers as separate words, beside the text as written."""
    parts = []
    for token in re.findall(IDENTIFIER, text):
        words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", token))
        parts.append(re.sub(r"[_-]+", " ", words).lower())
    return f"{text} ({'; '.join(parts)})" if parts else text


def install_fusion_levers(args) -> None:
    """--norm, --floor, --fill-dense, --confidence, --modes (the normalization experiments)."""
    if args.modes:
        wanted = set(args.modes.split(","))
        benchlib.MODES = tuple(m for m in benchlib.MODES if (m[0] if m[1] is None else f"{m[0]}-{m[1]}") in wanted)
    scale = normalizer(args.norm or "dbsf", args.floor)
    if args.norm:  # score_fusion and page_fusion normalize with ranking.dbsf unless told
        ranking.dbsf = scale
    if args.confidence:
        fuse, page = confident_fusion(args.confidence, scale)
        ranking.FUSERS["score"] = fuse
        ranking.page_fusion = page  # rank_pages looks it up in its module at each call
    lexical_ids: dict[str, set[int]] = {}
    original_lexical = search.Searcher._lexical

    def lexical(self, query, blob_paths, blob_of, pages):
        ranked = original_lexical(self, query, blob_paths, blob_of, pages)
        lexical_ids["last"] = {cid for cid, _ in ranked}
        return ranked

    original_dense = search.Searcher._dense

    def dense(self, view, query, embedder, blob_paths, blob_of, pages):
        ranked, background = original_dense(self, view, query, embedder, blob_paths, blob_of, pages)
        out = DenseList(ranked)
        out.head = len(ranked)
        out.floor = background.mean if background else 0.0
        out.spread = background.std if background else 0.0
        if args.fill_dense and ranked:
            matrix = self._matrix(view, embedder.model_id, blob_paths)
            have = {cid for cid, _ in ranked}
            rows = [i for i, cid in enumerate(matrix.ids) if cid in lexical_ids.get("last", ()) and cid not in have]
            if rows:
                scores = matrix.matrix[rows] @ embedder.embed_query(query)
                extra = zip((matrix.ids[i] for i in rows), map(float, scores), strict=True)
                blob_of.update((matrix.ids[i], matrix.blobs[i]) for i in rows)
                out.extend(sorted(extra, key=lambda kv: -kv[1]))
        return out, background

    search.Searcher._lexical = lexical
    search.Searcher._dense = dense


def install_split_ids() -> None:
    """After the query cache, so the cache keys the split text."""
    from gitwiki.index.onnx_embed import OnnxEmbedder

    def split(original):
        return lambda self, text: original(self, split_identifiers(text))

    for embedder_class in (embed.FastembedEmbedder, OnnxEmbedder):  # fastembed's models load through either
        embedder_class.embed_query = split(embedder_class.embed_query)


GREEDY = chunker._pieces


def block_runs(lines, start, end, blocks, balanced: bool, overlap: bool):
    """chunker._pieces with the --balanced and --overlap variants."""
    text = "\n".join(lines[start:end])
    if chunker.estimate_pieces(text) <= chunker.MAX_PIECES or len(blocks) < 2:
        yield start, end
        return
    spans = [(b, blocks[i + 1][0] if i + 1 < len(blocks) else end) for i, (b, _) in enumerate(blocks)]
    costs = [chunker.estimate_pieces("\n".join(lines[a:b])) for a, b in spans]
    groups: list[list[int]] = [[]]
    if balanced:  # as many runs as the greedy cut makes, each block in the run its middle falls in
        runs = sum(1 for _ in GREEDY(lines, start, end, blocks))
        share, before = sum(costs) / runs, 0
        groups = [[] for _ in range(runs)]
        for i, cost in enumerate(costs):
            groups[min(runs - 1, int((before + cost / 2) / share))].append(i)
            before += cost
        groups = [g for g in groups if g]
    else:
        size = 0
        for i, cost in enumerate(costs):
            if groups[-1] and size + cost > chunker.MAX_PIECES:
                groups.append([])
                size = 0
            groups[-1].append(i)
            size += cost
    for n, group in enumerate(groups):
        first = group[0] - 1 if overlap and n > 0 and costs[group[0] - 1] <= chunker.MAX_PIECES // 2 else group[0]
        yield (start if n == 0 else spans[first][0]), (end if n == len(groups) - 1 else spans[group[-1]][1])


def merge_small(page, least: int):
    """Chunks under `least` pieces folded into the chunk before them, or else the one after, while the two fit
    the cap."""

    def fits(a, b) -> bool:
        return chunker.estimate_pieces(a.text + b.text) <= chunker.MAX_PIECES

    def small(c) -> bool:
        return chunker.estimate_pieces(c.text) < least

    out: list = []
    pending = None  # a small chunk the one before could not take
    for c in page.chunks:
        if pending is not None:
            if fits(pending, c):
                c = c._replace(start_line=pending.start_line, text=pending.text + "\n\n" + c.text)
            else:
                out.append(pending)
            pending = None
        prev = out[-1] if out else None
        if small(c) and prev is not None and fits(prev, c):
            out[-1] = prev._replace(end_line=c.end_line, text=prev.text + "\n\n" + c.text)
        elif small(c):
            pending = c
        else:
            out.append(c)
    if pending is not None:
        out.append(pending)
    return page._replace(chunks=tuple(c._replace(ord=i) for i, c in enumerate(out)))


def install_chunk_levers(args) -> None:
    """--max-pieces, --balanced, --overlap, --merge-small (the chunking experiments)."""
    if args.max_pieces:
        chunker.MAX_PIECES = args.max_pieces
    if args.balanced or args.overlap:

        def pieces(lines, start, end, blocks):
            return block_runs(lines, start, end, blocks, args.balanced, args.overlap)

        chunker._pieces = pieces
    if args.merge_small:
        original_parse = indexer.parse_page
        indexer.parse_page = lambda text: merge_small(original_parse(text), args.merge_small)


# ---- lexical levers ------------------------------------------------------------------------------------

LUCENE_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with"
)
# Common English function words our list leaves out (from the longer SMART / scikit-learn lists).
LONG_STOP = (
    "across afterwards almost alone along already also although always among amongst another anyhow anyone "
    "anything anyway anywhere around became become becomes becoming beforehand behind beside besides beyond "
    "cannot could either else elsewhere enough etc even ever every everyone everything everywhere except "
    "first former formerly hence hereafter hereby herein however indeed instead last latter latterly least "
    "less many may meanwhile might moreover mostly much must namely neither never nevertheless next nobody "
    "none noone nothing nowhere often otherwise perhaps please rather seem seemed seeming seems several "
    "shall since somehow someone something sometime sometimes somewhere still thence thereafter thereby "
    "therefore therein thereupon though thus together toward towards upon us via well whatever whence "
    "whenever whereafter whereas whereby wherein whereupon wherever whether whither whoever whole whose "
    "within without yet"
)


def variant_words(text: str, split: str, numbers: bool) -> list[str]:
    """tokens.words with identifiers kept whole, split into parts, or both (what tokens.words gives)."""
    out: list[str] = []
    for match in tokens._WORD.finditer(text):
        word = match.group()
        parts = [p for chunk in re.split(r"[_\-.']", word) for p in tokens._split_camel(chunk)] or [word]
        whole = re.sub(r"[_\-.']", "", word)
        keep = [whole] if len(parts) == 1 else {"both": [whole, *parts], "whole": [whole], "parts": parts}[split]
        for part in keep:
            if not part.isascii() and tokens._cjk().search(part):
                out.extend(part)
            elif numbers or not part.isdigit():
                out.append(part.lower())
    return out


def patch_tokenizer(stem: str, stop: str, split: str, numbers: bool, mnemonic: bool) -> None:
    """Replace tokens.tokenize (indexing, queries, the weak flag) with a variant."""
    stop_words = {
        "ours": tokens.STOP_WORDS,
        "none": frozenset(),
        "lucene": frozenset(LUCENE_STOP.split()),
        "long": tokens.STOP_WORDS | set(LONG_STOP.split()),
    }[stop]
    stemmer = None if stem == "none" else Stemmer.Stemmer(stem)

    def tokenize(text: str) -> list[str]:
        text = tokens._MNEMONIC.sub(r"\1", text) if mnemonic else text
        kept = [w for w in variant_words(text, split, numbers) if w not in stop_words]
        return stemmer.stemWords(kept) if stemmer else kept

    tokens.tokenize = search.tokenize = relevance.tokenize = tokenize


def query_terms(query: str) -> list[str]:
    """The query's terms with repeats, falling back to its stop words as tokens.fts_query does."""
    return tokens.tokenize(query) or tokens._stemmer().stemWords(tokens.words(query))


class PyBM25:
    """FTS5's bm25() in Python with any k1 / b: column-weighted term counts, one length normalization over
    the whole row (all columns), IDF log((N - n + 0.5) / (n + 0.5)) floored at 1e-6, as in fts5_aux.c."""

    def __init__(self, store, k1: float, b: float, idf_power: float, min_match: float) -> None:
        self.k1, self.b, self.idf_power, self.min_match = k1, b, idf_power, min_match
        self.postings: dict[str, dict[int, float]] = defaultdict(dict)
        self.length: dict[int, int] = {}
        for rowid, head, body in store.conn.execute("SELECT rowid, head, body FROM fts"):
            columns = (head.split(), body.split())
            self.length[rowid] = sum(map(len, columns))
            for weight, terms in zip(fulltext.FTS_WEIGHTS, columns, strict=True):
                for term, count in Counter(terms).items():
                    post = self.postings[term]
                    post[rowid] = post.get(rowid, 0.0) + weight * count
        self.blob = dict(store.conn.execute("SELECT id, blob FROM chunks"))
        self.avgdl = sum(self.length.values()) / max(len(self.length), 1)

    def score(self, terms: list[str], query_tf: bool) -> list[tuple[int, str, float]]:
        n = len(self.length)
        scores: dict[int, float] = defaultdict(float)
        matched: Counter[int] = Counter()
        wanted = Counter(terms)
        for term, times in wanted.items():
            post = self.postings.get(term, {})
            idf = max(math.log((n - len(post) + 0.5) / (len(post) + 0.5)), 1e-6) ** self.idf_power
            weight = idf * (times if query_tf else 1)
            for rowid, tf in post.items():
                norm = self.k1 * (1 - self.b + self.b * self.length[rowid] / self.avgdl)
                scores[rowid] += weight * tf * (self.k1 + 1) / (tf + norm)
                matched[rowid] += 1
        need = math.ceil(self.min_match * len(wanted))
        kept = {r: s for r, s in scores.items() if matched[r] >= need} or scores
        return [(r, self.blob[r], s) for r, s in sorted(kept.items(), key=lambda kv: -kv[1])]


def install_lexical_levers(args) -> None:
    """--stem, --stop, --split, --no-numbers, --no-mnemonic, --head-weight, --bm25, --query-tf, --min-match,
    --idf-power: route the searcher's lexical ranking through PyBM25, or repeat query terms in the FTS5 query."""
    variant = (args.stem, args.stop, args.split, not args.no_numbers, not args.no_mnemonic)
    if variant != ("english", "ours", "both", True, True):
        patch_tokenizer(*variant)
    if args.head_weight is not None:
        fulltext.FTS_WEIGHTS = (args.head_weight, fulltext.FTS_WEIGHTS[1])
    scorers: dict[int, PyBM25] = {}

    def lexical(self, query, blob_paths, blob_of, pages):
        key = id(self.store)
        if key not in scorers:
            k1, b = args.bm25 or (1.2, 0.75)
            scorers[key] = PyBM25(self.store, k1, b, args.idf_power, args.min_match)
        found = scorers[key].score(query_terms(query), args.query_tf)
        pool = search.candidates([(cid, blob, s) for cid, blob, s in found if blob in blob_paths], pages)
        blob_of.update((cid, blob) for cid, blob, _ in pool)
        return [(cid, s) for cid, _, s in pool]

    if args.bm25 or args.min_match or args.idf_power != 1.0:
        search.Searcher._lexical = lexical
    elif args.query_tf:
        search.fts_query = lambda text: fts_any(query_terms(text))


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
    ap.add_argument("--norm", choices=("minmax", "zscore", "dbsf", "dbsf1", "dbsfbg", "tmm"))
    ap.add_argument("--floor", default="0", help='tmm dense floor: a cosine or "bg"')
    ap.add_argument("--fill-dense", action="store_true")
    ap.add_argument("--confidence", type=float, default=0.0)
    ap.add_argument("--split-ids", action="store_true")
    ap.add_argument("--modes", help="comma-separated eval mode labels to run")
    ap.add_argument("--max-pieces", type=int, default=0)
    ap.add_argument("--balanced", action="store_true")
    ap.add_argument("--overlap", action="store_true")
    ap.add_argument("--merge-small", type=int, default=0)
    ap.add_argument("--stem", choices=("english", "porter", "none"), default="english")
    ap.add_argument("--stop", choices=("ours", "none", "lucene", "long"), default="ours")
    ap.add_argument("--split", choices=("both", "whole", "parts"), default="both")
    ap.add_argument("--no-numbers", action="store_true")
    ap.add_argument("--no-mnemonic", action="store_true")
    ap.add_argument("--bm25", type=lambda v: tuple(map(float, v.split(","))), help="k1,b for the Python BM25")
    ap.add_argument("--query-tf", action="store_true")
    ap.add_argument("--head-weight", type=float)
    ap.add_argument("--min-match", type=float, default=0.0)
    ap.add_argument("--idf-power", type=float, default=1.0)
    ap.add_argument("script")
    args, rest = ap.parse_known_args()
    use_offline_model()
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    wcache = NpzCache(args.cache_dir / "windows.npz")
    qcache = NpzCache(args.cache_dir / "queries.npz")
    install_fusion_levers(args)
    install_chunk_levers(args)
    install_lexical_levers(args)
    state: dict = {"ids": None, "owner": None, "matrix": None, "embedded": 0}

    if args.query_cache:
        from gitwiki.index.onnx_embed import OnnxEmbedder

        def cached(original):
            def embed_query(self, text):
                key = hashlib.sha1(text.encode()).hexdigest()
                if key not in qcache.data:
                    qcache.data[key] = original(self, text)
                    qcache.dirty = True
                return qcache.data[key]

            return embed_query

        for embedder_class in (embed.FastembedEmbedder, OnnxEmbedder):  # fastembed's models load through either
            embedder_class.embed_query = cached(embedder_class.embed_query)
    if args.split_ids:
        install_split_ids()

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
        from gitwiki.index.store import pages, vectors

        # both parts of the store that compose the embedded text: the chunk's hash and the text embedded
        pages.embed_text = vectors.embed_text = lambda breadcrumb, text, title: text

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
