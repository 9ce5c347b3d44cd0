"""Retrieval quality as numbers: questions labelled with the pages that answer them, searched per mode.

Two sources of labelled questions: a wiki's own `.gitwiki/eval.jsonl` (or `[eval] path`), one JSON object a
line, `{"question": "...", "relevant": ["path.md", ...]}` (optional "id" and "kind"); and a BEIR-format
folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), whose documents become markdown pages in a git repo
so they go through the real git-keyed index. Metrics are at page level: hit@1, hit@5, MRR@10, nDCG@10
(linear gains, as ranx and trec_eval compute it) and Recall@100. Everything here but `wiki_ranker` and
`write_corpus_repo` is pure.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitwiki.errors import UsageError

if TYPE_CHECKING:
    from gitwiki.wiki import Wiki

DEPTH = 100  # pages retrieved per question: Recall@100 needs them, and a miss still shows its rank
DEFAULT_PATH = ".gitwiki/eval.jsonl"

# (question text, mode, fusion or None for the configured one) → page paths, best first
Ranker = Callable[[str, str, "str | None"], list[str]]


class Question(NamedTuple):
    id: str
    text: str
    relevant: dict[str, int]  # page path → relevance grade (1 for a plain list)
    kind: str = ""


class Outcome(NamedTuple):
    """One question answered in one mode."""

    question: Question
    ranked: tuple[str, ...]  # the pages returned, best first
    rank: int | None  # 1-based position of the best-placed relevant page, None if none was returned


class ModeScore(NamedTuple):
    label: str  # "hybrid", "lexical", "hybrid-rrf", ...
    hit1: float
    hit5: float
    mrr10: float
    ndcg10: float
    recall100: float
    ms_per_query: float
    outcomes: list[Outcome]

    def figures(self) -> dict[str, float]:
        return {
            "hit@1": round(self.hit1, 4),
            "hit@5": round(self.hit5, 4),
            "mrr@10": round(self.mrr10, 4),
            "ndcg@10": round(self.ndcg10, 4),
            "recall@100": round(self.recall100, 4),
            "ms_per_query": round(self.ms_per_query, 1),
        }


# ---- metrics (pure) -----------------------------------------------------------------------------


def first_rank(ranked: Iterable[str], relevant: dict[str, int]) -> int | None:
    return next((i for i, path in enumerate(ranked, 1) if path in relevant), None)


def ndcg(ranked: list[str] | tuple[str, ...], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with linear gains: sum of grade / log2(rank + 1), over the same for the ideal order."""
    dcg = sum(relevant.get(path, 0) / math.log2(i + 1) for i, path in enumerate(ranked[:k], 1))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    best = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / best if best > 0 else 0.0


def recall(ranked: list[str] | tuple[str, ...], relevant: dict[str, int], k: int = 100) -> float:
    wanted = {p for p, g in relevant.items() if g > 0}
    return len(wanted.intersection(ranked[:k])) / len(wanted) if wanted else 0.0


def score(label: str, outcomes: list[Outcome], seconds: float) -> ModeScore:
    n = len(outcomes) or 1
    ranks = [o.rank for o in outcomes]
    return ModeScore(
        label=label,
        hit1=sum(1 for r in ranks if r == 1) / n,
        hit5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr10=sum(1 / r for r in ranks if r is not None and r <= 10) / n,
        ndcg10=sum(ndcg(o.ranked, o.question.relevant) for o in outcomes) / n,
        recall100=sum(recall(o.ranked, o.question.relevant) for o in outcomes) / n,
        ms_per_query=1000 * seconds / n,
        outcomes=outcomes,
    )


def evaluate(
    ranker: Ranker,
    questions: list[Question],
    modes: Iterable[tuple[str, str | None]],
    progress: Callable[[str, int, int], None] | None = None,
) -> list[ModeScore]:
    """Each question through `ranker` once per (mode, fusion); one ModeScore per mode, in order. `progress`
    (stage "eval", questions done, questions in all modes) is told after each question."""
    out = []
    modes = list(modes)
    total, done = len(questions) * len(modes), 0
    for mode, fusion in modes:
        started = time.perf_counter()
        outcomes = []
        for q in questions:
            ranked = tuple(ranker(q.text, mode, fusion))
            outcomes.append(Outcome(q, ranked, first_rank(ranked, q.relevant)))
            done += 1
            if progress:
                progress("eval", done, total)
        out.append(score(mode if fusion is None else f"{mode}-{fusion}", outcomes, time.perf_counter() - started))
    return out


def wiki_ranker(wiki: Wiki, corpus: str | None = None, depth: int = DEPTH) -> Ranker:
    """`Wiki.search` as a Ranker: one chunk per page, `depth` pages."""

    def ranked(text: str, mode: str, fusion: str | None) -> list[str]:
        result = wiki.search(
            text, corpus, mode=mode, fusion=fusion, top_files=depth, chunks_per_file=1, limit=depth, snippet_chars=1
        )
        return [d.path for d in result.docs]

    return ranked


def report_json(
    source: str, scores: list[ModeScore], gated: str, min_mrr: float | None, passed: bool
) -> dict[str, Any]:
    """The `gitwiki eval --json` document: figures per mode, and every question's rank in each."""
    return {
        "source": source,
        "questions": len(scores[0].outcomes) if scores else 0,
        "gated": gated,
        "min_mrr": min_mrr,
        "passed": passed,
        "scores": {s.label: s.figures() for s in scores},
        "results": {
            s.label: [
                {
                    "id": o.question.id,
                    "question": o.question.text,
                    "relevant": list(o.question.relevant),
                    "rank": o.rank,
                    "top": list(o.ranked[:3]),
                }
                for o in s.outcomes
            ]
            for s in scores
        },
    }


# ---- question files -------------------------------------------------------------------------------


QUESTIONS_CAP = 16 * 1024 * 1024  # bytes of a question file: 100,000 questions of a line each fit
MAX_QUESTION_CHARS = 2000  # a question is what a reader types; a longer one is pasted text, not a question
MAX_ID_CHARS = 200
MAX_RELEVANT = 1000  # labelled pages a question


def load_questions(path: Path, roots: Sequence[Path] | None = None) -> list[Question]:
    """Questions from a JSONL file; a malformed line is a UsageError naming the file and line. Read through
    the bounded reader: a regular file, inside `roots` when given (a path from the checkout's config), at
    most QUESTIONS_CAP bytes."""
    from gitwiki.fs import read_bounded

    fix = 'write one JSON object a line, {"question": "...", "relevant": ["page.md"]}, or pass --questions FILE'
    try:
        raw = read_bounded(path, roots=roots, cap=QUESTIONS_CAP, what="question file", fix=fix)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such question file; {fix}") from None
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 at byte {e.start}; save the question file as UTF-8") from None
    questions = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            questions.append(parse_question(line, f"{path}:{number}", f"q{number}"))
    if not questions:
        raise UsageError(f"{path}: no questions in the file; add one JSON object a line")
    return questions


def parse_question(line: str, where: str, default_id: str) -> Question:
    """One line of a question file; a UsageError starting with `where` (file:line) says what is wrong.

    The line comes from a checkout, so anything the JSON parser or the terminal cannot take is refused here
    with its line: nesting deeper than the parser recurses, integers past Python's 4,300 digits, lone
    surrogates (not text: they cannot be printed or written), and a question longer than MAX_QUESTION_CHARS
    (searched before anything else was checked, 6 MB of it took minutes)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}: not JSON ({e.msg}); each line is one question object") from None
    except RecursionError:
        raise UsageError(f"{where}: nested too deep to read; each line is one flat question object") from None
    except ValueError as e:  # an integer of more than 4,300 digits
        raise UsageError(f"{where}: not readable JSON ({e}); each line is one question object") from None
    if not isinstance(row, dict):
        raise UsageError(f'{where}: not a question object; write {{"question": "...", "relevant": ["page.md"]}}')
    text, relevant, qid, kind = row.get("question"), row.get("relevant"), row.get("id"), row.get("kind")
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f'{where}: "question" must be a non-empty string')
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(
            f'{where}: "question" is {len(text):,} characters, more than {MAX_QUESTION_CHARS:,}; ask it in fewer words'
        )
    if isinstance(relevant, str):
        relevant = [relevant]
    if not isinstance(relevant, list) or not relevant or not all(isinstance(p, str) and p for p in relevant):
        raise UsageError(f'{where}: "relevant" must be a list of page paths')
    if len(relevant) > MAX_RELEVANT:
        raise UsageError(f'{where}: "relevant" lists {len(relevant):,} pages, more than {MAX_RELEVANT:,}')
    if qid is not None and not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise UsageError(f'{where}: "id" must be a string or a whole number')
    qid = str(qid) if qid not in (None, "") else default_id
    if len(qid) > MAX_ID_CHARS:
        raise UsageError(f'{where}: "id" is {len(qid):,} characters, more than {MAX_ID_CHARS}; use a short name')
    kind = kind if isinstance(kind, str) else str(kind or "")
    for field, value in (("question", text), ("id", qid), ("kind", kind), *(("relevant", p) for p in relevant)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f'{where}: "{field}" holds a lone surrogate (\\ud800-\\udfff), not text; fix it') from None
    return Question(qid, text.strip(), dict.fromkeys(relevant, 1), kind[:MAX_ID_CHARS])


def resolve_pages(questions: list[Question], pages: Iterable[str], prefix: str = "") -> list[Question]:
    """Relevant paths as the index names them: repo-relative, or relative to the corpus folder `prefix`.

    A label that names no page is an error: a renamed page would otherwise read as a retrieval miss.
    """
    known = set(pages)
    out, unknown = [], []
    for q in questions:
        relevant = {}
        for path, grade in q.relevant.items():
            path = path.removeprefix("./")
            found = path if path in known else prefix + path if prefix + path in known else None
            if found is None:
                unknown.append(f"{q.id}: {path}")
            else:
                relevant[found] = grade
        out.append(q._replace(relevant=relevant))
    if unknown:
        shown = "; ".join(unknown[:5]) + (f"; and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise UsageError(f"the questions name pages the corpus does not have ({shown}); fix or drop those labels")
    return out


# ---- BEIR folders ---------------------------------------------------------------------------------


class BeirSet(NamedTuple):
    docs: dict[str, tuple[str, str]]  # document id → (title, text)
    pages: list[tuple[str, str]]  # (path, markdown text), one per document
    questions: list[Question]  # judged queries, relevant keyed by page path


def beir_page_name(doc_id: str) -> str:
    return "wiki/" + re.sub(r"[^A-Za-z0-9_.-]", "_", doc_id) + ".md"


def beir_page_text(title: str, text: str) -> str:
    return f"# {title.strip()}\n\n{text.strip()}\n" if title.strip() else f"{text.strip()}\n"


def load_beir(folder: Path, split: str = "test") -> BeirSet:
    """Every document as a page `wiki/<id>.md` (`# title`, blank line, text), and the judged queries."""
    try:
        corpus = {}
        with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    doc = json.loads(line)
                    title, text = doc.get("title") or "", doc.get("text") or ""
                    if not isinstance(title, str) or not isinstance(text, str):
                        raise TypeError(f"document {str(doc['_id'])[:80]!r}: title and text must be strings")
                    corpus[str(doc["_id"])] = (title, text)
        qrels: dict[str, dict[str, int]] = {}
        with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8") as f:
            rows = csv.reader(f, delimiter="\t")
            next(rows, None)  # header
            for qid, did, grade in rows:
                if int(grade) > 0:
                    qrels.setdefault(qid, {})[beir_page_name(did)] = int(grade)
        questions = []
        with (folder / "queries.jsonl").open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    q = json.loads(line)
                    if str(q["_id"]) in qrels:
                        questions.append(Question(str(q["_id"]), q["text"], qrels[str(q["_id"])]))
    except FileNotFoundError as e:
        raise UsageError(
            f"{folder} is not a BEIR folder: {e.filename} is missing (needs corpus.jsonl, queries.jsonl, "
            f"qrels/{split}.tsv)"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else str(e)[:200]
        raise UsageError(
            f"{folder}: malformed BEIR file ({why}); check corpus.jsonl, queries.jsonl and qrels"
        ) from None
    pages = [(beir_page_name(did), beir_page_text(title, text)) for did, (title, text) in corpus.items()]
    return BeirSet(corpus, pages, questions)


def write_corpus_repo(repo: Path, pages: list[tuple[str, str]], config_text: str) -> Path:
    """A git repo holding exactly `pages` and `.gitwiki.toml`, committed; left as it is when already identical."""
    from gitwiki.git.gitcli import run_git

    digest = hashlib.sha256(json.dumps([config_text, pages]).encode()).hexdigest()
    marker = repo / ".git" / "gitwiki-eval-digest"
    if marker.is_file() and marker.read_text() == digest:
        return repo
    if repo.exists():
        import shutil

        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    (repo / ".gitwiki.toml").write_text(config_text, encoding="utf-8")
    for rel, text in pages:
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    identity = dict.fromkeys(("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"), "gitwiki eval")
    identity.update(dict.fromkeys(("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"), "eval@gitwiki.invalid"))
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "evaluation corpus")):
        done = run_git(repo, *args, env=identity)
        if not done.ok:
            raise UsageError(f"cannot build the evaluation repo in {repo}: git {args[0]}: {done.error}")
    marker.write_text(digest)
    return repo
