"""Signals a wiki already carries (docs/research/signals.md): where the misses are, anchor text, and fitting the
fusion settings on the wiki's own titles, headings and link texts instead of labelled questions.

One process per set: the set is indexed as the eval scripts index it (same work dir, so their cached vectors are
reused), each question's hybrid candidates are fetched once, and every variant is replayed over them in pure Python
as `gitwiki eval --tune` replays its grid (`gitwiki.operations.tuning.replay`: hybrid score fusion, one chunk a
page). The `base` row is today's ranking and equals the eval scripts' hybrid-score row.

--misses          one line per question not at rank 1: where each ranker had its best answer page, and the page that
                  fusion put first with its ranks
--anchor W,...    anchor text as a third, page-level ranker: each page's anchor document is the link texts other
                  pages use for it (and, in a list item that starts with the link, the rest of the item: index.md's
                  descriptions), scored with BM25; its dbsf-normalized score weighs W in page fusion, the lexical and
                  dense sides sharing 1 − W
--anchor-field W,...  anchor text as a field of the lexical ranker: every chunk of a page gets its anchor terms in a
                  third column of weight W, scored with the Python BM25 (FTS5's formula: one length normalization
                  over all columns); `field=0` is the same scorer without anchors, the row to compare with;
                  --anchor-first puts the column on each page's first chunk only, --field-source descriptions (or
                  both) fills it with the page's front-matter description instead, --no-descriptions leaves the
                  list items' descriptions out of the anchor text
--anchor-add W,...  the page's anchor BM25 × W added to each of its chunks' lexical scores before fusion
--dense-description  a described page's first chunk re-embedded with its description (breadcrumb, description, text),
                  the dense ranking recomputed over the view's vectors; a control row with the vectors unchanged first
--pseudo          self-supervised fitting: the pages' titles, H2/H3 headings and incoming link texts as questions
                  for their pages; `tuning.fit` chooses among `tuning.GRID` on them (cross-validated, written only
                  when the held-out interval is above 0), and the choice is scored on the real questions; the fit on
                  the real questions (what `eval --tune` does) is shown beside it; --kinds title,heading,link
                  chooses the pseudo-questions, --cap how many of each

    python bench/signals_eval.py --set wiki-dev --misses --anchor 0.1,0.2 --pseudo
    python bench/signals_eval.py --set click | starlette | docs | cranfield | scifact | tldr

(tldr has no cached vectors here: its first run embeds 7,425 pages.)
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchlib import EVAL, ROOT, WORK, corpus_config, open_wiki, reset_text_index, timed_index, use_offline_model
from benchlib import write_repo as write_bench_repo
from wikidev_eval import wiki_set

from gitwiki.index.tokens import fts_text, tokenize
from gitwiki.markdown import links
from gitwiki.operations import tuning
from gitwiki.operations.evaluation import (
    DEPTH,
    Outcome,
    Question,
    first_rank,
    load_beir,
    load_questions,
    resolve_pages,
    score,
)
from gitwiki.search.ranking import SECOND_CHUNK, dbsf, fuse, page_fusion, rollup

HELD_OUT = ROOT / "bench" / "heldout"
SETS = {
    "wiki-dev": EVAL / "wiki-dev",
    "click": HELD_OUT / "click",
    "starlette": HELD_OUT / "starlette",
    "cranfield": EVAL / "cranfield",
    "scifact": EVAL / "scifact",
}


class Loaded:
    """A set's pages written as a repo, its corpus name, questions and the depth it is scored at."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.depth = DEPTH
        if name in ("wiki-dev", "click", "starlette"):
            found = wiki_set(SETS[name])
            self.corpus, self.pages = found.corpus, found.pages
            config = corpus_config(found.corpus, found.corpus)
            self.questions = resolve_pages(
                load_questions(found.questions), [p for p, _ in found.pages], f"{found.corpus}/"
            )
        elif name in ("cranfield", "scifact"):
            beir = load_beir(SETS[name])
            self.corpus, self.pages, self.questions = "beir", beir.pages, beir.questions
            config = corpus_config("beir", "wiki")
        elif name == "tldr":
            tldr = EVAL / "tldr"
            self.corpus = "tldr"
            self.pages = [
                (str(p.relative_to(tldr)), p.read_text(encoding="utf-8"))
                for p in sorted((tldr / "pages").rglob("*.md"))
            ]
            self.questions = load_questions(tldr / "questions.jsonl")
            self.depth = 10  # as tldr_eval.py
            config = corpus_config("tldr", "pages")
        elif name == "docs":  # this repository's docs and its own questions, as `gitwiki eval` runs them
            docs = ROOT / "docs"
            self.corpus = "docs"
            self.pages = [
                (str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
                for p in sorted(docs.rglob("*.md"))
                if "research" not in p.relative_to(docs).parts
            ]
            self.questions = load_questions(ROOT / ".gitwiki" / "eval.jsonl")
            config = corpus_config("docs", "docs")
        else:
            raise SystemExit(f"unknown set {name}")
        work = WORK / ("tldr-en" if name == "tldr" else name)
        self.wiki = open_wiki(write_bench_repo(work / "repo", self.pages, config), work / "index")
        reset_text_index(self.wiki)
        timed_index(self.wiki)
        self.view = self.wiki.view(self.corpus, vectors=True)
        self.embedder = self.wiki.embedder()
        cache: dict[str, object] = {}
        original = self.embedder.embed_query

        def embed_query(text: str):  # the same query at two depths is embedded once
            if text not in cache:
                cache[text] = original(text)
            return cache[text]

        self.embedder.embed_query = embed_query  # type: ignore[method-assign]

    def gather(self, texts: Sequence[str], depth: int) -> list[tuning.Candidates]:
        from gitwiki.search.searcher import Searcher

        searcher = Searcher(self.wiki.store, depth=depth)
        return [tuning.Candidates(*searcher.candidates(self.view, t, self.embedder, self.depth)) for t in texts]


# ---- anchor text ----------------------------------------------------------------------------------------------

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+$")


def resolve(source: str, target: str, known: set[str]) -> str | None:
    """The page a relative link in `source` points at, as a path of `known`; mkdocs-style folder and
    extension-less links too."""
    found = links.link_target(source, target)
    if found is None or found.path is None or found.outside:
        return None
    path = found.path
    for candidate in (path, f"{path}.md", f"{path}/index.md", f"{path}/README.md", f"{path.rstrip('/')}.md"):
        if candidate in known:
            return candidate
    return None


def anchor_texts(pages: dict[str, str], described: bool = True) -> dict[str, list[str]]:
    """Per page, the texts other pages link to it with; `described` adds the rest of a list item that starts
    with the link (index.md's `- [Title](page.md) — what it holds`)."""
    known = set(pages)
    out: dict[str, list[str]] = defaultdict(list)
    for source, text in pages.items():
        lines = text.split("\n")
        for link in links.extract_links(text):
            if link.kind != "link":
                continue
            target = resolve(source, link.target, known)
            if target is None or target == source:
                continue
            words = [link.text]
            line = lines[link.line - 1]
            if described and _ITEM.match(line[: link.col - 1]):
                m = links._INLINE.match(line, link.col - 1)
                if m is not None:
                    words.append(line[m.end() :].strip(" -—–:"))
            out[target].append(" ".join(w for w in words if w))
    return dict(out)


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over small per-key token lists, IDF as FTS5 computes it."""

    def __init__(self, docs: dict[str, list[str]], total: int | None = None) -> None:
        self.docs = {k: Counter(v) for k, v in docs.items() if v}
        self.length = {k: sum(c.values()) for k, c in self.docs.items()}
        self.avg = sum(self.length.values()) / max(len(self.length), 1)
        self.n = total or len(self.docs)
        self.df = Counter(t for c in self.docs.values() for t in c)

    def score(self, terms: list[str]) -> list[tuple[str, float]]:
        out: dict[str, float] = defaultdict(float)
        for term in set(terms):
            n = self.df.get(term, 0)
            if not n:
                continue
            idf = max(math.log((self.n - n + 0.5) / (n + 0.5)), 1e-6)
            for key, counts in self.docs.items():
                tf = counts.get(term, 0)
                if tf:
                    norm = 1.2 * (0.25 + 0.75 * self.length[key] / self.avg)
                    out[key] += idf * tf * 2.2 / (tf + norm)
        return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def replay(
    c: tuning.Candidates, setting: tuning.Setting, pages: int, extra: dict[str, float] | None = None, share: float = 0.0
) -> list[str]:
    """`tuning.replay`, with `extra` (page → normalized score) weighing `share` in page fusion."""
    if not extra or share == 0:
        return tuning.replay(c, setting, pages)
    rankings, page_of = c
    w = setting.weighting
    fused = fuse(rankings, "score", w)
    weights = [(1 - share) * x for x in (w.weights(rankings) or [1.0])]
    by_page = page_fusion(rankings, page_of, weights, w.normalizer)
    for page, norm in extra.items():
        by_page[page] = by_page.get(page, 0.0) + share * norm
    hits = rollup(fused, page_of, pages, 1, pages, SECOND_CHUNK, by_page, w.page_share)
    return [h.path for h in hits]


class FieldBm25:
    """FTS5's bm25() over the index's (head, body) rows plus an anchor column: weighted term counts, one length
    normalization over the whole row, IDF log((N − n + 0.5) / (n + 0.5)) floored at 1e-6. `first`: only each
    page's first chunk carries the anchor column (else every chunk of the page does)."""

    def __init__(self, loaded: Loaded, anchors: dict[str, list[str]], first: bool = False) -> None:
        store, view = loaded.wiki.store, loaded.view
        path_of = {blob: path for path, blob in sorted(view.pages.items(), reverse=True)}
        chunk_rows = store.conn.execute("SELECT id, blob, ord FROM chunks").fetchall()
        blob_of = {cid: blob for cid, blob, _ in chunk_rows}
        lead = {cid for cid, _, o in chunk_rows if o == 0}
        anchor_terms = {p: fts_text(" ".join(t)).split() for p, t in anchors.items()}
        self.page: dict[int, str] = {}
        self.base_len: dict[int, int] = {}
        self.anchor_len: dict[int, int] = {}
        # term → rowid → (weighted head + body count, anchor count)
        self.post: dict[str, dict[int, list[float]]] = defaultdict(dict)
        for rowid, head, body in store.conn.execute("SELECT rowid, head, body FROM fts"):
            path = path_of.get(blob_of.get(rowid, ""))
            if path is None:
                continue
            self.page[rowid] = path
            h, b = head.split(), body.split()
            a = anchor_terms.get(path, []) if (rowid in lead or not first) else []
            self.base_len[rowid] = len(h) + len(b)
            self.anchor_len[rowid] = len(a)
            for toks, col, w in ((h, 0, 2.0), (b, 0, 1.0), (a, 1, 1.0)):
                for t in toks:
                    cell = self.post[t].setdefault(rowid, [0.0, 0.0])
                    cell[col] += w

    def rank(self, terms: list[str], weight: float, depth: int, pages: int) -> list[tuple[int, float]]:
        n = len(self.page)
        length = {r: self.base_len[r] + (self.anchor_len[r] if weight else 0) for r in self.page}
        avg = sum(length.values()) / max(n, 1)
        scores: dict[int, float] = defaultdict(float)
        for t in set(terms):
            post = {r: c[0] + weight * c[1] for r, c in self.post.get(t, {}).items()}
            post = {r: f for r, f in post.items() if f > 0}
            if not post:
                continue
            idf = max(math.log((n - len(post) + 0.5) / (len(post) + 0.5)), 1e-6)
            for r, f in post.items():
                norm = 1.2 * (0.25 + 0.75 * length[r] / avg)
                scores[r] += idf * f * 2.2 / (f + norm)
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        pool = ordered[:depth]
        seen = {self.page[r] for r, _ in pool}
        for r, s in ordered[depth:]:
            if len(seen) >= pages:
                break
            if self.page[r] not in seen:
                seen.add(self.page[r])
                pool.append((r, s))
        return pool


# ---- pseudo-questions --------------------------------------------------------------------------------------------


def pseudo_questions(loaded: Loaded, anchors: dict[str, list[str]], cap: int, seed: int = 0) -> list[Question]:
    """Titles, H2/H3 headings and incoming link texts as questions for their pages (a text several pages carry
    is a question with all of them relevant); at most `cap` of each kind, sampled."""
    store, view = loaded.wiki.store, loaded.view
    path_of = {blob: path for path, blob in view.pages.items()}
    infos = store.blob_info(view.pages.values())
    kinds: dict[str, dict[str, set[str]]] = {
        "title": defaultdict(set),
        "heading": defaultdict(set),
        "link": defaultdict(set),
    }
    for blob, info in infos.items():
        if info.title and tokenize(info.title):
            kinds["title"][info.title.strip()].add(path_of[blob])
    for row in store.chunks_of(view.pages.values()):
        if len(row.breadcrumb) >= 2 and tokenize(row.breadcrumb[-1]):
            kinds["heading"][row.breadcrumb[-1].strip()].add(path_of[row.blob])
    for target, texts in anchors.items():
        for text in texts:
            if tokenize(text):
                kinds["link"][text.strip()].add(target)
    out = []
    rng = random.Random(seed)
    for kind, found in kinds.items():
        items = sorted(found.items())
        rng.shuffle(items)
        for n, (text, targets) in enumerate(items[:cap]):
            out.append(Question(f"{kind}{n}", text, dict.fromkeys(sorted(targets), 1), kind))
    return out


# ---- scoring -----------------------------------------------------------------------------------------------------


def figures(label: str, questions: Sequence[Question], ranked: Sequence[list[str]]) -> dict:
    outcomes = [Outcome(q, tuple(r), first_rank(r, q.relevant)) for q, r in zip(questions, ranked, strict=True)]
    s = score(label, outcomes, 0.0)
    return {
        "label": label,
        "hit1": round(s.hit1, 4),
        "hit5": round(s.hit5, 4),
        "mrr10": round(s.mrr10, 4),
        "ndcg10": round(s.ndcg10, 4),
        "r100": round(s.recall100, 4),
        "ranks": {o.question.id: o.rank for o in outcomes},
    }


def line(f: dict, base: dict | None = None) -> str:
    text = f"{f['label']:<28} {f['hit1']:.3f} / {f['hit5']:.3f} / {f['mrr10']:.3f} / nDCG {f['ndcg10']:.4f}"
    text += f" / R@100 {f['r100']:.3f}"
    if base is not None:
        deltas = [f[k] - base[k] for k in ("hit1", "hit5", "mrr10", "ndcg10")]
        text += "  (" + " / ".join(f"{d:+.3f}" for d in deltas) + ")"
    return text


def page_ranks(ranking: list[tuple[int, float]], page_of: dict[int, str]) -> dict[str, int]:
    """Each page's place in one ranker's list, by its best chunk."""
    out: dict[str, int] = {}
    for cid, _ in ranking:
        path = page_of.get(cid)
        if path is not None and path not in out:
            out[path] = len(out) + 1
    return out


def misses(questions: Sequence[Question], found: list[tuning.Candidates], ranked: list[list[str]]) -> list[dict]:
    rows = []
    for q, c, r in zip(questions, found, ranked, strict=True):
        rank = first_rank(r, q.relevant)
        if rank == 1:
            continue
        lex, dense = (page_ranks(x, c.page_of) for x in c.rankings) if len(c.rankings) == 2 else ({}, {})
        answer = min(q.relevant, key=lambda p: r.index(p) if p in r else 10**6)
        top = r[0] if r else None
        rows.append(
            {
                "id": q.id,
                "kind": q.kind,
                "rank": rank,
                "answer": answer,
                "lexical": lex.get(answer),
                "dense": dense.get(answer),
                "first": top,
                "first_lexical": lex.get(top) if top else None,
                "first_dense": dense.get(top) if top else None,
                "question": q.text,
            }
        )
    return rows


def why(row: dict) -> str:
    lex, dense = row["lexical"] or 999, row["dense"] or 999
    if min(lex, dense) > 5:
        return "neither ranker near the top"
    if lex == 1 or dense == 1:
        return "one ranker first, the other far" if max(lex, dense) > 10 else "one ranker first, fusion lost it"
    return "both rankers had it lower"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", required=True, choices=(*SETS, "tldr", "docs"))
    ap.add_argument("--misses", action="store_true")
    ap.add_argument("--anchor", default="", help="page-level anchor ranker weights, comma-separated")
    ap.add_argument("--anchor-field", default="", help="anchor column weights in the Python BM25, comma-separated")
    ap.add_argument("--field-source", choices=("anchors", "descriptions", "both"), default="anchors")
    ap.add_argument("--anchor-first", action="store_true", help="the anchor column on each page's first chunk only")
    ap.add_argument("--anchor-add", default="", help="anchor BM25 of the page added to its chunks' lexical scores")
    ap.add_argument("--kinds", default="title,heading,link", help="pseudo-question kinds")
    ap.add_argument("--no-descriptions", action="store_true", help="anchor text without index.md descriptions")
    ap.add_argument("--pseudo", action="store_true")
    ap.add_argument("--dense-description", action="store_true", help="first chunks embedded with the description")
    ap.add_argument("--cap", type=int, default=150, help="pseudo-questions per kind")
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args(argv)
    use_offline_model()
    loaded = Loaded(args.set)
    questions = loaded.questions
    current = tuning.Setting.of(loaded.wiki.config.search)
    depth = loaded.depth
    found = {current.depth: loaded.gather([q.text for q in questions], current.depth)}
    base_ranked = [tuning.replay(c, current, depth) for c in found[current.depth]]
    base = figures("base", questions, base_ranked)
    out: dict = {"set": args.set, "questions": len(questions), "base": base, "variants": []}
    print(f"{args.set}: {len(loaded.pages)} pages, {len(questions)} questions; hit@1 / hit@5 / MRR@10 / nDCG@10")
    print(line(base))

    pages = dict(loaded.pages)
    anchors = anchor_texts(pages, not args.no_descriptions)
    out["anchored_pages"] = len(anchors)
    out["anchor_texts"] = sum(map(len, anchors.values()))
    print(f"anchor text: {out['anchor_texts']} link texts into {len(anchors)} pages")

    if args.misses:
        rows = misses(questions, found[current.depth], base_ranked)
        for row in rows:
            row["why"] = why(row)
        out["misses"] = rows
        print("id kind rank | answer: lexical dense | first: lexical dense | why")
        for r in rows:
            print(
                f"{r['id']} {r['kind'][:5]} {r['rank']} | {r['answer']}: {r['lexical']} {r['dense']} | "
                f"{r['first']}: {r['first_lexical']} {r['first_dense']} | {r['why']}"
            )
        print(json.dumps(Counter(r["why"] for r in rows)))

    if args.anchor:
        scorer = Bm25({p: tokenize(" ".join(t)) for p, t in anchors.items()}, total=len(loaded.view.pages))
        extras = []
        for q in questions:
            scored = scorer.score(tokenize(q.text))
            extras.append(
                dict(
                    zip(
                        [p for p, _ in scored],
                        [n for _, n in dbsf([(i, s) for i, (_, s) in enumerate(scored)])],
                        strict=True,
                    )
                )
            )
        for share in map(float, args.anchor.split(",")):
            ranked = [replay(c, current, depth, e, share) for c, e in zip(found[current.depth], extras, strict=True)]
            f = figures(f"anchor={share}", questions, ranked)
            out["variants"].append(f)
            print(line(f, base))

    if args.anchor_field:
        docs = anchors
        if args.field_source != "anchors":
            infos = loaded.wiki.store.blob_info(loaded.view.pages.values())
            path_of = {blob: path for path, blob in loaded.view.pages.items()}
            described = {path_of[b]: [i.description] for b, i in infos.items() if i.description}
            docs = (
                described
                if args.field_source == "descriptions"
                else {p: anchors.get(p, []) + described.get(p, []) for p in set(anchors) | set(described)}
            )
        field = FieldBm25(loaded, docs, args.anchor_first)
        for weight in [0.0, *map(float, args.anchor_field.split(","))]:
            ranked = []
            for q, c in zip(questions, found[current.depth], strict=True):
                lexical = field.rank(tokenize(q.text), weight, current.depth, depth)
                page_of = dict(c.page_of)
                page_of.update((cid, field.page[cid]) for cid, _ in lexical)
                rankings = [lexical, *c.rankings[1:]]
                ranked.append(tuning.replay(tuning.Candidates(rankings, page_of), current, depth))
            f = figures(f"{args.field_source}{'-first' if args.anchor_first else ''}={weight}", questions, ranked)
            out["variants"].append(f)
            print(line(f, base))

    if args.anchor_add:
        scorer = Bm25({p: tokenize(" ".join(t)) for p, t in anchors.items()}, total=len(loaded.view.pages))
        lead = {}
        path_of = {blob: path for path, blob in loaded.view.pages.items()}
        for cid, blob in loaded.wiki.store.conn.execute("SELECT id, blob FROM chunks WHERE ord = 0"):
            if blob in path_of:
                lead[path_of[blob]] = cid
        scored = [dict(scorer.score(tokenize(q.text))) for q in questions]
        for weight in map(float, args.anchor_add.split(",")):
            ranked = []
            for c, extra in zip(found[current.depth], scored, strict=True):
                lexical = [(cid, s + weight * extra.get(c.page_of[cid], 0.0)) for cid, s in c.rankings[0]]
                have = {c.page_of[cid] for cid, _ in lexical}
                lexical += [(lead[p], weight * x) for p, x in extra.items() if p not in have and p in lead]
                page_of = dict(c.page_of) | {lead[p]: p for p in extra if p in lead}
                lexical.sort(key=lambda kv: (-kv[1], kv[0]))
                rankings = [lexical, *c.rankings[1:]]
                ranked.append(tuning.replay(tuning.Candidates(rankings, page_of), current, depth))
            f = figures(f"add={weight}", questions, ranked)
            out["variants"].append(f)
            print(line(f, base))

    if args.dense_description:
        # The first chunk of a page with a description embedded with it: "breadcrumb\ndescription\ntext".
        import numpy as np

        from gitwiki.index.store import embed_text
        from gitwiki.search.searcher import Searcher, candidates

        store, view = loaded.wiki.store, loaded.view
        searcher = Searcher(store, depth=current.depth)
        blob_paths = searcher._blob_paths(view)
        matrix = searcher._matrix(view, loaded.embedder.model_id, blob_paths)
        infos = store.blob_info(view.pages.values())
        rows = store.chunks_by_id(matrix.ids)
        swap = {}
        for i, cid in enumerate(matrix.ids):
            row = rows[cid]
            info = infos.get(row.blob)
            if row.ord == 0 and info and info.description:
                swap[i] = embed_text(row.breadcrumb, f"{info.description}\n{row.text}", info.title)
        print(f"dense description: {len(swap)} first chunks re-embedded")
        dense = matrix.matrix.copy()
        if swap:
            vectors = loaded.wiki.embedder().embed_documents(list(swap.values()))
            for i, v in zip(swap, vectors, strict=True):
                dense[i] = v
        for label, vectors_used in (("dense control", matrix.matrix), ("dense description", dense)):
            ranked = []
            for q, c in zip(questions, found[current.depth], strict=True):
                scores = np.einsum("ij,j->i", vectors_used, loaded.embedder.embed_query(q.text))
                order = np.argsort(-scores, kind="stable")
                if len({matrix.blobs[i] for i in order[: current.depth]}) >= depth or depth >= len(set(matrix.blobs)):
                    order = order[: current.depth]  # as Searcher._dense: the full order only when one page owns the top
                pool = candidates(
                    ((matrix.ids[i], matrix.blobs[i], float(scores[i])) for i in order), depth, current.depth
                )
                page_of = dict(c.page_of) | {cid: blob_paths[blob] for cid, blob, _ in pool}
                rankings = [c.rankings[0], [(cid, sc) for cid, _, sc in pool]]
                ranked.append(tuning.replay(tuning.Candidates(rankings, page_of), current, depth))
            f = figures(label, questions, ranked)
            out["variants"].append(f)
            print(line(f, base))

    if args.pseudo:
        pseudo = [q for q in pseudo_questions(loaded, anchors, args.cap) if q.kind in args.kinds.split(",")]
        print(f"pseudo-questions: {json.dumps(Counter(q.kind for q in pseudo))}")
        settings = [current, *(s for s in tuning.GRID if s != current)]
        depths = sorted({s.depth for s in settings})
        pseudo_found = {d: loaded.gather([q.text for q in pseudo], d) for d in depths}
        for d in depths:
            if d not in found:
                found[d] = loaded.gather([q.text for q in questions], d)
        real_rr = tuning.reciprocal_ranks(found, questions, settings, depth)
        for label, qs, fd in (("pseudo", pseudo, pseudo_found), ("real (eval --tune)", questions, found)):
            fit = tuning.fit(tuning.reciprocal_ranks(fd, qs, settings, depth), current)
            chosen = fit.chosen if fit.wins else current
            ranked = [tuning.replay(c, fit.chosen, depth) for c in found[fit.chosen.depth]]
            f = figures(f"fit on {label}", questions, ranked)
            f |= {
                "chosen": fit.chosen._asdict(),
                "wins": fit.wins,
                "fit_current_mrr": round(fit.current_mrr, 4),
                "fit_tuned_mrr": round(fit.tuned_mrr, 4),
                "interval": [round(fit.low, 4), round(fit.high, 4)],
                "fold_choices": fit.fold_choices,
                "written": chosen._asdict(),
            }
            out["variants"].append(f)
            print(
                f"{label}: {fit.questions} questions, chosen {tuple(fit.chosen)}, held-out MRR {fit.current_mrr:.3f} → "
                f"{fit.tuned_mrr:.3f} [{fit.low:+.3f}, {fit.high:+.3f}], {'WRITTEN' if fit.wins else 'not written'}; "
                f"{fit.fold_choices} fold choices"
            )
            print("  on the real questions: " + line(f, base))
        out["real_rr_settings"] = len(real_rr)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
